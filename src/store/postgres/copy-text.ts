import { once } from 'node:events';
import type { Pool, PoolClient } from 'pg';
import { from as copyFrom, to as copyTo } from 'pg-copy-streams';

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

const UNESCAPED: Readonly<Record<string, string>> = { b: '\b', f: '\f', n: '\n', r: '\r', t: '\t', v: '\v' };

/** A value as COPY's text format writes it, read back (PostgreSQL writes these escapes and no others). */
function plainText(value: string): string {
  return value.replace(/\\(.)/g, (_, c: string) => UNESCAPED[c] ?? c);
}

/**
 * The rows of `COPY (...) TO STDOUT`, on a connection of `pool`, each as its columns' text (no
 * nulls), a batch per chunk the server sends. Left before its end, the connection is closed: it
 * would still be copying.
 */
export async function* copyOut(pool: Pool, sql: string): AsyncGenerator<string[][]> {
  const client = await pool.connect();
  const stream = client.query(copyTo(sql));
  const decoder = new TextDecoder();
  let carry = '';
  let ended = false;
  try {
    for await (const chunk of stream as AsyncIterable<Buffer>) {
      const text = carry + decoder.decode(chunk, { stream: true });
      const end = text.lastIndexOf('\n') + 1;
      carry = text.slice(end);
      const rows: string[][] = [];
      for (let start = 0; start < end;) {
        const next = text.indexOf('\n', start);
        const line = text.slice(start, next);
        const columns = line.split('\t');
        if (line.includes('\\')) for (let i = 0; i < columns.length; i++) columns[i] = plainText(columns[i] as string);
        rows.push(columns);
        start = next + 1;
      }
      if (rows.length > 0) yield rows;
    }
    ended = true;
  } finally {
    client.release(!ended);
  }
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
