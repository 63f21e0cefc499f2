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

/** The listing's filters, search, sort and page size, as `GET /users` takes them. */
export function FiltersForm(props: { applied: Filters; onApply: (filters: Filters) => void }) {
  const [draft, setDraft] = useState<Filters>(props.applied);
  const text = (key: 'name' | 'age' | 'city' | 'q', label: string) => (
    <div class="field">
      <label for={`filter-${key}`}>{label}</label>
      <input
        id={`filter-${key}`}
        inputMode={key === 'age' ? 'numeric' : key === 'q' ? 'search' : 'text'}
        value={draft[key]}
        onInput={(event) => {
          const value = event.currentTarget.value;
          setDraft((old) => ({ ...old, [key]: value }));
        }}
      />
    </div>
  );
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
      </div>
      <div class="field">
        <label for="filter-limit">Rows per page</label>
        <select
          id="filter-limit"
          value={String(draft.limit)}
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
