import { useState } from 'preact/hooks';
import { type Filters, NO_FILTERS } from './api.ts';

const SORTS = [
  ['', 'Creation order'],
  ['-id', 'Newest first'],
  ['name', 'Name, A to Z'],
  ['-name', 'Name, Z to A'],
  ['age', 'Age, youngest first'],
  ['-age', 'Age, oldest first'],
  ['city', 'City, A to Z'],
  ['-updatedAt', 'Last changed first'],
] as const;

/** The service's word on a filter it refused, by the query parameter it named (its 400's `errors`). */
export type FilterErrors = Partial<Record<'name' | 'age' | 'city' | 'q' | 'sort' | 'limit', string>>;

const FILTER_KEYS = new Set<string>(['name', 'age', 'city', 'q', 'sort', 'limit']);

/** Whether a 400's parameter is one of this form's fields. */
export const isFilterKey = (parameter: string): parameter is keyof FilterErrors => FILTER_KEYS.has(parameter);

/** The error of field `key` under it, tied to it for assistive technology; the field's own attributes. */
function fieldError(errors: FilterErrors, key: keyof FilterErrors) {
  const error = errors[key];
  const id = `filter-${key}-error`;
  return {
    attributes: {
      'aria-invalid': error === undefined ? undefined : ('true' as const),
      'aria-describedby': error === undefined ? undefined : id,
    },
    message:
      error === undefined ? null : (
        <p class="error" id={id}>
          {error}
        </p>
      ),
  };
}

/** The listing's filters, search, sort and page size, as `GET /users` takes them. */
export function FiltersForm(props: { applied: Filters; errors: FilterErrors; onApply: (filters: Filters) => void }) {
  const [draft, setDraft] = useState<Filters>(props.applied);
  const text = (key: 'name' | 'age' | 'city' | 'q', label: string) => {
    const { attributes, message } = fieldError(props.errors, key);
    return (
      <div class="field">
        <label for={`filter-${key}`}>{label}</label>
        <input
          id={`filter-${key}`}
          inputMode={key === 'age' ? 'numeric' : key === 'q' ? 'search' : 'text'}
          value={draft[key]}
          {...attributes}
          onInput={(event) => {
            const value = event.currentTarget.value;
            setDraft((old) => ({ ...old, [key]: value }));
          }}
        />
        {message}
      </div>
    );
  };
  const sort = fieldError(props.errors, 'sort');
  const limit = fieldError(props.errors, 'limit');
  return (
    <form
      class="filters"
      role="search"
      aria-label="Find records"
      onSubmit={(event) => {
        event.preventDefault();
        props.onApply(draft);
      }}
    >
      {text('q', 'Search')}
      {text('name', 'Name is')}
      {text('age', 'Age is')}
      {text('city', 'City is')}
      <div class="field">
        <label for="filter-sort">Sort by</label>
        <select
          id="filter-sort"
          value={draft.sort}
          {...sort.attributes}
          onChange={(event) => {
            const sort = event.currentTarget.value;
            setDraft((old) => ({ ...old, sort }));
          }}
        >
          {SORTS.map(([value, label]) => (
            <option key={value} value={value}>
              {label}
            </option>
          ))}
        </select>
        {sort.message}
      </div>
      <div class="field">
        <label for="filter-limit">Rows per page</label>
        <select
          id="filter-limit"
          value={String(draft.limit)}
          {...limit.attributes}
          onChange={(event) => {
            const limit = Number(event.currentTarget.value);
            setDraft((old) => ({ ...old, limit }));
          }}
        >
          {[10, 25, 100].map((limit) => (
            <option key={limit} value={String(limit)}>
              {limit}
            </option>
          ))}
        </select>
        {limit.message}
      </div>
      <div class="actions">
        <button type="submit">Apply</button>
        <button
          type="button"
          onClick={() => {
            setDraft(NO_FILTERS);
            props.onApply(NO_FILTERS);
          }}
        >
          Clear
        </button>
      </div>
    </form>
  );
}
