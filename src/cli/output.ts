/** The output every command shares: plain-text tables, metric numbers, the behavioural tests' summary. */
import type { BehaviourReport } from '../model/index.js';

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

/** The behavioural tests in a few lines: the rate, per kind, and the failed or skipped cases by name. */
export function behaviourSummary(report: BehaviourReport): string {
  if (report.pass_rate === null) {
    return `Behavioural tests (${report.suite}): none could run; all ${report.skipped} case(s) name tags the model does not have\n`;
  }
  const kinds = Object.entries(report.by_kind)
    .map(([kind, k]) => `${kind} ${k.passed}/${k.cases}`)
    .join(', ');
  const lines = [
    `Behavioural tests (${report.suite}): ${report.passed}/${report.passed + report.failed} passed (${(100 * report.pass_rate).toFixed(1)}%; ${kinds})` +
      (report.skipped > 0 ? `, ${report.skipped} skipped` : ''),
  ];
  for (const c of report.cases) {
    if (c.pass === false) lines.push(`  FAILED ${c.kind} '${c.name}': expected ${c.expected}; got ${c.got}`);
    else if (c.pass === null) lines.push(`  skipped ${c.kind} '${c.name}': ${c.skipped ?? ''}`);
  }
  return `${lines.join('\n')}\n`;
}
