import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import { VERSION } from '../config/version.ts';
import { allowOnly } from '../http/methods.ts';
import { withPolicy } from '../http/policy.ts';
import { problemResponses } from '../http/schemas.ts';
import { HOME_CSP, JSON_HEADERS } from '../http/security-headers.ts';
import { RECORD_FIELDS } from '../record/fields.ts';
import { prefersHtml } from './accept.ts';

/** Where a newcomer goes from `/`: each link once, for the page and for the JSON alike. */
const LINKS = [
  { rel: 'admin', href: '/admin', text: 'the admin page: browse, add, edit and delete the records, live' },
  { rel: 'docs', href: '/docs', text: 'the API documented (Swagger UI), with its OpenAPI document' },
  { rel: 'openapi', href: '/openapi.json', text: 'the OpenAPI 3.1 document itself' },
  { rel: 'users', href: '/users', text: 'the records, as JSON' },
  { rel: 'events', href: '/users/events', text: 'every change as it happens (Server-Sent Events)' },
  { rel: 'health', href: '/healthz', text: 'liveness: the process answers' },
] as const;

/** The settings are documented in the package, not served: this names the file and section. */
const SETTINGS_FILE = 'docs/operations.md';
const SETTINGS = `${SETTINGS_FILE}#settings`;

const Home = Type.Object(
  {
    name: Type.Literal('user-records'),
    version: Type.String({ description: 'The version of the service.' }),
    links: Type.Object(
      Object.fromEntries(
        LINKS.map((link) => [link.rel, Type.String({ description: link.text, examples: [link.href] })]),
      ),
      { additionalProperties: false },
    ),
    settings: Type.Literal(SETTINGS, {
      description: 'Where the settings are described, in the package (also: `user-records serve --help`).',
    }),
  },
  { title: 'Home', additionalProperties: false },
);

const BODY = {
  name: 'user-records',
  version: VERSION,
  links: Object.fromEntries(LINKS.map((link) => [link.rel, link.href])),
  settings: SETTINGS,
};

/** The page: the admin page's stylesheet and icon, no script at all (HOME_CSP allows none). */
const PAGE = `<!doctype html>
<html lang="en">
  <head>
    <meta charset="utf-8" />
    <meta name="viewport" content="width=device-width, initial-scale=1" />
    <title>user-records</title>
    <link rel="icon" href="/admin/icon.svg" type="image/svg+xml" />
    <link rel="stylesheet" href="/admin/app.css" />
  </head>
  <body>
    <header><h1>user-records</h1><p class="live">version ${VERSION}</p></header>
    <main>
      <p>This service stores and serves user records (${RECORD_FIELDS.join(', ')}). Where to go from here:</p>
      <ul>
${LINKS.map((link) => `        <li><a href="${link.href}">${link.href}</a>: ${link.text}</li>`).join('\n')}
      </ul>
      <h2>Settings</h2>
      <p>Every setting is an environment variable and a command-line flag, listed by
        <code>npx user-records serve --help</code> and described in the package's
        <code>${SETTINGS_FILE}</code>, section Settings.</p>
      <p>When the service has tokens configured (<code>API_TOKENS</code>), <code>/users</code> and
        <code>/users/events</code> need one; this page, <code>/docs</code> and <code>/admin</code> do not
        (the admin page asks for one).</p>
    </main>
  </body>
</html>
`;

/**
 * `/`: where a newcomer starts. A browser (Accept preferring text/html) gets a small page of
 * links; an API client (application/json, the wildcard of every type, or no Accept) gets the same
 * links as JSON.
 * Public, as the docs and admin pages are: it holds no data.
 */
export function registerHome(app: FastifyInstance): void {
  const policy = withPolicy({ public: true, pageCsp: HOME_CSP });
  app.get(
    '/',
    {
      ...policy,
      schema: {
        tags: ['operations'],
        operationId: 'getHome',
        summary: 'Where to start: links to the pages and the API',
        description:
          'A browser (`Accept` preferring `text/html`) gets a small page of links; any other client gets them as JSON. No token needed.',
        response: {
          200: {
            description: 'The links: as JSON, or as a page for a browser.',
            headers: { Vary: { type: 'string', description: '`Accept`: the answer depends on it.' } },
            content: { 'application/json': { schema: Home }, 'text/html': { schema: { type: 'string' } } },
          },
          ...problemResponses(400),
        },
      },
    },
    async (request, reply) => {
      reply.header('vary', 'accept');
      if (prefersHtml(request.headers.accept)) return reply.type('text/html; charset=utf-8').send(PAGE);
      // The route carries the page's CSP; a JSON answer gets the JSON one, which allows nothing.
      if (reply.hasHeader('content-security-policy')) {
        reply.header('content-security-policy', JSON_HEADERS['content-security-policy']);
      }
      return BODY;
    },
  );
  allowOnly(app, '/', ['GET'], policy.config.policy);
}
