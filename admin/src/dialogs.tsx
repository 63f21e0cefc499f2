import type { ComponentChildren } from 'preact';
import { useEffect, useId, useRef, useState } from 'preact/hooks';
import { type RecordInput, type Row, versionOf, type Versioned } from './api.ts';

/** Where focus goes when a dialog closes and what had it is gone (a deleted record's button). */
export const FOCUS_FALLBACK_ID = 'records-title';
/** Marks the element that takes focus before FOCUS_FALLBACK_ID then (a delete's Undo). */
export const FOCUS_AFTER_DIALOG = 'data-focus-after-dialog';

/**
 * A modal dialog: focus moves into it, Escape or Cancel closes it, and focus goes back to what had
 * it before (or, when that is gone, to a delete's Undo or else the records' heading).
 */
function Modal(props: { title: string; onCancel: () => void; children: ComponentChildren; role?: 'alertdialog' }) {
  const ref = useRef<HTMLDialogElement>(null);
  const titleId = useId();
  useEffect(() => {
    const dialog = ref.current;
    const before = document.activeElement;
    if (dialog !== null && !dialog.open) dialog.showModal();
    return () => {
      dialog?.close();
      // After this render: the element that had focus may be re-rendered or gone by then.
      setTimeout(() => {
        const had = before instanceof HTMLElement && before !== document.body && before.isConnected;
        const back = had
          ? before
          : (document.querySelector<HTMLElement>(`[${FOCUS_AFTER_DIALOG}]`) ??
            document.getElementById(FOCUS_FALLBACK_ID));
        back?.focus();
      });
    };
  }, []);
  return (
    <dialog
      ref={ref}
      role={props.role}
      aria-labelledby={titleId}
      onCancel={(event) => {
        event.preventDefault();
        props.onCancel();
      }}
    >
      <h2 id={titleId}>{props.title}</h2>
      {props.children}
    </dialog>
  );
}

export function ConfirmDelete(props: { row: Row; changed: boolean; onConfirm: () => void; onCancel: () => void }) {
  const { row } = props;
  return (
    <Modal title="Delete this record?" role="alertdialog" onCancel={props.onCancel}>
      {props.changed ? (
        <p class="error" role="alert">
          It was changed by someone else meanwhile; this is how it is now.
        </p>
      ) : null}
      <p>
        Record #{row.id}: <bdi>{row.name}</bdi>, age {row.age}, city <bdi>{row.city}</bdi>. It will be deleted for
        everyone.
      </p>
      <div class="actions">
        <button type="button" class="danger" onClick={props.onConfirm}>
          Delete
        </button>
        <button type="button" autofocus onClick={props.onCancel}>
          Cancel
        </button>
      </div>
    </Modal>
  );
}

const FIELDS = ['name', 'age', 'city'] as const;

/** A save refused with 412: the record as someone else saved it beside the edit, and a choice. */
export function Conflict(props: {
  mine: RecordInput;
  myEtag: string;
  theirs: Versioned;
  onSaveMine: () => void;
  onTakeTheirs: () => void;
  onCancel: () => void;
}) {
  const { mine, theirs } = props;
  return (
    <Modal title="Changed by someone else" role="alertdialog" onCancel={props.onCancel}>
      <p>
        Record #{theirs.row.id} was saved by someone else while you were editing it. You started from version{' '}
        {versionOf(props.myEtag)}; it is now at version {versionOf(theirs.etag)}.
      </p>
      <table class="conflict">
        <thead>
          <tr>
            <th scope="col">Field</th>
            <th scope="col">Yours (from version {versionOf(props.myEtag)})</th>
            <th scope="col">Theirs (version {versionOf(theirs.etag)})</th>
          </tr>
        </thead>
        <tbody>
          {FIELDS.map((field) => (
            <tr key={field} class={mine[field] === theirs.row[field] ? '' : 'differs'}>
              <th scope="row">{field[0]?.toUpperCase() + field.slice(1)}</th>
              <td>
                <bdi>{mine[field]}</bdi>
              </td>
              <td>
                <bdi>{theirs.row[field]}</bdi>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      <div class="actions">
        <button type="button" autofocus onClick={props.onCancel}>
          Keep editing
        </button>
        <button type="button" onClick={props.onTakeTheirs}>
          Take theirs
        </button>
        <button type="button" onClick={props.onSaveMine}>
          Save mine over theirs
        </button>
      </div>
    </Modal>
  );
}

/** What a bearer token may be made of (RFC 6750): anything else cannot be sent in a header. */
const TOKEN = /^[A-Za-z0-9\-._~+/]+=*$/;

/**
 * Asks for a token, in plain words; it is kept for this browser tab's session only. `refused`: the
 * service's words on a token it did not accept (none on the first visit: the text says it all).
 */
export function SignIn(props: { refused?: string; onToken: (token: string) => void; onCancel: () => void }) {
  const [token, setToken] = useState('');
  const [fault, setFault] = useState<string | undefined>();
  const inputId = useId();
  const hintId = useId();
  return (
    <Modal title="Sign in" onCancel={props.onCancel}>
      <form
        class="sign-in"
        onSubmit={(event) => {
          event.preventDefault();
          const given = token.trim();
          if (TOKEN.test(given)) props.onToken(given);
          else setFault('A token is letters, digits and - . _ ~ + / = only, with no spaces: check what was pasted.');
        }}
      >
        <p role="alert">
          {fault ??
            (props.refused === undefined
              ? ''
              : `That token was not accepted (the service says: ${props.refused}) Check that it was pasted whole, or ask for a new one.`)}
        </p>
        <p>
          This service shows its records only to people who have an <strong>access token</strong>: a long code, like a
          password, that the person who runs the service sets up for each user (in its <code>API_TOKENS</code> setting),
          or one your organisation&apos;s sign-in service issues (a JWT). Ask them for one, then paste it here, whole.
        </p>
        <label for={inputId}>Access token</label>
        <input
          id={inputId}
          type="password"
          autocomplete="off"
          aria-describedby={hintId}
          value={token}
          onInput={(event) => setToken(event.currentTarget.value)}
        />
        <p class="hint" id={hintId}>
          A read-only token lets you look at the records but not add, change or delete them; a full token lets you do
          both. The page forgets the token when this tab is closed.
        </p>
        <div class="actions">
          <button type="submit">Sign in</button>
          <button type="button" onClick={props.onCancel}>
            Cancel
          </button>
        </div>
      </form>
    </Modal>
  );
}

/** The page without a token: what it cannot show, what is still open, and the way back to sign in. */
export function SignedOut(props: { onSignIn: () => void }) {
  return (
    <section aria-labelledby={FOCUS_FALLBACK_ID} class="signed-out">
      <h2 id={FOCUS_FALLBACK_ID} tabIndex={-1}>
        Not signed in
      </h2>
      <p>
        Without an access token this page can show no records and change none: the service asks for a token even to
        look. You can still read the service&apos;s documentation at <a href="/docs">/docs</a>.
      </p>
      <button type="button" onClick={props.onSignIn}>
        Enter an access token
      </button>
    </section>
  );
}
