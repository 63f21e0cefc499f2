import { get } from 'node:http';
import { resetPeak, statusMB } from './proc-stats.ts';

export interface FullListing {
  status: number;
  /** Request sent to the status line and headers arriving. */
  ttfbMs: number;
  totalMs: number;
  bytes: number;
  /** Peak resident memory of the server while it answered (VmHWM after a reset, else the highest sample). */
  peakRssMB: number | undefined;
  peakFrom: 'VmHWM' | 'VmRSS samples';
}

/** One listing (`GET /users`, or a peer's `path`) read to the end, timing its first byte and watching the server's memory meanwhile. */
export async function fullListing(
  url: string,
  pid: number,
  path = '/users',
  timeoutMs = 120_000,
): Promise<FullListing> {
  const peakReset = resetPeak(pid);
  let sampled = statusMB(pid, 'VmRSS') ?? 0;
  // Polling catches the peak when VmHWM cannot be reset; 10 ms is far shorter than any listing of 1M records.
  const sampler = setInterval(() => {
    sampled = Math.max(sampled, statusMB(pid, 'VmRSS') ?? 0);
  }, 10);
  try {
    const t0 = performance.now();
    const { status, ttfbMs, bytes } = await new Promise<{ status: number; ttfbMs: number; bytes: number }>(
      (resolve, reject) => {
        const request = get(url + path, { agent: false, timeout: timeoutMs }, (response) => {
          const ttfbMs = performance.now() - t0;
          let bytes = 0;
          response.on('data', (chunk: Buffer) => (bytes += chunk.length));
          response.once('end', () => resolve({ status: response.statusCode ?? 0, ttfbMs, bytes }));
          response.once('error', reject);
        });
        request.once('timeout', () => request.destroy(new Error(`no full listing within ${timeoutMs} ms`)));
        request.once('error', reject);
      },
    );
    const totalMs = performance.now() - t0;
    const hwm = peakReset ? statusMB(pid, 'VmHWM') : undefined;
    return {
      status,
      ttfbMs,
      totalMs,
      bytes,
      peakRssMB: hwm ?? (sampled > 0 ? sampled : undefined),
      peakFrom: hwm === undefined ? 'VmRSS samples' : 'VmHWM',
    };
  } finally {
    clearInterval(sampler);
  }
}
