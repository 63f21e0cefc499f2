import { parentPort, receiveMessageOnPort, workerData } from 'node:worker_threads';
import { type BatchResult, SqliteWriter, type WriteBatch, type WriterSettings } from './writer.ts';

/** Main thread to writer: a batch of writes, or the end. */
export type ToWriter =
  { type: 'batch'; id: number; batch: WriteBatch } | { type: 'suspect'; why: string } | { type: 'close' };

/** Writer to main thread: ready (or why not), and the outcome of each batch, in order. */
export type FromWriter =
  | { type: 'ready' }
  | { type: 'failed'; message: string }
  | {
      type: 'committed';
      batches: Array<{ id: number; outcomes: BatchResult['outcomes'] }>;
      result: Omit<BatchResult, 'outcomes'>;
    }
  | { type: 'refused'; refusal: string }
  | { type: 'closed' };

export interface WriterData extends WriterSettings {
  path: string;
}

// The writer thread: one connection, one transaction per turn. Batches that arrived while the
// previous transaction committed are taken together, so a busy service makes bigger batches and
// shares more fsyncs.
const port = parentPort;
if (port === null) throw new Error('writer-thread.ts runs as a worker thread');
const send = (message: FromWriter) => port.postMessage(message);
const { path, ...settings } = workerData as WriterData;

/** How often the files are looked at while no write comes (a deleted log is saved from then on). */
const WATCH_INTERVAL_MS = 1000;

let writer: SqliteWriter | undefined;
let watching: NodeJS.Timeout | undefined;
try {
  writer = new SqliteWriter(path, settings);
  send({ type: 'ready' });
  watching = setInterval(() => {
    const refusal = writer?.watch();
    if (refusal === undefined) return;
    send({ type: 'refused', refusal });
    clearInterval(watching);
  }, WATCH_INTERVAL_MS);
  watching.unref();
} catch (error) {
  send({ type: 'failed', message: (error as Error).message });
}

port.on('message', (first: ToWriter) => {
  const messages = [first];
  for (let next = receiveMessageOnPort(port); next !== undefined; next = receiveMessageOnPort(port)) {
    messages.push(next.message as ToWriter);
  }
  for (const message of messages) if (message.type === 'suspect') writer?.suspect(message.why);
  const batches = messages.filter((message) => message.type === 'batch');
  if (batches.length > 0 && writer !== undefined) {
    const { outcomes, ...result } = writer.commit(batches.map((message) => message.batch));
    let at = 0;
    send({
      type: 'committed',
      batches: batches.map(({ id, batch }) => ({ id, outcomes: outcomes.slice(at, (at += batch.requests.length)) })),
      result,
    });
  }
  if (messages.some((message) => message.type === 'close')) {
    clearInterval(watching);
    writer?.close();
    send({ type: 'closed' });
    port.close();
  }
});
