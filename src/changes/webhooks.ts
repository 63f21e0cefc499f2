import { createHmac, randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import { setTimeout as wait } from 'node:timers/promises';
import type { FastifyBaseLogger } from 'fastify';
import { VERSION } from '../config/version.ts';
import type { Change, HookCursor, HookFailure, UserStore } from '../store/store.ts';
import { eventJson, eventType } from './event.ts';
import type { WebhookTarget } from './webhook-filter.ts';

/** A delivery is retried for this long after its change was committed, then given up on. */
export const WEBHOOK_RETRY_WINDOW_MS = 24 * 60 * 60 * 1000;

/** How long a process holds a URL once it claimed it, renewed while it delivers. */
const LEASE_MS = 10_000;
/** The lease is renewed when less than this is left of it. */
const RENEW_BEFORE_MS = 6_000;
/** A URL another process holds is asked for again this often. */
const CLAIM_INTERVAL_MS = 2_000;
/** Delivered positions are saved at most this often (a crash delivers at most these again). */
const SAVE_INTERVAL_MS = 200;
/** Changes read from the log at a time. */
const PAGE = 200;
/** The first retry comes after about this long, then twice as long each time, up to MAX_BACKOFF_MS. */
const FIRST_BACKOFF_MS = 500;
const MAX_BACKOFF_MS = 10 * 60 * 1000;

export interface WebhookOptions {
  /** The receivers, each with the changes it is sent (webhook-filter.ts). */
  targets: readonly WebhookTarget[];
  /** The signing key's bytes (WEBHOOK_SECRET without `whsec_`, decoded). */
  secret: Buffer;
  timeoutMs: number;
}

/** What deliveries tell the metrics. */
export interface WebhookCounts {
  delivered(): void;
  retried(): void;
  failed(): void;
}

/** What delivery attempts tell the traces (ops/delivery-spans.ts), when traces are on. */
export interface DeliveryTracing {
  /** Starts an attempt's span: its `headers` (the W3C trace context) go with the POST, `end` says how it went. */
  attempt(url: string, id: string, attempt: number): DeliverySpan;
}

export interface DeliverySpan {
  headers: Record<string, string>;
  /** The receiver's answer, or none and why (a low-cardinality reason: an error code, `timeout`). */
  end(status: number | undefined, failure?: string): void;
}

/** The Standard Webhooks headers of one attempt: the id stays, the timestamp and signature are of this attempt. */
export function signedHeaders(id: string, body: string, secret: Buffer, now = Date.now()): Record<string, string> {
  const timestamp = String(Math.floor(now / 1000));
  const signature = createHmac('sha256', secret).update(`${id}.${timestamp}.${body}`).digest('base64');
  return { 'webhook-id': id, 'webhook-timestamp': timestamp, 'webhook-signature': `v1,${signature}` };
}

/** A delivery's id: the change version, the same for every attempt and every URL. */
export function webhookId(change: Change): string {
  return `msg_${change.version}`;
}

/** Waits `ms`, or less when the service stops. */
const sleep = (ms: number, signal: AbortSignal) => wait(ms, undefined, { signal }).catch(() => undefined);

/**
 * Posts every change to every webhook URL, in version order per URL, at least once. The change log
 * is the outbox: each URL has a cursor in the database (the last version it took) and a lease, so
 * that one process at a time delivers to it, whichever instance or worker that is; a process that
 * dies loses its lease when it runs out and another (or its restart) goes on from the cursor. A
 * receiver that fails is retried with exponential backoff and jitter until its change is
 * WEBHOOK_RETRY_WINDOW_MS old; then the delivery is recorded as failed and the next one goes.
 * Nothing here is on a request's path: a slow or dead receiver only delays its own deliveries.
 */
export class WebhookDeliveries {
  readonly #store: UserStore;
  readonly #options: WebhookOptions;
  readonly #log: FastifyBaseLogger;
  readonly #counts: WebhookCounts;
  readonly #tracing: DeliveryTracing | undefined;
  readonly #owner = `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;
  readonly #stop = new AbortController();
  readonly #wakers = new Set<() => void>();
  #running: Promise<void>[] = [];
  #stopWatch: (() => void) | undefined;

  constructor(
    store: UserStore,
    options: WebhookOptions,
    log: FastifyBaseLogger,
    counts: WebhookCounts,
    tracing?: DeliveryTracing,
  ) {
    this.#store = store;
    this.#options = options;
    this.#log = log;
    this.#counts = counts;
    this.#tracing = tracing;
    store.onCommit(() => this.wake());
  }

  start(): void {
    // Other processes' commits too (PostgreSQL's notifications, SQLite's change version).
    this.#stopWatch = this.#store.watch(() => this.wake());
    this.#running = this.#options.targets.map((target) => this.#serve(target));
  }

  /** New changes may be in the log (a commit here, or another process's). */
  wake(): void {
    for (const wake of this.#wakers) wake();
  }

  /** Ends the deliveries: the attempt in flight finishes, positions are saved and leases let go. */
  async stop(): Promise<void> {
    this.#stopWatch?.();
    this.#stop.abort();
    this.wake();
    await Promise.all(this.#running);
  }

  /** Waits for a wake-up, the stop, or `ms`. */
  #idle(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        this.#wakers.delete(done);
        clearTimeout(timer);
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.#wakers.add(done);
      if (this.#stop.signal.aborted) done();
    });
  }

  async #serve(target: WebhookTarget): Promise<void> {
    const { url } = target;
    const signal = this.#stop.signal;
    while (!signal.aborted) {
      let cursor: HookCursor | undefined;
      try {
        cursor = await this.#store.claimHook(url, this.#owner, LEASE_MS);
      } catch (error) {
        this.#log.warn({ err: error, webhook: url }, 'webhooks: could not claim the URL; trying again');
      }
      if (cursor === undefined) {
        await this.#idle(CLAIM_INTERVAL_MS);
        continue;
      }
      await new Delivery(target, cursor, {
        owner: this.#owner,
        store: this.#store,
        options: this.#options,
        log: this.#log,
        counts: this.#counts,
        tracing: this.#tracing,
        signal,
        idle: (ms) => this.#idle(ms),
      }).run();
    }
  }
}

/** What every turn of delivery shares: this process's lease owner name, the store, the settings. */
interface DeliveryContext {
  owner: string;
  store: UserStore;
  options: WebhookOptions;
  log: FastifyBaseLogger;
  counts: WebhookCounts;
  tracing: DeliveryTracing | undefined;
  signal: AbortSignal;
  /** Waits for a wake-up, the stop, or `ms`. */
  idle: (ms: number) => Promise<void>;
}

/** One process's turn at delivering to one URL: from the claimed cursor until the lease is lost or the service stops. */
class Delivery {
  readonly #url: string;
  readonly #target: WebhookTarget;
  readonly #owner: string;
  readonly #store: UserStore;
  readonly #options: WebhookOptions;
  readonly #log: FastifyBaseLogger;
  readonly #counts: WebhookCounts;
  readonly #tracing: DeliveryTracing | undefined;
  readonly #signal: AbortSignal;
  readonly #idle: (ms: number) => Promise<void>;
  /** The history the cursor counts in; a restore starts another, and this turn ends. */
  readonly #history: string;
  /** The last version delivered (or given up on), and the last saved. */
  #cursor: number;
  #saved: number;
  #savedAt = Date.now();
  #leaseUntil = Date.now() + LEASE_MS;
  #failures: HookFailure[] = [];
  #held = true;

  constructor(target: WebhookTarget, cursor: HookCursor, context: DeliveryContext) {
    this.#url = target.url;
    this.#target = target;
    this.#history = cursor.history;
    this.#cursor = cursor.version;
    this.#saved = cursor.version;
    this.#owner = context.owner;
    this.#store = context.store;
    this.#options = context.options;
    this.#log = context.log;
    this.#counts = context.counts;
    this.#tracing = context.tracing;
    this.#signal = context.signal;
    this.#idle = context.idle;
  }

  async run(): Promise<void> {
    try {
      while (this.#held && !this.#signal.aborted) {
        await this.#keep();
        if (!this.#held) break;
        const page = await this.#store.changes(this.#cursor, PAGE);
        if (page.history !== this.#history) {
          // A restore: its cursor is in the database; this turn's must not overwrite it.
          this.#log.warn(
            { webhook: this.#url },
            'webhooks: the database was restored; going on from the restored position',
          );
          this.#held = false;
          break;
        }
        const first = page.changes[0];
        if (first !== undefined && first.version > this.#cursor + 1) {
          this.#log.warn(
            { webhook: this.#url, from: this.#cursor + 1, to: first.version - 1 },
            'webhooks: changes no longer in the log were skipped',
          );
        }
        if (page.changes.length === 0) {
          // Nothing to send: the position is saved before waiting, so a crash repeats as little as it can.
          if (this.#cursor !== this.#saved) await this.#save(false);
          if (!this.#held) break;
          await this.#idle(Math.min(SAVE_INTERVAL_MS * 5, LEASE_MS - RENEW_BEFORE_MS));
          continue;
        }
        for (const change of page.changes) {
          if (!(await this.#deliver(change))) break;
          this.#cursor = change.version;
          await this.#keep();
          if (!this.#held) break;
        }
      }
    } catch (error) {
      this.#log.warn({ err: error, webhook: this.#url }, 'webhooks: delivery interrupted; trying again');
      await this.#idle(CLAIM_INTERVAL_MS);
    }
    if (this.#held) await this.#save(true).catch(() => undefined);
  }

  /** Saves the position when due, and renews the lease before it runs out. */
  async #keep(): Promise<void> {
    const now = Date.now();
    const due = this.#cursor !== this.#saved && now - this.#savedAt >= SAVE_INTERVAL_MS;
    if (due || this.#leaseUntil - now < RENEW_BEFORE_MS) await this.#save(false);
  }

  async #save(release: boolean): Promise<void> {
    const failures = this.#failures;
    const cursor = this.#cursor;
    const asked = Date.now();
    this.#held = await this.#store.advanceHook(
      this.#url,
      this.#owner,
      { version: cursor, history: this.#history },
      LEASE_MS,
      failures,
    );
    this.#failures = this.#failures.slice(failures.length);
    this.#saved = cursor;
    this.#savedAt = Date.now();
    this.#leaseUntil = asked + LEASE_MS;
    if (release && this.#held) await this.#store.releaseHook(this.#url, this.#owner);
    if (!this.#held)
      this.#log.info(
        { webhook: this.#url },
        'webhooks: the lease on this URL was lost, or the database was restored; claiming it again',
      );
  }

  /**
   * Delivers one change, retrying; false when the turn ended first (stop, or the lease lost). A
   * change a filtered receiver is not sent (its record matched neither before nor after) is passed.
   */
  async #deliver(change: Change): Promise<boolean> {
    const view = this.#target.view;
    const type = view === undefined ? eventType(change) : view.typeOf(change);
    if (type === undefined) return true;
    const body = eventJson(change, type);
    const id = webhookId(change);
    for (let attempt = 1; ; attempt++) {
      if (this.#signal.aborted || !this.#held) return false;
      // Never send on a lease that may have run out: another process may hold the URL by then.
      if (this.#leaseUntil - Date.now() < RENEW_BEFORE_MS) {
        await this.#save(false);
        if (!this.#held) return false;
      }
      const outcome = await this.#attempt(id, body, attempt);
      if (outcome === undefined) {
        this.#counts.delivered();
        return true;
      }
      if (this.#signal.aborted) return false;
      if (Date.now() - change.at.getTime() >= WEBHOOK_RETRY_WINDOW_MS) {
        this.#counts.failed();
        this.#failures.push({ version: change.version, attempts: attempt, reason: outcome });
        this.#log.error(
          { webhook: this.#url, id, attempts: attempt, reason: outcome },
          'webhooks: delivery failed for good',
        );
        return true;
      }
      this.#counts.retried();
      const backoff = Math.min(FIRST_BACKOFF_MS * 2 ** (attempt - 1), MAX_BACKOFF_MS);
      const wait = backoff / 2 + Math.random() * (backoff / 2);
      this.#log.warn(
        { webhook: this.#url, id, attempt, reason: outcome, retryInMs: Math.round(wait) },
        'webhooks: delivery failed; will retry',
      );
      // Sleeps in slices, so the lease is renewed during a long wait.
      for (let until = Date.now() + wait; Date.now() < until && !this.#signal.aborted && this.#held;) {
        await sleep(Math.min(until - Date.now(), LEASE_MS - RENEW_BEFORE_MS), this.#signal);
        await this.#keep();
      }
    }
  }

  /** One POST; undefined when the receiver took it (2xx), else why not. */
  async #attempt(id: string, body: string, attempt: number): Promise<string | undefined> {
    const span = this.#tracing?.attempt(this.#target.endpoint, id, attempt);
    try {
      const response = await fetch(this.#target.endpoint, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'user-agent': `user-records/${VERSION}`,
          ...signedHeaders(id, body, this.#options.secret),
          ...span?.headers,
        },
        body,
        redirect: 'manual',
        // A stop does not wait out a receiver that does not answer: the delivery is made again later.
        signal: AbortSignal.any([AbortSignal.timeout(this.#options.timeoutMs), this.#signal]),
      });
      await response.body?.cancel().catch(() => undefined);
      span?.end(response.status);
      return response.status >= 200 && response.status < 300 ? undefined : `answered ${response.status}`;
    } catch (error) {
      const cause = (error as { cause?: { code?: string } }).cause?.code;
      const timedOut = (error as Error).name === 'TimeoutError';
      span?.end(undefined, timedOut ? 'timeout' : (cause ?? (error as Error).name));
      if (timedOut) return `no answer within ${this.#options.timeoutMs} ms`;
      return cause ?? (error as Error).message;
    }
  }
}
