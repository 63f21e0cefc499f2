import { constants } from 'node:zlib';
import fastifyCompress from '@fastify/compress';
import type { FastifyInstance, onSendHookHandler } from 'fastify';
import { codedEtag } from './conditional.ts';

/** Answers smaller than this go out as they are: a few hundred bytes gain little and cost a zlib call each. */
export const COMPRESS_MIN_BYTES = 1024;
/**
 * Levels chosen by measurement (`node --import tsx bench/compression.ts --levels`, docs/api.md):
 * past these, each step costs half as much CPU again for a few percent fewer bytes. Brotli's own
 * default (11) is some 200 times slower than 4; its window is kept at 256 KiB (lgwin 18) rather
 * than 4 MiB, which bounds what each compressed answer in flight holds at about 1.3 MB.
 */
export const GZIP_LEVEL = 4;
export const BROTLI_QUALITY = 4;
const BROTLI_WINDOW_BITS = 18;

/**
 * Which answers may be compressed, by media type: JSON (and `+json`, problems included), CSV,
 * NDJSON, YAML (the API's description at /docs/yaml) and the other text the service sends (pages,
 * scripts, styles, metrics, SVG). Never
 * `text/event-stream`: an event must reach its subscriber when it is written, not when a
 * compressor's buffer fills. The plugin also compresses what mime-db calls compressible; every
 * such type the service sends is in this list too, which `test/http/compression.test.ts` checks.
 */
const COMPRESSIBLE =
  /^(?:application\/(?:json|[\w.+-]+\+json|x-ndjson|jsonl|x-yaml|yaml|javascript|xml|[\w.+-]+\+xml)|text\/(?!event-stream)[\w.+-]+|image\/svg\+xml)$/;

/** Whether an answer of this Content-Type may be compressed (so its answers vary with Accept-Encoding). */
export function compressible(contentType: unknown): boolean {
  if (typeof contentType !== 'string') return false;
  const media = contentType.split(';', 1)[0] as string;
  return COMPRESSIBLE.test(media.trim().toLowerCase());
}

/** Vary with Accept-Encoding once, however the plugin spelled it (`accept-encoding`); `*` already covers it. */
function varyOnEncoding(vary: unknown): string {
  const names = (Array.isArray(vary) ? vary.join(',') : typeof vary === 'string' ? vary : '')
    .split(',')
    .map((name) => name.trim())
    .filter((name) => name !== '' && name.toLowerCase() !== 'accept-encoding');
  return names.includes('*') ? names.join(', ') : [...names, 'Accept-Encoding'].join(', ');
}

const CODINGS = ['br', 'gzip', 'identity'] as const;

/**
 * Accept-Encoding with its `*` spelled out as the codings it does not name (RFC 9110, 12.5.3): the
 * plugin reads `*` as gzip alone, which would send gzip to `gzip;q=0, *`, where gzip is refused.
 */
export function spellOutWildcard(header: string): string {
  const entries = header.split(',').map((entry) => entry.trim());
  const named = new Set(entries.map((entry) => (entry.split(';', 1)[0] as string).trim().toLowerCase()));
  return entries
    .flatMap((entry) => {
      const semicolon = entry.indexOf(';');
      const name = (semicolon === -1 ? entry : entry.slice(0, semicolon)).trim();
      if (name !== '*') return [entry];
      const params = semicolon === -1 ? '' : entry.slice(semicolon);
      return CODINGS.filter((coding) => !named.has(coding)).map((coding) => coding + params);
    })
    .join(', ');
}

/** Before the plugin: the client's Accept-Encoding as the plugin must read it. */
const beforeCoding: onSendHookHandler = (request, _reply, payload, done) => {
  const accepted = request.headers['accept-encoding'];
  if (typeof accepted === 'string' && accepted.includes('*')) {
    // Assigned whole: a route that checks its headers holds a copy of them, which a change to one would miss.
    request.headers = { ...request.headers, 'accept-encoding': spellOutWildcard(accepted) };
  }
  done(null, payload);
};

/**
 * After the plugin, on every answer: one that may be compressed says it varies with
 * Accept-Encoding (also when this one was not: small, or asked for as identity), and a compressed
 * answer's ETag names its coding (`"<tag>-gzip"`), so no two encodings share a validator.
 */
const afterCoding: onSendHookHandler = (_request, reply, payload, done) => {
  const coding = reply.getHeader('content-encoding');
  if (typeof coding === 'string' && coding !== 'identity') {
    const etag = reply.getHeader('etag');
    if (typeof etag === 'string') reply.header('etag', codedEtag(etag, coding));
  }
  if (coding !== undefined || compressible(reply.getHeader('content-type'))) {
    reply.header('vary', varyOnEncoding(reply.getHeader('vary')));
  }
  done(null, payload);
};

/**
 * gzip and brotli by Accept-Encoding (@fastify/compress) for the routes registered after this.
 * Streamed answers stay streamed (the plugin pipes them through a compressor, with backpressure);
 * request bodies are not decompressed (a body limit must hold for the bytes that arrive).
 */
export async function registerCompression(app: FastifyInstance): Promise<void> {
  app.addHook('onSend', beforeCoding);
  await app.register(fastifyCompress, {
    global: true,
    globalDecompression: false,
    encodings: ['br', 'gzip', 'identity'],
    threshold: COMPRESS_MIN_BYTES,
    customTypes: compressible,
    zlibOptions: { level: GZIP_LEVEL },
    brotliOptions: {
      params: {
        [constants.BROTLI_PARAM_QUALITY]: BROTLI_QUALITY,
        [constants.BROTLI_PARAM_LGWIN]: BROTLI_WINDOW_BITS,
        [constants.BROTLI_PARAM_MODE]: constants.BROTLI_MODE_TEXT,
      },
    },
  });
  // Runs after the plugin's own onRoute hook, so this onSend comes after its compression. Fastify
  // gives a HEAD route a last onSend that drops the body; it is moved after compression, so HEAD
  // answers with the headers GET does (Content-Encoding, the ETag that names it, Content-Length).
  app.addHook('onRoute', (route) => {
    const hooks = route.onSend === undefined ? [] : [route.onSend].flat();
    const dropBody = hooks.filter((hook) => hook.name === 'headRouteOnSendHandler');
    route.onSend = [...hooks.filter((hook) => !dropBody.includes(hook)), afterCoding, ...dropBody];
  });
}
