import { type Filters, NO_FILTERS, type PageStart } from './api.ts';

const TEXT_KEYS = ['q', 'name', 'age', 'city', 'sort'] as const;
const LIMITS = new Set([10, 25, 100]);

/**
 * The filters, search, sort and page size in the page's address (`/admin?city=Oslo&sort=-age`), so
 * that a reload or a shared link shows the same records. The position in the pages is not kept: a
 * keyset page is found by going through the ones before it, so a reload starts at the first.
 */
export function readView(search: string): { filters: Filters; starts: PageStart[] } {
  const query = new URLSearchParams(search);
  const filters: Filters = { ...NO_FILTERS };
  for (const key of TEXT_KEYS) filters[key] = query.get(key) ?? '';
  const limit = Number(query.get('limit'));
  if (LIMITS.has(limit)) filters.limit = limit;
  return { filters, starts: [{}] };
}

/** Puts the view in the address without a new history entry (Back still leaves the page). */
export function writeView(filters: Filters): void {
  const query = new URLSearchParams();
  for (const key of TEXT_KEYS) if (filters[key] !== '') query.set(key, filters[key]);
  if (filters.limit !== NO_FILTERS.limit) query.set('limit', String(filters.limit));
  const search = query.size === 0 ? '' : `?${query}`;
  if (search !== location.search) history.replaceState(null, '', `${location.pathname}${search}`);
}
