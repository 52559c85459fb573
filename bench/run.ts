/**
 * Benchmark runner (`npm run bench [-- --quick]`): runs every section module, prints one table and writes
 * each section's rows to bench/results/<section>-<timestamp>.json. A section is a module exporting
 * `run(opts): Promise<BenchRow[]>`; add later sections (HTTP load tests, ...) to SECTIONS.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { arch, cpus, platform } from 'node:os';
import { resolve } from 'node:path';

export interface BenchOptions {
  /** Fewer repetitions, for a smoke run. */
  quick: boolean;
}

export interface BenchRow {
  /** Section name, e.g. "model". */
  section: string;
  metric: string;
  unit: string;
  /** Tagger's (TypeScript) value. */
  tagger: number | null;
  /** The reference implementation's value (scikit-learn, ...), or null when there is none. */
  reference: number | null;
  note?: string;
}

type Section = { name: string; load: () => Promise<{ run(opts: BenchOptions): Promise<BenchRow[]> }> };

const SECTIONS: Section[] = [{ name: 'model', load: () => import('./model.js') }];

const fmt = (v: number | null): string => {
  if (v === null || !Number.isFinite(v)) return '-';
  if (Math.abs(v) >= 1000) return Math.round(v).toLocaleString('en-US');
  return Number(v.toPrecision(4)).toString();
};

function printTable(rows: BenchRow[]): void {
  const header = ['section', 'metric', 'unit', 'tagger (TS)', 'reference', 'TS / ref', 'note'];
  const body = rows.map((r) => [
    r.section,
    r.metric,
    r.unit,
    fmt(r.tagger),
    fmt(r.reference),
    r.tagger !== null && r.reference !== null && r.reference !== 0 ? `${fmt(r.tagger / r.reference)}x` : '-',
    r.note ?? '',
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...body.map((b) => b[i]!.length)));
  const line = (cells: string[]) => `| ${cells.map((c, i) => c.padEnd(widths[i]!)).join(' | ')} |`;
  console.log(line(header));
  console.log(`|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`);
  for (const b of body) console.log(line(b));
}

async function main(): Promise<void> {
  const opts: BenchOptions = { quick: process.argv.includes('--quick') };
  const stamp = new Date().toISOString().replace(/[:.]/g, '-');
  const outDir = resolve(import.meta.dirname, 'results');
  mkdirSync(outDir, { recursive: true });
  const all: BenchRow[] = [];
  for (const section of SECTIONS) {
    const rows = await (await section.load()).run(opts);
    all.push(...rows);
    const file = resolve(outDir, `${section.name}-${stamp}.json`);
    const machine = {
      node: process.version,
      platform: platform(),
      arch: arch(),
      cpus: cpus().length,
      cpu: cpus()[0]?.model,
    };
    writeFileSync(
      file,
      `${JSON.stringify({ section: section.name, date: new Date().toISOString(), quick: opts.quick, machine, rows }, null, 2)}\n`,
    );
    console.error(`wrote ${file}`);
  }
  printTable(all);
}

await main();
