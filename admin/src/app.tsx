import { useCallback, useEffect, useMemo, useRef, useState } from 'preact/hooks';
import { Api, ApiError, type Filters, type PageStart, type RecordInput, type Row, type Versioned } from './api.ts';
import { Confirmation, type Done } from './confirmation.tsx';
import { Conflict, ConfirmDelete, FOCUS_FALLBACK_ID, SignedOut, SignIn } from './dialogs.tsx';
import { type FilterErrors, FiltersForm, isFilterKey } from './filters-form.tsx';
import { applyChanges, type Change, type ChangeBatch } from './change-batch.ts';
import { follow, type LiveState } from './live.ts';
import { download } from './download.ts';
import { describe, mayHaveStored, needsToken, readOnly } from './messages.ts';
import { type FieldErrors, type FormMode, RecordForm } from './record-form.tsx';
import { RecordsTable } from './records-table.tsx';
import { MANY_CHANGES, useBurst } from './use-burst.ts';
import { readView, writeView } from './view-url.ts';

const TOKEN_KEY = 'user-records-token';
/** Reads of the page for changes (live ones, its own writes, a reconnect) come at most this often. */
const REFRESH_DELAY_MS = 250;
const ACTIVITY_SHOWN = 20;
/**
 * A count of a million records costs the database a scan: reads caused by live changes count again
 * at most this often (the last change of a burst is counted when the interval ends); opening a
 * page, a filter and Refresh always count. With the REFRESH_DELAY_MS that gathers changes, the
 * count follows any change within 2 s, on every view (test/ops/admin-views.test.ts).
 */
const RECOUNT_LIVE_MS = 1000;

/** `asking`: the sign-in dialog is open (Cancel or Escape closes it; the page then says what it can do). */
type Access =
  { kind: 'checking' } | { kind: 'sign-in'; reason: string; asking: boolean } | { kind: 'ready'; writable: boolean };

interface Conflicted {
  mine: RecordInput;
  myEtag: string;
  theirs: Versioned;
}

/** A record about to be deleted: as it is now, and whether it changed since the dialog opened. */
interface Deleting {
  current: Versioned;
  changed: boolean;
}

const LIVE_TEXT: Record<LiveState, string> = {
  connecting: 'Connecting to live updates…',
  live: 'Live: changes appear as they happen',
  reconnecting: 'Connection lost: reconnecting, no change will be missed…',
  busy: 'Live updates: the service is busy',
  off: 'Live updates off: use Refresh',
};

const ACTIVITY_TEXT = { 'user.created': 'added', 'user.updated': 'changed', 'user.deleted': 'deleted' } as const;

/** A 400 whose every entry names a filter's field: those fields' errors (else undefined: a notice). */
function filterFaults(error: unknown): FilterErrors | undefined {
  if (!(error instanceof ApiError) || error.status !== 400) return undefined;
  const entries = error.problem.errors ?? [];
  if (entries.length === 0 || !entries.every((entry) => isFilterKey(entry.parameter))) return undefined;
  const found: FilterErrors = {};
  for (const entry of entries) if (isFilterKey(entry.parameter)) found[entry.parameter] ??= entry.detail;
  return found;
}

const sameInput = (a: RecordInput, b: RecordInput) => a.name === b.name && a.age === b.age && a.city === b.city;

export function App() {
  const [token, setToken] = useState(() => sessionStorage.getItem(TOKEN_KEY) ?? undefined);
  const api = useMemo(() => new Api(location.origin, token), [token]);
  const [access, setAccess] = useState<Access>({ kind: 'checking' });
  // The filters and the page live in the address, so a reload or a shared link shows the same view.
  const [view] = useState(() => readView(location.search));
  const [filters, setFilters] = useState<Filters>(view.filters);
  /** Where each page seen so far started: the last is the page shown, the rest are for Previous. */
  const [starts, setStarts] = useState<PageStart[]>(view.starts);
  const [rows, setRows] = useState<Row[]>([]);
  const [next, setNext] = useState<PageStart | undefined>();
  const [total, setTotal] = useState<number | undefined>();
  const [loading, setLoading] = useState(true);
  const [notice, setNotice] = useState<string | undefined>();
  /** A filter the service refused: its words beside the field, not in the notice. */
  const [filterErrors, setFilterErrors] = useState<FilterErrors>({});
  const [done, setDone] = useState<Done | undefined>();
  const [live, setLive] = useState<LiveState>('off');
  const [liveWait, setLiveWait] = useState<number | undefined>();
  const [activity, setActivity] = useState<Change[]>([]);
  /** Changes the stream brought since the page opened (Recent changes shows the newest). */
  const [seen, setSeen] = useState(0);
  const { burst, ...bursts } = useBurst();
  const [mode, setMode] = useState<FormMode>({ kind: 'add' });
  const [initial, setInitial] = useState<RecordInput | undefined>();
  const [errors, setErrors] = useState<FieldErrors>({});
  const [busy, setBusy] = useState(false);
  const [deleting, setDeleting] = useState<Deleting | undefined>();
  const [conflict, setConflict] = useState<Conflicted | undefined>();
  const [exporting, setExporting] = useState(false);
  /** The Idempotency-Key of an add whose answer was lost: sent again while the input is the same. */
  const pendingAdd = useRef<{ input: RecordInput; key: string } | undefined>(undefined);
  const start = starts[starts.length - 1] ?? {};
  const writable = access.kind === 'ready' && access.writable;

  useEffect(() => writeView(filters), [filters]);

  /** Answers that need someone to act: a sign-in, read-only mode, or a sentence in the notice. */
  const fail = useCallback((error: unknown) => {
    if (needsToken(error)) {
      setAccess({ kind: 'sign-in', reason: error.message, asking: true });
      setLive('off');
    } else if (readOnly(error)) {
      setAccess({ kind: 'ready', writable: false });
      setNotice(`${error.message} The page is read-only.`);
    } else setNotice(describe(error));
  }, []);

  /** The view's every record (its filters, search and sort; every page) as a CSV file. */
  const exportView = useCallback(async () => {
    setExporting(true);
    try {
      download(await api.exportCsv(filters), 'users.csv');
    } catch (error) {
      fail(error);
    } finally {
      setExporting(false);
    }
  }, [api, filters, fail]);

  // Each read of the page has a number; an answer that comes after a newer read began is dropped.
  const reads = useRef(0);
  const counted = useRef(0);
  const counts = useRef(0);
  const recountLater = useRef<ReturnType<typeof setTimeout> | undefined>(undefined);
  const retry = useRef<ReturnType<typeof setTimeout> | undefined>(undefined);
  /** The filters and page the rows shown were read for. */
  const shownView = useRef('');
  const loadRef = useRef<(live?: boolean) => Promise<void>>(async () => undefined);
  const load = useCallback(
    async (live = false) => {
      const read = ++reads.current;
      const viewKey = JSON.stringify([filters, start]);
      clearTimeout(retry.current);
      // A read for live changes keeps the rows shown until it has new ones: no flicker in a burst.
      if (!live) {
        setLoading(true);
        bursts.dismiss();
        // A count still due for the view before must not land on this one.
        clearTimeout(recountLater.current);
        counts.current++;
      }
      try {
        const page = await api.list(filters, start);
        if (read !== reads.current) return;
        shownView.current = viewKey;
        setRows(page.rows);
        setNext(page.next);
        setNotice(undefined);
        setFilterErrors({});
        setAccess((old) => (old.kind === 'ready' ? old : { kind: 'checking' }));
        const recount = () => {
          recountLater.current = undefined;
          counted.current = Date.now();
          const count = ++counts.current;
          // A count that fails leaves the last one shown.
          api.count(filters).then(
            (matching) => count === counts.current && setTotal(matching),
            () => undefined,
          );
        };
        clearTimeout(recountLater.current);
        const since = Date.now() - counted.current;
        if (!live || since >= RECOUNT_LIVE_MS) recount();
        // Changes came close together: the count follows once the interval is over.
        else recountLater.current = setTimeout(recount, RECOUNT_LIVE_MS - since);
      } catch (error) {
        if (read !== reads.current) return;
        // A new view that cannot be read shows nothing of the old one (a Refresh keeps it).
        if (!live && viewKey !== shownView.current) {
          setRows([]);
          setNext(undefined);
          setTotal(undefined);
        }
        const refused = filterFaults(error);
        if (refused === undefined) fail(error);
        else {
          setFilterErrors(refused);
          setNotice(undefined);
        }
        // Busy or limited: read again when the service says, by itself.
        if (error instanceof ApiError && (error.status === 429 || error.status === 503)) {
          retry.current = setTimeout(() => void loadRef.current(live), (error.retryAfter ?? 1) * 1000);
        }
      } finally {
        if (read === reads.current) setLoading(false);
      }
    },
    [api, filters, start, fail, bursts.dismiss],
  );
  loadRef.current = load;

  useEffect(() => void load(), [load]);

  // Once the records can be read: may this token write? Then follow the changes.
  useEffect(() => {
    if (access.kind !== 'checking' || loading) return;
    if (token === undefined) setAccess({ kind: 'ready', writable: true });
    else api.mayWrite().then((writable) => setAccess({ kind: 'ready', writable }), fail);
  }, [access.kind, loading, token, api, fail]);

  /**
   * Reads for live changes: one at a time and at most one per REFRESH_DELAY_MS, and one more after
   * it when changes came meanwhile (however many), so that a burst costs the service a read per
   * interval, not one per change.
   */
  const liveRead = useRef({ busy: false, again: false, timer: undefined as ReturnType<typeof setTimeout> | undefined });
  const refreshLive = useCallback(() => {
    const state = liveRead.current;
    if (state.busy) {
      state.again = true;
      return;
    }
    state.busy = true;
    const started = performance.now();
    void loadRef.current(true).finally(() => {
      state.timer = setTimeout(
        () => {
          state.busy = false;
          if (!state.again) return;
          state.again = false;
          refreshLive();
        },
        Math.max(0, REFRESH_DELAY_MS - (performance.now() - started)),
      );
    });
  }, []);

  const refreshSoon = useRef<ReturnType<typeof setTimeout> | undefined>(undefined);
  const scheduleRefresh = useCallback(() => {
    if (refreshSoon.current !== undefined) return;
    refreshSoon.current = setTimeout(() => {
      refreshSoon.current = undefined;
      refreshLive();
    }, REFRESH_DELAY_MS);
  }, [refreshLive]);

  const editingId = mode.kind === 'edit' ? mode.id : undefined;
  const editingRef = useRef(editingId);
  editingRef.current = editingId;

  /** One interval's changes, in one redraw: each made on its row, or past MANY_CHANGES one read of the page. */
  const applyBatch = useCallback(
    (batch: ChangeBatch) => {
      const many = batch.count > MANY_CHANGES;
      bursts.note(batch.count);
      setSeen((old) => old + batch.count);
      const changes = many ? batch.newest(ACTIVITY_SHOWN) : batch.all();
      setActivity((old) => [...changes.slice(-ACTIVITY_SHOWN).reverse(), ...old].slice(0, ACTIVITY_SHOWN));
      // Shown at once where the record is on the page; the read after puts the page in order.
      if (!many) setRows((old) => applyChanges(old, changes));
      const editing = editingRef.current;
      if (editing !== undefined && batch.deleted(editing)) {
        setErrors({
          form: `Record #${editing} was deleted by someone else: saving will keep your values, to add them as a new record.`,
        });
      }
      refreshLive();
    },
    [bursts.note, refreshLive],
  );

  const ready = access.kind === 'ready';
  useEffect(() => {
    if (!ready) return;
    const stop = new AbortController();
    void follow(
      api,
      {
        changes: (batch) => applyBatch(batch),
        state: (state, wait) => {
          setLive(state);
          setLiveWait(wait);
          bursts.live(state === 'live');
          if (state === 'live') {
            // Reachable again: a fault said while it was not is over. Then read the page, for what
            // changed before the stream began.
            setErrors((old) => (old.form?.startsWith('The service cannot be reached') ? {} : old));
            scheduleRefresh();
          }
        },
        restarted: scheduleRefresh,
        refused: fail,
      },
      stop.signal,
    );
    return () => stop.abort();
  }, [ready, api, scheduleRefresh, applyBatch, bursts.live, fail]);

  const stopEditing = () => {
    setMode({ kind: 'add' });
    setInitial(undefined);
    setErrors({});
  };

  const signIn = (value: string | undefined) => {
    if (value === undefined) sessionStorage.removeItem(TOKEN_KEY);
    else sessionStorage.setItem(TOKEN_KEY, value);
    // Nothing read or written with the last token stays on the page, nor runs on after it.
    for (const timer of [retry, recountLater, refreshSoon]) {
      clearTimeout(timer.current);
      timer.current = undefined;
    }
    clearTimeout(liveRead.current.timer);
    liveRead.current.again = false;
    liveRead.current = { busy: false, again: false, timer: undefined };
    reads.current++;
    counts.current++;
    pendingAdd.current = undefined;
    shownView.current = '';
    setDone(undefined);
    setRows([]);
    setNext(undefined);
    setTotal(undefined);
    setActivity([]);
    setSeen(0);
    bursts.reset();
    setDeleting(undefined);
    setConflict(undefined);
    stopEditing();
    setToken(value);
    setAccess({ kind: 'checking' });
    setNotice(undefined);
  };

  /** The form's answer: each 400 entry next to its field, a 412 as a choice, the rest in the form. */
  const formFailed = async (error: unknown, input: RecordInput, etag: string | undefined) => {
    if (error instanceof ApiError && error.status === 400) {
      const found: FieldErrors = {};
      for (const entry of error.problem.errors ?? []) {
        const field = entry.parameter as keyof FieldErrors;
        if (field === 'name' || field === 'age' || field === 'city') found[field] ??= entry.detail;
        else found.form ??= `${entry.parameter}: ${entry.detail}`;
      }
      if (Object.keys(found).length === 0) found.form = error.message;
      setErrors(found);
    } else if (error instanceof ApiError && error.status === 412 && mode.kind === 'edit' && etag !== undefined) {
      try {
        setConflict({ mine: input, myEtag: etag, theirs: await api.read(mode.id) });
      } catch (reading) {
        await formFailed(reading, input, etag);
      }
    } else if (error instanceof ApiError && error.status === 404 && mode.kind === 'edit') {
      // Deleted meanwhile: what was typed is kept, to be added as a new record if wanted.
      setMode({ kind: 'add' });
      setInitial(input);
      setErrors({
        form: `Record #${mode.id} was deleted by someone else. Your values are kept: Add record stores them as a new record.`,
      });
    } else if (needsToken(error) || readOnly(error)) {
      fail(error);
    } else if (mayHaveStored(error) && mode.kind === 'add') {
      setErrors({
        form: `${describe(error)} The record may have been added all the same: press Add record again, and it is stored once (it is sent with the same key).`,
      });
    } else setErrors({ form: describe(error) });
  };

  const save = async (input: RecordInput, etag?: string) => {
    setBusy(true);
    setErrors({});
    const used = mode.kind === 'edit' ? (etag ?? mode.etag) : undefined;
    try {
      if (mode.kind === 'edit' && used !== undefined) {
        const saved = await api.replace(mode.id, input, used);
        setDone({ text: `Saved record #${saved.row.id}, ${saved.row.name}.` });
        stopEditing();
      } else {
        const pending = pendingAdd.current;
        const key = pending !== undefined && sameInput(pending.input, input) ? pending.key : crypto.randomUUID();
        pendingAdd.current = { input, key };
        const created = await api.create(input, key);
        pendingAdd.current = undefined;
        setDone({ text: `Added record #${created.id}, ${created.name}.` });
        setInitial({ name: '', age: '', city: '' });
      }
      scheduleRefresh();
    } catch (error) {
      await formFailed(error, input, used);
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

  /** Opens the delete dialog with the record as it is now (and its ETag, for If-Match). */
  const askDelete = async (row: Row, changed = false) => {
    try {
      setDeleting({ current: await api.read(row.id), changed });
    } catch (error) {
      setDeleting(undefined);
      if (error instanceof ApiError && error.status === 404)
        setDone({ text: `Record #${row.id}, ${row.name}, was already deleted.` });
      else fail(error);
      scheduleRefresh();
    }
  };

  const remove = async ({ current }: Deleting) => {
    const { id } = current.row;
    try {
      // The record as the service deleted it, not as this page last saw it (a change may be on its way).
      const gone = await api.remove(id, current.etag);
      setDeleting(undefined);
      // Gone from the page in the same redraw that closes the dialog, not when the change stream
      // says so: the dialog then gives focus to Undo, not to this row's Delete button.
      setRows((old) => old.filter((shown) => shown.id !== id));
      const { name, age, city } = gone;
      setDone({
        text: `Deleted record #${id}, ${name}.`,
        undo: { values: { name, age, city }, key: crypto.randomUUID() },
      });
      if (mode.kind === 'edit' && mode.id === id) stopEditing();
    } catch (error) {
      // Changed since the dialog showed it: show it as it is now, and ask again.
      if (error instanceof ApiError && error.status === 412) return void askDelete(current.row, true);
      setDeleting(undefined);
      if (error instanceof ApiError && error.status === 404)
        setDone({ text: `Record #${id}, ${current.row.name}, was already deleted.` });
      else fail(error);
    }
    scheduleRefresh();
  };

  /** Undoes a delete: the same values stored again, as a new record (the old id is not reused). */
  const undoDelete = async (undo: NonNullable<Done['undo']>) => {
    const { values } = undo;
    setDone({ text: `Restoring ${values.name}…` });
    try {
      const created = await api.create(values, undo.key);
      setDone({ text: `Restored ${created.name} as record #${created.id} (a new id: ids are never reused).` });
    } catch (error) {
      if (needsToken(error) || readOnly(error)) fail(error);
      else setDone({ text: `${values.name} could not be restored: ${describe(error)}`, undo });
    }
    scheduleRefresh();
  };

  const first = starts.length === 1;
  const matching = total === undefined ? '' : ` of ${total.toLocaleString('en')} matching`;
  const summary = loading
    ? `Page ${starts.length}: loading…`
    : `Page ${starts.length}: ${rows.length} record${rows.length === 1 ? '' : 's'}${matching}`;
  const liveText =
    live === 'busy' && liveWait !== undefined ? `${LIVE_TEXT.busy}: trying again in ${liveWait} s` : LIVE_TEXT[live];

  return (
    <>
      <header>
        <h1>user-records</h1>
        <p class={`live live-${live}`} role="status">
          {access.kind === 'sign-in' ? 'Sign in to see the records' : liveText}
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
        {access.kind === 'sign-in' ? (
          <SignedOut onSignIn={() => setAccess({ ...access, asking: true })} />
        ) : (
          <>
            <section aria-labelledby={FOCUS_FALLBACK_ID}>
              <h2 id={FOCUS_FALLBACK_ID} tabIndex={-1}>
                Records
              </h2>
              <FiltersForm
                applied={filters}
                errors={filterErrors}
                onApply={(applied) => {
                  setFilters(applied);
                  setStarts([{}]);
                }}
              />
              <div role="status">
                {burst === undefined ? null : (
                  <p class="burst">
                    {burst.over
                      ? `Many changes at once: ${burst.count.toLocaleString('en')} came together. The records shown are read from the service as they are now.`
                      : 'Many changes at once: the records shown are read again from the service, rather than changed one by one.'}
                  </p>
                )}
              </div>
              <RecordsTable
                rows={rows}
                loading={loading}
                writable={writable}
                summary={summary}
                empty={
                  Object.keys(filterErrors).length === 0
                    ? 'No records match.'
                    : 'No records shown: the service refused a filter (its error is under it).'
                }
                onEdit={(row) => void edit(row)}
                onDelete={(row) => void askDelete(row)}
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
              <p class="export">
                <button type="button" disabled={exporting} onClick={() => void exportView()}>
                  Export CSV
                </button>
                <span role="status">{exporting ? 'Exporting every matching record…' : ''}</span>
              </p>
            </section>
            <section aria-labelledby="activity-title" class="activity">
              <h2 id="activity-title">Recent changes</h2>
              <p>
                {seen === 0
                  ? 'None since this page opened.'
                  : `${seen.toLocaleString('en')} since this page opened, the newest first:`}
              </p>
              <ol>
                {activity.map((change) => (
                  <li key={change.id}>
                    <time dateTime={change.timestamp}>{new Date(change.timestamp).toLocaleTimeString('en-GB')}</time> #
                    {change.data.id} <bdi>{change.data.name}</bdi> {ACTIVITY_TEXT[change.type]}
                  </li>
                ))}
              </ol>
            </section>
          </>
        )}
        <Confirmation
          done={done}
          onUndo={() => done?.undo !== undefined && void undoDelete(done.undo)}
          onDismiss={() => setDone(undefined)}
        />
      </main>
      {access.kind === 'sign-in' && access.asking ? (
        <SignIn
          {...(token === undefined ? {} : { refused: access.reason })}
          onToken={signIn}
          onCancel={() => setAccess({ ...access, asking: false })}
        />
      ) : null}
      {deleting === undefined ? null : (
        <ConfirmDelete
          row={deleting.current.row}
          changed={deleting.changed}
          onConfirm={() => void remove(deleting)}
          onCancel={() => setDeleting(undefined)}
        />
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
