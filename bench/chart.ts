import type { BenchResults } from './results.ts';
import type { SystemId } from './systems.ts';
import { findRun, short } from './targets.ts';
import type { WorkloadName } from './workloads.ts';

/** The systems drawn (the price list's servers and the token row are in the tables only). */
const COLORS: Partial<Record<SystemId, string>> = {
  'ceiling-a': '#7f7f7f',
  'ceiling-b': '#17becf',
  naive: '#ff7f0e',
  'json-server': '#d62728',
  sqlite: '#1f77b4',
  postgres: '#2ca02c',
  'directus-sqlite': '#9467bd',
  'directus-postgres': '#8c564b',
};
/** The service and the peer it is compared with under the legend, database by database. */
const PEER_PAIRS: Array<[SystemId, SystemId]> = [
  ['sqlite', 'directus-sqlite'],
  ['postgres', 'directus-postgres'],
];
const PANELS: Array<{ workload: WorkloadName; title: string }> = [
  { workload: 'create', title: 'create (POST /users)' },
  { workload: 'read', title: 'read one (GET /users/:id)' },
  { workload: 'list', title: 'list all (GET /users)' },
];
const W = 360;
const H = 280;
const PAD = { left: 58, right: 16, top: 34, bottom: 40 };
const X_TICKS = [1_000, 10_000, 100_000, 1_000_000];
const ROW = 18;

const escape = (text: string) => text.replaceAll('&', '&amp;').replaceAll('<', '&lt;');
const compact = (n: number) => (n >= 1000 ? `${n / 1000}k` : String(n));

/** One line per database: how many times the peer's rate the service's is, panel by panel, at each record count. */
function peerRatios(results: BenchResults): string[] {
  const lines: string[] = [];
  for (const [mine, peer] of PEER_PAIRS) {
    const parts = PANELS.flatMap(({ workload }) =>
      X_TICKS.flatMap((records) => {
        const a = findRun(results.runs, mine, workload, records);
        const b = findRun(results.runs, peer, workload, records);
        if (a === undefined || b === undefined || b.requestsPerSecond === 0) return [];
        const ratio = a.requestsPerSecond / b.requestsPerSecond;
        return [`${workload} ${short(records)} ${ratio >= 10 ? ratio.toFixed(0) : ratio.toFixed(1)}×`];
      }),
    );
    if (parts.length > 0) {
      const name = (system: SystemId) => results.meta.labels[system] ?? system;
      lines.push(`${name(mine)} ÷ ${name(peer)}: ${parts.join(', ')}`);
    }
  }
  return lines;
}

/** Throughput against records stored, one log-log panel per workload, one line per system; hand-written SVG. */
export function throughputChart(results: BenchResults): string {
  const rates = results.runs.map((run) => run.requestsPerSecond).filter((rate) => rate > 0);
  const low = Math.floor(Math.log10(Math.max(0.1, Math.min(...rates, 1))));
  const high = Math.ceil(Math.log10(Math.max(...rates, 10)));
  const x = (records: number) => PAD.left + ((Math.log10(records) - 3) / 3) * (W - PAD.left - PAD.right);
  const y = (rate: number) =>
    H - PAD.bottom - ((Math.log10(Math.max(rate, 10 ** low)) - low) / (high - low)) * (H - PAD.top - PAD.bottom);
  const systems = (Object.keys(results.meta.labels) as SystemId[]).filter((system) => COLORS[system] !== undefined);
  const ratios = peerRatios(results);
  // Room above the panels for the legend rows (three entries a row) and the ratio lines.
  const TOP = 14 + (Math.ceil(systems.length / 3) + ratios.length) * ROW;
  const parts: string[] = [];

  PANELS.forEach((panel, index) => {
    const g: string[] = [`<g transform="translate(${index * W},${TOP})">`];
    g.push(`<text x="${PAD.left}" y="20" font-weight="bold">${escape(panel.title)}</text>`);
    for (let e = low; e <= high; e++) {
      g.push(`<line x1="${PAD.left}" x2="${W - PAD.right}" y1="${y(10 ** e)}" y2="${y(10 ** e)}" stroke="#ddd"/>`);
      g.push(`<text x="${PAD.left - 6}" y="${y(10 ** e) + 4}" text-anchor="end">${compact(10 ** e)}</text>`);
    }
    for (const records of X_TICKS) {
      g.push(`<line x1="${x(records)}" x2="${x(records)}" y1="${PAD.top}" y2="${H - PAD.bottom}" stroke="#eee"/>`);
      g.push(`<text x="${x(records)}" y="${H - PAD.bottom + 16}" text-anchor="middle">${short(records)}</text>`);
    }
    g.push(`<text x="${(W + PAD.left) / 2}" y="${H - 6}" text-anchor="middle">records stored</text>`);
    g.push(`<text transform="translate(14,${H / 2}) rotate(-90)" text-anchor="middle">requests/s</text>`);
    for (const system of systems) {
      const points = results.runs
        .filter((run) => run.system === system && run.workload === panel.workload && run.requestsPerSecond > 0)
        .sort((a, b) => a.records - b.records);
      const color = COLORS[system];
      const first = points[0];
      // Ceiling A's "list" is its small fixed body, not a listing: ceiling B is the bound there.
      if (system === 'ceiling-a' && panel.workload === 'list') continue;
      if (system === 'ceiling-a' && first !== undefined) {
        // Ceiling A answers a fixed body, so it does not depend on records: one run, drawn across.
        const at = y(first.requestsPerSecond);
        g.push(
          `<line x1="${x(1_000)}" x2="${x(1_000_000)}" y1="${at}" y2="${at}" stroke="${color}" stroke-dasharray="6 4"/>`,
        );
        continue;
      }
      if (points.length > 1) {
        const path = points.map((p) => `${x(p.records).toFixed(1)},${y(p.requestsPerSecond).toFixed(1)}`).join(' ');
        g.push(`<polyline points="${path}" fill="none" stroke="${color}" stroke-width="2"/>`);
      }
      for (const p of points) {
        g.push(
          `<circle cx="${x(p.records).toFixed(1)}" cy="${y(p.requestsPerSecond).toFixed(1)}" r="3.5" fill="${color}"/>`,
        );
      }
    }
    g.push('</g>');
    parts.push(g.join('\n'));
  });

  // Three legend entries a row, one panel's width each.
  const legend = systems.map((system, i) => {
    const lx = 10 + (i % 3) * W;
    const ly = 16 + Math.floor(i / 3) * ROW;
    const dash = system === 'ceiling-a' ? ' stroke-dasharray="6 4"' : '';
    return (
      `<line x1="${lx}" x2="${lx + 22}" y1="${ly}" y2="${ly}" stroke="${COLORS[system]}" stroke-width="2"${dash}/>` +
      `<text x="${lx + 28}" y="${ly + 4}">${escape(results.meta.labels[system] ?? system)}</text>`
    );
  });
  const ratioLines = ratios.map(
    (text, i) => `<text x="10" y="${20 + (Math.ceil(systems.length / 3) + i) * ROW}">${escape(text)}</text>`,
  );
  const width = W * PANELS.length;
  const height = H + TOP;
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="sans-serif" font-size="11">`,
    `<rect width="100%" height="100%" fill="white"/>`,
    ...legend,
    ...ratioLines,
    ...parts,
    '</svg>',
    '',
  ].join('\n');
}
