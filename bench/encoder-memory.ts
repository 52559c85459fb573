/**
 * Where the memory of a served encoder run goes (issue 33), for bench/encoder-serving.ts: `tagger serve`
 * of the same encoder run with `--workers 1` and `--workers 2` (and the settings under trial), each read
 * at three moments — after startup (the run loaded, /health/ready), after single-text requests and after
 * requests of long texts in batches — from every process of the group (the primary and its workers):
 * - /proc/<pid>/smaps grouped by mapping: ONNX Runtime's shared library, the node binary, other files,
 *   anonymous memory (malloc's heap and arenas, V8's heaps, thread stacks) — resident and proportional
 *   (PSS: a page shared by n processes counts 1/n, so the PSS of a group adds up to what it costs);
 * - the V8 heaps of the main thread and of each worker thread (the encoder's), from Node's diagnostic
 *   report (`--report-on-signal`: SIGUSR2 makes a process write one, its worker threads' included);
 * - the peak (VmHWM) and the texts/s of each load, so a setting that saves memory is seen beside what
 *   it costs.
 * Every variant runs the same requests; ratios against the first (the defaults) are what to read.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, readlinkSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { body, sendAll } from './encoder-http.js';
import { childPids, type Proc, peakRssMb } from './procs.js';

/** A `tagger serve` of the encoder run (or the TF-IDF run, for scale) with these settings. */
export interface MemoryVariant {
  label: string;
  model: 'encoder' | 'tfidf';
  workers: number;
  /** Environment of the server beside the bench's own (settings, glibc's MALLOC_* variables). */
  env?: Record<string, string>;
}

/** glibc's malloc maps allocations of 1 MiB and more on their own (a trade-off a user may choose). */
const MMAP_1M = { MALLOC_MMAP_THRESHOLD_: '1048576' };

/**
 * What `npm run bench -- --only encoder` compares, in this order (memoryRows reads them by label): the
 * encoder run as served (one process, and two workers each with their own encoder), the same with
 * malloc's mmap threshold fixed at 1 MiB, and the TF-IDF run for scale.
 */
export const MEMORY_VARIANTS: readonly MemoryVariant[] = [
  { label: 'encoder, 1 process', model: 'encoder', workers: 1 },
  { label: 'encoder, 2 workers', model: 'encoder', workers: 2 },
  { label: 'encoder, 1 process, MALLOC_MMAP_THRESHOLD_=1048576', model: 'encoder', workers: 1, env: MMAP_1M },
  { label: 'TF-IDF, 1 process', model: 'tfidf', workers: 1 },
];

export const PHASES = ['startup', 'single texts', 'long texts in batches'] as const;
export type Phase = (typeof PHASES)[number];

/** Resident and proportional MB of one group of mappings. */
export interface Share {
  rss: number;
  pss: number;
}

export const GROUPS = ['onnxruntime', 'node binary', 'other files', 'anonymous', 'stacks'] as const;
export type Group = (typeof GROUPS)[number];

export interface ProcessMemory {
  role: 'primary' | 'worker' | 'single';
  pid: number;
  rss: number;
  pss: number;
  /** Peak resident MB so far (VmHWM). */
  peak: number;
  threads: number;
  groups: Record<Group, Share>;
  /** V8 heap committed (MB) of the main thread and of each worker thread, from the diagnostic report. */
  v8: { main: number | null; workers: number[] };
}

export interface PhaseMemory {
  phase: Phase;
  processes: ProcessMemory[];
  /** Texts/s of the load that led to this phase (null at startup). */
  textsPerSecond: number | null;
  /**
   * CPU milliseconds (user + system, every process of the group) per text of that load: steadier than
   * texts/s on a shared machine, and where a memory setting's cost shows (page faults are system time).
   */
  cpuMsPerText: number | null;
  /** Requests of that load that did not answer 200. */
  failed: number;
}

const mb = (kb: number): number => kb / 1024;

/** /proc/<pid>/smaps grouped (see GROUPS): resident and proportional MB per group. */
export function smapsGroups(pid: number): Record<Group, Share> {
  const groups = Object.fromEntries(GROUPS.map((g) => [g, { rss: 0, pss: 0 }])) as Record<Group, Share>;
  let exe = '';
  try {
    exe = readlinkSync(`/proc/${pid}/exe`);
  } catch {
    return groups;
  }
  let current: Group = 'anonymous';
  for (const line of readFileSync(`/proc/${pid}/smaps`, 'utf8').split('\n')) {
    const header = /^[0-9a-f]+-[0-9a-f]+ \S+ \S+ \S+ \S+\s*(.*)$/.exec(line);
    if (header) {
      const path = header[1]!.trim();
      if (path === '' || path === '[heap]' || path.startsWith('[anon')) current = 'anonymous';
      else if (path.startsWith('[stack')) current = 'stacks';
      else if (path.startsWith('[')) current = 'other files';
      else if (path.includes('onnxruntime')) current = 'onnxruntime';
      else if (path === exe) current = 'node binary';
      else current = 'other files';
      continue;
    }
    const field = /^(Rss|Pss):\s+(\d+) kB/.exec(line);
    if (field) groups[current][field[1] === 'Rss' ? 'rss' : 'pss'] += mb(Number(field[2]));
  }
  return groups;
}

function rollup(pid: number): { rss: number; pss: number } {
  const text = readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8');
  const get = (name: string) => mb(Number(new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(text)?.[1] ?? 0));
  return { rss: get('Rss'), pss: get('Pss') };
}

/** User + system CPU milliseconds a process has used (/proc/<pid>/stat, in clock ticks of 10 ms). */
function cpuMs(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

const groupPids = (proc: Proc): number[] => [proc.pid, ...childPids(proc.pid)];

const threadCount = (pid: number): number =>
  Number(/^Threads:\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0);

interface Report {
  header?: { threadId?: number };
  javascriptHeap?: { totalMemory?: number };
  workers?: Report[];
}

/**
 * The V8 heaps of `pid`'s threads: SIGUSR2 makes a process started with `--report-on-signal` write its
 * diagnostic report (its worker threads' reports inside) into `dir`.
 */
async function v8Heaps(pid: number, dir: string): Promise<ProcessMemory['v8']> {
  const before = new Set(existsSync(dir) ? readdirSync(dir) : []);
  process.kill(pid, 'SIGUSR2');
  const deadline = Date.now() + 10_000;
  while (Date.now() < deadline) {
    const fresh = readdirSync(dir).filter((f) => !before.has(f) && f.includes(`.${pid}.`));
    for (const file of fresh) {
      try {
        const report = JSON.parse(readFileSync(join(dir, file), 'utf8')) as Report;
        rmSync(join(dir, file));
        const heap = (r: Report) => mb((r.javascriptHeap?.totalMemory ?? 0) / 1024);
        return { main: heap(report), workers: (report.workers ?? []).map(heap) };
      } catch {
        // Still being written.
      }
    }
    await new Promise((done) => setTimeout(done, 50));
  }
  return { main: null, workers: [] };
}

/** Every process of a server: the one started, and its cluster workers if it forked any. */
async function snapshot(proc: Proc, reportDir: string): Promise<ProcessMemory[]> {
  const children = childPids(proc.pid);
  const pids: [ProcessMemory['role'], number][] =
    children.length === 0
      ? [['single', proc.pid]]
      : [['primary', proc.pid], ...children.map((pid) => ['worker', pid] as [ProcessMemory['role'], number])];
  const out: ProcessMemory[] = [];
  for (const [role, pid] of pids) {
    const v8 = await v8Heaps(pid, reportDir);
    out.push({
      role,
      pid,
      ...rollup(pid),
      peak: peakRssMb(pid) ?? 0,
      threads: threadCount(pid),
      groups: smapsGroups(pid),
      v8,
    });
  }
  return out;
}

/** Node flags a server needs for its heaps to be read (its workers inherit them). */
export const reportArgv = (dir: string): string[] => {
  mkdirSync(dir, { recursive: true });
  return ['--report-on-signal', '--report-signal=SIGUSR2', `--report-directory=${dir}`];
};

/** Texts of about the encoder's token limit: holdout texts joined until ~1,600 characters. */
export function longTexts(texts: readonly string[], count: number): string[] {
  const out: string[] = [];
  for (let i = 0; out.length < count; i++) {
    let text = '';
    for (let k = i; text.length < 1_600; k++) text += `${texts[k % texts.length]!} `;
    out.push(text.trim());
  }
  return out;
}

export interface Workload {
  /** Single-text request bodies (distinct holdout texts) and their connections. */
  single: string[];
  singleConnections: number;
  /** Requests of `longBatch` long texts each. */
  long: string[];
  longBatch: number;
  longConnections: number;
}

export function workload(texts: readonly string[], quick: boolean): Workload {
  const singles = quick ? 120 : 400;
  // 16 texts at the token limit a request (4,096 estimated tokens), so the two connections' requests both
  // fit the default queue bound (8,192) at once: since the queue admits work by its true cost (issue 42),
  // two requests of 32 such texts no longer wait together — the second was refused with 503.
  const longBatch = 16;
  const long = longTexts(texts, (quick ? 8 : 24) * longBatch);
  return {
    single: Array.from({ length: singles }, (_, i) => body([texts[i % texts.length]!])),
    singleConnections: 4,
    long: Array.from({ length: long.length / longBatch }, (_, i) =>
      body(long.slice(i * longBatch, (i + 1) * longBatch)),
    ),
    longBatch,
    longConnections: 2,
  };
}

/** Runs the loads of `work` against a started server, reading its memory after startup and after each. */
export async function measureServer(
  proc: Proc,
  url: string,
  work: Workload,
  reportDir: string,
): Promise<PhaseMemory[]> {
  const phases: PhaseMemory[] = [
    {
      phase: 'startup',
      processes: await snapshot(proc, reportDir),
      textsPerSecond: null,
      cpuMsPerText: null,
      failed: 0,
    },
  ];
  const loads: [Phase, string[], number, number][] = [
    ['single texts', work.single, work.singleConnections, 1],
    ['long texts in batches', work.long, work.longConnections, work.longBatch],
  ];
  for (const [phase, bodies, connections, perRequest] of loads) {
    const pids = groupPids(proc);
    const cpuBefore = pids.reduce((sum, pid) => sum + cpuMs(pid), 0);
    const { answers, seconds } = await sendAll(url, bodies, connections);
    const cpu = pids.reduce((sum, pid) => sum + cpuMs(pid), 0) - cpuBefore;
    const texts = bodies.length * perRequest;
    phases.push({
      phase,
      processes: await snapshot(proc, reportDir),
      textsPerSecond: texts / seconds,
      cpuMsPerText: cpu / texts,
      failed: answers.filter((a) => a.status !== 200).length,
    });
  }
  return phases;
}

/** The sum over a phase's processes (the primary included): what the server costs the machine. */
export function total(phase: PhaseMemory, pick: (p: ProcessMemory) => number): number {
  return phase.processes.reduce((sum, p) => sum + pick(p), 0);
}

const f0 = (n: number | null | undefined): string => (n == null ? '-' : n.toFixed(0));

/** A table of every variant, phase and process, for the log (the rows of the section are fewer). */
export function formatTable(results: { variant: MemoryVariant; phases: PhaseMemory[] }[]): string {
  const head = [
    'variant',
    'phase',
    'process',
    'RSS',
    'PSS',
    'peak',
    'ORT .so',
    'node',
    'files',
    'anon',
    'V8 main',
    'V8 workers',
    'threads',
    'texts/s',
    'CPU ms/text',
  ];
  const lines = [head];
  for (const { variant, phases } of results) {
    for (const phase of phases) {
      for (const p of phase.processes) {
        lines.push([
          variant.label,
          phase.phase,
          p.role,
          f0(p.rss),
          f0(p.pss),
          f0(p.peak),
          f0(p.groups.onnxruntime.rss),
          f0(p.groups['node binary'].rss),
          f0(p.groups['other files'].rss),
          f0(p.groups.anonymous.rss),
          f0(p.v8.main),
          p.v8.workers.map(f0).join('+') || '-',
          String(p.threads),
          phase.textsPerSecond === null ? '-' : phase.textsPerSecond.toFixed(1),
          phase.cpuMsPerText === null ? '-' : phase.cpuMsPerText.toFixed(2),
        ]);
      }
    }
  }
  const widths = head.map((_, c) => Math.max(...lines.map((l) => l[c]!.length)));
  return lines.map((l) => l.map((cell, c) => cell.padEnd(widths[c]!)).join('  ')).join('\n');
}

export interface MemoryResult {
  variant: MemoryVariant;
  phases: PhaseMemory[];
}

const variant = (results: readonly MemoryResult[], label: string): MemoryResult | undefined =>
  results.find((r) => r.variant.label === label);
const phaseOf = (r: MemoryResult | undefined, phase: Phase): PhaseMemory | undefined =>
  r?.phases.find((p) => p.phase === phase);
/** The group's RSS at a phase (every process), or null when not measured. */
const rssAt = (r: MemoryResult | undefined, phase: Phase): number | null => {
  const at = phaseOf(r, phase);
  return at ? total(at, (p) => p.rss) : null;
};
const peakOf = (r: MemoryResult | undefined): number | null => {
  const last = r?.phases.at(-1);
  return last ? total(last, (p) => p.peak) : null;
};
const cpuAt = (r: MemoryResult | undefined, phase: Phase): number | null =>
  phaseOf(r, phase)?.cpuMsPerText ?? null;

/** The rows of the encoder section for the memory variants. */
export function memoryRows(
  results: readonly MemoryResult[],
): { metric: string; unit: string; tagger: number | null; reference: number | null; note: string }[] {
  const [served, two, mmap, tfidf] = MEMORY_VARIANTS.map((v) => variant(results, v.label));
  const long = 'long texts in batches';
  const tfidfNote = 'reference = the TF-IDF run served the same way';
  return [
    {
      metric: 'encoder run, RSS after startup, 1 process',
      unit: 'MB',
      tagger: rssAt(served, 'startup'),
      reference: rssAt(tfidf, 'startup'),
      note: `the run loaded, /health/ready; ${tfidfNote}`,
    },
    {
      metric: 'encoder run, RSS after single-text requests, 1 process',
      unit: 'MB',
      tagger: rssAt(served, 'single texts'),
      reference: rssAt(tfidf, 'single texts'),
      note: `${tfidfNote}`,
    },
    {
      metric: 'encoder run, RSS after requests of long texts, 1 process',
      unit: 'MB',
      tagger: rssAt(served, long),
      reference: rssAt(tfidf, long),
      note: `requests of 16 texts of ~1,600 characters (the encoder's token limit); ${tfidfNote}`,
    },
    {
      metric: 'encoder run, peak RSS, 1 process',
      unit: 'MB',
      tagger: peakOf(served),
      reference: peakOf(tfidf),
      note: `VmHWM after startup and both loads; ${tfidfNote}`,
    },
    {
      metric: 'encoder run, peak RSS of the process group: 2 workers vs 1 process',
      unit: 'MB',
      tagger: peakOf(two),
      reference: peakOf(served),
      note: 'the primary and both workers summed (each worker loads its own encoder)',
    },
    {
      metric:
        'encoder run, RSS after requests of long texts: MALLOC_MMAP_THRESHOLD_=1048576 vs glibc default',
      unit: 'MB',
      tagger: rssAt(mmap, long),
      reference: rssAt(served, long),
      note: 'a fixed mmap threshold returns freed tensors to the system (glibc raises it by default)',
    },
    {
      metric: 'encoder run, CPU per long text: MALLOC_MMAP_THRESHOLD_=1048576 vs glibc default',
      unit: 'ms/text',
      tagger: cpuAt(mmap, long),
      reference: cpuAt(served, long),
      note: "user + system CPU of the server per text (steadier than texts/s on a shared machine): the threshold's cost, page faults",
    },
  ];
}
