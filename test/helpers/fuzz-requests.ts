/**
 * fast-check arbitraries for hostile requests to the service, their encoding to bytes, and what a
 * write may store if the service accepts it. Values meant to be stored start with a marker, so the
 * logs can be searched for all of them at once. Besides malformed input the requests carry unusual
 * `Host` headers, cross-origin headers (`Origin`, `Sec-Fetch-Site`), parameter bombs (hundreds to
 * thousands of names in the query, a form or a JSON body) and resets of the connection mid-request;
 * `expectedGate` says how the service must treat the first two.
 */
import { connect } from 'node:net';
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

/**
 * Many parameters in one part of a request, written out by the encoder (so a failure report stays
 * short): `count` names in the style of `names`, before or after the request's own parameters, as
 * many as fit the part's limit (8 KiB of URL, 64 KiB of body).
 */
export interface Bomb {
  count: number;
  /**
   * distinct: p0, p1, …; same: x every time; fields: name, age, city in turn; long: distinct names of
   * 70 to 120 ASCII characters; wide: distinct names of 70 multi-byte characters; marked: distinct
   * names holding the run's marker (which must never be logged).
   */
  names: 'distinct' | 'same' | 'fields' | 'long' | 'wide' | 'marked';
  /** none: `name` alone (JSON: null); short: 1; garbage: a malformed escape (JSON: a nested value); marked: the marker. */
  values: 'none' | 'short' | 'garbage' | 'marked';
  first: boolean;
  /** The run's marker, for `marked` names and values. */
  mark: string;
}

/** A Host header: the usual one, none, two, or one of the given value (`{port}` is the server's port). */
export type HostShape =
  { kind: 'usual' } | { kind: 'none' } | { kind: 'twice'; values: [string, string] } | { kind: 'one'; value: string };

/** The client resets the connection (TCP RST) after sending part of the request: part of its head, or all of the head and part of the body. */
export interface Reset {
  in: 'head' | 'body';
  /** Where in that part, from 0 (its first byte) to just under 1 (all but its last byte). */
  fraction: number;
  delayMs: number;
}

export type Body =
  | { kind: 'none' }
  | { kind: 'json'; entries: [string, unknown][]; badUtf8: boolean; bomb?: Bomb }
  | { kind: 'form'; params: Param[]; bomb?: Bomb }
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
  host: HostShape;
  /** Many parameters in the query string (bodies carry theirs in `body.bomb`). */
  queryBomb?: Bomb;
  reset?: Reset;
}

/** What the fuzz run knows when it turns a request into bytes. */
export interface Context {
  live: readonly number[];
  gone: readonly number[];
  /** Extra headers for every request (a token), if any. */
  authorization: (pick: number) => string | undefined;
  /** The server's port, for `{port}` in Host and Origin values. */
  port: string;
}

/** What the service was started with, for `expectedGate`. */
export interface Site {
  /** The host names it answers to (lower case, IPv6 in brackets, no port). */
  hosts: readonly string[];
  /** CORS_ORIGINS: the origins it trusts, or `*`. */
  corsOrigins: readonly string[];
}

/** True about once in `odds + 1` draws. */
function rarely(odds: number): fc.Arbitrary<boolean> {
  return fc.nat({ max: odds }).map((n) => n === 0);
}

/** A value about once in `odds + 1` draws, else undefined. */
function sometimes<T>(arbitrary: fc.Arbitrary<T>, odds: number): fc.Arbitrary<T | undefined> {
  return fc.oneof({ weight: odds, arbitrary: fc.constant(undefined) }, { weight: 1, arbitrary });
}

/**
 * Builds the arbitraries; `mark` starts every name and city meant to be stored (≥ 4 characters).
 * `rarity` makes the shapes most requests do not have (another Host, cross-origin headers, bombs,
 * resets) that many times rarer, for a run whose writes are already thinned out (by tokens).
 */
export function requestArbitrary(mark: string, tokens: readonly string[], rarity = 1): fc.Arbitrary<FuzzRequest> {
  const rare = (odds: number) => Math.round(odds * rarity);
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

  // Parameter bombs: counts from hundreds to thousands (the encoder keeps as many as fit the limit).
  const bomb: fc.Arbitrary<Bomb> = fc.record({
    count: fc.oneof(fc.integer({ min: 51, max: 999 }), fc.integer({ min: 1000, max: 8000 })),
    names: fc.constantFrom('distinct', 'same', 'fields', 'long', 'wide', 'marked'),
    values: fc.constantFrom('none', 'short', 'garbage', 'marked'),
    first: fc.boolean(),
    mark: fc.constant(mark),
  });
  const bombAt = sometimes(fc.record({ where: fc.constantFrom('query', 'query', 'form', 'json'), bomb }), rare(15));

  // Host headers: names the service answers to by default or in the fuzz's ALLOWED_HOSTS, and
  // others; in upper case, with a trailing dot, with ports; and values that are no host at all.
  const hostName = fc.constantFrom(
    'localhost',
    '127.0.0.1',
    '[::1]',
    'users.example',
    'evil.example',
    'localhost.evil.example',
    '127.0.0.2',
    '[::2]',
    '0.0.0.0',
    'example.com',
    '10.0.0.5',
  );
  const hostValue = fc
    .record({
      name: hostName,
      upper: rarely(2),
      dot: rarely(3),
      port: fc.constantFrom('', '', ':{port}', ':{port}', ':80', ':1', ':65535', ':'),
    })
    .map(({ name, upper, dot, port }) => {
      const shown = upper ? name.toUpperCase() : name;
      return `${shown}${dot && !name.startsWith('[') ? '.' : ''}${port}`;
    });
  const oddHost = fc.constantFrom(
    '',
    ' ',
    '::1',
    '[::1',
    '[::1]x',
    '[0:0:0:0:0:0:0:1]',
    '127.0.0.1:abc',
    '127.0.0.1..',
    '127.1',
    'user@127.0.0.1',
    '127.0.0.1@evil.example',
    'localhost:{port}:{port}',
    'local host',
    'http://127.0.0.1',
    '127.0.0.1/users',
    `${'a'.repeat(300)}.example`,
  );
  const host: fc.Arbitrary<HostShape> = fc.oneof(
    { weight: rare(30), arbitrary: fc.constant({ kind: 'usual' as const }) },
    { weight: 1, arbitrary: fc.constant({ kind: 'none' as const }) },
    {
      weight: 1,
      arbitrary: fc
        .tuple(hostValue, fc.oneof(hostValue, fc.constant('127.0.0.1')))
        .map((values): HostShape => ({ kind: 'twice', values })),
    },
    { weight: 3, arbitrary: hostValue.map((value): HostShape => ({ kind: 'one', value })) },
    { weight: 1, arbitrary: oddHost.map((value): HostShape => ({ kind: 'one', value })) },
  );

  // Cross-origin headers, in every combination: an Origin (the Host's own, another site's, null, a
  // trusted one, odd ones), a Sec-Fetch-Site, a preflight's Access-Control-Request-Method.
  const origin = fc.constantFrom(
    'http://{host}',
    'http://{host}',
    'https://{host}',
    'HTTP://{HOST}',
    'http://{host}/',
    'ftp://{host}',
    'null',
    '',
    'http://127.0.0.1:{port}',
    'http://localhost:{port}',
    'http://127.0.0.1',
    'https://evil.example',
    'http://evil.example:{port}',
    'https://app.example',
    'https://APP.example',
    'http://localhost:5173',
    'http://{host}.evil.example',
  );
  const site = fc.constantFrom('cross-site', 'same-site', 'same-origin', 'none', 'CROSS-SITE', '', 'bogus');
  const crossOrigin = fc
    .record({
      origin: sometimes(origin, 1),
      originTwice: rarely(12),
      site: sometimes(site, 1),
      siteTwice: rarely(12),
      preflight: sometimes(fc.constantFrom('POST', 'DELETE', 'PATCH'), 3),
    })
    .map(({ origin: from, originTwice, site: mode, siteTwice, preflight }) => {
      const headers: [string, string][] = [];
      if (from !== undefined) headers.push(['origin', from]);
      if (from !== undefined && originTwice) headers.push(['origin', from]);
      if (mode !== undefined) headers.push(['sec-fetch-site', mode]);
      if (mode !== undefined && siteTwice) headers.push(['sec-fetch-site', mode]);
      if (preflight !== undefined) headers.push(['access-control-request-method', preflight]);
      return headers;
    });
  const reset: fc.Arbitrary<Reset> = fc.record({
    in: fc.constantFrom('head', 'body', 'body', 'body'),
    fraction: fc.double({ min: 0, max: 0.999, noNaN: true }),
    delayMs: fc.constantFrom(0, 0, 1, 5, 20),
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
      host,
      cross: fc.oneof(
        { weight: rare(6), arbitrary: fc.constant([] as [string, string][]) },
        { weight: 1, arbitrary: crossOrigin },
      ),
      bombAt,
      reset: sometimes(reset, rare(19)),
    })
    .map(
      ({
        bodyAndType: { body: given, contentType: givenType },
        methodAndTarget: { method, target: where },
        cross,
        bombAt: bombed,
        ...rest
      }) => {
        const { mixed, ...others } = rest;
        let chosen = given;
        let type = givenType;
        // A reset mid-body needs a body: the parameters go into a form one.
        if (rest.reset?.in === 'body' && chosen.kind === 'none') {
          chosen = { kind: 'form', params: rest.params };
          type = 'application/x-www-form-urlencoded';
        }
        let queryBomb: Bomb | undefined;
        if (bombed?.where === 'query') queryBomb = bombed.bomb;
        else if (bombed?.where === 'form') {
          chosen = { kind: 'form', params: chosen.kind === 'form' ? chosen.params : [], bomb: bombed.bomb };
          type = 'application/x-www-form-urlencoded';
        } else if (bombed?.where === 'json') {
          const entries = chosen.kind === 'json' ? chosen.entries : [];
          chosen = { kind: 'json', entries, badUtf8: false, bomb: bombed.bomb };
          type = 'application/json';
        }
        // Mostly one input form: with a body, or for DELETE, the query keeps only non-field parameters.
        const params =
          !mixed && (chosen.kind !== 'none' || method === 'DELETE')
            ? rest.params.filter((param) => !(FIELDS as readonly string[]).includes(param.name))
            : rest.params;
        const request: FuzzRequest = {
          ...others,
          headers: [...rest.headers, ...cross],
          params,
          method,
          target: where,
          body: chosen,
          contentType: type,
        };
        if (queryBomb !== undefined) request.queryBomb = queryBomb;
        if (rest.reset === undefined) delete request.reset;
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

/** The limits the service reads (src/http/limits.ts): bombs are kept within them. */
const URL_LIMIT = 8 * 1024;
const BODY_LIMIT = 64 * 1024;

/** The names and values of a bomb, decoded (the encoders percent-encode or JSON-quote them). */
function bombEntries(bomb: Bomb): { name: string; value: string | undefined }[] {
  const out: { name: string; value: string | undefined }[] = [];
  for (let i = 0; i < bomb.count; i++) {
    const tag = i.toString(36);
    const name =
      bomb.names === 'distinct'
        ? `p${tag}`
        : bomb.names === 'same'
          ? 'x'
          : bomb.names === 'fields'
            ? (FIELDS[i % 3] as string)
            : bomb.names === 'long'
              ? `${tag}${'n'.repeat(70 + (i % 51))}`
              : bomb.names === 'wide'
                ? `${tag}${(['é', '€', '\u{1F600}'][i % 3] as string).repeat(70)}`
                : `${bomb.mark}${tag}`;
    const value = bomb.values === 'none' ? undefined : bomb.values === 'marked' ? `${bomb.mark}v${tag}` : bomb.values;
    out.push({ name, value });
  }
  return out;
}

/** A bomb's query or form parts, as many as fit `budget` characters (with their `&`). */
function bombParts(bomb: Bomb, budget: number): string[] {
  const parts: string[] = [];
  let used = 0;
  for (const { name, value } of bombEntries(bomb)) {
    const part =
      value === undefined ? percent(name) : `${percent(name)}=${value === 'garbage' ? '%zz' : percent(value)}`;
    if (used + part.length + 1 > budget) break;
    parts.push(part);
    used += part.length + 1;
  }
  return parts;
}

/** A bomb's JSON members, as many as fit `budget` bytes (with their commas). */
function bombMembers(bomb: Bomb, budget: number): string[] {
  const members: string[] = [];
  let used = 0;
  for (const { name, value } of bombEntries(bomb)) {
    const json = value === undefined ? 'null' : value === 'garbage' ? '{"a":[1,{"b":null}]}' : JSON.stringify(value);
    const member = `${JSON.stringify(name)}:${json}`;
    const size = Buffer.byteLength(member) + 1;
    if (used + size > budget) break;
    members.push(member);
    used += size;
  }
  return members;
}

/** Joins a request's own parts and a bomb's, in the bomb's order. */
function withBomb(own: string[], bomb: string[], first: boolean): string[] {
  return first ? [...bomb, ...own] : [...own, ...bomb];
}

/** The body's bytes; `undefined` when there is none. */
export function bodyBytes(body: Body): Buffer | undefined {
  switch (body.kind) {
    case 'none':
      return undefined;
    case 'json': {
      if (body.bomb !== undefined) {
        const own = body.entries.map(([key, value]) => `${JSON.stringify(key)}:${JSON.stringify(value) ?? 'null'}`);
        const room = BODY_LIMIT - 2 - own.reduce((sum, member) => sum + Buffer.byteLength(member) + 1, 0);
        const members = withBomb(own, bombMembers(body.bomb, room), body.bomb.first);
        return Buffer.from(`{${members.join(',')}}`, 'utf8');
      }
      const text = Buffer.from(jsonText(body.entries), 'utf8');
      if (!body.badUtf8) return text;
      const quote = text.indexOf('"', 2);
      return quote > 0
        ? Buffer.concat([text.subarray(0, quote), Buffer.from([0xff, 0xc3]), text.subarray(quote)])
        : text;
    }
    case 'form': {
      const own = body.params.map(encodeParam);
      if (body.bomb === undefined) return Buffer.from(own.join('&'), 'latin1');
      const room = BODY_LIMIT - own.reduce((sum, part) => sum + part.length + 1, 0);
      return Buffer.from(withBomb(own, bombParts(body.bomb, room), body.bomb.first).join('&'), 'latin1');
    }
    case 'text':
      return Buffer.from(body.text, 'utf8');
    case 'bytes':
      return Buffer.from(body.bytes);
    case 'huge':
      return Buffer.from(jsonText([['name', 'h'.repeat(body.size)]]), 'utf8');
  }
}

/** The Host, Origin and Sec-Fetch-Site values a request went out with (after `{port}`, `{host}`). */
export interface Sent {
  hosts: string[];
  origins: string[];
  sites: string[];
}

/** The path a target resolves to now, the request's bytes, where its head ends, and what it sent. */
export function encodeRequest(
  request: FuzzRequest,
  context: Context,
): { path: string; bytes: Buffer; headLength: number; sent: Sent } {
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
  let parts = request.params.map(encodeParam);
  if (request.queryBomb !== undefined) {
    // As many as the URL limit lets through, so that the service reads them (rather than 414).
    const room = URL_LIMIT - path.length - 1 - parts.reduce((sum, part) => sum + part.length + 1, 0);
    parts = withBomb(parts, bombParts(request.queryBomb, room), request.queryBomb.first);
  }
  const query = parts.join('&');
  const url = query === '' ? path : `${path}?${query}`;
  const body = bodyBytes(request.body);
  const lines = [`${request.method} ${url} HTTP/1.${request.http10 ? 0 : 1}`];
  const port = (value: string) => value.replaceAll('{port}', context.port);
  const hosts =
    request.host.kind === 'usual'
      ? ['127.0.0.1']
      : request.host.kind === 'none'
        ? []
        : request.host.kind === 'one'
          ? [port(request.host.value)]
          : request.host.values.map(port);
  for (const value of hosts) lines.push(`Host: ${value}`);
  lines.push('Connection: close');
  if (request.contentType !== undefined) lines.push(`Content-Type: ${request.contentType}`);
  // An Origin of `{host}` names the Host sent (its first, or the usual one when none is).
  const ownHost = hosts[0] ?? '127.0.0.1';
  const sent: Sent = { hosts, origins: [], sites: [] };
  for (const [name, given] of request.headers) {
    const value =
      name === 'x-huge'
        ? 'h'.repeat(Number.parseInt(given, 10))
        : port(given).replaceAll('{host}', ownHost).replaceAll('{HOST}', ownHost.toUpperCase());
    if (name === 'origin') sent.origins.push(value.trim());
    if (name === 'sec-fetch-site') sent.sites.push(value.trim());
    lines.push(`${name}: ${value}`);
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
  const head = Buffer.from(`${lines.join('\r\n')}\r\n\r\n`, 'latin1');
  return { path: url, bytes: Buffer.concat([head, payload]), headLength: head.length, sent };
}

/** True when a request carries a parameter bomb (in its query or its body). */
export function hasBomb(request: FuzzRequest): boolean {
  return (
    request.queryBomb !== undefined ||
    ((request.body.kind === 'form' || request.body.kind === 'json') && request.body.bomb !== undefined)
  );
}

/**
 * How many bytes of a request to send before resetting the connection: part of the head, or all
 * of the head and part of the body; never the whole request, so the service never has all of it.
 */
export function resetPoint(reset: Reset, total: number, headLength: number): number {
  if (reset.in === 'body' && total > headLength) {
    return headLength + Math.floor(reset.fraction * (total - headLength));
  }
  return 1 + Math.floor(reset.fraction * (headLength - 1));
}

/**
 * Sends the first `cut` bytes on a fresh connection, waits `delayMs` and resets it (TCP RST).
 * Resolves with what the service answered before that, if anything (the status of its final
 * answer, 0 for none).
 */
export function sendAndReset(
  base: string,
  bytes: Buffer,
  cut: number,
  delayMs: number,
): Promise<{ status: number; wire: string }> {
  const { hostname, port } = new URL(base);
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    const socket = connect(Number(port), hostname, () => {
      socket.write(bytes.subarray(0, cut), () => {
        setTimeout(() => {
          if (!socket.destroyed) socket.resetAndDestroy();
        }, delayMs);
      });
    });
    socket.setTimeout(15_000, () => socket.destroy());
    socket.on('data', (chunk) => chunks.push(chunk));
    socket.on('error', () => {
      // The reset itself, or the service closing first: what it answered is all that matters.
    });
    socket.on('close', () => {
      const wire = Buffer.concat(chunks).toString('latin1');
      const statuses = [...wire.matchAll(/^HTTP\/1\.[01] (\d{3})/gm)].map((match) => Number(match[1]));
      resolve({ status: statuses.find((status) => status >= 200) ?? 0, wire: wire.slice(0, 2000) });
    });
  });
}

/**
 * What the service must do with a request's Host and cross-origin headers, before anything else
 * about it. `host`: ours (served as usual), misdirected (421), malformed (400: missing on HTTP/1.1,
 * or repeated), refused (400 or 421), either (no rule says). `origin`, for a request whose Host is
 * ours: pass (no cross-origin refusal), refuse (403 cross-origin-write), either.
 */
export interface GateExpectation {
  host: 'ours' | 'misdirected' | 'malformed' | 'refused' | 'either';
  origin: 'pass' | 'refuse' | 'either';
}

const HOST_VALUE = /^(\[[0-9a-f:.]+\]|[a-z0-9-]+(?:\.[a-z0-9-]+)*)(\.?)(?::([0-9]*))?$/i;
const UNSAFE = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);
const SAFE = new Set(['GET', 'HEAD', 'OPTIONS']);

function hostVerdict(values: readonly string[], http10: boolean, site: Site): GateExpectation['host'] {
  if (values.length === 0) return http10 ? 'ours' : 'malformed';
  if (values.length > 1) return 'malformed';
  const value = (values[0] as string).trim();
  if (value === '') return 'refused';
  const match = HOST_VALUE.exec(value);
  // Not a host[:port] at all: RFC 9110 wants 400; the service may also judge it by its name part.
  if (match === null) return 'either';
  const name = (match[1] as string).toLowerCase();
  const dotted = match[2] === '.';
  if (name.startsWith('[')) return site.hosts.includes(name) ? 'ours' : name === '[::2]' ? 'misdirected' : 'either';
  // A trailing dot names the same host (an absolute DNS name); on an IP address it makes no address.
  if (dotted && /^[0-9.]+$/.test(name)) return 'either';
  if (site.hosts.includes(name)) return 'ours';
  // A DNS label is at most 63 characters: a longer one is no name (400), and not ours either (421).
  if (name.split('.').some((label) => label.length > 63)) return 'refused';
  return /^(?:\d+\.){3}\d+$/.test(name) || /[a-z]/.test(name) ? 'misdirected' : 'either';
}

function originVerdict(method: string, sent: Sent, site: Site): GateExpectation['origin'] {
  if (SAFE.has(method)) return 'pass';
  if (!UNSAFE.has(method)) return 'either';
  if (site.corsOrigins.includes('*')) return 'pass';
  if (sent.origins.length > 1 || sent.sites.length > 1) return 'either';
  const host = sent.hosts[0];
  const fetchSite = sent.sites[0];
  const crossSite = fetchSite === 'cross-site' || fetchSite === 'same-site';
  const origin = sent.origins[0];
  if (origin === undefined) {
    if (crossSite) return 'refuse';
    return fetchSite === undefined || fetchSite === 'same-origin' || fetchSite === 'none' ? 'pass' : 'either';
  }
  if (site.corsOrigins.includes(origin)) return 'pass';
  if (origin === 'null') return 'refuse';
  if (host !== undefined && origin === `http://${host}`) return crossSite ? 'either' : 'pass';
  // The same origin written another way (the default port, an empty port): no rule says.
  if (host !== undefined && origin === `http://${host.replace(/:(?:80)?$/, '')}`) return 'either';
  // Another scheme or the letters' case of our own origin (behind a TLS proxy the scheme is not
  // known), an empty Origin, a trusted origin in other case: no rule says.
  if (origin === '') return 'either';
  if (host !== undefined && origin.toLowerCase().endsWith(`://${host.toLowerCase()}`)) return 'either';
  if (site.corsOrigins.some((trusted) => trusted.toLowerCase() === origin.toLowerCase())) return 'either';
  return 'refuse';
}

/** What the service must do with a request's Host and cross-origin headers (see GateExpectation). */
export function expectedGate(request: FuzzRequest, sent: Sent, site: Site): GateExpectation {
  return { host: hostVerdict(sent.hosts, request.http10, site), origin: originVerdict(request.method, sent, site) };
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
 * What docs/api.md ("Input forms") lets a write (POST, PUT, PATCH, DELETE) store: its fields in the query string or
 * in one body, each once, valid, nothing unknown. Anything else must not be answered 2xx.
 */
export function expectedWrite(request: FuzzRequest): Expectation {
  const { method } = request;
  if (hasBomb(request)) return { refuse: 'a parameter bomb' };
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
