import helmet, { type FastifyHelmetOptions } from '@fastify/helmet';
import type { FastifyInstance } from 'fastify';
import { registerCors } from './cors.ts';

/**
 * The `<style>` inside Swagger UI's inline logo SVG (swagger-ui-dist 5.34, as pinned);
 * test/docs.test.ts fails on any CSP violation, so a version that changes it is noticed.
 */
const SWAGGER_LOGO_STYLE = "'sha256-RL3ie0nH+Lzz2YNqQN83mnU0J1ot4QL7b99vMdIX99w='";

/**
 * The Content-Security-Policy of the docs page (`/docs`): its own scripts, styles and images and
 * nothing from anywhere else. Swagger UI draws its icons as data: SVGs in its stylesheet.
 */
export const DOCS_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "script-src-attr 'none'",
  `style-src 'self' ${SWAGGER_LOGO_STYLE}`,
  "img-src 'self' data:",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

/**
 * The essentials of the headers below, for the few answers written before any hook runs (a URL
 * Fastify cannot decode, HTTP that Node cannot parse, a refused Expect): a problem body still
 * gets no chance to be rendered, sniffed or framed.
 */
export const EARLY_ANSWER_HEADERS: Readonly<Record<string, string>> = {
  'content-security-policy': "default-src 'none';frame-ancestors 'none'",
  'x-content-type-options': 'nosniff',
  'x-frame-options': 'DENY',
  'referrer-policy': 'no-referrer',
  'cross-origin-resource-policy': 'same-origin',
  'cross-origin-opener-policy': 'same-origin',
};

/**
 * Headers for JSON answers. A JSON body is never a document to render, so its CSP allows nothing.
 * HSTS is off: the service speaks plain HTTP and usually sits behind a TLS proxy, which alone knows
 * whether the whole host is HTTPS-only (browsers ignore HSTS over plain HTTP anyway).
 * Cross-Origin-Resource-Policy stays same-origin even with CORS on: it only governs no-cors loads
 * (img, script, embedding), while fetch() from an allowed origin is governed by CORS alone.
 */
const HELMET_OPTIONS: FastifyHelmetOptions = {
  contentSecurityPolicy: { useDefaults: false, directives: { defaultSrc: ["'none'"], frameAncestors: ["'none'"] } },
  strictTransportSecurity: false,
  xFrameOptions: { action: 'deny' },
  referrerPolicy: { policy: 'no-referrer' },
  crossOriginResourcePolicy: { policy: 'same-origin' },
  crossOriginOpenerPolicy: { policy: 'same-origin' },
};

/**
 * Security headers on every answer that goes through routing (problems and 404s included), then
 * CORS when origins are configured. Registered before the limits, so a 429 carries them too and a
 * browser can read it.
 */
export async function registerSecurityHeaders(app: FastifyInstance, corsOrigins: readonly string[]): Promise<void> {
  await app.register(helmet, HELMET_OPTIONS);
  await registerCors(app, corsOrigins);
}
