/**
 * The security headers, computed once and set on every answer as one set (see gate.ts): a JSON
 * body is never a document to render, so its Content-Security-Policy allows nothing, and it may
 * not be sniffed, framed, or read by other origins' no-cors loads. HTML pages (the docs page)
 * get their own CSP and the headers that only documents need.
 * HSTS is left to the TLS proxy in front, which alone knows whether the whole host is HTTPS-only.
 * Cross-Origin-Resource-Policy stays same-origin even with CORS on: it governs no-cors loads only.
 */
export const JSON_HEADERS: Readonly<Record<string, string>> = Object.freeze({
  'content-security-policy': "default-src 'none';frame-ancestors 'none'",
  'x-content-type-options': 'nosniff',
  'x-frame-options': 'DENY',
  'referrer-policy': 'no-referrer',
  'cross-origin-resource-policy': 'same-origin',
  'cross-origin-opener-policy': 'same-origin',
});

/** The headers of an HTML page: the JSON set with the page's own CSP, and the document-only ones. */
export function pageHeaders(csp: string): Readonly<Record<string, string>> {
  return Object.freeze({
    ...JSON_HEADERS,
    'content-security-policy': csp,
    'origin-agent-cluster': '?1',
    'x-dns-prefetch-control': 'off',
    'x-permitted-cross-domain-policies': 'none',
  });
}

/**
 * The `<style>` inside Swagger UI's inline logo SVG (swagger-ui-dist 5.34, as pinned);
 * test/ops/docs.test.ts fails on any CSP violation, so a version that changes it is noticed.
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
 * The Content-Security-Policy of the admin page (`/admin`): its one script and one stylesheet, and
 * requests to this service only. No inline script or style, no frames, no form posts.
 */
export const ADMIN_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "script-src-attr 'none'",
  "style-src 'self'",
  "img-src 'self'",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

/**
 * The Content-Security-Policy of the start page (`/`): links, the admin page's stylesheet and
 * icon, and no script at all.
 */
export const HOME_CSP = [
  "default-src 'none'",
  "style-src 'self'",
  "img-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');
