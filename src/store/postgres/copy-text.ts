import { once } from 'node:events';
import type { PoolClient } from 'pg';
import { from as copyFrom } from 'pg-copy-streams';

const SPECIAL = /[\\\t\n\r]/;
const SPECIALS = /[\\\t\n\r]/g;
const ESCAPED: Readonly<Record<string, string>> = { '\\': '\\\\', '\t': '\\t', '\n': '\\n', '\r': '\\r' };

/**
 * A value in COPY's text format, where a backslash starts an escape (a bare `\N` would be a null,
 * `\.` the end of the data) and tab and line feed separate columns and rows: those four are escaped.
 */
export function copyText(value: string): string {
  return SPECIAL.test(value) ? value.replace(SPECIALS, (c) => ESCAPED[c] as string) : value;
}

/** COPY ... FROM STDIN on `client`, written a chunk of rows at a time, with backpressure. */
export interface CopyIn {
  /** Sends these lines (each ended by a line feed); waits while the connection is behind. */
  write(lines: string): Promise<void>;
  /** Ends the data; resolves with the rows stored once the server has taken them all. */
  end(): Promise<number>;
}

export function copyIn(client: PoolClient, sql: string): CopyIn {
  const stream = client.query(copyFrom(sql));
  const done = new Promise<void>((resolve, reject) => {
    stream.once('finish', resolve);
    stream.once('error', reject);
  });
  done.catch(() => undefined);
  return {
    write: async (lines) => {
      if (!stream.write(lines)) await Promise.race([once(stream, 'drain'), done]);
    },
    end: async () => {
      stream.end();
      await done;
      return stream.rowCount;
    },
  };
}
