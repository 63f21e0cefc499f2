import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { Validator } from '@seriousme/openapi-schema-validator';
import fc from 'fast-check';
import { appForSuite } from '../helpers/app.ts';
import { call } from '../helpers/http.ts';

type Json = Record<string, unknown>;

const USER_OPERATIONS: ReadonlyArray<readonly [path: string, method: string]> = [
  ['/users', 'get'],
  ['/users', 'post'],
  ['/users/stats', 'get'],
  ['/users/{id}', 'get'],
  ['/users/{id}', 'put'],
  ['/users/{id}', 'patch'],
  ['/users/{id}', 'delete'],
];

function isObject(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The object at `key` of `value`, failing the test with `what` when it is missing or not an object. */
function objectAt(value: unknown, key: string, what: string): Json {
  assert.ok(isObject(value), `${what}: the parent is not an object`);
  const child = value[key];
  assert.ok(isObject(child), `${what} is missing or not an object`);
  return child;
}

function operation(doc: Json, path: string, method: string): Json {
  const paths = objectAt(doc, 'paths', 'paths');
  const item = objectAt(paths, path, `paths['${path}']`);
  return objectAt(item, method, `${method.toUpperCase()} ${path}`);
}

// In process: the document the app serves (buildApp, app.inject).
describe('OpenAPI document', () => {
  const suite = appForSuite();
  let doc: Json = {};

  before(async () => {
    const answer = await call(suite.current.app, 'GET', '/openapi.json');
    assert.equal(answer.status, 200);
    assert.match(answer.headers.get('content-type') ?? '', /^application\/json/);
    const body: unknown = JSON.parse(answer.text);
    assert.ok(isObject(body), '/openapi.json is not a JSON object');
    doc = body;
  });

  it('is valid OpenAPI 3.1', async () => {
    assert.match(String(doc.openapi), /^3\.1\.\d+$/);
    const validator = new Validator({ allErrors: true });
    const result = await validator.validate(structuredClone(doc));
    assert.equal(validator.version, '3.1');
    assert.ok(result.valid, `the document is not valid OpenAPI 3.1:\n${JSON.stringify(result.errors, null, 2)}`);
  });

  it('describes every user operation', () => {
    for (const [path, method] of USER_OPERATIONS) operation(doc, path, method);
  });

  for (const [path, method] of USER_OPERATIONS) {
    const name = `${method.toUpperCase()} ${path}`;
    it(`${name} declares 200 and a 4xx application/problem+json response`, () => {
      const responses = objectAt(operation(doc, path, method), 'responses', `${name} responses`);
      assert.ok(isObject(responses['200']), `${name} declares no 200 response`);
      const problemStatuses = Object.entries(responses)
        .filter(([status, response]) => {
          if (!/^4(\d\d|XX)$/.test(status) || !isObject(response) || !isObject(response.content)) return false;
          return isObject(response.content['application/problem+json']);
        })
        .map(([status]) => status);
      assert.ok(
        problemStatuses.length > 0,
        `${name} declares no 4xx response with application/problem+json (has ${Object.keys(responses).join(', ')})`,
      );
    });
  }

  it('POST /users takes name, age and city as required query parameters; age is an integer of 0 to 150', () => {
    const parameters = operation(doc, '/users', 'post').parameters;
    assert.ok(Array.isArray(parameters), 'POST /users has no parameters');
    const query = new Map<string, Json>();
    for (const parameter of parameters) {
      if (isObject(parameter) && parameter.in === 'query' && typeof parameter.name === 'string') {
        query.set(parameter.name, parameter);
      }
    }
    for (const name of ['name', 'age', 'city']) {
      assert.ok(query.has(name), `POST /users lacks query parameter ${name} (has ${[...query.keys()].join(', ')})`);
      assert.equal(query.get(name)?.required, true, `POST /users: ${name} is not required`);
    }
    const ageSchema = objectAt(query.get('age'), 'schema', 'the age parameter schema');
    assert.deepEqual(ageSchema, { type: 'integer', minimum: 0, maximum: 150 });
    // A body is documented only for what the query string cannot carry: many records at once.
    const body = objectAt(operation(doc, '/users', 'post'), 'requestBody', 'POST /users requestBody');
    assert.equal(body.required, false, 'the query string is the published form of one record');
    const content = objectAt(body, 'content', 'requestBody.content');
    assert.deepEqual(Object.keys(content).sort(), ['application/json', 'application/x-ndjson']);
    const array = objectAt(objectAt(content, 'application/json', 'JSON'), 'schema', 'JSON schema');
    assert.equal(array.type, 'array');
    assert.equal(array.maxItems, 1000);
    const record = objectAt(array, 'items', 'items');
    assert.deepEqual(record.required, ['name', 'age', 'city']);
    assert.equal(record.additionalProperties, false);
  });

  it("GET /users/events takes the listing's filters as the listing documents them, its own after (an event id), and nothing that only a listing takes", () => {
    const queryOf = (path: string) =>
      new Map(
        (operation(doc, path, 'get').parameters as Json[])
          .filter((parameter) => parameter.in === 'query')
          .map((parameter) => [String(parameter.name), parameter] as const),
      );
    const listing = queryOf('/users');
    const stream = queryOf('/users/events');
    const listingOnly = ['sort', 'limit', 'cursor', 'fields', 'after'];
    const filters = [...listing.keys()].filter((name) => !listingOnly.includes(name));
    assert.ok(filters.includes('city') && filters.includes('age.gte') && filters.includes('q'));
    assert.deepEqual([...stream.keys()].sort(), [...filters, 'after'].sort());
    for (const name of filters) assert.deepEqual(stream.get(name), listing.get(name), name);
    assert.match(String(stream.get('after')?.description), /id of the last event received/);
    assert.match(String(operation(doc, '/users/events', 'get').description), /user\.left/);
  });

  it('names its components, gives every operation its own operationId, and has servers and a license', () => {
    const schemas = objectAt(objectAt(doc, 'components', 'components'), 'schemas', 'components.schemas');
    for (const name of ['User', 'Users', 'Problem', 'Home']) objectAt(schemas, name, `components.schemas.${name}`);
    const ids: string[] = [];
    for (const item of Object.values(objectAt(doc, 'paths', 'paths'))) {
      for (const [method, op] of Object.entries(item as Json)) {
        assert.ok(isObject(op) && typeof op.operationId === 'string', `an operation without operationId (${method})`);
        ids.push(op.operationId);
      }
    }
    assert.equal(new Set(ids).size, ids.length, `repeated operationIds: ${ids.join(', ')}`);
    assert.ok(Array.isArray(doc.servers) && doc.servers.length > 0);
    assert.equal(objectAt(objectAt(doc, 'info', 'info'), 'license', 'license').name, 'MIT');
    for (const path of ['/', '/metrics', '/openapi.json', '/docs'])
      objectAt(objectAt(doc, 'paths', 'paths'), path, path);
    const get304 = objectAt(objectAt(operation(doc, '/users/{id}', 'get'), 'responses', 'responses'), '304', '304');
    objectAt(objectAt(get304, 'headers', '304 headers'), 'ETag', 'the ETag of a 304');
    objectAt(objectAt(operation(doc, '/users', 'delete'), 'responses', 'responses'), '405', 'DELETE /users 405');
  });

  it("documents GET /users/stats: the listing's filters, a group of the groupable fields, a cap, its answer", () => {
    const stats = operation(doc, '/users/stats', 'get');
    assert.equal(stats.operationId, 'userStats');
    const names = (stats.parameters as Json[]).filter((p) => p.in === 'query').map((p) => String(p.name));
    const listing = (operation(doc, '/users', 'get').parameters as Json[])
      .filter((p) => p.in === 'query')
      .map((p) => String(p.name));
    const picks = listing.filter((name) => !['sort', 'limit', 'after', 'cursor', 'fields'].includes(name));
    assert.deepEqual(names, ['group', ...picks, 'limit']);
    const group = (stats.parameters as Json[]).find((p) => p.name === 'group');
    assert.deepEqual(objectAt(group, 'schema', 'group schema').enum, ['age', 'city']);
    const limit = (stats.parameters as Json[]).find((p) => p.name === 'limit');
    const bound = objectAt(limit, 'schema', 'limit schema');
    assert.deepEqual([bound.type, bound.minimum, bound.maximum], ['integer', 1, 1000]);
    const responses = objectAt(stats, 'responses', 'responses');
    for (const status of ['200', '304', '400', '500', '503']) objectAt(responses, status, `GET /users/stats ${status}`);
    const ok = objectAt(responses, '200', '200');
    for (const header of ['ETag', 'X-Total-Count']) objectAt(objectAt(ok, 'headers', 'headers'), header, header);
    const schema = objectAt(
      objectAt(objectAt(ok, 'content', 'content'), 'application/json', 'JSON'),
      'schema',
      'schema',
    );
    assert.equal(schema.$ref, '#/components/schemas/UserStats');
    const schemas = objectAt(objectAt(doc, 'components', 'components'), 'schemas', 'components.schemas');
    const group1 = objectAt(schemas, 'GroupStats', 'GroupStats');
    assert.deepEqual(Object.keys(objectAt(group1, 'properties', 'properties')), [
      'age',
      'city',
      'count',
      'minAge',
      'maxAge',
      'meanAge',
    ]);
    assert.deepEqual(group1.required, ['count']);
  });

  it('without tokens configured a token is optional everywhere; the id of a path is an integer', () => {
    assert.deepEqual(doc.security, [{}, { bearerAuth: [] }]);
    const schemes = objectAt(objectAt(doc, 'components', 'components'), 'securitySchemes', 'schemes');
    assert.equal(objectAt(schemes, 'bearerAuth', 'bearerAuth').bearerFormat, undefined, 'no JWT without JWT on');
    const parameters = operation(doc, '/users/{id}', 'get').parameters as Json[];
    const id = parameters.find((parameter) => parameter.in === 'path' && parameter.name === 'id');
    assert.equal(objectAt(id, 'schema', 'the id schema').type, 'integer');
  });

  it('documents the response headers of POST /users, each with a string schema', () => {
    const ok = objectAt(objectAt(operation(doc, '/users', 'post'), 'responses', 'responses'), '200', '200');
    const headers = objectAt(ok, 'headers', 'POST /users 200 headers');
    for (const name of ['Location', 'Content-Location', 'ETag']) {
      const schema = objectAt(objectAt(headers, name, `header ${name}`), 'schema', `header ${name} schema`);
      assert.equal(schema.type, 'string', `header ${name}`);
    }
  });

  it('an unknown parameter on a probe is refused, as on every other route', async () => {
    for (const path of ['/healthz?x=1', '/readyz?x=1']) {
      const answer = await call(suite.current.app, 'GET', path);
      assert.equal(answer.status, 400, path);
    }
  });

  it('GET / declares its two forms, and the JSON it sends has the keys of the Home schema', async () => {
    const ok = objectAt(objectAt(operation(doc, '/', 'get'), 'responses', 'responses'), '200', 'GET / 200');
    const content = objectAt(ok, 'content', 'GET / 200 content');
    objectAt(content, 'text/html', 'the page');
    const schemas = objectAt(objectAt(doc, 'components', 'components'), 'schemas', 'components.schemas');
    const home = objectAt(schemas, 'Home', 'components.schemas.Home');
    assert.deepEqual(objectAt(content, 'application/json', 'the JSON').schema, { $ref: '#/components/schemas/Home' });
    const sent = JSON.parse((await call(suite.current.app, 'GET', '/')).text) as Json;
    assert.deepEqual(Object.keys(sent), home.required);
    const links = objectAt(objectAt(home, 'properties', 'Home properties'), 'links', 'Home links');
    assert.deepEqual(Object.keys(objectAt(sent, 'links', 'the links sent')), links.required);
  });

  it('/docs answers 200 with HTML', async () => {
    const answer = await call(suite.current.app, 'GET', '/docs');
    assert.equal(answer.status, 200);
    assert.match(answer.headers.get('content-type') ?? '', /^text\/html/);
    assert.match(answer.text, /<html/i);
  });
});

describe('OpenAPI document with tokens configured', () => {
  const suite = appForSuite({
    API_TOKENS: 'read:r3adT0ken-4f9c2b7e1d8a6053-kq7xw,write:wr1te_token-9b3e5c1a7f2d4068-zm4=',
  });
  it('needs a bearer token on every operation but the public ones', async () => {
    const doc = JSON.parse((await call(suite.current.app, 'GET', '/openapi.json')).text) as Json;
    assert.deepEqual(doc.security, [{ bearerAuth: [] }]);
    assert.deepEqual(operation(doc, '/healthz', 'get').security, []);
    assert.equal(operation(doc, '/users', 'get').security, undefined);
  });
});

describe('OpenAPI document with JWT on', () => {
  const suite = appForSuite({
    JWT_JWKS_URL: 'https://id.example.test/jwks',
    JWT_ISSUER: 'https://id.example.test/',
    JWT_AUDIENCE: 'user-records',
  });
  it('says the bearer token may be a JWT (bearerFormat), and needs one on every operation but the public ones', async () => {
    const doc = JSON.parse((await call(suite.current.app, 'GET', '/openapi.json')).text) as Json;
    const scheme = objectAt(
      objectAt(objectAt(doc, 'components', 'components'), 'securitySchemes', 'schemes'),
      'bearerAuth',
      'bearerAuth',
    );
    assert.equal(scheme.bearerFormat, 'JWT');
    assert.equal(scheme.scheme, 'bearer');
    assert.deepEqual(doc.security, [{ bearerAuth: [] }]);
    assert.deepEqual(operation(doc, '/healthz', 'get').security, []);
  });
});

// The document and the service agree: a request built from the document's rules is accepted, and
// one that breaks a rule the document states is refused (400), for every operation with parameters.
describe('the document and the service agree on what is valid (fast-check)', () => {
  const suite = appForSuite({ RATE_LIMIT: 'off' });
  type Parameter = { name: string; in: string; required?: boolean; schema: Json };

  /** Values a schema allows: integers in range; text from a small alphabet of many scripts. */
  function valid(schema: Json): fc.Arbitrary<string> {
    if (schema.type === 'integer') {
      return fc
        .integer({ min: Number(schema.minimum ?? 0), max: Math.min(Number(schema.maximum ?? 1e9), 1e9) })
        .map(String);
    }
    const pattern = typeof schema.pattern === 'string' ? new RegExp(schema.pattern) : undefined;
    const letters = fc.constantFrom(...'aZé李Σж9-_.!🙂 '.split(/(?:)/u));
    return fc
      .array(letters, {
        minLength: Number(schema.minLength ?? 1),
        maxLength: Math.min(Number(schema.maxLength ?? 20), 20),
      })
      .map((chars) => chars.join(''))
      .filter((text) => text.trim() === text && (pattern === undefined || pattern.test(text)));
  }

  /** Values a schema refuses, as the document says it. */
  function invalid(schema: Json): fc.Arbitrary<string> | undefined {
    if (schema.type === 'integer') {
      return fc.oneof(
        fc.integer({ min: -1000, max: Number(schema.minimum ?? 0) - 1 }).map(String),
        fc.constantFrom('x', '1.5', '', ' 1'),
      );
    }
    if (typeof schema.maxLength === 'number' && schema.maxLength <= 200)
      return fc.constant('a'.repeat(schema.maxLength + 1));
    return undefined;
  }

  const cases: Array<{ method: string; path: string; parameters: Parameter[] }> = [
    { method: 'POST', path: '/users', parameters: [] },
    { method: 'PUT', path: '/users/1', parameters: [] },
    { method: 'PATCH', path: '/users/1', parameters: [] },
  ];

  it('every request the document allows is accepted; breaking one stated rule is a 400', async () => {
    // Record 1, which PUT and PATCH change.
    assert.equal((await call(suite.current.app, 'POST', '/users?name=Seed&age=1&city=Here')).status, 200);
    const doc = JSON.parse((await call(suite.current.app, 'GET', '/openapi.json')).text) as Json;
    const paths = objectAt(doc, 'paths', 'paths');
    for (const entry of cases) {
      const template = entry.path === '/users' ? '/users' : '/users/{id}';
      const op = objectAt(objectAt(paths, template, template), entry.method.toLowerCase(), entry.method);
      entry.parameters = (op.parameters as Parameter[]).filter(
        (parameter) => parameter.in === 'query' && ['name', 'age', 'city'].includes(parameter.name),
      );
    }
    for (const entry of cases) {
      const required = entry.parameters.filter((parameter) => parameter.required === true);
      const optional = entry.parameters.filter((parameter) => parameter.required !== true);
      const request = fc.record(
        Object.fromEntries([
          ...required.map((parameter) => [parameter.name, valid(parameter.schema)]),
          ...optional.map((parameter) => [parameter.name, fc.option(valid(parameter.schema), { nil: undefined })]),
        ]),
      ) as fc.Arbitrary<Record<string, string | undefined>>;
      await fc.assert(
        fc.asyncProperty(request, fc.nat({ max: entry.parameters.length - 1 }), async (values, broken) => {
          const given = Object.entries(values).filter((pair): pair is [string, string] => pair[1] !== undefined);
          if (given.length === 0) return; // PATCH: at least one field, which the text says
          const query = new URLSearchParams(given).toString();
          const accepted = await call(suite.current.app, entry.method, `${entry.path}?${query}`);
          assert.equal(accepted.status, 200, `${entry.method} ${entry.path}?${query}: ${accepted.text}`);
          const parameter = entry.parameters[broken] as Parameter;
          const bad = invalid(parameter.schema);
          if (bad === undefined) return;
          const value = fc.sample(bad, 1)[0] as string;
          const wrong = new URLSearchParams([
            ...given.filter(([name]) => name !== parameter.name),
            [parameter.name, value],
          ]);
          const refused = await call(suite.current.app, entry.method, `${entry.path}?${wrong}`);
          assert.equal(refused.status, 400, `${entry.method} ${entry.path}?${wrong}: ${refused.text}`);
        }),
        { numRuns: 60, seed: Number(process.env.OPENAPI_SEED ?? 20261123) },
      );
      if (required.length > 0) {
        const missing = await call(suite.current.app, entry.method, `${entry.path}?age=1`);
        assert.equal(missing.status, 400, `${entry.method} without the required name and city`);
      }
    }
  });
});
