import pg from 'pg';
import { StoreUnavailableError } from '../store.ts';

// The connection broke or the server cannot serve now (SQLSTATE classes 08, 53, 57, 58, or a
// read-only server after a failover): the request may be retried later.
const UNAVAILABLE_STATE = /^(08|53|57|58)|^25006$/;
const CONNECTION_CODE = /^E(CONNREFUSED|CONNRESET|TIMEDOUT|PIPE|HOSTUNREACH|NETUNREACH|NOTFOUND|AI_AGAIN)$/;
const CONNECTION_MESSAGE =
  /^(Connection terminated|timeout exceeded when trying to connect|Query read timeout|Client has encountered a connection error|Client was closed)/;

/** Whether an error means the database is out of reach rather than that a statement is wrong. */
export function isConnectionFault(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  if (error instanceof pg.DatabaseError) return UNAVAILABLE_STATE.test(error.code ?? '');
  const code = (error as { code?: unknown }).code;
  return (typeof code === 'string' && CONNECTION_CODE.test(code)) || CONNECTION_MESSAGE.test(error.message);
}

// A transaction the database gave up to resolve a conflict (serialization failure, deadlock): a
// retry will do. The batch already retries its writes one by one once.
const CONFLICT_STATE = /^40/;

/** Runs a storage call, turning a fault worth a retry into StoreUnavailableError (503). */
export async function guarded<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    if (isConnectionFault(error) || (error instanceof pg.DatabaseError && CONFLICT_STATE.test(error.code ?? ''))) {
      const reason = error instanceof pg.DatabaseError ? `SQLSTATE ${error.code}` : (error as Error).message;
      throw new StoreUnavailableError(`database unavailable: ${reason}`, { cause: error });
    }
    throw error;
  }
}
