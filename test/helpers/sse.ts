import { request } from 'node:http';

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

/**
 * The first `count` events of `GET /users/events{query}` with these headers (comments left out);
 * the stream is then closed. Fails on another status, or after 60 s with fewer.
 */
export function firstEvents(
  url: string,
  headers: Record<string, string>,
  count: number,
  query = '',
): Promise<SseEvent[]> {
  return new Promise((resolve, reject) => {
    const events: SseEvent[] = [];
    const req = request(`${url}/users/events${query}`, { headers }, (res) => {
      if (res.statusCode !== 200) return reject(new Error(`status ${res.statusCode}`));
      res.setEncoding('utf8');
      res.on(
        'data',
        sseEvents((event) => {
          if (event.data === undefined) return;
          events.push(event);
          if (events.length === count) {
            req.destroy();
            resolve(events);
          }
        }),
      );
    });
    req.on('error', (error) => (events.length === count ? undefined : reject(error)));
    req.setTimeout(60_000, () => req.destroy(new Error(`only ${events.length} of ${count} events came`)));
    req.end();
  });
}
