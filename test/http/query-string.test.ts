import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  decodeComponent,
  type ParamValue,
  paramErrors,
  type ParsedParams,
  parseParams,
} from '../../src/http/query-string.ts';

/** A computed key: a literal `__proto__:` in an object literal would set the prototype instead. */
const PROTO = '__proto__';

interface ParseRow {
  name: string;
  raw: string;
  expected: Record<string, ParamValue>;
  /** Names (as sent) reported as malformed, when some parameters cannot be decoded. */
  malformed?: string[];
}

/** The parsed parameters as a plain object, without the recorded faults. */
function entries(params: ParsedParams): Record<string, ParamValue> {
  return Object.fromEntries(Object.entries(params));
}

const parseRows: ParseRow[] = [
  { name: 'empty string', raw: '', expected: {} },
  { name: 'plain pairs', raw: 'name=Ada&age=36&city=London', expected: { name: 'Ada', age: '36', city: 'London' } },
  {
    name: '+ is a space, in names and values',
    raw: 'full+name=Ada+Lovelace',
    expected: { 'full name': 'Ada Lovelace' },
  },
  { name: '%2B is a literal +', raw: 'q=a%2Bb', expected: { q: 'a+b' } },
  { name: '%20 is a space', raw: 'city=New%20York', expected: { city: 'New York' } },
  { name: 'escapes in either case', raw: 'a=%c3%a9&b=%C3%A9', expected: { a: 'é', b: 'é' } },
  { name: 'two-byte UTF-8 (é)', raw: 'name=Ren%C3%A9e', expected: { name: 'Renée' } },
  { name: 'three-byte UTF-8 (李)', raw: 'name=%E6%9D%8E', expected: { name: '李' } },
  { name: 'four-byte UTF-8 (emoji)', raw: 'name=%F0%9F%98%80', expected: { name: '😀' } },
  { name: 'escaped name', raw: 'n%61me=Ada', expected: { name: 'Ada' } },
  { name: 'escaped & and = stay in the value', raw: 'q=a%26b%3Dc', expected: { q: 'a&b=c' } },
  { name: 'only the first = splits', raw: 'q=a=b', expected: { q: 'a=b' } },
  { name: 'a repeat becomes an array', raw: 'name=A&name=B', expected: { name: ['A', 'B'] } },
  { name: 'three repeats', raw: 'a=1&b=x&a=2&a=3', expected: { a: ['1', '2', '3'], b: 'x' } },
  { name: 'repeats keep empty values', raw: 'a=&a=1', expected: { a: ['', '1'] } },
  { name: 'a name without = has the value ""', raw: 'flag&name=Ada', expected: { flag: '', name: 'Ada' } },
  { name: 'a name with an empty value', raw: 'name=', expected: { name: '' } },
  { name: 'empty parts are skipped', raw: '&&name=Ada&&city=Oslo&', expected: { name: 'Ada', city: 'Oslo' } },
  { name: 'latin1 bytes are UTF-8 (Node hands raw bytes over)', raw: 'name=Zo\u00c3\u00ab', expected: { name: 'Zoë' } },
  { name: 'characters above U+00FF are UTF-8 encoded', raw: 'name=李&city=😀', expected: { name: '李', city: '😀' } },
  { name: 'a lone %', raw: 'name=%&city=Oslo', expected: { city: 'Oslo' }, malformed: ['name'] },
  { name: 'a truncated escape', raw: 'name=%4', expected: {}, malformed: ['name'] },
  { name: 'a truncated escape mid-value', raw: 'name=A%4G', expected: {}, malformed: ['name'] },
  { name: 'a non-hex escape', raw: 'name=%ZZ&age=1', expected: { age: '1' }, malformed: ['name'] },
  { name: 'invalid UTF-8 sequence', raw: 'name=%C3%28', expected: {}, malformed: ['name'] },
  { name: 'an encoded surrogate', raw: 'name=%ED%A0%80', expected: {}, malformed: ['name'] },
  { name: 'the byte FF', raw: 'name=%FF', expected: {}, malformed: ['name'] },
  { name: 'a truncated UTF-8 sequence', raw: 'name=%E6%9D', expected: {}, malformed: ['name'] },
  { name: 'a lone latin1 \\u00ff is not UTF-8', raw: 'name=\u00ff', expected: {}, malformed: ['name'] },
  { name: 'a malformed name is listed raw', raw: '%ZZ=1&a=2', expected: { a: '2' }, malformed: ['%ZZ'] },
  {
    name: 'every malformed parameter is listed, in order',
    raw: 'a=%&b=ok&c=%FF&a=%ZZ',
    expected: { b: 'ok' },
    malformed: ['a', 'c', 'a'],
  },
  {
    name: '__proto__ and constructor are ordinary keys',
    raw: '__proto__=x&constructor=y&toString=z',
    expected: { [PROTO]: 'x', constructor: 'y', toString: 'z' },
  },
  {
    name: 'a repeated __proto__ becomes an array',
    raw: '__proto__=1&__proto__=2',
    expected: { [PROTO]: ['1', '2'] },
  },
];

describe('parseParams', () => {
  for (const row of parseRows) {
    it(row.name, () => {
      const params = parseParams(row.raw);
      assert.deepEqual(entries(params), row.expected);
      const malformed = paramErrors(params).map((error) => error.parameter);
      assert.deepEqual(malformed, row.malformed ?? []);
      for (const error of paramErrors(params)) assert.equal(error.detail, 'is not correctly percent-encoded UTF-8');
    });
  }

  it('returns an object without a prototype', () => {
    const params = parseParams('__proto__=x&constructor=y');
    assert.equal(Object.getPrototypeOf(params), null);
    assert.equal(Object.getPrototypeOf(parseParams('')), null);
    assert.ok(Object.hasOwn(params, PROTO));
    assert.equal(params[PROTO], 'x');
    assert.equal(params.constructor, 'y');
  });

  it('does not pollute Object.prototype', () => {
    parseParams('__proto__=polluted&__proto__[polluted]=yes&constructor[prototype][polluted]=yes');
    parseParams('__proto__.polluted=yes&polluted=yes');
    assert.equal(Object.hasOwn(Object.prototype, 'polluted'), false);
    assert.equal(({} as Record<string, unknown>).polluted, undefined);
  });

  it('keeps a parameter without escapes exactly as sent', () => {
    const raw = 'note=A-b_c.d~e*f!g(h)i';
    assert.equal(parseParams(raw).note, 'A-b_c.d~e*f!g(h)i');
  });
});

describe('decodeComponent', () => {
  const rows: Array<{ raw: string; expected: string | undefined }> = [
    { raw: '', expected: '' },
    { raw: 'plain', expected: 'plain' },
    { raw: 'a+b', expected: 'a b' },
    { raw: 'a%2Bb', expected: 'a+b' },
    { raw: '%C3%A9', expected: 'é' },
    { raw: '%E6%9D%8E', expected: '李' },
    { raw: '%F0%9F%98%80', expected: '😀' },
    { raw: 'Zo\u00c3\u00ab', expected: 'Zoë' },
    { raw: '李😀', expected: '李😀' },
    { raw: '%', expected: undefined },
    { raw: '%4', expected: undefined },
    { raw: '%ZZ', expected: undefined },
    { raw: '%C3%28', expected: undefined },
    { raw: '%ED%A0%80', expected: undefined },
    { raw: '%FF', expected: undefined },
    { raw: '\u00ff', expected: undefined },
    { raw: '\u00e9', expected: undefined },
  ];
  for (const row of rows) {
    it(`${JSON.stringify(row.raw)} → ${JSON.stringify(row.expected)}`, () => {
      assert.equal(decodeComponent(row.raw), row.expected);
    });
  }
});
