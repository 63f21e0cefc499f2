import assert from 'node:assert/strict';
import { it } from 'node:test';
import type { InProcessApp } from './app.ts';
import { type Answer, assertProblem, call } from './http.ts';

/**
 * One request and what its answer must be, as a row of a table (after PocketBase's ApiScenario).
 * Every `expected…` field given is checked; the hooks run just before the request and just after
 * the checks, for what a row needs around it (a snapshot of the stored data, say).
 */
export interface Scenario {
  /** The test's name. */
  name: string;
  method: string;
  /** Path and query string; a function when it holds something known only once the suite runs (an id). */
  url: string | (() => string);
  headers?: Readonly<Record<string, string>>;
  body?: string | Buffer;
  /**
   * Send it over a real socket to the app's listening port rather than through `app.inject`: for
   * what Node's HTTP parser decides (a request line or headers past its limits).
   */
  socket?: boolean;
  expectedStatus: number;
  /** The whole body, exactly. */
  expectedBody?: string;
  /** The body parsed as JSON, deeply equal to this. */
  expectedJson?: unknown;
  /** Text the body must contain, each. */
  expectedContent?: readonly string[];
  /** Text the body must not contain, any. */
  notExpectedContent?: readonly string[];
  /** Answer headers: a string must be the exact value, a RegExp must match it, null means absent. */
  expectedHeaders?: Readonly<Record<string, string | RegExp | null>>;
  /**
   * The answer is RFC 9457 problem details (its whole shape is checked), of this `type` when given,
   * whose `errors` name exactly these parameters (in any order) when given.
   */
  expectedProblem?: { type?: string; parameters?: readonly string[] };
  before?: () => Promise<void> | void;
  after?: (answer: Answer) => Promise<void> | void;
}

/** Where scenarios are sent: an app built in this process, or the URL of a server process. */
export type ScenarioTarget = InProcessApp | string;

/** Sends one scenario's request, checks its answer against every expectation, and returns it. */
export async function runScenario(target: ScenarioTarget, scenario: Scenario): Promise<Answer> {
  await scenario.before?.();
  const url = typeof scenario.url === 'function' ? scenario.url() : scenario.url;
  const where = typeof target === 'string' ? target : scenario.socket === true ? target.url : target.app;
  const answer = await call(where, scenario.method, url, {
    headers: scenario.headers === undefined ? undefined : { ...scenario.headers },
    body: scenario.body,
  });
  const what = `${scenario.method} ${url.slice(0, 200)}`;

  if (scenario.expectedProblem !== undefined) {
    const problem: unknown = assertProblem(answer, scenario.expectedStatus);
    const { type, parameters } = scenario.expectedProblem;
    if (type !== undefined) assert.equal(field(problem, 'type'), type, `${what}: problem type`);
    if (parameters !== undefined) {
      const errors = field(problem, 'errors') ?? [];
      assert.ok(Array.isArray(errors), `${what}: errors is not a list`);
      const listed: readonly unknown[] = errors;
      const named = listed.map((error) => String(field(error, 'parameter')));
      assert.deepEqual(named.sort(), [...parameters].sort(), answer.text);
    }
  } else {
    assert.equal(answer.status, scenario.expectedStatus, `${what}: ${answer.text.slice(0, 500)}`);
  }
  if (scenario.expectedBody !== undefined) assert.equal(answer.text, scenario.expectedBody, what);
  if (scenario.expectedJson !== undefined) {
    const parsed: unknown = answer.json;
    assert.deepEqual(parsed, scenario.expectedJson, what);
  }
  for (const text of scenario.expectedContent ?? []) {
    assert.ok(answer.text.includes(text), `${what}: the body lacks ${JSON.stringify(text)}: ${answer.text}`);
  }
  for (const text of scenario.notExpectedContent ?? []) {
    assert.ok(!answer.text.includes(text), `${what}: the body holds ${JSON.stringify(text)}`);
  }
  for (const [name, expected] of Object.entries(scenario.expectedHeaders ?? {})) {
    const value = answer.headers.get(name);
    if (expected instanceof RegExp) assert.match(value ?? '', expected, `${what}: ${name}`);
    else assert.equal(value, expected, `${what}: ${name}`);
  }
  await scenario.after?.(answer);
  return answer;
}

/** Defines one test per scenario, each sent to the target the suite has when its tests run. */
export function runScenarios(target: () => ScenarioTarget, scenarios: readonly Scenario[]): void {
  for (const scenario of scenarios) {
    it(scenario.name, async () => {
      await runScenario(target(), scenario);
    });
  }
}

function field(value: unknown, key: string): unknown {
  return typeof value === 'object' && value !== null ? (value as Record<string, unknown>)[key] : undefined;
}
