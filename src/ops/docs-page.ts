/**
 * What the /docs page shows of the OpenAPI document. The published document (/openapi.json, from
 * which the typed client is generated) lists every method every path answers, HEAD, OPTIONS and the
 * 405s included, as a client or a tool needs it. A reader needs the operations to call, in the order
 * to learn them, and the rest said once in words: the page gets that copy, at /docs/json.
 */

type Json = Record<string, unknown>;
type Operation = Json & { operationId?: string; tags?: string[]; description?: string; responses?: Json };
type PathItem = Record<string, Operation>;

/** The methods a reader calls; HEAD and OPTIONS are said in the introduction instead. */
const CALLED = new Set(['get', 'post', 'put', 'patch', 'delete']);

/**
 * The order a user learns the operations in: the records (list, create, read one, replace, patch,
 * delete), counts by group, the event stream, then running the service. An operation missing here comes after them.
 */
export const PAGE_ORDER: readonly string[] = [
  'listUsers',
  'createUser',
  'getUser',
  'replaceUser',
  'updateUser',
  'deleteUser',
  'userStats',
  'streamUserEvents',
  'getLiveness',
  'getReadiness',
  'getMetrics',
  'getOpenApi',
  'getTokenScope',
  'getHome',
  'getAdminPage',
  'getDocsPage',
];

const INTRODUCTION = `

**On this page:** the operations to call, in the order to learn them. Every \`GET\` also answers \`HEAD\` (the same status and headers, no body); every path answers \`OPTIONS\` with \`204\` and \`Allow\`, and a method it does not serve (\`PUT\`, \`PATCH\`, \`DELETE\` on \`/users\`, \`POST\` on \`/users/{id}\`) with a \`405\` problem and \`Allow\`. The whole document, each of those as an operation, is [/openapi.json](/openapi.json); the typed client is generated from it.`;

const isObject = (value: unknown): value is Json =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

const rank = (operation: Operation) => {
  const place = PAGE_ORDER.indexOf(operation.operationId ?? '');
  return place === -1 ? PAGE_ORDER.length : place;
};

/** An operation that only ever refuses (a method the path does not serve) has no 2xx answer. */
const succeeds = (operation: Operation) => Object.keys(operation.responses ?? {}).some((code) => code.startsWith('2'));

/** An answer that never ends: the page shows how to follow it instead (and DOCS_CSS hides its Try it out). */
const streams = (operation: Operation) =>
  Object.values(operation.responses ?? {}).some(
    (response) => isObject(response) && isObject(response.content) && 'text/event-stream' in response.content,
  );

/** The stream's examples: a line for a shell, one for a web page, and what arrives. */
function streamExamples(sample: unknown): string {
  const event = isObject(sample) ? sample : {};
  const type = typeof event.type === 'string' ? event.type : 'user.created';
  const id = isObject(event.data) && typeof event.data.id === 'number' ? event.data.id : 1;
  return [
    '',
    '',
    'From a shell (`-N` prints each event as it arrives; add `-H "Authorization: Bearer $TOKEN"` when tokens are configured):',
    '',
    '```sh',
    'curl -N http://localhost:3000/users/events',
    '```',
    '',
    'From a web page of this origin (an `EventSource` cannot send a token):',
    '',
    '```js',
    "const events = new EventSource('/users/events');",
    "for (const type of ['user.created', 'user.updated', 'user.deleted']) {",
    '  events.addEventListener(type, (event) => console.log(event.lastEventId, JSON.parse(event.data)));',
    '}',
    '```',
    '',
    'What arrives (after a `retry:` line and a comment):',
    '',
    '```text',
    `id: ${id}`,
    `event: ${type}`,
    `data: ${JSON.stringify(event)}`,
    '',
    ': keep-alive',
    '```',
  ].join('\n');
}

/** The webhook's example body, which is also what the stream's `data:` carries. */
function sampleEvent(document: Json): unknown {
  let node: unknown = document;
  for (const key of ['webhooks', 'userChanged', 'post', 'requestBody', 'content', 'application/json', 'examples']) {
    node = isObject(node) ? node[key] : undefined;
  }
  return isObject(node)
    ? Object.values(node).map((example) => (isObject(example) ? example.value : undefined))[0]
    : undefined;
}

/** The page's copy of the document: the called operations in PAGE_ORDER, the rest said in words. */
/**
 * An operation as the page shows it: without a request body. The one body the document has (many
 * records at once, POST /users) would be sent by "Try it out" beside the query string's record,
 * which the service refuses; the operation's description says how to send many.
 */
function withoutBody(operation: Operation): Operation {
  if (operation.requestBody === undefined) return operation;
  const shown = { ...operation };
  delete shown.requestBody;
  return shown;
}

export function pageDocument(document: Json): Json {
  const paths = isObject(document.paths) ? (document.paths as Record<string, PathItem>) : {};
  const shown: Array<[string, PathItem, number]> = [];
  for (const [path, item] of Object.entries(paths)) {
    const operations = Object.entries(item)
      .filter(([method, operation]) => CALLED.has(method) && isObject(operation) && succeeds(operation))
      .sort(([, a], [, b]) => rank(a) - rank(b))
      .map(([method, operation]): [string, Operation] =>
        streams(operation)
          ? [
              method,
              {
                ...operation,
                description: `${operation.description ?? ''}${streamExamples(sampleEvent(document))}`,
              },
            ]
          : [method, withoutBody(operation)],
      );
    if (operations.length === 0) continue;
    shown.push([path, Object.fromEntries(operations), Math.min(...operations.map(([, operation]) => rank(operation)))]);
  }
  shown.sort((a, b) => a[2] - b[2]);
  const info = isObject(document.info) ? document.info : {};
  return {
    ...document,
    info: { ...info, description: `${typeof info.description === 'string' ? info.description : ''}${INTRODUCTION}` },
    paths: Object.fromEntries(shown.map(([path, item]) => [path, item])),
  };
}

/**
 * The page's stylesheet. Swagger UI's stock layout is made for a desktop: these rules let it wrap
 * on a phone (no sideways scroll at 390 px). The event stream never ends, and the page shows an
 * answer only once it has: its Try it out is hidden, its description shows how to follow it.
 */
export const DOCS_CSS = `
#operations-users-streamUserEvents .try-out { display: none; }
.swagger-ui .wrapper { padding: 0 12px; box-sizing: border-box; }
.swagger-ui .info .title small { word-break: break-all; }
.swagger-ui pre, .swagger-ui .microlight { white-space: pre-wrap; word-break: break-word; overflow-x: auto; max-width: 100%; }
@media (max-width: 600px) {
  .swagger-ui .information-container .info { margin: 16px 0; }
  .swagger-ui .opblock .opblock-summary { flex-wrap: wrap; }
  .swagger-ui .opblock .opblock-summary-path { max-width: 100%; word-break: break-all; flex: 1 1 auto; }
  .swagger-ui .opblock .opblock-summary-description { flex-basis: 100%; }
  .swagger-ui .scheme-container .schemes { flex-wrap: wrap; }
  .swagger-ui .servers > label { margin-right: 0; max-width: 100%; }
  .swagger-ui .servers > label select { max-width: 100%; }
  .swagger-ui table { display: block; overflow-x: auto; max-width: 100%; }
  .swagger-ui .parameters-col_description input, .swagger-ui .parameters-col_description select { max-width: 100%; }
  .swagger-ui .model-box, .swagger-ui .responses-inner { overflow-x: auto; }
}
`;

/**
 * Swagger UI's index.html, with what its plugin has no option for: a viewport, so a phone lays it
 * out at its own width, and the service's icon (the admin page's) in place of Swagger's.
 */
export function pageHead(html: string): string {
  return html
    .replace(
      '<meta charset="UTF-8">',
      '<meta charset="UTF-8">\n<meta name="viewport" content="width=device-width, initial-scale=1">',
    )
    .replace(/<link rel="icon"[^>]*>\s*/g, '')
    .replace('</head>', '<link rel="icon" type="image/svg+xml" href="/admin/icon.svg">\n</head>');
}
