import { quality } from '../http/accept.ts';

/**
 * Whether a client wants HTML more than JSON: a browser does (it asks for text/html, and for
 * anything else at a lower q); curl and fetch (the wildcard of every type) and API clients do not.
 * A tie is JSON, and so is an Accept naming neither: the service answers JSON rather than 406.
 */
export function prefersHtml(accept: string | undefined): boolean {
  if (accept === undefined) return false;
  return quality(accept, 'text', 'html') > quality(accept, 'application', 'json');
}
