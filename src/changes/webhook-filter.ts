import { ConfigError } from '../config/load.ts';
import { parseParams } from '../http/query-string.ts';
import { HttpError } from '../http/problem.ts';
import { compileChecker, invalidInput } from '../http/validation.ts';
import { narrows } from '../store/store.ts';
import { parseListing } from '../users/query.ts';
import { type ListQuery, RULES } from '../users/schemas.ts';
import { Filters } from './schemas.ts';
import { ChangeView } from './view.ts';

/** One receiver of WEBHOOK_URLS: where its deliveries go, and which changes it is sent. */
export interface WebhookTarget {
  /** The URL as configured, `#` and filter included: its cursor's name, so each filter has its own. */
  url: string;
  /** What is POSTed to: the URL without the `#` part (which is never sent). */
  endpoint: string;
  /** The changes it is sent, as a filtered event stream sees them; undefined: every change. */
  view: ChangeView | undefined;
}

const checkFilters = compileChecker(Filters, RULES);

/**
 * The receivers WEBHOOK_URLS names. After a URL's `#`, the listing's filters in its own query-string
 * form (`https://hooks.example/paris#city=Paris&age.gte=18`) narrow it to the changes of matching
 * records, as `GET /users/events?city=Paris&age.gte=18` does, `user.left` included. A filter that
 * the event stream would refuse stops the start, with the event stream's reasons (ConfigError),
 * naming the URL by its place in the list.
 */
export function webhookTargets(urls: readonly string[]): WebhookTarget[] {
  const faults: string[] = [];
  const targets = urls.map((url, i) => {
    const hash = url.indexOf('#');
    const endpoint = hash === -1 ? url : url.slice(0, hash);
    const text = hash === -1 ? '' : url.slice(hash + 1);
    // No filter: named without the `#`, so `url` and `url#` are one receiver (and one cursor).
    if (text === '') return { url: endpoint, endpoint, view: undefined };
    if (text.includes('#')) {
      faults.push(`WEBHOOK_URLS: the filter of URL ${i + 1} (#${text}): holds a second #; write a # in a value as %23`);
      return { url, endpoint, view: undefined };
    }
    const query = parseParams(text);
    const found = checkFilters(query);
    try {
      if (found.length > 0) throw invalidInput(found);
      const { filter } = parseListing(query as unknown as ListQuery);
      return { url, endpoint, view: narrows(filter) ? new ChangeView(filter) : undefined };
    } catch (error) {
      if (!(error instanceof HttpError)) throw error;
      const said = (error.errors ?? []).map((fault) => `${fault.parameter} ${fault.detail}`).join('; ');
      // The URL by its place only: it may carry a secret path (the setting is never echoed).
      faults.push(`WEBHOOK_URLS: the filter of URL ${i + 1} (#${text}): ${said}`);
      return { url, endpoint, view: undefined };
    }
  });
  // The same receiver with the same filter, however spelled (`city=Paris`, `city=%50aris`): it
  // would be sent every change twice, under two cursors.
  const seen = new Map<string, number>();
  for (const [i, target] of targets.entries()) {
    const key = `${target.endpoint} ${target.view?.key ?? ''}`;
    const first = seen.get(key);
    if (first === undefined) seen.set(key, i);
    else faults.push(`WEBHOOK_URLS: URL ${i + 1} is URL ${first + 1} again, with the same filter`);
  }
  if (faults.length > 0) throw new ConfigError(`invalid settings:\n  - ${faults.join('\n  - ')}`);
  return targets;
}
