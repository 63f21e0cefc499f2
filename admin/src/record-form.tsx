import { useEffect, useRef, useState } from 'preact/hooks';
import type { RecordInput } from './api.ts';

export type FieldErrors = Partial<Record<keyof RecordInput | 'form', string>>;

/** What the form is for: a new record, or record `id` at the version `etag` names. */
export type FormMode = { kind: 'add' } | { kind: 'edit'; id: number; etag: string };

const EMPTY: RecordInput = { name: '', age: '', city: '' };
const LABELS = { name: 'Name', age: 'Age', city: 'City' } as const;

/**
 * The add and edit form. The service checks every field (one set of rules), so the form sends what
 * was typed and shows each error the service answers next to its field.
 */
export function RecordForm(props: {
  mode: FormMode;
  initial: RecordInput | undefined;
  errors: FieldErrors;
  busy: boolean;
  onSubmit: (input: RecordInput) => void;
  onCancel: () => void;
}) {
  const { mode, errors } = props;
  const [values, setValues] = useState<RecordInput>(props.initial ?? EMPTY);
  const first = useRef<HTMLInputElement>(null);
  const editing = mode.kind === 'edit';
  // A new record to edit (or the other side's values taken): the form shows them and takes focus.
  useEffect(() => {
    setValues(props.initial ?? EMPTY);
    if (editing) first.current?.focus();
  }, [props.initial, editing]);

  return (
    <form
      class="record-form"
      noValidate
      aria-labelledby="record-form-title"
      onSubmit={(event) => {
        event.preventDefault();
        if (!props.busy) props.onSubmit(values);
      }}
      onKeyDown={(event) => {
        if (editing && event.key === 'Escape') props.onCancel();
      }}
    >
      <h2 id="record-form-title">{editing ? `Edit record #${mode.id}` : 'Add a record'}</h2>
      {errors.form === undefined ? null : (
        <p class="error" role="alert">
          {errors.form}
        </p>
      )}
      <div class="fields">
        {(['name', 'age', 'city'] as const).map((field) => {
          const error = errors[field];
          const id = `record-${field}`;
          return (
            <div class="field" key={field}>
              <label for={id}>{LABELS[field]}</label>
              <input
                id={id}
                ref={field === 'name' ? first : undefined}
                name={field}
                inputMode={field === 'age' ? 'numeric' : undefined}
                autocomplete="off"
                value={values[field]}
                aria-invalid={error === undefined ? undefined : 'true'}
                aria-describedby={error === undefined ? undefined : `${id}-error`}
                onInput={(event) => {
                  const value = event.currentTarget.value;
                  setValues((old) => ({ ...old, [field]: value }));
                }}
              />
              {error === undefined ? null : (
                <p class="error" id={`${id}-error`}>
                  {error}
                </p>
              )}
            </div>
          );
        })}
      </div>
      <div class="actions">
        {/* aria-disabled, not disabled: a disabled button loses the focus it had. */}
        <button type="submit" aria-disabled={props.busy ? 'true' : undefined}>
          {editing ? 'Save changes' : 'Add record'}
        </button>
        {editing ? (
          <button type="button" onClick={props.onCancel}>
            Cancel edit
          </button>
        ) : null}
      </div>
    </form>
  );
}
