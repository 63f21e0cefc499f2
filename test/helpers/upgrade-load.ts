import { type Agent, type IncomingHttpHeaders, request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { sseEvents } from './sse.ts';

export interface Answer {
  status: number;
  headers: IncomingHttpHeaders;
  body: string;
}

/** One request on `agent`, its whole answer read; rejects on a connection error or an answer cut short. */
export function send(
  base: string,
  agent: Agent,
  method: string,
  path: string,
  headers: Record<string, string> = {},
): Promise<Answer> {
  const request = base.startsWith('https:') ? httpsRequest : httpRequest;
  return new Promise((resolve, reject) => {
    const req = request(`${base}${path}`, { method, agent, headers }, (res) => {
      let body = '';
      res.setEncoding('utf8').on('data', (chunk: string) => (body += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
      res.on('aborted', () => reject(new Error(`${method} ${path}: the answer was cut short`)));
      res.on('error', reject);
    });
    req.setTimeout(60_000, () => req.destroy(new Error(`${method} ${path}: no answer in 60 s`)));
    req.on('error', reject);
    req.end();
  });
}

/** What the clients of a rolling upgrade saw. */
export interface Traffic {
  requests: number;
  /** Every request that did not get a whole 200 answer, described. */
  failures: string[];
  /** Each name whose create was answered 200, and the id it was given. */
  created: Map<string, number>;
  /** Tells the clients to stop after their current request; resolves when all have. */
  stop(): Promise<void>;
}

/**
 * One client per agent (give each agent one socket: that many connections), each sending creates
 * (query-string input, a unique name), listings and reads of its own records, one after another as
 * fast as they are answered. Bounded: stops at `maxRequests` in all, at `deadline`, or when stopped.
 */
export function startTraffic(
  base: string,
  agents: readonly Agent[],
  options: { prefix: string; maxRequests: number; deadline: number; headers?: Record<string, string> },
): Traffic {
  const traffic = { requests: 0, failures: [] as string[], created: new Map<string, number>() };
  let stopped = false;
  const more = () => !stopped && traffic.requests < options.maxRequests && Date.now() < options.deadline;
  const client = async (agent: Agent, c: number) => {
    const mine: number[] = [];
    for (let n = 0; more(); n++) {
      const step = n % 5;
      const name = `${options.prefix}${c}x${n}`;
      const [method, path] =
        step === 0 || step === 2 || mine.length === 0
          ? ['POST', `/users?name=${name}&age=${n % 120}&city=Up${c}&fields=id,name`]
          : step === 1
            ? ['GET', '/users?limit=10']
            : ['GET', `/users/${mine[n % mine.length]}`];
      traffic.requests++;
      try {
        const answer = await send(base, agent, method, path, options.headers);
        if (answer.status !== 200) {
          traffic.failures.push(`${method} ${path}: ${answer.status} ${answer.body.slice(0, 200)}`);
          continue;
        }
        if (method === 'POST') {
          const id = (JSON.parse(answer.body) as { data: Array<{ id: number }> }).data[0]?.id as number;
          traffic.created.set(name, id);
          mine.push(id);
        }
      } catch (error) {
        traffic.failures.push(`${method} ${path}: ${(error as Error).message}`);
      }
    }
  };
  const running = Promise.all(agents.map((agent, c) => client(agent, c)));
  return Object.assign(traffic, {
    stop: async () => {
      stopped = true;
      await running;
    },
  });
}

/** An event-stream client as a browser's EventSource is: it reconnects with Last-Event-ID when the stream ends. */
export interface Subscriber {
  /** Each event's id, in the order they came. */
  ids: number[];
  /** The names of the records created, by the events. */
  createdNames: string[];
  /** Streams the service ended, each followed by a reconnection. */
  reconnects: number;
  /** Stream requests not answered 200 (or not at all), described. */
  failures: string[];
  stop(): void;
}

/**
 * Follows `GET /users/events` from the start of the log (`?after=0`), reconnecting with
 * Last-Event-ID each time the stream ends (after 20 ms), until stopped or `deadline`.
 */
export function subscribe(
  base: string,
  agent: () => Agent,
  deadline: number,
  headers: Record<string, string> = {},
): Subscriber {
  const subscriber: Subscriber = { ids: [], createdNames: [], reconnects: 0, failures: [], stop: () => undefined };
  let stopped = false;
  let current: { destroy(): void } | undefined;
  const request = base.startsWith('https:') ? httpsRequest : httpRequest;
  const open = () => {
    if (stopped || Date.now() > deadline) return;
    const last = subscriber.ids.at(-1);
    const path = last === undefined ? '/users/events?after=0' : '/users/events';
    const extra = last === undefined ? {} : { 'last-event-id': String(last) };
    let finished = false;
    let answered = false;
    const again = () => {
      if (finished) return;
      finished = true;
      current = undefined;
      if (!stopped) setTimeout(open, 20);
    };
    const req = request(`${base}${path}`, { agent: agent(), headers: { ...headers, ...extra } }, (res) => {
      answered = true;
      if (res.statusCode !== 200) {
        subscriber.failures.push(`stream: ${res.statusCode}`);
        res.resume();
        res.on('end', again);
        return;
      }
      res.setEncoding('utf8').on(
        'data',
        sseEvents((event) => {
          if (event.id === undefined) return;
          subscriber.ids.push(Number(event.id));
          const change = JSON.parse(event.data as string) as { type: string; data: { name: string } };
          if (change.type === 'user.created') subscriber.createdNames.push(change.data.name);
        }),
      );
      res.once('close', () => {
        if (stopped || finished) return;
        subscriber.reconnects++;
        again();
      });
    });
    req.on('error', (error) => {
      // A stream that was answered ends by its answer's close, above; this one got no answer.
      if (stopped || answered) return;
      subscriber.failures.push(`stream: ${error.message}`);
      again();
    });
    current = req;
    req.end();
  };
  open();
  subscriber.stop = () => {
    stopped = true;
    current?.destroy();
  };
  return subscriber;
}

/** What a subscriber's events say against the acknowledged creates: missed ones and repeats. */
export function eventFigures(subscriber: Subscriber, created: ReadonlyMap<string, number>) {
  const seen = new Set(subscriber.createdNames);
  return {
    missed: [...created.keys()].filter((name) => !seen.has(name)).length,
    repeated: subscriber.ids.length - new Set(subscriber.ids).size,
    outOfOrder: subscriber.ids.filter((id, i) => i > 0 && id <= (subscriber.ids[i - 1] as number)).length,
  };
}
