import { readFileSync } from 'node:fs';

interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
}

interface ProfileNode {
  id: number;
  callFrame: CallFrame;
  children?: number[];
}

/** The parts of a V8 .cpuprofile this reads. */
interface CpuProfile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

export interface TimeShare {
  name: string;
  where: string;
  ms: number;
  /** Share of the time the process was busy (idle samples left out). */
  share: number;
}

export interface ProfileSummary {
  totalMs: number;
  idleMs: number;
  /** Time spent in each function itself, not in what it calls. */
  self: TimeShare[];
  /** Time spent in each function of src/ (or of the service's bundle) and everything it calls. */
  inclusive: TimeShare[];
  /** Self time per package or src/ folder. */
  areas: TimeShare[];
}

const SPECIAL = new Set(['(idle)', '(garbage collector)', '(program)', '(root)']);

/** Where a frame's code lives: `src/store/sqlite/store.ts`, `fastify/lib/reply.js`, `node:internal/...`. */
function place(frame: CallFrame, root: string): string {
  let url = frame.url.replace(/^file:\/\//, '');
  const modules = url.lastIndexOf('/node_modules/');
  if (modules !== -1) url = url.slice(modules + '/node_modules/'.length);
  else if (url.startsWith(root)) url = url.slice(root.length);
  // Lines are kept for node_modules and node: only; tsx compiles src/ onto one line.
  if (url === '') return '(native)';
  if (url.startsWith('src/')) return url;
  // The service's bundle (bench/profile.ts profiles what npm start runs): one area, lines kept.
  if (url.startsWith('/') && url.endsWith('.mjs'))
    return `(service bundle) ${url.slice(url.lastIndexOf('/') + 1)}:${frame.lineNumber + 1}`;
  return `${url}:${frame.lineNumber + 1}`;
}

/** The package or src/ folder a place belongs to. */
function area(where: string): string {
  if (where === '(native)' || where.startsWith('node:') || where.startsWith('wasm:'))
    return where.split(':')[0] ?? where;
  if (where.startsWith('(service bundle)')) return '(service bundle)';
  const parts = where.split('/');
  if (parts[0] === 'src') return parts.slice(0, 2).join('/');
  return parts[0]?.startsWith('@') === true ? parts.slice(0, 2).join('/') : (parts[0] ?? where);
}

function add(map: Map<string, TimeShare>, key: string, name: string, where: string, ms: number): void {
  const entry = map.get(key) ?? { name, where, ms: 0, share: 0 };
  entry.ms += ms;
  map.set(key, entry);
}

/** Self and inclusive time per function of a .cpuprofile, highest first. */
export function summariseProfile(file: string, root: string): ProfileSummary {
  const profile = JSON.parse(readFileSync(file, 'utf8')) as CpuProfile;
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const parent = new Map<number, number>();
  for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node.id);
  // An anonymous function is named after its caller, which is what one looks for in the source.
  const nameOf = (node: ProfileNode): string => {
    const name = node.callFrame.functionName;
    if (name !== '') return name;
    const caller = byId.get(parent.get(node.id) ?? -1);
    return caller === undefined ? '(anonymous)' : `(anonymous in ${caller.callFrame.functionName || '…'})`;
  };
  const self = new Map<string, TimeShare>();
  const inclusive = new Map<string, TimeShare>();
  const areas = new Map<string, TimeShare>();
  let totalMs = 0;
  let idleMs = 0;
  profile.samples.forEach((id, i) => {
    const node = byId.get(id);
    if (node === undefined) return;
    const ms = (profile.timeDeltas[i] ?? 0) / 1000;
    totalMs += ms;
    const name = nameOf(node);
    if (name === '(idle)') {
      idleMs += ms;
      return;
    }
    const where = place(node.callFrame, root);
    add(self, `${name} ${where}`, name, where, ms);
    add(areas, SPECIAL.has(name) ? name : area(where), SPECIAL.has(name) ? name : area(where), '', ms);
    const seen = new Set<string>();
    for (let at: ProfileNode | undefined = node; at !== undefined; at = byId.get(parent.get(at.id) ?? -1)) {
      const atWhere = place(at.callFrame, root);
      if (!atWhere.startsWith('src/') && !atWhere.startsWith('(service bundle)')) continue;
      const key = `${nameOf(at)} ${atWhere}`;
      if (seen.has(key)) continue;
      seen.add(key);
      add(inclusive, key, nameOf(at), atWhere, ms);
    }
  });
  const busy = totalMs - idleMs;
  const ranked = (map: Map<string, TimeShare>) =>
    [...map.values()].map((entry) => ({ ...entry, share: entry.ms / busy })).sort((a, b) => b.ms - a.ms);
  return { totalMs, idleMs, self: ranked(self), inclusive: ranked(inclusive), areas: ranked(areas) };
}
