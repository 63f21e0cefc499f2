/** One Server-Sent Event: the last id the stream gave (as EventSource keeps it), its type, its data. */
export interface SseEvent {
  id: string;
  type: string;
  data: string;
}

/**
 * Reads Server-Sent Events out of a stream's text, a chunk at a time, and hands each on whole. A
 * chunk may hold thousands of events (a burst): it is walked once with indexOf, each line sliced
 * once, and no event's data is parsed here.
 */
export class SseParser {
  #rest = '';
  /** The last chunk ended in CR: an LF that starts the next one ends no other line. */
  #endedInCr = false;
  #id = '';
  #type = '';
  #data: string | undefined;
  readonly #onEvent: (event: SseEvent) => void;
  readonly #onComment: (text: string) => void;

  constructor(onEvent: (event: SseEvent) => void, onComment: (text: string) => void) {
    this.#onEvent = onEvent;
    this.#onComment = onComment;
  }

  push(chunk: string): void {
    let text = this.#endedInCr && chunk.startsWith('\n') ? chunk.slice(1) : chunk;
    this.#endedInCr = text.endsWith('\r');
    // Lines may end in CRLF, LF or CR; the service sends LF, so the common case replaces nothing.
    if (text.includes('\r')) text = text.replace(/\r\n?/g, '\n');
    text = this.#rest + text;
    let start = 0;
    for (let end = text.indexOf('\n'); end !== -1; end = text.indexOf('\n', start)) {
      this.#line(text.slice(start, end));
      start = end + 1;
    }
    this.#rest = text.slice(start);
  }

  #line(line: string): void {
    if (line === '') {
      // A blank line ends the event; one without data is none (as the HTML standard has it).
      if (this.#data !== undefined) this.#onEvent({ id: this.#id, type: this.#type, data: this.#data });
      this.#data = undefined;
      this.#type = '';
      return;
    }
    const colon = line.indexOf(':');
    if (colon === 0) return this.#onComment(line.slice(1).replace(/^ /, ''));
    const field = colon === -1 ? line : line.slice(0, colon);
    const value = colon === -1 ? '' : line.slice(line.startsWith(' ', colon + 1) ? colon + 2 : colon + 1);
    if (field === 'data') this.#data = this.#data === undefined ? value : `${this.#data}\n${value}`;
    else if (field === 'event') this.#type = value;
    else if (field === 'id' && !value.includes('\0')) this.#id = value;
  }
}
