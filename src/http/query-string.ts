/**
 * A strict `application/x-www-form-urlencoded` parser, used for query strings and form bodies.
 * Unlike lenient parsers it never alters a value: a malformed percent-escape or bytes that are not
 * valid UTF-8 make the parameter malformed, and the request is refused instead of storing a guess.
 * A repeated parameter becomes an array so that validation can refuse it by name.
 */

import type { FieldError } from './problem.ts';

/**
 * Faults found while reading parameters (before any schema sees them), kept on the parsed object
 * under a symbol so that validation reports them together with every other bad parameter.
 */
const PARAM_ERRORS = Symbol('parameter errors');

type WithErrors = { [PARAM_ERRORS]?: FieldError[] };

export type ParamValue = string | string[];
export type ParsedParams = Record<string, ParamValue> & WithErrors;

/**
 * The most parameters read from one query string or form body: no route takes more than a few, so
 * past this the rest is not read (a request with thousands of names costs no more than this many).
 */
export const MAX_PARAMETERS = 50;

/** Records faults against a parsed object (query, form or JSON body); appends in place, so many cost little. */
export function addParamErrors(target: object, errors: FieldError[]): void {
  if (errors.length === 0) return;
  const holder = target as WithErrors;
  const list = (holder[PARAM_ERRORS] ??= []);
  for (const error of errors) list.push(error);
}

/** The name under which a request with more than MAX_PARAMETERS parameters is reported. */
export const TOO_MANY = '(too many)';

/** The fault recorded when a request carries more than MAX_PARAMETERS parameters. */
export function tooManyParameters(): FieldError {
  return { parameter: TOO_MANY, detail: `at most ${MAX_PARAMETERS} parameters are read; the rest were not` };
}

/** The faults recorded against a parsed object, if any. */
export function paramErrors(target: unknown): FieldError[] {
  return (typeof target === 'object' && target !== null ? (target as WithErrors)[PARAM_ERRORS] : undefined) ?? [];
}

const utf8 = new TextDecoder('utf-8', { fatal: true });

function hexValue(code: number): number {
  if (code >= 48 && code <= 57) return code - 48;
  if (code >= 65 && code <= 70) return code - 55;
  if (code >= 97 && code <= 102) return code - 87;
  return -1;
}

/**
 * Decodes one component. Characters up to U+00FF are taken as the bytes Node's HTTP parser read
 * (it hands over raw bytes as latin1); anything above comes from in-process callers and is UTF-8
 * encoded. Returns undefined when the component is malformed.
 */
export function decodeComponent(raw: string): string | undefined {
  const plus = raw.replaceAll('+', ' ');
  if (!/[%\u0080-\uffff]/.test(plus)) return plus;
  const bytes: number[] = [];
  for (let i = 0; i < plus.length; i++) {
    const code = plus.charCodeAt(i);
    if (code === 37) {
      const high = hexValue(plus.charCodeAt(i + 1));
      const low = hexValue(plus.charCodeAt(i + 2));
      if (high < 0 || low < 0) return undefined;
      bytes.push(high * 16 + low);
      i += 2;
    } else if (code <= 0xff) {
      bytes.push(code);
    } else {
      const point = plus.codePointAt(i) ?? code;
      if (point >= 0xd800 && point <= 0xdfff) return undefined; // an unpaired surrogate is not text
      bytes.push(...Buffer.from(String.fromCodePoint(point), 'utf8'));
      if (point > 0xffff) i++;
    }
  }
  try {
    return utf8.decode(Uint8Array.from(bytes));
  } catch {
    return undefined;
  }
}

/** Parses `a=1&b=2` into a prototype-less object; never throws. */
export function parseParams(raw: string): ParsedParams {
  const params: ParsedParams = Object.create(null);
  if (raw === '') return params;
  let read = 0;
  for (const part of raw.split('&')) {
    if (part === '') continue;
    if (++read > MAX_PARAMETERS) {
      addParamErrors(params, [tooManyParameters()]);
      break;
    }
    const eq = part.indexOf('=');
    const rawName = eq === -1 ? part : part.slice(0, eq);
    const name = decodeComponent(rawName);
    const value = decodeComponent(eq === -1 ? '' : part.slice(eq + 1));
    if (name === undefined || value === undefined) {
      addParamErrors(params, [{ parameter: rawName, detail: 'is not correctly percent-encoded UTF-8' }]);
      continue;
    }
    const existing = params[name];
    if (existing === undefined) params[name] = value;
    else if (Array.isArray(existing)) existing.push(value);
    else params[name] = [existing, value];
  }
  return params;
}
