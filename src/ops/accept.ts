/**
 * How much an Accept header wants `type/subtype`: the q of the most specific range that names it
 * (`type/subtype` over `type/*` over the wildcard of every type, RFC 9110 12.5.1), 0 when none does. Parameters
 * other than q are ignored; a q that is not a number counts as 1.
 */
function quality(accept: string, type: string, subtype: string): number {
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
 * Whether a client wants HTML more than JSON: a browser does (it asks for text/html, and for
 * anything else at a lower q); curl and fetch (the wildcard of every type) and API clients do not.
 * A tie is JSON, and so is an Accept naming neither: the service answers JSON rather than 406.
 */
export function prefersHtml(accept: string | undefined): boolean {
  if (accept === undefined) return false;
  return quality(accept, 'text', 'html') > quality(accept, 'application', 'json');
}
