import { useCallback, useEffect, useMemo, useRef, useState } from 'preact/hooks';
import {
  Api,
  ApiError,
  type Filters,
  NO_FILTERS,
  type PageStart,
  type RecordInput,
  type Row,
  type Versioned,
} from './api.ts';
import { Conflict, ConfirmDelete, SignIn } from './dialogs.tsx';
import { FiltersForm } from './filters-form.tsx';
import { type Change, follow, type LiveState } from './live.ts';
import { describe, needsToken, readOnly } from './messages.ts';
import { type FieldErrors, type FormMode, RecordForm } from './record-form.tsx';
import { RecordsTable } from './records-table.tsx';

const TOKEN_KEY = 'user-records-token';
/** Changes that arrive close together make one read of the page. */
const REFRESH_DELAY_MS = 250;
const ACTIVITY_SHOWN = 20;
/**
 * A count of a million records costs the database a scan: reads caused by live changes count again
 * at most this often; opening a page, a filter and Refresh always count.
 */
const RECOUNT_LIVE_MS = 5000;

type Access = { kind: 'checking' } | { kind: 'sign-in'; reason: string } | { kind: 'ready'; writable: boolean };

interface Conflicted {
  mine: RecordInput;
  myEtag: string;
  theirs: Versioned;
}

const LIVE_TEXT: Record<LiveState, string> = {
  connecting: 'Connecting to live updates…',
  live: 'Live: changes appear as they happen',
  reconnecting: 'Connection lost: reconnecting, no change will be missed…',
  off: 'Live updates off: use Refresh',
};

const ACTIVITY_TEXT = { 'user.created': 'added', 'user.updated': 'changed', 'user.deleted': 'deleted' } as const;

export function App() {
  const [token, setToken] = useState(() => sessionStorage.getItem(TOKEN_KEY) ?? undefined);
  const api = useMemo(() => new Api(location.origin, token), [token]);
  const [access, setAccess] = useState<Access>({ kind: 'checking' });
  const [filters, setFilters] = useState<Filters>(NO_FILTERS);
  /** Where each page seen so far started: the last is the page shown, the rest are for Previous. */
  const [starts, setStarts] = useState<PageStart[]>([{}]);
  const [rows, setRows] = useState<Row[]>([]);
  const [next, setNext] = useState<PageStart | undefined>();
  const [total, setTotal] = useState<number | undefined>();
  const [loading, setLoading] = useState(true);
  const [notice, setNotice] = useState<string | undefined>();
  const [status, setStatus] = useState('');
  const [live, setLive] = useState<LiveState>('off');
  const [activity, setActivity] = useState<Change[]>([]);
  const [mode, setMode] = useState<FormMode>({ kind: 'add' });
  const [initial, setInitial] = useState<RecordInput | undefined>();
  const [errors, setErrors] = useState<FieldErrors>({});
  const [busy, setBusy] = useState(false);
  const [deleting, setDeleting] = useState<Row | undefined>();
  const [conflict, setConflict] = useState<Conflicted | undefined>();
  const start = starts[starts.length - 1] ?? {};
  const writable = access.kind === 'ready' && access.writable;

  /** Answers that need someone to act: a sign-in, read-only mode, or a sentence in the notice. */
  const fail = useCallback((error: unknown) => {
    if (needsToken(error)) setAccess({ kind: 'sign-in', reason: error.message });
    else if (readOnly(error)) {
      setAccess({ kind: 'ready', writable: false });
      setNotice(`${error.message} The page is read-only.`);
    } else setNotice(describe(error));
  }, []);

  // Each read of the page has a number; an answer that comes after a newer read began is dropped.
  const reads = useRef(0);
  const counted = useRef(0);
  const counts = useRef(0);
  const load = useCallback(
    async (live = false) => {
      const read = ++reads.current;
      setLoading(true);
      try {
        const page = await api.list(filters, start);
        if (read !== reads.current) return;
        setRows(page.rows);
        setNext(page.next);
        setNotice(undefined);
        setAccess((old) => (old.kind === 'ready' ? old : { kind: 'checking' }));
        if (!live || Date.now() - counted.current >= RECOUNT_LIVE_MS) {
          counted.current = Date.now();
          const count = ++counts.current;
          api.count(filters).then(
            (total) => count === counts.current && setTotal(total),
            () => count === counts.current && setTotal(undefined),
          );
        }
      } catch (error) {
        if (read === reads.current) fail(error);
      } finally {
        if (read === reads.current) setLoading(false);
      }
    },
    [api, filters, start, fail],
  );

  useEffect(() => void load(), [load]);

  // Once the records can be read: may this token write? Then follow the changes.
  useEffect(() => {
    if (access.kind !== 'checking' || loading) return;
    if (token === undefined) setAccess({ kind: 'ready', writable: true });
    else api.mayWrite().then((writable) => setAccess({ kind: 'ready', writable }), fail);
  }, [access.kind, loading, token, api, fail]);

  const refreshSoon = useRef<ReturnType<typeof setTimeout> | undefined>(undefined);
  const loadRef = useRef(load);
  loadRef.current = load;
  const scheduleRefresh = useCallback(() => {
    if (refreshSoon.current !== undefined) return;
    refreshSoon.current = setTimeout(() => {
      refreshSoon.current = undefined;
      void loadRef.current(true);
    }, REFRESH_DELAY_MS);
  }, []);

  const ready = access.kind === 'ready';
  useEffect(() => {
    if (!ready) return;
    const stop = new AbortController();
    void follow(
      api,
      {
        change: (change) => {
          setActivity((old) => [change, ...old].slice(0, ACTIVITY_SHOWN));
          // Shown at once where the record is on the page; the read after puts the page in order.
          if (change.type === 'user.deleted') setRows((old) => old.filter((row) => row.id !== change.data.id));
          if (change.type === 'user.updated') {
            setRows((old) => old.map((row) => (row.id === change.data.id ? change.data : row)));
          }
          scheduleRefresh();
        },
        state: (state) => {
          setLive(state);
          // Connected (again): read the page, for what changed before the stream began.
          if (state === 'live') scheduleRefresh();
        },
        restarted: scheduleRefresh,
        refused: fail,
      },
      stop.signal,
    );
    return () => stop.abort();
  }, [ready, api, scheduleRefresh, fail]);

  const signIn = (value: string | undefined) => {
    if (value === undefined) sessionStorage.removeItem(TOKEN_KEY);
    else sessionStorage.setItem(TOKEN_KEY, value);
    setToken(value);
    setAccess({ kind: 'checking' });
    setNotice(undefined);
  };

  const stopEditing = () => {
    setMode({ kind: 'add' });
    setInitial(undefined);
    setErrors({});
  };

  /** The form's answer: each 400 entry next to its field, a 412 as a choice, the rest in the form. */
  const formFailed = async (error: unknown, input: RecordInput) => {
    if (error instanceof ApiError && error.status === 400) {
      const found: FieldErrors = {};
      for (const entry of error.problem.errors ?? []) {
        const field = entry.parameter as keyof FieldErrors;
        if (field === 'name' || field === 'age' || field === 'city') found[field] ??= entry.detail;
        else found.form ??= `${entry.parameter}: ${entry.detail}`;
      }
      if (Object.keys(found).length === 0) found.form = error.message;
      setErrors(found);
    } else if (error instanceof ApiError && error.status === 412 && mode.kind === 'edit') {
      try {
        setConflict({ mine: input, myEtag: mode.etag, theirs: await api.read(mode.id) });
      } catch (reading) {
        setErrors({ form: describe(reading) });
      }
    } else if (error instanceof ApiError && error.status === 404 && mode.kind === 'edit') {
      stopEditing();
      setNotice(`Record #${mode.id} was deleted by someone else.`);
    } else if (needsToken(error) || readOnly(error)) {
      fail(error);
    } else setErrors({ form: describe(error) });
  };

  const save = async (input: RecordInput, etag?: string) => {
    setBusy(true);
    setErrors({});
    try {
      if (mode.kind === 'edit') {
        const saved = await api.replace(mode.id, input, etag ?? mode.etag);
        setStatus(`Saved record #${saved.row.id}.`);
        stopEditing();
      } else {
        const created = await api.create(input);
        setStatus(`Added record #${created.id}, ${created.name}.`);
        setInitial({ name: '', age: '', city: '' });
      }
      scheduleRefresh();
    } catch (error) {
      await formFailed(error, input);
    } finally {
      setBusy(false);
    }
  };

  const edit = async (row: Row) => {
    try {
      const read = await api.read(row.id);
      setErrors({});
      setMode({ kind: 'edit', id: row.id, etag: read.etag });
      setInitial({ name: read.row.name, age: read.row.age, city: read.row.city });
    } catch (error) {
      if (error instanceof ApiError && error.status === 404)
        setNotice(`Record #${row.id} was deleted by someone else.`);
      else fail(error);
      scheduleRefresh();
    }
  };

  const remove = async (row: Row) => {
    setDeleting(undefined);
    try {
      await api.remove(row.id);
      setStatus(`Deleted record #${row.id}.`);
      if (mode.kind === 'edit' && mode.id === row.id) stopEditing();
    } catch (error) {
      if (error instanceof ApiError && error.status === 404) setStatus(`Record #${row.id} was already deleted.`);
      else fail(error);
    }
    scheduleRefresh();
  };

  const first = starts.length === 1;
  const matching = total === undefined ? '' : ` of ${total.toLocaleString('en')} matching`;
  const summary = `Page ${starts.length}: ${rows.length} record${rows.length === 1 ? '' : 's'}${matching}`;

  return (
    <>
      <header>
        <h1>user-records</h1>
        <p class={`live live-${live}`} role="status">
          {LIVE_TEXT[live]}
        </p>
        <div class="actions">
          <button type="button" onClick={() => void load()}>
            Refresh
          </button>
          {token === undefined ? null : (
            <button type="button" onClick={() => signIn(undefined)}>
              Sign out
            </button>
          )}
        </div>
      </header>
      <main>
        {notice === undefined ? null : (
          <p class="notice" role="alert">
            {notice}
          </p>
        )}
        <p class="visually-hidden" role="status" aria-live="polite">
          {status}
        </p>
        {access.kind === 'ready' && !access.writable ? (
          <p class="read-only">Read-only: this token may read the records but not change them.</p>
        ) : null}
        {writable ? (
          <RecordForm
            mode={mode}
            initial={initial}
            errors={errors}
            busy={busy}
            onSubmit={(input) => void save(input)}
            onCancel={stopEditing}
          />
        ) : null}
        <section aria-labelledby="records-title">
          <h2 id="records-title">Records</h2>
          <FiltersForm
            applied={filters}
            onApply={(applied) => {
              setFilters(applied);
              setStarts([{}]);
            }}
          />
          <RecordsTable
            rows={rows}
            loading={loading}
            writable={writable}
            summary={summary}
            onEdit={(row) => void edit(row)}
            onDelete={setDeleting}
          />
          <nav class="pages" aria-label="Pages">
            <button type="button" disabled={first} onClick={() => setStarts((old) => old.slice(0, -1))}>
              Previous page
            </button>
            <span>Page {starts.length}</span>
            <button
              type="button"
              disabled={next === undefined}
              onClick={() => next !== undefined && setStarts((old) => [...old, next])}
            >
              Next page
            </button>
          </nav>
        </section>
        <section aria-labelledby="activity-title" class="activity">
          <h2 id="activity-title">Recent changes</h2>
          {activity.length === 0 ? <p>None since this page opened.</p> : null}
          <ol>
            {activity.map((change) => (
              <li key={change.id}>
                <time dateTime={change.timestamp}>{new Date(change.timestamp).toLocaleTimeString('en-GB')}</time> #
                {change.data.id} {change.data.name} {ACTIVITY_TEXT[change.type]}
              </li>
            ))}
          </ol>
        </section>
      </main>
      {access.kind === 'sign-in' ? <SignIn reason={access.reason} onToken={signIn} /> : null}
      {deleting === undefined ? null : (
        <ConfirmDelete row={deleting} onConfirm={() => void remove(deleting)} onCancel={() => setDeleting(undefined)} />
      )}
      {conflict === undefined || mode.kind !== 'edit' ? null : (
        <Conflict
          {...conflict}
          onSaveMine={() => {
            setConflict(undefined);
            void save(conflict.mine, conflict.theirs.etag);
          }}
          onTakeTheirs={() => {
            setConflict(undefined);
            setMode({ kind: 'edit', id: mode.id, etag: conflict.theirs.etag });
            setInitial({
              name: conflict.theirs.row.name,
              age: conflict.theirs.row.age,
              city: conflict.theirs.row.city,
            });
          }}
          onCancel={() => setConflict(undefined)}
        />
      )}
    </>
  );
}
