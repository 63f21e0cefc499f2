import assert from 'node:assert/strict';

/**
 * Asserts that no log line holds any of the given values (record names, cities, tokens). Values
 * shorter than 6 characters are refused: they would match by chance and prove nothing.
 */
export function assertNotLogged(logs: readonly string[], values: Iterable<string>): void {
  let checked = 0;
  for (const value of values) {
    assert.ok(value.length >= 6, `too short to search the logs for: ${JSON.stringify(value)}`);
    const line = logs.find((entry) => entry.includes(value));
    assert.equal(line, undefined, `a log line holds ${JSON.stringify(value)}: ${line}`);
    checked++;
  }
  assert.ok(checked > 0, 'no values to look for');
  assert.ok(logs.length > 0, 'no log lines captured');
}
