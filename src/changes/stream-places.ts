import { createHash } from 'node:crypto';
import { bearerToken } from '../http/auth.ts';
import { clientKey } from '../http/rate-limit.ts';

/** Why a stream was refused a place: the process is full (503), or this client holds all it may (429). */
export type Full = 'process' | 'client';

/**
 * The places for event streams: at most `max` in this process and `perClient` per client. A place is
 * held from the request's admission until its connection closes (not merely until the stream ends:
 * an ended stream's last bytes still wait in its socket), and a client that holds none is forgotten.
 */
export class StreamPlaces {
  readonly max: number;
  readonly perClient: number;
  readonly #byClient = new Map<string, number>();
  #held = 0;

  constructor(max: number, perClient: number) {
    this.max = max;
    this.perClient = perClient;
  }

  get held(): number {
    return this.#held;
  }

  /** Takes a place for `client`: the function that gives it back (once), or which limit is full. */
  take(client: string): Full | (() => void) {
    const mine = this.#byClient.get(client) ?? 0;
    if (mine >= this.perClient) return 'client';
    if (this.#held >= this.max) return 'process';
    this.#byClient.set(client, mine + 1);
    this.#held++;
    let given = false;
    return () => {
      if (given) return;
      given = true;
      this.#held--;
      const left = (this.#byClient.get(client) ?? 1) - 1;
      if (left === 0) this.#byClient.delete(client);
      else this.#byClient.set(client, left);
    };
  }
}

/**
 * Who holds a stream's place: the client as the rate limit names it (its address, IPv6 by /64, the
 * forwarded one behind TRUST_PROXY) and, when tokens are on, the token it sent (hashed: the map of
 * holders keeps no secret), so users behind one NAT address with tokens of their own are told apart.
 */
export function streamClient(address: string | undefined, authorization: string | undefined, byToken: boolean): string {
  const token = byToken ? bearerToken(authorization) : undefined;
  if (token === undefined) return clientKey(address);
  return `${clientKey(address)} ${createHash('sha256').update(token).digest('base64url').slice(0, 22)}`;
}
