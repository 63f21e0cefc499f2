/** Reading Accept (RFC 9110, 12.5.1): the start page (ops/home.ts) and the listing's formats (users/). */

/**
 * How much an Accept header wants `type/subtype`: the q of the most specific range that names it
 * (`type/subtype` over `type/*` over the wildcard of every type, RFC 9110 12.5.1), 0 when none does. Parameters
 * other than q are ignored; a q that is not a number counts as 1.
 */
export function quality(accept: string, type: string, subtype: string): number {
  let best = -1;
  let q = 0;
  for (const range of accept.split(',')) {
    const [media = '', ...parameters] = range.split(';');
    const [rangeType = '', rangeSubtype = ''] = media.trim().toLowerCase().split('/');
    let specificity: number;
    if (rangeType === type && rangeSubtype === subtype) specificity = 2;
    else if (rangeType === type && rangeSubtype === '*') specificity = 1;
    else if (rangeType === '*' && rangeSubtype === '*') specificity = 0;
    else continue;
    if (specificity <= best) continue;
    best = specificity;
    const given = parameters.map((parameter) => parameter.trim().toLowerCase()).find((p) => p.startsWith('q='));
    const value = given === undefined ? 1 : Number(given.slice(2));
    q = Number.isFinite(value) ? Math.min(Math.max(value, 0), 1) : 1;
  }
  return q;
}

/**
 * The media type to answer with, of those a route `offers` (`type/subtype`, its default first): the
 * one the client wants most; a tie goes to the earlier offer, so the wildcard of every type, an
 * absent or empty Accept take the default. Undefined when the client accepts none of them (406).
 */
export function negotiate<T extends string>(accept: string | undefined, offers: readonly T[]): T | undefined {
  if (accept === undefined || accept.trim() === '') return offers[0];
  let chosen: T | undefined;
  let best = 0;
  for (const offer of offers) {
    const [type = '', subtype = ''] = offer.split('/');
    const q = quality(accept, type, subtype);
    if (q > best) {
      best = q;
      chosen = offer;
    }
  }
  return chosen;
}
