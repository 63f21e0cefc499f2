/**
 * The longest line (a CSV record, an NDJSON line, a JSON array's element, a backup's line) any
 * command reads. A record's three fields are at most 200 characters each, so a longer one is not a
 * file of records (a missing line break, a binary file, an attack) and is refused as soon as it is
 * crossed, before the memory and time to hold it grow.
 */
export const MAX_LINE = 1 << 20;

/** How MAX_LINE is named in messages. */
export const MAX_LINE_TEXT = '1 MiB';

/** A line longer than MAX_LINE; `line` is where it starts. */
export class LineTooLong extends Error {
  readonly line: number;

  constructor(line: number, what = 'a line') {
    super(`${what} is longer than ${MAX_LINE_TEXT} (a line break missing, or not a file of this kind)`);
    this.line = line;
  }
}

/** A line of bytes as read: without its LF, and whether the LF came (the last line may lack one). */
export interface ByteLine {
  bytes: Buffer;
  number: number;
  ended: boolean;
}

const LF = 0x0a;

/**
 * The lines of a stream of bytes, each at most MAX_LINE bytes: one over it is refused once that
 * many bytes of it have come, whatever follows (its end is never waited for).
 */
export async function* byteLines(input: AsyncIterable<Buffer>): AsyncGenerator<ByteLine> {
  let parts: Buffer[] = [];
  let held = 0;
  let number = 1;
  for await (const chunk of input) {
    let start = 0;
    for (let lf = chunk.indexOf(LF); lf !== -1; lf = chunk.indexOf(LF, start)) {
      if (held + lf - start > MAX_LINE) throw new LineTooLong(number);
      parts.push(chunk.subarray(start, lf));
      yield { bytes: parts.length === 1 ? (parts[0] as Buffer) : Buffer.concat(parts), number, ended: true };
      parts = [];
      held = 0;
      number++;
      start = lf + 1;
    }
    if (start < chunk.length) {
      held += chunk.length - start;
      if (held > MAX_LINE) throw new LineTooLong(number);
      parts.push(chunk.subarray(start));
    }
  }
  if (held > 0) yield { bytes: Buffer.concat(parts), number, ended: false };
}
