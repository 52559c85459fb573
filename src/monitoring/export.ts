/**
 * Labelled records as a training file (`tagger feedback export`): a CSV that `tagger train --data` and
 * `tagger evaluate --data` read as they read any dataset — `title` holds the text as it was sent,
 * `description` is empty (training joins them with a space, which cleaning drops), and `tag` the tag
 * given in feedback, or, for multi-label runs, `tags` with the tags joined by `|`. Records whose text was
 * not kept (TAGGER_RECORD_TEXT=hash) cannot become rows; they are counted instead. Cells a spreadsheet
 * would run as formulas are neutralised (see `field`). Written to a
 * temporary file and renamed into place, so a failed export never leaves half a file behind.
 */
import { createWriteStream } from 'node:fs';
import { rename, rm } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { finished } from 'node:stream/promises';
import { neutraliseFormula } from '../model/index.js';
import { type LabelledRecord, type RecordStore, RecordStoreError } from './record-store.js';

export interface ExportFilter {
  scope?: string | undefined;
  runId?: string | undefined;
  sinceMs?: number | undefined;
}

/** More rows to write after the labelled records (label-issue fixes: text and the right tags). */
export interface ExtraRow {
  text: string;
  tags: readonly string[];
}

export interface ExportSummary {
  /** Rows written (labelled records and extra rows). */
  rows: number;
  /** Of them, extra rows (label-issue fixes). */
  extra: number;
  /** Labelled records left out because only their text's hash was kept. */
  hashedOnly: number;
  multiLabel: boolean;
  /** The runs whose predictions the rows are. */
  runs: string[];
}

const PAGE = 1_000;

/**
 * One CSV field, RFC 4180: always quoted, quotes doubled (texts hold commas, quotes and newlines), and a
 * value a spreadsheet would run as a formula (`=HYPERLINK(…)`, sent through the API) neutralised with a
 * leading `'`, as the batch output is; the data reader takes that `'` away again (`restoreFormula`).
 */
const field = (value: string): string => `"${neutraliseFormula(value).replaceAll('"', '""')}"`;

export class ExportError extends Error {
  override readonly name = 'ExportError';
}

/** Writes every labelled record the filter selects to `output`; rejects with ExportError or RecordStoreError. */
export async function writeLabelledCsv(
  store: RecordStore,
  output: string,
  filter: ExportFilter = {},
  extraRows: readonly ExtraRow[] = [],
): Promise<ExportSummary> {
  const temporary = join(dirname(output), `.${Date.now().toString(36)}-${process.pid}.tagger-export.tmp`);
  const stream = createWriteStream(temporary, { encoding: 'utf8' });
  const opened = new Promise<void>((resolve, reject) => {
    stream.once('open', () => resolve());
    stream.once('error', reject);
  });
  try {
    await opened;
  } catch (error) {
    throw new ExportError(`feedback export: cannot write ${output}: ${(error as Error).message}`);
  }
  const summary: ExportSummary = { rows: 0, extra: 0, hashedOnly: 0, multiLabel: false, runs: [] };
  const runs = new Set<string>();
  let kind: boolean | undefined;
  const write = (line: string): Promise<void> | undefined =>
    stream.write(line) ? undefined : new Promise((resolve) => stream.once('drain', () => resolve()));
  try {
    let after: string | undefined;
    for (;;) {
      const page: LabelledRecord[] = await store.labelled({ ...filter, after, limit: PAGE });
      if (page.length === 0) break;
      after = page.at(-1)!.predictionId;
      for (const record of page) {
        if (record.text === null) {
          summary.hashedOnly++;
          continue;
        }
        if (kind === undefined) {
          kind = record.multiLabel;
          await write(`title,description,${kind ? 'tags' : 'tag'}\n`);
        } else if (kind !== record.multiLabel) {
          throw new ExportError(
            'feedback export: the labelled predictions mix single-label and multi-label runs, which make different training files; choose the runs with --run-id',
          );
        }
        await write(`${field(record.text)},"",${field(record.tags.join('|'))}\n`);
        summary.rows++;
        runs.add(record.runId);
      }
    }
    for (const row of extraRows) {
      if (kind === undefined) {
        kind = row.tags.length > 1;
        await write(`title,description,${kind ? 'tags' : 'tag'}\n`);
      }
      await write(`${field(row.text)},"",${field(row.tags.join('|'))}\n`);
      summary.rows++;
      summary.extra++;
    }
    stream.end();
    await finished(stream);
    if (summary.rows === 0) {
      throw new ExportError(
        summary.hashedOnly > 0
          ? `feedback export: the ${summary.hashedOnly} labelled predictions kept only their texts' hashes (TAGGER_RECORD_TEXT=hash), so no training rows can be made; nothing was written`
          : 'feedback export: no feedback was given on the recorded predictions selected (POST /feedback labels them); nothing was written',
      );
    }
    await rename(temporary, output);
  } catch (error) {
    stream.destroy();
    await rm(temporary, { force: true });
    if (error instanceof ExportError || error instanceof RecordStoreError) throw error;
    throw new ExportError(`feedback export: cannot write ${output}: ${(error as Error).message}`);
  }
  summary.multiLabel = kind ?? false;
  summary.runs = [...runs].sort();
  return summary;
}
