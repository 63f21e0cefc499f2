import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { repeatedKeys } from '../../src/http/body-parsers.ts';

describe('repeatedKeys', () => {
  const rows: Array<[string, string, string[]]> = [
    ['no repeats', '{"name":"a","age":1,"city":"b"}', []],
    ['a repeated key', '{"name":"a","name":"b"}', ['name']],
    ['each repeated key once', '{"a":1,"b":2,"a":3,"b":4,"a":5}', ['a', 'b']],
    ['nested keys do not count', '{"a":{"a":1,"a":2},"b":[{"a":1},{"a":2}]}', []],
    ['a nested repeat beside a top-level one', '{"a":{"b":1},"a":2}', ['a']],
    ['escaped quotes in keys', '{"a\\"b":1,"a\\"b":2}', ['a"b']],
    ['a backslash ending a string value', '{"a":"x\\\\","a":1}', ['a']],
    ['escapes that spell the same key', '{"name":1,"n\\u0061me":2}', ['name']],
    ['strings that look like keys', '{"a":"\\"a\\":1,","b":"{\\"a\\":2}"}', []],
    ['white space around tokens', '{ "a" : 1 ,\n "a" : 2 }', ['a']],
    ['an empty object', '{}', []],
  ];
  // A batch: each object of the array by its place; keys across objects are not repeats.
  const arrays: Array<[string, string, Array<[number, string[]]>]> = [
    ['no repeats in a batch', '[{"name":"a"},{"name":"b"}]', []],
    ['a repeat in the second object', '[{"a":1},{"a":1,"a":2},{"a":3}]', [[1, ['a']]]],
    [
      'repeats in two objects',
      '[{"b":1,"b":2},{"c":1},{"d":1,"d":2,"d":3}]',
      [
        [0, ['b']],
        [2, ['d']],
      ],
    ],
    ['nested keys in a batch do not count', '[{"a":{"x":1,"x":2}},{"a":[{"x":1,"x":2}]}]', []],
    ['values that are not objects keep their places', '[1,"a,b",[2,3],{"a":1,"a":2}]', [[3, ['a']]]],
    ['an empty array', '[]', []],
  ];
  for (const [name, text, expected] of arrays) {
    it(name, () => {
      JSON.parse(text);
      assert.deepEqual([...repeatedKeys(text)], expected);
    });
  }
  for (const [name, text, expected] of rows) {
    it(name, () => {
      JSON.parse(text); // every row is valid JSON, as the function requires
      assert.deepEqual(repeatedKeys(text).get(0) ?? [], expected);
    });
  }
});
