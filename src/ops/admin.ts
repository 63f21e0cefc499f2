import { createHash } from 'node:crypto';
import type { FastifyInstance, FastifyReply } from 'fastify';
import { allowOnly } from '../http/methods.ts';
import { withPolicy } from '../http/policy.ts';
import { ADMIN_CSP } from '../http/security-headers.ts';
import { type AdminAssets, adminAssets } from './admin-assets.ts';

/** Each file of the page: its path, its type, and which of the assets it is. */
const FILES = [
  { url: '/admin', type: 'text/html; charset=utf-8', key: 'html' },
  { url: '/admin/', type: 'text/html; charset=utf-8', key: 'html' },
  { url: '/admin/app.js', type: 'text/javascript; charset=utf-8', key: 'js' },
  { url: '/admin/app.css', type: 'text/css; charset=utf-8', key: 'css' },
  { url: '/admin/icon.svg', type: 'image/svg+xml', key: 'icon' },
] as const;

const etags = new WeakMap<AdminAssets, Record<string, string>>();

function etagOf(assets: AdminAssets, key: keyof AdminAssets): string {
  let known = etags.get(assets);
  if (known === undefined) {
    known = {};
    etags.set(assets, known);
  }
  known[key] ??= `"${createHash('sha256').update(assets[key]).digest('base64url').slice(0, 27)}"`;
  return known[key];
}

/**
 * The admin page at `/admin` (admin/README.md): public, as the docs page is (it holds no data: it
 * asks for a token when the API needs one), under its own strict CSP. Browsers check each file
 * again on use (no-cache) and get a 304 while it is unchanged.
 */
export function registerAdmin(app: FastifyInstance): void {
  const policy = withPolicy({ public: true, pageCsp: ADMIN_CSP });
  for (const file of FILES) {
    app.get(file.url, { ...policy, schema: { hide: true } }, async (_request, reply: FastifyReply) => {
      const assets = await adminAssets();
      return reply
        .type(file.type)
        .header('cache-control', 'no-cache')
        .header('etag', etagOf(assets, file.key))
        .send(assets[file.key]);
    });
  }
  // The page's own path answers OPTIONS and 405 as every documented path does; its files, like
  // the docs page's, are not paths of the API.
  allowOnly(app, '/admin', ['GET'], policy.config.policy);
}
