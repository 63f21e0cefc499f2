import swagger, { type OpenAPIV3_2 } from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { FastifyInstance, FastifySchema, RouteOptions } from 'fastify';
import { VERSION } from '../config/version.ts';
import { NDJSON_TYPE } from '../http/body-parsers.ts';
import { kib, MAX_BATCH, URL_LIMIT } from '../http/limits.ts';
import { allowOnly } from '../http/methods.ts';
import { type PolicyConfig, withPolicy } from '../http/policy.ts';
import { PROBLEM_CONTENT_TYPE } from '../http/problem.ts';
import { ERROR_MEANINGS, ProblemSchema } from '../http/schemas.ts';
import { DOCS_CSP } from '../http/security-headers.ts';
import { DOCS_CSS, pageDocument, pageHead } from './docs-page.ts';
import {
  EVENT_FIELDS,
  FIELDS,
  type FieldName,
  isRecordField,
  RECORD_FIELDS,
  type RecordField,
} from '../record/fields.ts';

interface Operation {
  operationId?: string;
  security?: Array<Record<string, string[]>>;
  responses?: Record<string, unknown>;
  parameters?: Array<{
    in: string;
    name: string;
    required?: boolean;
    description?: string;
    schema?: unknown;
    example?: unknown;
  }>;
  requestBody?: unknown;
  [key: string]: unknown;
}

type Json = Record<string, unknown>;
type OpenApiObject = Json & { paths?: Record<string, Record<string, Operation>>; components?: Json };

/** How an event shows a field: the id a number, a whole number as its digits, text as text. */
function eventSchema(field: FieldName): Json {
  if (field === 'id') return { type: 'integer', minimum: 1 };
  if (!isRecordField(field)) return { type: 'string', format: 'date-time' };
  const spec = FIELDS[field];
  return spec.kind === 'text'
    ? { type: 'string' }
    : { type: 'string', pattern: `^[0-9]{1,${String(spec.max).length}}$` };
}

/**
 * POST /users's body for many records at once. A single record's body is left to the query
 * string's description, as for every other operation: the query string is the published form.
 */
function batchBody(): Json {
  const value = (field: RecordField) => {
    const spec = FIELDS[field];
    return spec.kind === 'text' ? spec.example : Number(spec.example);
  };
  const record = {
    type: 'object',
    additionalProperties: false,
    required: [...RECORD_FIELDS],
    properties: Object.fromEntries(
      RECORD_FIELDS.map((field) => {
        const spec = FIELDS[field];
        const schema =
          spec.kind === 'text'
            ? { type: 'string', minLength: spec.min, maxLength: spec.max }
            : { type: 'integer', minimum: spec.min, maximum: spec.max };
        return [field, schema];
      }),
    ),
  };
  const example = [Object.fromEntries(RECORD_FIELDS.map((field) => [field, value(field)]))];
  return {
    required: false,
    description: `Many records at once, up to ${MAX_BATCH}: a JSON array, or one record object per line. The query string then carries only \`fields\`.`,
    content: {
      'application/json': { schema: { type: 'array', maxItems: MAX_BATCH, items: record }, example },
      [NDJSON_TYPE]: {
        schema: { type: 'string', description: 'One JSON record object per line.' },
        example: example.map((item) => JSON.stringify(item)).join('\n'),
      },
    },
  };
}

/** The example event's value of a field. */
function eventExample(field: FieldName): unknown {
  if (field === 'id') return 7;
  return isRecordField(field) ? FIELDS[field].eventExample : '2026-11-23T10:00:00.000Z';
}

/** Schemas published under their `title` in components.schemas and referenced where they are used. */
const NAMED = new Set(['User', 'Users', 'GroupStats', 'UserStats', 'Problem', 'Status', 'Scope', 'Home']);

const isObject = (value: unknown): value is Json =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * The schema as the document shows it: a schema with `x-document-as` is shown as that (a number
 * checked as text by its pattern is an integer to a client), and a named one as a reference.
 */
function published(node: unknown, named: Json): unknown {
  if (Array.isArray(node)) return node.map((item) => published(item, named));
  if (!isObject(node)) return node;
  if (isObject(node['x-document-as'])) {
    const { description, examples } = node;
    return {
      ...node['x-document-as'],
      ...(description === undefined ? {} : { description }),
      ...(Array.isArray(examples) ? { examples: examples.map(Number) } : {}),
    };
  }
  const copy: Json = {};
  for (const [key, value] of Object.entries(node)) copy[key] = published(value, named);
  const title = copy.title;
  if (typeof title === 'string' && NAMED.has(title) && (copy.type === 'object' || copy.properties !== undefined)) {
    named[title] ??= copy;
    return { $ref: `#/components/schemas/${title}` };
  }
  return copy;
}

const problemContent = () => ({ [PROBLEM_CONTENT_TYPE]: { schema: { $ref: '#/components/schemas/Problem' } } });
const ALLOW_HEADER = { Allow: { description: 'The methods this path serves.', schema: { type: 'string' } } };

/** What the route schemas cannot say themselves: the pages and methods served outside them. */
const EXTRA_PATHS: Record<string, Record<string, Operation>> = {
  '/metrics': {
    get: {
      tags: ['operations'],
      operationId: 'getMetrics',
      summary: 'Metrics for Prometheus',
      description:
        'Requests, their durations and outcomes, the database calls, the process. Not rate limited, not shed.',
      responses: {
        200: {
          description: 'Prometheus text format 0.0.4.',
          content: { 'text/plain': { schema: { type: 'string' } } },
        },
        401: {
          description: 'Tokens are configured and this request had none, or a wrong one.',
          content: problemContent(),
        },
        503: { description: 'The metrics of every worker could not be gathered; retry.', content: problemContent() },
      },
    },
  },
  '/admin': {
    get: {
      tags: ['operations'],
      operationId: 'getAdminPage',
      summary: 'The admin page',
      description:
        'A web page to browse, add, edit and delete the records, live; served by the service itself, it loads nothing from elsewhere and asks for a token when the API needs one.',
      security: [],
      responses: {
        200: { description: 'The page.', content: { 'text/html': { schema: { type: 'string' } } } },
      },
    },
  },
  '/docs': {
    get: {
      tags: ['operations'],
      operationId: 'getDocsPage',
      summary: 'This document as a web page',
      description: 'Swagger UI, served by the service itself; it loads nothing from elsewhere.',
      security: [],
      responses: {
        200: { description: 'The page.', content: { 'text/html': { schema: { type: 'string' } } } },
        404: { description: 'No such file of the page.', content: problemContent() },
      },
    },
  },
};

/** `/users` and `/users/{id}` answer 405 with Allow to the methods they do not serve. */
const NOT_SERVED: Record<string, readonly string[]> = { '/users': ['put', 'patch', 'delete'], '/users/{id}': ['post'] };

function notServed(path: string, method: string): Operation {
  const name = path === '/users' ? 'Users' : 'User';
  const id = {
    in: 'path',
    name: 'id',
    required: true,
    schema: { type: 'integer', minimum: 1, maximum: Number.MAX_SAFE_INTEGER },
    example: 1,
  };
  return {
    tags: ['users'],
    ...(path.includes('{id}') ? { parameters: [id] } : {}),
    operationId: `${method}${name}NotAllowed`,
    summary: `${method.toUpperCase()} is not served here`,
    description: 'Answered 405 problem details, with `Allow` listing the methods this path serves.',
    // The token is checked before the method, as on every route that is not public.
    responses: {
      401: {
        description: 'Tokens are configured and this request had none, or a wrong one.',
        content: problemContent(),
      },
      403: { description: 'The token may only read.', content: problemContent() },
      405: {
        description: ERROR_MEANINGS[405] ?? 'Method not allowed.',
        headers: ALLOW_HEADER,
        content: problemContent(),
      },
    },
  };
}

/**
 * The document as clients and tools read it: named components, a unique operationId for every
 * operation (HEAD and OPTIONS get their own), ids, ages and pages as integers, the bodies left to
 * the descriptions (the query string is the published form, so what it requires is required),
 * security as this instance is configured, and the routes served outside the route schemas.
 */
export function shapeDocument(document: OpenApiObject, tokens: boolean): OpenApiObject {
  const named: Json = {};
  const paths: Record<string, Record<string, Operation>> = {};
  for (const [path, item] of Object.entries({ ...document.paths, ...EXTRA_PATHS })) {
    const shaped: Record<string, Operation> = {};
    for (const [method, operation] of Object.entries(item)) {
      const copy = published(operation, named) as Operation;
      delete copy.requestBody;
      if (copy.operationId === 'createUser') copy.requestBody = batchBody();
      for (const parameter of copy.parameters ?? []) {
        if (parameter.in === 'path' && parameter.name === 'id') {
          parameter.schema = { type: 'integer', minimum: 1, maximum: Number.MAX_SAFE_INTEGER };
          parameter.example = 1;
        }
        // An example of a number shown as an integer is an integer too.
        if (
          isObject(parameter.schema) &&
          parameter.schema.type === 'integer' &&
          typeof parameter.example === 'string'
        ) {
          parameter.example = Number(parameter.example);
        }
        // A docs page fills every example in: a read's optional filters, all at once, match nothing
        // or contradict each other (after with sort), so a read shows none.
        if ((method === 'get' || method === 'head') && parameter.in === 'query' && parameter.required !== true) {
          delete parameter.example;
        }
      }
      shaped[method] = copy;
    }
    if (shaped.head !== undefined && shaped.get?.operationId !== undefined) {
      shaped.head = { ...shaped.head, operationId: `${shaped.get.operationId}Head` };
    }
    // A HEAD answer has the headers of the GET and no body.
    for (const response of Object.values(shaped.head?.responses ?? {})) {
      if (isObject(response)) delete response.content;
    }
    for (const method of NOT_SERVED[path] ?? []) shaped[method] ??= notServed(path, method);
    paths[path] = shaped;
  }
  const components = isObject(document.components) ? document.components : {};
  return {
    ...document,
    servers: [{ url: '/', description: 'This service, at the address the document was read from.' }],
    // Tokens configured: every operation needs one unless it says otherwise; none: a token is optional.
    security: tokens ? [{ bearerAuth: [] }] : [{}, { bearerAuth: [] }],
    paths,
    components: { ...components, schemas: { ...(isObject(components.schemas) ? components.schemas : {}), ...named } },
  };
}

const READ_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

function problemResponse(description: string) {
  return { description, content: { [PROBLEM_CONTENT_TYPE]: { schema: ProblemSchema } } };
}

/**
 * The answers an operation may give whatever its schema says, from the policy its route declares:
 * 414 for a long URL, 429 when rate limited, 503 when it may be shed; public operations need no
 * token (`security: []`), the rest declare the 401 and, when they write, the 403 that come with
 * tokens configured.
 */
function withCommonResponses(given: { schema: FastifySchema; url: string; route: RouteOptions }) {
  const { url, route } = given;
  let schema = given.schema;
  const policy = (route.config as PolicyConfig | undefined)?.policy ?? {};
  if (route.method === 'OPTIONS') {
    // `/users/:id` → `UsersId`; `/`, the home, → `Home`.
    const name = url.replace(/[/:{}.]+(\w)?/g, (_all, next?: string) => (next ?? '').toUpperCase()) || 'Home';
    schema = {
      tags: [url.startsWith('/users') ? 'users' : 'operations'],
      operationId: `options${name}`,
      summary: 'The methods this path serves',
      description: 'No body; `Allow` lists the methods. A browser’s CORS preflight is answered before this.',
      response: {
        204: { description: 'No body; Allow lists the methods.', type: 'null', headers: { Allow: { type: 'string' } } },
      },
    };
  }
  const response: Record<string, unknown> = { ...(schema.response as Record<string, unknown> | undefined) };
  response['414'] ??= problemResponse(`The URL is longer than ${kib(URL_LIMIT)}.`);
  if (policy.rateLimited !== false) {
    response['429'] ??= problemResponse(
      'This client sent more requests this minute than RATE_LIMIT allows; retry after Retry-After seconds.',
    );
  }
  if (policy.shed !== false) response['503'] ??= problemResponse(ERROR_MEANINGS[503] ?? 'Unavailable.');
  if (policy.public === true) return { schema: { ...schema, response, security: [] }, url };
  response['401'] ??= problemResponse('Tokens are configured and this request had none, or a wrong one.');
  const methods = Array.isArray(route.method) ? route.method : [route.method];
  if (methods.some((method) => !READ_METHODS.has(method))) {
    response['403'] ??= problemResponse('The token may only read.');
  }
  return { schema: { ...schema, response }, url };
}

/**
 * The OpenAPI 3.1 document, generated from the route schemas that validate requests, at
 * `/openapi.json`, and a Swagger UI page for it at `/docs` that loads nothing from the internet.
 */
/** The webhook each receiver in WEBHOOK_URLS gets, one per change, for the document's `webhooks`. */
const WEBHOOKS: NonNullable<OpenAPIV3_2.Document['webhooks']> = {
  userChanged: {
    post: {
      operationId: 'userChanged',
      summary: 'A record was created, updated or deleted',
      description:
        'POSTed to every URL in WEBHOOK_URLS for every change, in change-version order per URL, at least once (dedupe by `webhook-id`). Signed per Standard Webhooks with WEBHOOK_SECRET: verify with the `standardwebhooks` package. A 2xx answer takes it; anything else, or no answer within WEBHOOK_TIMEOUT_MS, is retried with backoff for 24 hours. See docs/changes.md.',
      tags: ['users'],
      parameters: [
        {
          name: 'webhook-id',
          in: 'header',
          required: true,
          description: 'The delivery id, `msg_` and the change version; the same on every retry.',
          schema: { type: 'string', examples: ['msg_42'] },
        },
        {
          name: 'webhook-timestamp',
          in: 'header',
          required: true,
          description: 'When this attempt was sent, in seconds since the epoch.',
          schema: { type: 'string', examples: ['1795400000'] },
        },
        {
          name: 'webhook-signature',
          in: 'header',
          required: true,
          description: '`v1,` and the base64 HMAC-SHA256 of `id.timestamp.body` with the secret.',
          schema: { type: 'string' },
        },
      ],
      requestBody: {
        required: true,
        content: {
          'application/json': {
            schema: {
              type: 'object',
              additionalProperties: false,
              required: ['type', 'timestamp', 'data'],
              properties: {
                type: { type: 'string', enum: ['user.created', 'user.updated', 'user.deleted'] },
                timestamp: { type: 'string', format: 'date-time', description: 'When the change was committed.' },
                data: {
                  type: 'object',
                  additionalProperties: false,
                  required: [...EVENT_FIELDS],
                  description: 'The record after the change; for a deletion, as it was.',
                  properties: Object.fromEntries(EVENT_FIELDS.map((field) => [field, eventSchema(field)])),
                },
              },
            },
            examples: {
              created: {
                value: {
                  type: 'user.created',
                  timestamp: '2026-11-23T10:00:00.000Z',
                  data: Object.fromEntries(EVENT_FIELDS.map((field) => [field, eventExample(field)])),
                },
              },
            },
          },
        },
      },
      responses: {
        '200': { description: 'Taken (any 2xx will do).' },
        default: { description: 'Not taken: retried with backoff for 24 hours.' },
      },
    },
  },
};

/** How this instance authenticates, for the document's security: tokens required, and whether they may be JWTs. */
export interface DocsAuth {
  tokens: boolean;
  jwt: boolean;
}

/** The bearer scheme as this instance takes tokens: with JWT on, it says the format (`bearerFormat: JWT`). */
function bearerScheme(jwt: boolean) {
  return {
    type: 'http' as const,
    scheme: 'bearer',
    ...(jwt ? { bearerFormat: 'JWT' } : {}),
    description: jwt
      ? 'A JWT from the identity provider (its scopes name what it may do: read, or write and read), or an API token (read or write), when tokens are configured.'
      : 'A read token (GET, HEAD) or a write token (everything), when tokens are configured.',
  };
}

export async function registerDocs(app: FastifyInstance, auth: DocsAuth): Promise<void> {
  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'user-records',
        version: VERSION,
        description: `Stores and serves user records (${RECORD_FIELDS.join(', ')}). The unversioned paths are version 1 and stay compatible. Errors are RFC 9457 problem details. \`POST\`, \`PUT\` and \`PATCH\` take their fields in the query string, as documented here, or instead as a JSON or form body (never both). Every path answers 405 with \`Allow\` to a method it does not serve, and \`OPTIONS\` with the methods it serves.`,
        license: { name: 'MIT', identifier: 'MIT' },
      },
      // Every change is also POSTed to each of WEBHOOK_URLS, signed per Standard Webhooks.
      webhooks: WEBHOOKS,
      tags: [
        { name: 'users', description: 'The user records' },
        { name: 'operations', description: 'Health and documentation' },
      ],
      // Enforced only when the service has tokens configured (API_TOKENS); the docs page can send one.
      components: { securitySchemes: { bearerAuth: bearerScheme(auth.jwt) } },
    },
    exposeHeadRoutes: true,
    transform: withCommonResponses,
    transformObject: (documentObject) =>
      'openapiObject' in documentObject
        ? shapeDocument(documentObject.openapiObject as OpenApiObject, auth.tokens)
        : documentObject.swaggerObject,
  });
  // The docs page's routes are Swagger UI's; they get their policy as they are added.
  await app.register(async (docs) => {
    docs.addHook('onRoute', (route) => {
      route.config = { ...route.config, ...withPolicy({ public: true, pageCsp: DOCS_CSP }).config };
    });
    // Swagger UI's index.html has no option for a viewport or an SVG icon: added as it is sent.
    docs.addHook('onSend', async (_request, reply, payload) =>
      typeof payload === 'string' && String(reply.getHeader('content-type')).startsWith('text/html')
        ? pageHead(payload)
        : payload,
    );
    await docs.register(swaggerUi, {
      routePrefix: '/docs',
      // Layout without Swagger's top bar (its logo, a box to load another document).
      uiConfig: { docExpansion: 'list', deepLinking: true, validatorUrl: null, layout: 'BaseLayout' },
      theme: { title: `user-records ${VERSION}: API`, css: [{ filename: 'docs.css', content: DOCS_CSS }] },
      transformSpecification: (document) => pageDocument(document),
    });
  });
  const openapi = withPolicy({ public: true });
  app.get(
    '/openapi.json',
    {
      ...openapi,
      schema: {
        tags: ['operations'],
        operationId: 'getOpenApi',
        summary: 'This document',
        description: 'Generated from the schemas that check every request; security as this instance is configured.',
        response: { 200: { description: 'OpenAPI 3.1, as JSON.', type: 'object', additionalProperties: true } },
      },
    },
    async () => app.swagger(),
  );
  allowOnly(app, '/openapi.json', ['GET'], openapi.config.policy);
}
