import { type DestinationStream, type Level, pino } from 'pino';
import { logLinesDropped } from './process-counters.ts';

const MB = 1024 * 1024;

let output: DestinationStream | undefined;
let unreported = 0;

/**
 * Standard output for the logs, one per process. Lines are written without blocking the server, and
 * those waiting for a slow reader (a full pipe, a stalled log shipper) are held up to `bufferMb`:
 * past that, lines are dropped and counted rather than held without bound, and once the backlog has
 * drained a warning says how many were lost. The first call's settings hold for the process.
 */
export function logOutput(level: Level, bufferMb: number): DestinationStream {
  if (output === undefined) {
    // One write at a time is in flight; each may carry everything waiting (the default, 16 KiB, is
    // less than a busy server logs between two turns of its event loop, so the backlog only grew).
    const destination = pino.destination({ dest: 1, sync: false, maxLength: bufferMb * MB, maxWrite: MB });
    const report = pino({ level }, destination);
    destination.on('drop', () => {
      logLinesDropped.inc();
      unreported++;
    });
    destination.on('drain', () => {
      if (unreported === 0) return;
      const lines = unreported;
      unreported = 0;
      report.warn({ droppedLines: lines }, 'log lines dropped: standard output was not read fast enough');
    });
    output = destination;
  }
  return output;
}
