/** The most a JWKS may weigh: a provider's set holds a few keys of a few KiB at most. */
export const MAX_JWKS_BYTES = 512 * 1024;

/** The provider's keys could not be had: a fetch failed, or one failed within the cooldown before. */
export class KeysUnavailable extends Error {
  override name = 'KeysUnavailable';
}

/** Reads a body up to `limit` bytes; past it, throws rather than holding more. */
async function readCapped(response: Response, limit: number): Promise<string> {
  const length = Number(response.headers.get('content-length') ?? 0);
  if (length > limit) throw new KeysUnavailable(`the key set is over ${limit} bytes`);
  const chunks: Uint8Array[] = [];
  let size = 0;
  for await (const chunk of response.body ?? []) {
    size += chunk.byteLength;
    if (size > limit) throw new KeysUnavailable(`the key set is over ${limit} bytes`);
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/**
 * The fetch the provider's key set is read with (given to jose's createRemoteJWKSet, which brings
 * the timeout and refuses redirects). jose waits its cooldown between fetches only after one that
 * succeeded; this adds the same wait after one that failed, so a provider that is down is asked at
 * most once per cooldown however many requests arrive meanwhile, and it reads at most
 * MAX_JWKS_BYTES of an answer that must be JSON with a `keys` list.
 */
export function boundedJwksFetch(cooldownMs: number): {
  fetch: (url: string, init: RequestInit) => Promise<Response>;
  /** Seconds until the next fetch may be tried, for `Retry-After`: at least 1. */
  retryAfter: () => number;
} {
  let failedAt = Number.NEGATIVE_INFINITY;
  const fetchKeys = async (url: string, init: RequestInit): Promise<Response> => {
    if (Date.now() < failedAt + cooldownMs)
      throw new KeysUnavailable('the last fetch failed; waiting for the cooldown');
    try {
      const response = await fetch(url, init);
      if (response.status !== 200) {
        await response.body?.cancel();
        throw new KeysUnavailable(`the key set's URL answered ${response.status}`);
      }
      const text = await readCapped(response, MAX_JWKS_BYTES);
      const parsed: unknown = JSON.parse(text);
      const keys = typeof parsed === 'object' && parsed !== null ? (parsed as { keys?: unknown }).keys : undefined;
      if (!Array.isArray(keys)) throw new KeysUnavailable('the key set is not JSON with a "keys" list');
      return new Response(text, { status: 200, headers: { 'content-type': 'application/json' } });
    } catch (error) {
      failedAt = Date.now();
      throw error;
    }
  };
  return {
    fetch: fetchKeys,
    retryAfter: () => Math.max(1, Math.ceil((failedAt + cooldownMs - Date.now()) / 1000)),
  };
}
