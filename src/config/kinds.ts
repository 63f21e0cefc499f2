/**
 * The kinds of value a setting takes. Each parses the text of an environment variable or a flag and
 * describes its own rule, once, for error messages, `--help` and docs/operations.md.
 */

/** A parse that failed: the rule the text broke, said of the setting ("must be ..."). */
export class Invalid {
  readonly message: string;

  constructor(message: string) {
    this.message = message;
  }
}

export interface Kind<T> {
  /** "a whole number from 1 to 1024", "one of info, warn", ...: what every value must be. */
  rule: string;
  /** Whether `--help` and docs/operations.md repeat the rule after the setting's own words (no for free text, whose words say it). */
  listed: boolean;
  parse(text: string): T | Invalid;
}

const DIGITS = /^[0-9]{1,9}$/;

/** A whole number in a range, optionally with a unit ("milliseconds") and words that stand for values. */
export function integer<W extends Record<string, unknown> = Record<never, never>>(
  min: number,
  max: number,
  options: { unit?: string; words?: W; wordsRule?: string } = {},
): Kind<number | W[keyof W]> {
  const unit = options.unit === undefined ? 'a whole number' : `a whole number of ${options.unit}`;
  const rule = `${unit} from ${min} to ${max}${options.wordsRule === undefined ? '' : `, or ${options.wordsRule}`}`;
  return {
    rule,
    listed: true,
    parse: (text) => {
      const words = options.words as Record<string, W[keyof W]> | undefined;
      if (words !== undefined && Object.hasOwn(words, text)) return words[text] as W[keyof W];
      const value = DIGITS.test(text) ? Number(text) : Number.NaN;
      return value >= min && value <= max ? value : new Invalid(`must be ${rule}`);
    },
  };
}

/** One of a few words. */
export function oneOf<const T extends string>(values: readonly T[]): Kind<T> {
  const rule = `one of ${values.join(', ')}`;
  return {
    rule,
    listed: true,
    parse: (text) => ((values as readonly string[]).includes(text) ? (text as T) : new Invalid(`must be ${rule}`)),
  };
}

/** Text, checked and converted by `convert` (which returns Invalid with the reason when it is not usable). */
export function text<T = string>(
  rule: string,
  convert: (text: string) => T | Invalid = (value) => value as T,
): Kind<T> {
  return { rule, listed: false, parse: convert };
}

const DURATION = /^([0-9]{1,9})(ms|s|m|h|d)$/;
const UNIT_MS = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const;

/** A length of time with its unit (`90s`, `12h`, `7d`), in milliseconds, within a range given in milliseconds. */
export function duration(minMs: number, maxMs: number, range: string): Kind<number> {
  const rule = `a whole number with a unit (ms, s, m, h or d) from ${range}`;
  return {
    rule,
    listed: true,
    parse: (text) => {
      const match = DURATION.exec(text);
      const value = match === null ? Number.NaN : Number(match[1]) * UNIT_MS[match[2] as keyof typeof UNIT_MS];
      return value >= minMs && value <= maxMs ? value : new Invalid(`must be ${rule}`);
    },
  };
}
