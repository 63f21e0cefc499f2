import type { Row } from './api.ts';

/** The page of records: a table on a wide screen, a card per record on a phone (app.css). */
export function RecordsTable(props: {
  rows: Row[];
  loading: boolean;
  writable: boolean;
  summary: string;
  /** What an empty page says ("No records match.", or why none could be read). */
  empty: string;
  onEdit: (row: Row) => void;
  onDelete: (row: Row) => void;
}) {
  const { rows, writable } = props;
  return (
    <table class="records" aria-busy={props.loading ? 'true' : 'false'}>
      <caption>{props.summary}</caption>
      <thead>
        <tr>
          <th scope="col">Id</th>
          <th scope="col">Name</th>
          <th scope="col">Age</th>
          <th scope="col">City</th>
          {writable ? <th scope="col">Actions</th> : null}
        </tr>
      </thead>
      <tbody>
        {rows.length === 0 && !props.loading ? (
          <tr>
            <td colSpan={writable ? 5 : 4}>{props.empty}</td>
          </tr>
        ) : null}
        {rows.map((row) => (
          <tr key={row.id} data-id={row.id}>
            <td data-label="Id">{row.id}</td>
            <td data-label="Name">{row.name}</td>
            <td data-label="Age">{row.age}</td>
            <td data-label="City">{row.city}</td>
            {writable ? (
              <td class="row-actions">
                <button
                  type="button"
                  aria-label={`Edit record ${row.id}, ${row.name}`}
                  onClick={() => props.onEdit(row)}
                >
                  Edit
                </button>
                <button
                  type="button"
                  class="danger"
                  aria-label={`Delete record ${row.id}, ${row.name}`}
                  onClick={() => props.onDelete(row)}
                >
                  Delete
                </button>
              </td>
            ) : null}
          </tr>
        ))}
      </tbody>
    </table>
  );
}
