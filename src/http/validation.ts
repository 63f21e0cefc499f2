import type { FastifySchemaCompiler } from 'fastify';
import type { TSchema } from 'typebox';
import { Compile } from 'typebox/compile';
import type { TLocalizedValidationError } from 'typebox/error';
import { type FieldError, HttpError } from './problem.ts';
import { MAX_PARAMETERS, paramErrors, TOO_MANY } from './query-string.ts';

/**
 * Compiles route schemas with TypeBox: all errors at once, no type coercion, unknown parameters
 * refused. Failures, together with the faults found while parsing (malformed encodings, repeated
 * JSON keys, input split between query and body), become one 400 problem whose `errors` name every
 * parameter at fault.
 * Bodies are not validated here: they carry the same parameters as the query string and are merged
 * into it before validation (see users/input.ts), so one schema checks both forms.
 * Headers are not validated here either (see below).
 */
export function createValidatorCompiler(rules: Readonly<Record<string, string>>): FastifySchemaCompiler<TSchema> {
  return ({ schema, httpPart }) => {
    // Headers schemas document the headers a route reads (OpenAPI); the routes check the ones that
    // matter themselves (Idempotency-Key), so they cost nothing per request.
    if (httpPart === 'body' || httpPart === 'headers') return (value) => ({ value });
    // A route's own words for a parameter whose name another route uses otherwise (`x-rules`).
    const own = (schema as { 'x-rules'?: Readonly<Record<string, string>> })['x-rules'];
    const faultsOf = compileChecker(schema, own === undefined ? rules : { ...rules, ...own });
    return (value) => {
      const faults = faultsOf(value);
      return faults.length === 0 ? { value } : { error: invalidInput(faults) };
    };
  };
}

/**
 * A schema's check as a list of faults (none when the value passes): the faults found while
 * parsing first, then each known parameter at fault in schema order, then the unknown ones. Also
 * used for the records of a batch, whose faults are named by their place in it.
 */
export function compileChecker(
  schema: TSchema,
  rules: Readonly<Record<string, string>>,
  unknownDetail = 'is not a known parameter',
): (value: unknown) => FieldError[] {
  const check = Compile(schema);
  const order = Object.keys((schema as { properties?: object }).properties ?? {});
  const known = new Set(order);
  // Names a route refuses with a reason of its own (`x-refused`: name to detail), rather than as unknown.
  const refused = (schema as { 'x-refused'?: Readonly<Record<string, string>> })['x-refused'] ?? {};
  return (value) => {
    const early = paramErrors(value);
    if (early.length === 0 && check.Check(value)) return [];
    // Unknown names are found here rather than by the schema, which stops after a few errors:
    // they must not hide a fault of a known parameter, nor go unreported themselves.
    const input = (value ?? {}) as Record<string, unknown>;
    const unknown: FieldError[] = [];
    const ownPart: Record<string, unknown> = {};
    for (const name of Object.keys(input)) {
      if (known.has(name)) ownPart[name] = input[name];
      else
        unknown.push({
          parameter: name,
          detail: Object.hasOwn(refused, name) ? (refused[name] as string) : unknownDetail,
        });
    }
    const named = new Set(early.map((error) => error.parameter));
    const errors = [...fieldErrors(check.Errors(ownPart), ownPart, rules, order), ...unknown];
    return [...early, ...errors.filter((error) => !named.has(error.parameter))];
  };
}

/** At most this many faults are listed in one answer; the detail says how many more there were. */
export const MAX_REPORTED_FAULTS = 20;
/**
 * A parameter name is quoted back at most this many characters, and at most NAME_BYTES bytes of
 * UTF-8: an answer never repeats unbounded client input, so twenty names of four-byte characters
 * still make an answer of a few KiB.
 */
const NAME_SHOWN = 64;
const NAME_BYTES = 64;
/** The detail names parameters up to this many bytes; the rest are counted, and listed in `errors`. */
const DETAIL_NAMES_BYTES = 512;

/** Control and format characters (NUL, bidi overrides, zero-width...) as `\\u` escapes, never as themselves. */
const INVISIBLE = /[\p{Cc}\p{Cf}]/gu;

function shown(raw: string): string {
  const name = raw.replace(INVISIBLE, (char) => `\\u${(char.codePointAt(0) as number).toString(16).padStart(4, '0')}`);
  if (name.length <= NAME_SHOWN && Buffer.byteLength(name) <= NAME_BYTES) return name;
  let kept = '';
  let bytes = 0;
  let count = 0;
  for (const char of name) {
    bytes += Buffer.byteLength(char);
    if (++count > NAME_SHOWN || bytes > NAME_BYTES) return `${kept}…`;
    kept += char;
  }
  return kept;
}

/** One 400 problem for the faults found, each parameter once, the first MAX_REPORTED_FAULTS listed. */
export function invalidInput(faults: FieldError[]): HttpError {
  const errors: FieldError[] = [];
  const seen = new Set<string>();
  let more = 0;
  for (const fault of faults) {
    const parameter = shown(fault.parameter);
    if (seen.has(parameter)) continue;
    seen.add(parameter);
    if (errors.length < MAX_REPORTED_FAULTS) errors.push({ parameter, detail: fault.detail });
    else more++;
  }
  const named: string[] = [];
  let bytes = 0;
  for (const { parameter } of errors) {
    bytes += Buffer.byteLength(parameter) + 2;
    if (bytes > DETAIL_NAMES_BYTES) break;
    named.push(parameter);
  }
  const unnamed = errors.length - named.length;
  const names = named.join(', ');
  const tooMany = seen.has(TOO_MANY) ? ` At most ${MAX_PARAMETERS} parameters are read; this request has more.` : '';
  const detail =
    errors.length === 0
      ? 'The request parameters are invalid.'
      : more === 0 && unnamed === 0
        ? `Invalid parameters: ${names}.${tooMany}`
        : more === 0
          ? `Invalid parameters: ${names}, and ${unnamed} more (all listed in errors).${tooMany}`
          : `Invalid parameters: ${names}, and ${unnamed + more} more (only the first ${MAX_REPORTED_FAULTS} are listed in errors).${tooMany}`;
  return new HttpError('invalid-input', detail, { errors });
}

/** One entry per parameter at fault, in a stable order, in words a client can act on. */
export function fieldErrors(
  errors: TLocalizedValidationError[],
  value: unknown,
  rules: Readonly<Record<string, string>>,
  order: readonly string[] = [],
): FieldError[] {
  const found = new Map<string, string>();
  const add = (parameter: string, detail: string) => {
    if (!found.has(parameter)) found.set(parameter, detail);
  };
  const input = (value ?? {}) as Record<string, unknown>;
  const alternatives = errors
    .filter((error) => error.keyword === 'required' && error.schemaPath.startsWith('#/anyOf'))
    .flatMap((error) => (error.params as { requiredProperties: string[] }).requiredProperties);

  for (const error of errors) {
    const name = error.instancePath.split('/')[1];
    switch (error.keyword) {
      case 'required':
        if (!error.schemaPath.startsWith('#/anyOf')) {
          for (const missing of error.params.requiredProperties) add(missing, 'is required');
        }
        break;
      case 'anyOf':
        if (name === undefined) {
          for (const option of alternatives) add(option, `at least one of ${alternatives.join(', ')} is required`);
        }
        break;
      case 'boolean':
        break;
      default:
        if (name !== undefined) add(name, describe(name, error, input[name], rules));
    }
  }
  // Known parameters in schema order, then unknown ones as sent.
  const rank = (name: string) => (order.includes(name) ? order.indexOf(name) : order.length);
  return [...found].sort(([a], [b]) => rank(a) - rank(b)).map(([parameter, detail]) => ({ parameter, detail }));
}

function describe(
  name: string,
  error: TLocalizedValidationError,
  value: unknown,
  rules: Readonly<Record<string, string>>,
): string {
  if (Array.isArray(value)) return 'must be given only once, as a single value';
  if (typeof value === 'string') {
    if (error.keyword === 'minLength') return 'must not be empty or blank';
    if (error.keyword === 'maxLength') return `must be at most ${error.params.limit} characters`;
  }
  return `must be ${rules[name] ?? 'valid'}`;
}
