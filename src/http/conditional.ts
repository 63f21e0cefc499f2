import { createHash } from 'node:crypto';
import { Readable } from 'node:stream';
import type { FastifyInstance, onSendHookHandler } from 'fastify';

interface EntityTag {
  weak: boolean;
  opaque: string;
}

/** Parses an If-Match / If-None-Match value: `*` or a list of entity tags; junk is ignored. */
export function parseEntityTags(header: string): '*' | EntityTag[] {
  if (header.trim() === '*') return '*';
  const tags: EntityTag[] = [];
  for (const match of header.matchAll(/(W\/)?("[^"]*")/g)) {
    tags.push({ weak: match[1] !== undefined, opaque: match[2] as string });
  }
  return tags;
}

/** The content codings an answer may carry (compression.ts), named at the end of its ETag. */
const CODED = /-(?:gzip|br)"$/;

/** The ETag of an answer sent with content coding `coding`: `"abc"` becomes `"abc-gzip"`, `W/"abc"` `W/"abc-gzip"`. */
export function codedEtag(etag: string, coding: string): string {
  return `${etag.slice(0, -1)}-${coding}"`;
}

/** An entity tag's opaque part without its coding suffix: the tag of the same content uncompressed. */
export function uncodedOpaque(opaque: string): string {
  return opaque.replace(CODED, '"');
}

/** If-None-Match uses weak comparison; false means the client's copy is current (answer 304). */
function ifNoneMatchHolds(header: string, etag: string): boolean {
  const tags = parseEntityTags(header);
  if (tags === '*') return false;
  const opaque = etag.startsWith('W/') ? etag.slice(2) : etag;
  return !tags.some((tag) => tag.opaque === opaque);
}

/** Whether If-None-Match names this content in some coding: a 304 is possible once the coding is known. */
function mayMatch(header: string, etag: string): boolean {
  const tags = parseEntityTags(header);
  if (tags === '*') return true;
  const opaque = etag.startsWith('W/') ? etag.slice(2) : etag;
  return tags.some((tag) => tag.opaque === opaque || uncodedOpaque(tag.opaque) === opaque);
}

/** Short bodies answered again and again (health, a small page) keep their hash. */
const SMALL = 256;
const recent = new Map<string, string>();

/** A strong ETag that names exactly this content: a hash of it. */
export function contentEtag(payload: string | Buffer): string {
  const small = typeof payload === 'string' && payload.length <= SMALL;
  const known = small ? recent.get(payload) : undefined;
  if (known !== undefined) return known;
  const etag = `"${createHash('sha1').update(payload).digest('base64url')}"`;
  if (small) {
    if (recent.size >= 64) recent.clear();
    recent.set(payload, etag);
  }
  return etag;
}

/** Answers whose If-None-Match may match, to compare again once their coding is known. */
const revalidated = new WeakSet<object>();

/**
 * Every successful GET (and HEAD) answers an ETag: the one a route set (a record's version), or a
 * hash of the body, set before compression. A matching If-None-Match turns the answer into a 304
 * with no body, decided after compression (compression.ts, registered before this), which names
 * the coding in the ETag: the 304 carries the very ETag the full answer would.
 */
export function registerConditionalGet(app: FastifyInstance): void {
  app.addHook('onSend', (request, reply, payload, done) => {
    if ((request.method !== 'GET' && request.method !== 'HEAD') || reply.statusCode !== 200) return done(null, payload);
    const whole = typeof payload === 'string' || Buffer.isBuffer(payload);
    let etag = reply.getHeader('etag');
    if (typeof etag !== 'string') {
      // A streamed body cannot be hashed before it is sent; its route sets the ETag.
      if (!whole) return done(null, payload);
      etag = contentEtag(payload);
      reply.header('etag', etag);
    }
    const ifNoneMatch = request.headers['if-none-match'];
    if (ifNoneMatch !== undefined && mayMatch(ifNoneMatch, etag)) revalidated.add(reply);
    done(null, payload);
  });
  // Route hooks run after the app's, and this one after compression's, registered before it.
  const notModified: onSendHookHandler = (request, reply, payload, done) => {
    const etag = reply.getHeader('etag');
    const ifNoneMatch = request.headers['if-none-match'];
    if (!revalidated.has(reply) || typeof etag !== 'string' || ifNoneMatch === undefined) return done(null, payload);
    if (ifNoneMatchHolds(ifNoneMatch, etag)) return done(null, payload);
    if (payload instanceof Readable) payload.destroy();
    reply.code(304);
    reply.removeHeader('content-type');
    reply.removeHeader('content-length');
    reply.removeHeader('content-encoding');
    done(null, '');
  };
  app.addHook('onRoute', (route) => {
    route.onSend = [...(route.onSend === undefined ? [] : [route.onSend].flat()), notModified];
  });
}
