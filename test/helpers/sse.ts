/** One Server-Sent Event as read off the wire: its fields (`id`, `event`, `data`); comments left out. */
export type SseEvent = Record<string, string>;

/**
 * A handler for a stream's text chunks that calls `onEvent` with each whole event as it completes
 * (events end with a blank line; a chunk may hold several, or part of one).
 */
export function sseEvents(onEvent: (event: SseEvent) => void): (chunk: string) => void {
  let buffer = '';
  return (chunk) => {
    buffer += chunk;
    for (let end = buffer.indexOf('\n\n'); end >= 0; end = buffer.indexOf('\n\n')) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      const fields = block
        .split('\n')
        .filter((line) => !line.startsWith(':') && line.includes(': '))
        .map((line) => [line.slice(0, line.indexOf(': ')), line.slice(line.indexOf(': ') + 2)]);
      if (fields.length > 0) onEvent(Object.fromEntries(fields) as SseEvent);
    }
  };
}
