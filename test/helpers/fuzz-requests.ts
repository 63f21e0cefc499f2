/**
 * fast-check arbitraries for hostile requests to the service, their encoding to bytes, and what a
 * write may store if the service accepts it. Values meant to be stored start with a marker, so the
 * logs can be searched for all of them at once.
 */
import fc from 'fast-check';

export const FIELDS = ['name', 'age', 'city'] as const;
export type Field = (typeof FIELDS)[number];

/** One query or form parameter; `garbage` replaces its proper encoding with malformed text. */
export interface Param {
  name: string;
  value: string;
  garbage?: string;
}

export type Target =
  | { kind: 'collection' }
  | { kind: 'known'; pick: number }
  | { kind: 'gone'; pick: number }
  | { kind: 'path'; path: string };

export type Body =
  | { kind: 'none' }
  | { kind: 'json'; entries: [string, unknown][]; badUtf8: boolean }
  | { kind: 'form'; params: Param[] }
  | { kind: 'text'; text: string }
  | { kind: 'bytes'; bytes: Uint8Array }
  | { kind: 'huge'; size: number };

export interface FuzzRequest {
  method: string;
  /** Which of the context's authorizations to send (when it has tokens). */
  auth: number;
  target: Target;
  params: Param[];
  contentType: string | undefined;
  headers: [string, string][];
  body: Body;
  chunked: boolean;
  http10: boolean;
  noHost: boolean;
}

/** What the fuzz run knows when it turns a request into bytes. */
export interface Context {
  live: readonly number[];
  gone: readonly number[];
  /** Extra headers for every request (a token), if any. */
  authorization: (pick: number) => string | undefined;
}

/** True about once in `odds + 1` draws. */
function rarely(odds: number): fc.Arbitrary<boolean> {
  return fc.nat({ max: odds }).map((n) => n === 0);
}

/** Builds the arbitraries; `mark` starts every name and city meant to be stored (≥ 4 characters). */
export function requestArbitrary(mark: string, tokens: readonly string[]): fc.Arbitrary<FuzzRequest> {
  const text = fc.oneof(
    { weight: 6, arbitrary: fc.string({ maxLength: 12 }).map((tail) => `${mark}${tail}`) },
    { weight: 2, arbitrary: fc.string({ unit: 'grapheme', maxLength: 10 }).map((tail) => ` ${mark}${tail}  `) },
    { weight: 1, arbitrary: fc.string({ unit: 'binary', maxLength: 10 }).map((tail) => `${mark}${tail}`) },
    { weight: 1, arbitrary: fc.nat({ max: 260 }).map((n) => `${mark}${'é'.repeat(n)}`) },
    { weight: 1, arbitrary: fc.constantFrom('', ' ', '\t', `${mark}\u0000x`, `${mark}\u0085`, `${mark}\u{1F600}`) },
  );
  const age = fc.oneof(
    { weight: 6, arbitrary: fc.integer({ min: 0, max: 150 }).map(String) },
    {
      weight: 2,
      arbitrary: fc.constantFrom('-1', '151', '007', '1e2', '30.0', ' 30', '0x1f', '', '١٢', '999999999999999999999'),
    },
    { weight: 1, arbitrary: fc.string({ maxLength: 5 }) },
  );
  const otherName = fc.constantFrom(
    'fields',
    'limit',
    'after',
    '__proto__',
    'constructor',
    'prototype',
    'name[]',
    'hasOwnProperty',
    'Name',
    'toString',
    'x',
  );
  const otherValue = fc.oneof(
    fc.constantFrom('id,name,age,city', 'id', 'name,createdAt,updatedAt', 'bogus', '', '10', '0', '1001', '5'),
    fc.string({ maxLength: 8 }),
  );
  const garbage = fc.constantFrom('%', '%zz', '%C3', '%ED%A0%80', '%FF%FE', '%C0%AF', '%E2%82', '%0', '%%41');
  const param: fc.Arbitrary<Param> = fc.oneof(
    { weight: 3, arbitrary: fc.record({ name: fc.constant('name'), value: text }) },
    { weight: 3, arbitrary: fc.record({ name: fc.constant('age'), value: age }) },
    { weight: 3, arbitrary: fc.record({ name: fc.constant('city'), value: text }) },
    { weight: 2, arbitrary: fc.record({ name: otherName, value: otherValue }) },
    {
      weight: 1,
      arbitrary: fc.record({ name: fc.constantFrom(...FIELDS), value: fc.constant(''), garbage }),
    },
  );
  const fullInput = fc.tuple(text, age, text).map(([name, years, city]): Param[] => [
    { name: 'name', value: name },
    { name: 'age', value: years },
    { name: 'city', value: city },
  ]);
  const params = fc.oneof(
    { weight: 8, arbitrary: fullInput },
    { weight: 3, arbitrary: fc.array(param, { maxLength: 5 }) },
    { weight: 1, arbitrary: fc.tuple(fullInput, fc.array(param, { maxLength: 2 })).map(([a, b]) => [...a, ...b]) },
  );

  const jsonValue = (field: string): fc.Arbitrary<unknown> =>
    field === 'age'
      ? fc.oneof(fc.integer({ min: -2, max: 152 }), age, fc.constantFrom(30.5, 1e2, null, true, [], {}, '30'))
      : fc.oneof({ weight: 5, arbitrary: text }, { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 3 }) });
  const entry = fc.oneof(
    { weight: 6, arbitrary: fc.constantFrom(...FIELDS).chain((key) => jsonValue(key).map((v) => [key, v])) },
    {
      weight: 1,
      arbitrary: fc.tuple(
        fc.constantFrom('__proto__', 'constructor', 'prototype', 'id', 'fields', 'Name', ''),
        fc.oneof(fc.jsonValue({ maxDepth: 2 }), fc.constant({ prototype: { polluted: 1 } })),
      ),
    },
  ) as fc.Arbitrary<[string, unknown]>;
  const fullJson = fc
    .tuple(jsonValue('name'), jsonValue('age'), jsonValue('city'))
    .map(([n, a, c]): [string, unknown][] => [
      ['name', n],
      ['age', a],
      ['city', c],
    ]);
  const deep = fc
    .tuple(fc.integer({ min: 10, max: 30_000 }), fc.constantFrom('[', '{"a":'))
    .map(([depth, open]) => `{"name":${open.repeat(depth)}1${(open === '[' ? ']' : '}').repeat(depth)}}`);
  const body: fc.Arbitrary<Body> = fc.oneof(
    { weight: 10, arbitrary: fc.constant({ kind: 'none' as const }) },
    {
      weight: 5,
      arbitrary: fc.record({
        kind: fc.constant('json' as const),
        entries: fc.oneof(
          { weight: 3, arbitrary: fullJson },
          { weight: 1, arbitrary: fc.array(entry, { maxLength: 5 }) },
        ),
        badUtf8: rarely(6),
      }),
    },
    { weight: 2, arbitrary: fc.record({ kind: fc.constant('form' as const), params }) },
    {
      weight: 2,
      arbitrary: fc.record({
        kind: fc.constant('text' as const),
        text: fc.oneof(
          fc.constantFrom('null', '[]', '"x"', '1', 'true', '{', '{"name":', '  ', '{}', '{"a":1}{"b":2}', '\ufeff{}'),
          deep,
          fc.string({ maxLength: 40 }),
        ),
      }),
    },
    {
      weight: 1,
      arbitrary: fc.record({ kind: fc.constant('bytes' as const), bytes: fc.uint8Array({ maxLength: 64 }) }),
    },
    {
      weight: 1,
      arbitrary: fc.record({ kind: fc.constant('huge' as const), size: fc.integer({ min: 60_000, max: 200_000 }) }),
    },
  );

  const target: fc.Arbitrary<Target> = fc.oneof(
    { weight: 5, arbitrary: fc.constant({ kind: 'collection' as const }) },
    { weight: 6, arbitrary: fc.record({ kind: fc.constant('known' as const), pick: fc.nat() }) },
    { weight: 1, arbitrary: fc.record({ kind: fc.constant('gone' as const), pick: fc.nat() }) },
    {
      weight: 3,
      arbitrary: fc.record({
        kind: fc.constant('path' as const),
        path: fc.oneof(
          fc.constantFrom(
            '/users/0',
            '/users/-1',
            '/users/01',
            '/users/1.0',
            '/users/1e3',
            '/users/99999999999999999999',
            '/users/%31',
            '/users/abc',
            '/users/',
            '/users//1',
            '/USERS',
            '/users/1/x',
            '/users/%00',
            '/users/%ff',
            '/users/\xff\xfe',
            '/users/%E2%82',
            `/users/${'9'.repeat(5000)}`,
            `/${'a'.repeat(9000)}`,
            '/',
            '/user',
            '/v2/users',
            '/healthz',
            '/readyz',
            '/metrics',
            '/openapi.json',
            '/docs',
            '*',
            'http://127.0.0.1/users',
            '/users/..%2f..%2fetc',
            '/%2e%2e/users',
          ),
          fc.webPath({ size: 'small' }).map((path) => (path.startsWith('/') ? path : `/${path}`)),
        ),
      }),
    },
  );
  const verb = fc.oneof(
    { weight: 4, arbitrary: fc.constant('POST') },
    { weight: 8, arbitrary: fc.constantFrom('GET', 'POST', 'PUT', 'PATCH', 'PATCH', 'DELETE') },
    { weight: 2, arbitrary: fc.constantFrom('HEAD', 'OPTIONS') },
    { weight: 1, arbitrary: fc.constantFrom('TRACE', 'PROPFIND', 'PURGE', 'QUERY', 'SEARCH', 'LINK', 'FOO', 'get') },
  );
  const contentType = fc.option(
    fc.constantFrom(
      'application/json',
      'application/json; charset=utf-8',
      'APPLICATION/JSON',
      'application/json; charset=latin1',
      'application/x-www-form-urlencoded',
      'application/x-www-form-urlencoded; charset=utf-8',
      'text/plain',
      'multipart/form-data; boundary=x',
      'application/problem+json',
      'application/json;;',
      '',
      '*/*',
      'application/vnd.api+json',
    ),
    { freq: 4, nil: undefined },
  );
  // Mostly the content type that fits the body, sometimes any.
  const fitting = (kind: Body['kind']) =>
    kind === 'json' ? 'application/json' : kind === 'form' ? 'application/x-www-form-urlencoded' : undefined;
  const bodyAndType = body.chain((chosen) =>
    fc
      .oneof({ weight: 3, arbitrary: fc.constant(fitting(chosen.kind)) }, { weight: 1, arbitrary: contentType })
      .map((type) => ({ body: chosen, contentType: type })),
  );
  const header: fc.Arbitrary<[string, string]> = fc.oneof(
    fc.tuple(fc.constant('if-match'), fc.constantFrom('*', '"1-1"', 'W/"1-1"', '"2-1", "1-1"', 'junk', '""', '"1-99"')),
    fc.tuple(fc.constant('if-none-match'), fc.constantFrom('*', '"1-1"', 'W/"v1"', 'junk', '"v0"')),
    fc.tuple(fc.constant('idempotency-key'), fc.constantFrom('k1', 'k2', 'k3', '', 'x'.repeat(300), '\u00e9')),
    fc.tuple(fc.constant('x-request-id'), fc.constantFrom('abc-123', '', 'a b', '<script>', 'z'.repeat(200))),
    fc.tuple(
      fc.constant('authorization'),
      fc.oneof(
        fc.constantFrom('Bearer', 'Bearer ', 'Bearer wrong-token', 'Basic dXNlcjpwYXNz', 'bearer x', 'Token abc'),
        ...(tokens.length > 0 ? [fc.constantFrom(...tokens).map((token) => `Bearer ${token}`)] : []),
      ),
    ),
    fc.tuple(fc.constant('accept'), fc.constantFrom('*/*', 'text/html', 'application/xml', 'application/json;q=0')),
    fc.tuple(fc.constant('expect'), fc.constantFrom('100-continue', 'something-else')),
    fc.tuple(fc.constantFrom('x-forwarded-for', 'origin', 'cookie'), fc.string({ maxLength: 20 })),
    // Written out by encodeRequest, so that a failure report stays short.
    fc.tuple(
      fc.constant('x-huge'),
      fc.nat({ max: 20_000 }).map((n) => `${n} times h`),
    ),
    fc.tuple(fc.constant('x-latin1'), fc.constant('\xe9\xff')),
  );
  // Mostly a target the method is served on (POST the collection, the rest a stored record).
  const known = fc.record({ kind: fc.constant('known' as const), pick: fc.nat() });
  const methodAndTarget = fc.tuple(verb, fc.nat(9)).chain(([method, roll]) => {
    const usual: fc.Arbitrary<Target> =
      method === 'POST'
        ? fc.constant({ kind: 'collection' as const })
        : method === 'GET'
          ? fc.oneof(fc.constant({ kind: 'collection' as const }), known)
          : known;
    return (roll < 7 ? usual : target).map((chosen) => ({ method, target: chosen }));
  });
  return fc
    .record({
      methodAndTarget,
      auth: fc.nat(3),
      params,
      mixed: rarely(4),
      headers: fc.oneof(
        { weight: 3, arbitrary: fc.constant([] as [string, string][]) },
        { weight: 2, arbitrary: fc.array(header, { maxLength: 3 }) },
      ),
      bodyAndType,
      chunked: rarely(9),
      http10: rarely(30),
      noHost: rarely(30),
    })
    .map(
      ({ bodyAndType: { body: chosen, contentType: type }, methodAndTarget: { method, target: where }, ...rest }) => {
        const { mixed, ...others } = rest;
        // Mostly one input form: with a body, or for DELETE, the query keeps only non-field parameters.
        const params =
          !mixed && (chosen.kind !== 'none' || method === 'DELETE')
            ? rest.params.filter((param) => !(FIELDS as readonly string[]).includes(param.name))
            : rest.params;
        const request: FuzzRequest = { ...others, params, method, target: where, body: chosen, contentType: type };
        return request;
      },
    );
}

/** Percent-encodes every byte of the UTF-8 form outside the unreserved set (lone surrogates become U+FFFD). */
function percent(text: string): string {
  let out = '';
  for (const byte of Buffer.from(text, 'utf8')) {
    const char = String.fromCharCode(byte);
    out += /[A-Za-z0-9\-_.~]/.test(char) ? char : `%${byte.toString(16).toUpperCase().padStart(2, '0')}`;
  }
  return out;
}

/** The text the service decodes from a parameter sent by `percent`. */
export function decoded(text: string): string {
  return Buffer.from(text, 'utf8').toString('utf8');
}

function encodeParam(param: Param): string {
  if (param.garbage !== undefined) return `${percent(param.name)}=${param.garbage}`;
  return `${percent(param.name)}=${percent(param.value)}`;
}

/** A JSON object text written entry by entry, so `__proto__` and repeated keys go out as given. */
function jsonText(entries: [string, unknown][]): string {
  return `{${entries.map(([key, value]) => `${JSON.stringify(key)}:${JSON.stringify(value) ?? 'null'}`).join(',')}}`;
}

/** The body's bytes; `undefined` when there is none. */
export function bodyBytes(body: Body): Buffer | undefined {
  switch (body.kind) {
    case 'none':
      return undefined;
    case 'json': {
      const text = Buffer.from(jsonText(body.entries), 'utf8');
      if (!body.badUtf8) return text;
      const quote = text.indexOf('"', 2);
      return quote > 0
        ? Buffer.concat([text.subarray(0, quote), Buffer.from([0xff, 0xc3]), text.subarray(quote)])
        : text;
    }
    case 'form':
      return Buffer.from(body.params.map(encodeParam).join('&'), 'latin1');
    case 'text':
      return Buffer.from(body.text, 'utf8');
    case 'bytes':
      return Buffer.from(body.bytes);
    case 'huge':
      return Buffer.from(jsonText([['name', 'h'.repeat(body.size)]]), 'utf8');
  }
}

/** The path a target resolves to now, and the request's bytes. */
export function encodeRequest(request: FuzzRequest, context: Context): { path: string; bytes: Buffer } {
  const { target } = request;
  const pick = (ids: readonly number[], at: number) =>
    ids.length === 0 ? 1_000_000 : (ids[at % ids.length] as number);
  const path =
    target.kind === 'collection'
      ? '/users'
      : target.kind === 'known'
        ? `/users/${pick(context.live, target.pick)}`
        : target.kind === 'gone'
          ? `/users/${pick(context.gone, target.pick)}`
          : target.path;
  const query = request.params.map(encodeParam).join('&');
  const url = query === '' ? path : `${path}?${query}`;
  const body = bodyBytes(request.body);
  const lines = [`${request.method} ${url} HTTP/1.${request.http10 ? 0 : 1}`];
  if (!request.noHost) lines.push('Host: 127.0.0.1');
  lines.push('Connection: close');
  if (request.contentType !== undefined) lines.push(`Content-Type: ${request.contentType}`);
  for (const [name, value] of request.headers) {
    lines.push(`${name}: ${name === 'x-huge' ? 'h'.repeat(Number.parseInt(value, 10)) : value}`);
  }
  const auth = context.authorization(request.auth);
  if (auth !== undefined && !request.headers.some(([name]) => name === 'authorization')) {
    lines.push(`Authorization: ${auth}`);
  }
  let payload: Buffer = Buffer.alloc(0);
  if (body !== undefined && request.chunked && !request.http10) {
    lines.push('Transfer-Encoding: chunked');
    payload = Buffer.concat([Buffer.from(`${body.length.toString(16)}\r\n`), body, Buffer.from('\r\n0\r\n\r\n')]);
    if (body.length === 0) payload = Buffer.from('0\r\n\r\n');
  } else if (body !== undefined) {
    lines.push(`Content-Length: ${body.length}`);
    payload = body;
  }
  return { path: url, bytes: Buffer.concat([Buffer.from(`${lines.join('\r\n')}\r\n\r\n`, 'latin1'), payload]) };
}

const AGE = /^0*(?:[0-9]|[1-9][0-9]|1[0-4][0-9]|150)$/;
const FIELDS_PARAM = /^(?:id|name|age|city|createdAt|updatedAt)(?:,(?:id|name|age|city|createdAt|updatedAt))*$/;
// eslint-disable-next-line no-control-regex -- control characters are what it looks for
const BAD_TEXT = /[\u0000-\u001f\u007f-\u009f\ud800-\udfff]/u;

/** A write's stored fields when the service may accept it, or why it must refuse it. */
export type Expectation = { refuse: string } | { fields: { name?: string; age?: number; city?: string } };

function fieldValue(field: Field, value: unknown): string | number | undefined {
  if (field === 'age') {
    if (typeof value === 'number') return Number.isSafeInteger(value) && value >= 0 && value <= 150 ? value : undefined;
    return typeof value === 'string' && AGE.test(value) ? Number(value) : undefined;
  }
  if (typeof value !== 'string') return undefined;
  const text = value.trim();
  const length = [...text].length;
  return length >= 1 && length <= 200 && !BAD_TEXT.test(text) ? text : undefined;
}

/**
 * What DESIGN.md lets a write (POST, PUT, PATCH, DELETE) store: its fields in the query string or
 * in one body, each once, valid, nothing unknown. Anything else must not be answered 2xx.
 */
export function expectedWrite(request: FuzzRequest): Expectation {
  const { method } = request;
  const allowed = new Set(method === 'DELETE' ? ['fields'] : [...FIELDS, 'fields']);
  const seen = new Set<string>();
  for (const param of request.params) {
    if (param.garbage !== undefined) return { refuse: `malformed parameter ${param.name}` };
    if (!allowed.has(param.name)) return { refuse: `parameter ${param.name} is not for ${method}` };
    if (seen.has(param.name)) return { refuse: `parameter ${param.name} repeated` };
    seen.add(param.name);
    if (param.name === 'fields' && !FIELDS_PARAM.test(param.value)) return { refuse: 'bad fields' };
  }
  const bytes = bodyBytes(request.body);
  const blank = bytes === undefined || bytes.toString('latin1').trim() === '';
  const type = (request.contentType ?? '').toLowerCase();
  let entries: [string, unknown][];
  if (blank) {
    entries = request.params
      .filter((param) => param.name !== 'fields')
      .map((param) => [param.name, decoded(param.value)]);
  } else {
    if (FIELDS.some((field) => seen.has(field))) return { refuse: 'fields in the query and a body' };
    if (request.body.kind === 'json' && !request.body.badUtf8 && type.startsWith('application/json')) {
      entries = request.body.entries;
    } else if (request.body.kind === 'form' && type.startsWith('application/x-www-form-urlencoded')) {
      if (request.body.params.some((param) => param.garbage !== undefined)) return { refuse: 'malformed form' };
      entries = request.body.params.map((param) => [param.name, decoded(param.value)]);
    } else if (method === 'DELETE') {
      entries = []; // a body without fields does not change what DELETE does
    } else {
      return { refuse: `a ${request.body.kind} body as ${type || 'no type'}` };
    }
  }
  const fields: { name?: string; age?: number; city?: string } = {};
  const keys = new Set<string>();
  for (const [key, value] of entries) {
    if (!(FIELDS as readonly string[]).includes(key) || method === 'DELETE') return { refuse: `field ${key}` };
    if (keys.has(key)) return { refuse: `field ${key} repeated` };
    keys.add(key);
    const valid = fieldValue(key as Field, value);
    if (valid === undefined) return { refuse: `invalid ${key}: ${JSON.stringify(value)}` };
    Object.assign(fields, { [key]: valid });
  }
  if ((method === 'POST' || method === 'PUT') && keys.size < 3) return { refuse: 'a field is missing' };
  if (method === 'PATCH' && keys.size === 0) return { refuse: 'no field to change' };
  return { fields };
}
