/**
 * Benchmark runner (`npm run bench [-- --quick] [-- --only <section>[,<section>…]] [-- --profile]`): runs every section module, prints
 * one table and writes each section's rows to bench/results/<section>-<timestamp>.json. A section is a
 * module exporting `run(opts)` that returns rows, or a SectionResult with breakage (the types are in
 * bench/section.ts, which the sections import instead of this file); add sections to SECTIONS.
 * Exits non-zero only on breakage a section reports (failed requests, gross regressions), never on a
 * target missed by noise.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { arch, cpus, platform } from 'node:os';
import { resolve } from 'node:path';
import type { BenchOptions, BenchRow, SectionModule, SectionResult } from './section.js';

type Section = {
  name: string;
  load: () => Promise<SectionModule>;
};

const SECTIONS: Section[] = [
  { name: 'model', load: () => import('./model.js') },
  { name: 'multilabel', load: () => import('./multi-label.js') },
  { name: 'encoder', load: () => import('./encoder.js') },
  { name: 'cascade', load: () => import('./cascade.js') },
  { name: 'http', load: () => import('./http.js') },
  { name: 'tracking', load: () => import('./tracking.js') },
  { name: 'batch', load: () => import('./batch.js') },
  { name: 'monitoring', load: () => import('./monitoring.js') },
  { name: 'loop', load: () => import('./loop.js') },
  { name: 'ui', load: () => import('./ui.js') },
  { name: 'scale', load: () => import('./scale.js') },
  { name: 'real', load: () => import('./real.js') },
];

const fmt = (v: number | null): string => {
  if (v === null || !Number.isFinite(v)) return '-';
  if (Math.abs(v) >= 1000) return Math.round(v).toLocaleString('en-US');
  return Number(v.toPrecision(4)).toString();
};

function printTable(rows: BenchRow[]): void {
  const header = ['section', 'metric', 'unit', 'tagger (TS)', 'reference', 'TS / ref', 'target', 'note'];
  const body = rows.map((r) => [
    r.section,
    r.metric,
    r.unit,
    fmt(r.tagger),
    fmt(r.reference),
    r.tagger !== null && r.reference !== null && r.reference !== 0 ? `${fmt(r.tagger / r.reference)}x` : '-',
    r.target ? `${r.target.pass ? 'PASS' : 'FAIL'} (${r.target.text})` : '',
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
  if (process.argv.includes('--profile')) {
    // Not a table section: a CPU profile of the server under single-text load (bench/profile.ts).
    await (await import('./profile.js')).profile(opts);
    return;
  }
  const only = process.argv.indexOf('--only');
  const wanted = only >= 0 ? (process.argv[only + 1] ?? '').split(',').filter(Boolean) : null;
  const unknown = wanted?.filter((name) => !SECTIONS.some((s) => s.name === name)) ?? [];
  if (wanted?.length === 0 || unknown.length > 0) {
    console.error(
      `--only takes section names separated by commas (${SECTIONS.map((s) => s.name).join(', ')}); ` +
        (unknown.length > 0 ? `unknown: ${unknown.join(', ')}` : 'none given'),
    );
    process.exitCode = 2;
    return;
  }
  const selected = wanted ? SECTIONS.filter((s) => wanted.includes(s.name)) : SECTIONS;
  const started = performance.now();
  const breakage: string[] = [];
  const notes: string[] = [];
  const stamp = new Date().toISOString().replace(/[:.]/g, '-');
  const outDir = resolve(import.meta.dirname, 'results');
  mkdirSync(outDir, { recursive: true });
  const all: BenchRow[] = [];
  for (const section of selected) {
    const out = await (await section.load()).run(opts);
    const result: SectionResult = Array.isArray(out) ? { rows: out } : out;
    const { rows } = result;
    all.push(...rows);
    breakage.push(...(result.breakage ?? []).map((b) => `${section.name}: ${b}`));
    notes.push(...(result.notes ?? []).map((n) => `${section.name}: ${n}`));
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
      `${JSON.stringify({ section: section.name, date: new Date().toISOString(), quick: opts.quick, machine, rows, notes: result.notes ?? [], breakage: result.breakage ?? [], details: result.details ?? null }, null, 2)}\n`,
    );
    console.error(`wrote ${file}`);
  }
  printTable(all);
  for (const note of notes) console.log(`note: ${note}`);
  console.log(`bench finished in ${((performance.now() - started) / 1000).toFixed(1)} s`);
  if (breakage.length > 0) {
    for (const b of breakage) console.error(`BROKEN: ${b}`);
    process.exitCode = 1;
  }
}

await main();
