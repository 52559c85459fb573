/**
 * What `tagger train` prints of a model choice: the plan before the training (the candidates in the order
 * they are tried, each one's estimate or why it is left out, and the budget with where it came from), and
 * the table after it (validation f1, training time, predict µs per text, model size, or why a candidate
 * was skipped). The same table is logged as `model_choice.json` and shown by the inspection page.
 */
import { InvalidArgumentError } from 'commander';
import type { ChoiceReport } from '../train/model-choice/choose.js';
import type { ChoicePreparation } from '../train/model-choice/prepare.js';
import { CANDIDATES, DEFAULT_BUDGET } from '../train/model-choice/rules.js';
import { formatDuration } from '../train/progress.js';
import { textTable } from './output.js';

const UNITS: Record<string, number> = { s: 1, m: 60, min: 60, h: 3600 };

/** `--time-budget`: seconds, or with a unit (`90s`, `10m`, `1h`, `1h30m`). */
export function parseDuration(value: string): number {
  const text = value.trim().toLowerCase();
  if (/^\d+(\.\d+)?$/.test(text)) return checked(Number(text), value);
  const parts = [...text.matchAll(/(\d+(?:\.\d+)?)\s*(h|min|m|s)/g)];
  const joined = parts.map((part) => part[0]).join('');
  if (parts.length === 0 || joined.replace(/\s/g, '') !== text.replace(/\s/g, '')) {
    throw new InvalidArgumentError(
      `--time-budget must be seconds or a duration such as 90s, 10m or 1h30m, got '${value}'`,
    );
  }
  return checked(
    parts.reduce((sum, part) => sum + Number(part[1]) * UNITS[part[2]!]!, 0),
    value,
  );
}

function checked(seconds: number, value: string): number {
  if (!(seconds >= 1))
    throw new InvalidArgumentError(`--time-budget must be at least 1 second, got '${value}'`);
  return seconds;
}

/** `--candidates`: names of the rules' table, comma-separated. */
export function parseCandidates(value: string): string[] {
  const names = value
    .split(',')
    .map((name) => name.trim())
    .filter((name) => name !== '');
  const known = CANDIDATES.map((rule) => rule.name);
  const unknown = names.filter((name) => !known.includes(name));
  if (names.length === 0 || unknown.length > 0) {
    throw new InvalidArgumentError(
      `--candidates takes candidate names separated by commas (${known.join(', ')}), got '${value}'`,
    );
  }
  return names;
}

const seconds = (value: number): string =>
  value < 10 ? `${value.toFixed(1)} s` : formatDuration(1000 * value);

/** Where the budget came from, in words. */
function budgetSource(
  preparation: Pick<ChoicePreparation, 'budgetSeconds' | 'budgetSource'>,
  rows: number,
): string {
  return preparation.budgetSource === 'given'
    ? 'given by --time-budget'
    : `the default for ${rows.toLocaleString('en-US')} rows: ${DEFAULT_BUDGET.baseSeconds} s + ${1000 * DEFAULT_BUDGET.secondsPerRow} ms per row; --time-budget sets another`;
}

/** The plan, before the training: a line for the choice and one per candidate. */
export function planLines(preparation: ChoicePreparation, rows: number): string {
  const tried = preparation.plan.filter((p) => p.skip === null);
  const lines = [
    `tagger: choosing the model on the validation split (${preparation.shape.validationRows.toLocaleString('en-US')} rows): ${tried.length} of ${preparation.plan.length} candidates, cheapest first, within a budget of ${formatDuration(1000 * preparation.budgetSeconds)} of CPU time (${budgetSource(preparation, rows)})`,
    ...preparation.plan.map(
      (p) =>
        `  ${p.name.padEnd(17)} ${p.skip === null ? `estimated ${seconds(p.estimatedSeconds)} of CPU` : `skipped: ${p.skip}`}`,
    ),
  ];
  return `${lines.join('\n')}\n`;
}

const bytes = (n: number | undefined): string =>
  n === undefined ? '' : n >= 2 ** 20 ? `${(n / 2 ** 20).toFixed(1)} MB` : `${Math.round(n / 1024)} KB`;

/** The table after the training (stdout): every candidate, the chosen one first-marked. */
export function choiceTable(report: ChoiceReport): string {
  const balanced = report.objective === 'balanced_other';
  const rows = report.candidates.map((c) => {
    const trained = c.status === 'chosen' || c.status === 'trained';
    return [
      `${c.status === 'chosen' ? '* ' : '  '}${c.name}`,
      trained ? c.validation_f1!.toFixed(4) : '',
      ...(balanced ? [c.validation_balanced?.toFixed(4) ?? ''] : []),
      trained ? c.training_seconds!.toFixed(1) : '',
      trained ? c.training_cpu_seconds!.toFixed(1) : '',
      trained
        ? `${Math.round(c.predict_us!)}${c.encoder_predict_us === undefined ? '' : ` + ~${Math.round(c.encoder_predict_us)} encoder`}`
        : '',
      trained ? bytes(c.model_bytes) : '',
      trained
        ? c.threshold === undefined || c.threshold === null
          ? ''
          : `threshold ${c.threshold.toFixed(3)}`
        : `${c.status}: ${c.reason ?? ''}`,
    ];
  });
  const table = textTable(
    [
      'candidate',
      'validation f1',
      ...(balanced ? ['balanced'] : []),
      'seconds',
      'CPU s',
      'predict µs',
      'model',
      'note',
    ],
    rows,
    balanced ? [1, 2, 3, 4, 5, 6] : [1, 2, 3, 4, 5],
  );
  const scarce = balanced
    ? `  Only ${report.other_rows} validation rows are \`other\` (texts that fit no tag): each candidate's fallback threshold placed for the balanced score, the tags' accuracy and other's recall, half each.\n`
    : '';
  const cleanup =
    report.cleanup.tried.length > 1
      ? `; clean-up ${report.cleanup.chosen} (${report.cleanup.tried.map((t) => `${t.name} ${t.validation_f1.toFixed(4)}`).join(', ')})`
      : report.cleanup.reason === undefined
        ? ''
        : `; clean-up ${report.cleanup.chosen}, ${report.cleanup.reason}`;
  return (
    `Model choice: ${report.chosen}, by ${report.rule}${cleanup} (budget ${formatDuration(1000 * report.budget_seconds)} of CPU time, ${formatDuration(1000 * report.seconds)} used before the refit):\n` +
    scarce +
    `${table.map((line) => `  ${line}`).join('\n')}\n`
  );
}

/** `tagger train --json`'s account of the choice: the chosen candidate and each one's figures. */
export function choiceSummary(report: ChoiceReport) {
  return {
    chosen: report.chosen,
    budget_seconds: report.budget_seconds,
    budget_source: report.budget_source,
    objective: report.objective,
    other_rows: report.other_rows,
    cleanup: report.cleanup.chosen,
    candidates: report.candidates.map((c) => ({
      name: c.name,
      status: c.status,
      ...(c.reason === undefined ? {} : { reason: c.reason }),
      ...(c.validation_f1 === undefined ? {} : { validation_f1: c.validation_f1 }),
      ...(c.validation_balanced === undefined ? {} : { validation_balanced: c.validation_balanced }),
      ...(c.training_seconds === undefined ? {} : { training_seconds: c.training_seconds }),
      ...(c.training_cpu_seconds === undefined ? {} : { training_cpu_seconds: c.training_cpu_seconds }),
      ...(c.predict_us === undefined ? {} : { predict_us: c.predict_us }),
      ...(c.encoder_predict_us === undefined ? {} : { encoder_predict_us: c.encoder_predict_us }),
      ...(c.model_bytes === undefined ? {} : { model_bytes: c.model_bytes }),
    })),
  };
}
