/**
 * How big the attack suites run: `SUITE_SCALE=long` (npm run test:long) for the long form, anything
 * else for the short, bounded form that `npm test` runs.
 */
export const LONG = process.env.SUITE_SCALE === 'long';

/** The short value in `npm test`, the long one under `SUITE_SCALE=long`. */
export function scaled<T>(short: T, long: T): T {
  return LONG ? long : short;
}
