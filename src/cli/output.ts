/**
 * The output every command shares: plain-text tables, metric numbers, the behavioural tests' summary,
 * and files written whole or not at all.
 */
import { randomBytes } from 'node:crypto';
import { rename, rm, writeFile } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import type { BehaviourReport } from '../model/index.js';

/**
 * Writes `text` to `path` through a temporary file beside it, renamed into place: an interruption never
 * leaves the file half-written (it is either the old one or the new one).
 */
export async function writeWhole(path: string, text: string): Promise<void> {
  const temp = join(dirname(path), `.${basename(path)}.tagger-${randomBytes(4).toString('hex')}.tmp`);
  try {
    await writeFile(temp, text, { flag: 'wx' });
    await rename(temp, path);
  } catch (error) {
    await rm(temp, { force: true }).catch(() => undefined);
    throw error;
  }
}

/** A plain-text table: the header, then the rows; columns two spaces apart, `rightAligned` padded left. */
export function textTable(
  header: string[],
  rows: string[][],
  rightAligned: readonly number[] = [],
): string[] {
  const widths = header.map((title, column) =>
    Math.max(title.length, ...rows.map((row) => row[column]!.length)),
  );
  const line = (cells: string[]) =>
    cells
      .map((cell, column) =>
        rightAligned.includes(column) ? cell.padStart(widths[column]!) : cell.padEnd(widths[column]!),
      )
      .join('  ')
      .trimEnd();
  return [header, ...rows].map(line);
}

export const formatMetric = (value: number): string =>
  Number.isFinite(value) ? value.toFixed(4) : String(value);

/** What to do about a suite that does not fit the model's tags. */
const OWN_SUITE_HINT =
  'for your own tags, write cases and pass them with --behaviour <file> (a commented example: samples/behaviour.yaml)';

/**
 * The behavioural tests in a few lines: the rate, per kind, and the failed cases by name; the cases
 * skipped for naming tags the model does not have in one line, with what the suite is for; a suite that
 * does not fit the model at all in one line saying why it was not run.
 */
export function behaviourSummary(report: BehaviourReport): string {
  const title = `Behavioural tests (${report.suite})`;
  const about = report.about === undefined ? '' : `; the suite is ${report.about}`;
  if (report.not_applicable !== undefined) {
    return `${title}: not run: ${report.not_applicable}${about}; ${OWN_SUITE_HINT}\n`;
  }
  if (report.pass_rate === null) {
    return `${title}: none could run; all ${report.skipped} case(s) name tags the model does not have${about}; ${OWN_SUITE_HINT}\n`;
  }
  const kinds = Object.entries(report.by_kind)
    .map(([kind, k]) => `${kind} ${k.passed}/${k.cases}`)
    .join(', ');
  const lines = [
    `${title}: ${report.passed}/${report.passed + report.failed} passed (${(100 * report.pass_rate).toFixed(1)}%; ${kinds})` +
      (report.skipped > 0 ? `, ${report.skipped} skipped` : ''),
  ];
  for (const c of report.cases) {
    if (c.pass === false) lines.push(`  FAILED ${c.kind} '${c.name}': expected ${c.expected}; got ${c.got}`);
  }
  if (report.skipped > 0) {
    const missing = [
      ...new Set(report.cases.flatMap((c) => (c.pass === null ? (c.missing_tags ?? []) : []))),
    ].sort();
    const one = report.skipped === 1;
    lines.push(
      `  ${report.skipped} of ${report.cases.length} case${report.cases.length === 1 ? '' : 's'} skipped: ${one ? 'it names' : 'they name'} tags this model does not have` +
        (missing.length > 0 ? ` (${missing.join(', ')})` : '') +
        (report.about === undefined ? '' : `; the suite is ${report.about}; ${OWN_SUITE_HINT}`),
    );
  }
  return `${lines.join('\n')}\n`;
}
