/**
 * The data sets of the `real` benchmark (bench/real.ts, issue 39), each written to a working folder as
 * its train and test files: the sample (dataset.csv / holdout.csv), BANKING77 and CLINC150 as their authors
 * published them (../shared/data/real/, never copied into the repository), the `scale` generator's data
 * (50,000 rows × 4 and × 500 tags), and Made With ML's multi-label projects.json (several tags per text).
 * `--quick` takes a few thousand rows of each real set.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parse } from 'csv-parse/sync';
import { createRng, shuffleInPlace } from '../src/model/index.js';
import { DATA_DIR } from './paths.js';
import { scaleCsv, scaleRows } from './scale-data.js';

export type Labels = 'single' | 'multi' | 'out_of_scope';

export interface PreparedSet {
  name: string;
  train: string;
  test: string;
  /** What Tagger trains on when it differs (CLINC150 with `out_of_scope` labelled `other`). */
  taggerTrain?: string;
  taggerTest?: string;
  labels: Labels;
  /** `tagger train`'s column flags and the Python peers' (`title+description` joins the two). */
  taggerColumns: string[];
  pythonColumns: string[];
  /** Every test row's label(s), as the file gives them. */
  truth: (string | string[])[];
  /** Several tags per text: the tags with min_freq (20) rows in the training file; the scorer folds the rest. */
  keptTags?: string[];
  rows: number;
}

export interface DataSetDefinition {
  name: string;
  /** Run by `--quick` (at its quick size). */
  quick: boolean;
  prepare(dir: string, quick: boolean): PreparedSet | null;
}

const REAL = resolve(DATA_DIR, 'real');
const csvCell = (value: string): string =>
  /[",\n\r]/.test(value) ? `"${value.replace(/"/g, '""')}"` : value;
const csvOf = (header: readonly string[], rows: readonly (readonly string[])[]): string =>
  `${[header, ...rows].map((row) => row.map(csvCell).join(',')).join('\n')}\n`;
const readCsv = (path: string): Record<string, string>[] =>
  parse(readFileSync(path), { columns: true }) as Record<string, string>[];

/** Every `step`-th row (a quick run's share, spread over the file's order, which is sorted by tag in CLINC150). */
const every = <T>(rows: readonly T[], keep: number): T[] => {
  if (rows.length <= keep) return [...rows];
  const step = rows.length / keep;
  return Array.from({ length: keep }, (_, i) => rows[Math.floor(i * step)]!);
};

function textAndTag(
  name: string,
  files: { train: string; test: string },
  columns: { text: string; tag: string },
  quick: { train: number; test: number } | null,
  dir: string,
  relabel?: (tag: string) => string,
): PreparedSet {
  const train = readCsv(files.train);
  const test = readCsv(files.test);
  const trainRows = quick ? every(train, quick.train) : train;
  const testRows = quick ? every(test, quick.test) : test;
  const write = (file: string, rows: Record<string, string>[], map?: (tag: string) => string): string => {
    const path = join(dir, file);
    writeFileSync(
      path,
      csvOf(
        [columns.text, columns.tag],
        rows.map((row) => [row[columns.text]!, map ? map(row[columns.tag]!) : row[columns.tag]!]),
      ),
    );
    return path;
  };
  const set: PreparedSet = {
    name,
    train: write(`${name}-train.csv`, trainRows),
    test: write(`${name}-test.csv`, testRows),
    labels: relabel ? 'out_of_scope' : 'single',
    taggerColumns: ['--text-column', columns.text, '--tag-column', columns.tag],
    pythonColumns: ['--text-column', columns.text, '--tag-column', columns.tag],
    truth: testRows.map((row) => row[columns.tag]!),
    rows: trainRows.length,
  };
  if (relabel) {
    set.taggerTrain = write(`${name}-tagger-train.csv`, trainRows, relabel);
    set.taggerTest = write(`${name}-tagger-test.csv`, testRows, relabel);
  }
  return set;
}

/** Tagger's answer for a text that fits no tag is `other`: CLINC150's out-of-scope rows are labelled so for it. */
export const OUT_OF_SCOPE = 'out_of_scope';

export const DATA_SETS: readonly DataSetDefinition[] = [
  {
    name: 'sample',
    quick: true,
    prepare(dir) {
      const train = readCsv(resolve(DATA_DIR, 'dataset.csv'));
      const test = readCsv(resolve(DATA_DIR, 'holdout.csv'));
      const write = (file: string, rows: Record<string, string>[]): string => {
        const path = join(dir, file);
        writeFileSync(
          path,
          csvOf(
            ['title', 'description', 'tag'],
            rows.map((r) => [r.title!, r.description!, r.tag!]),
          ),
        );
        return path;
      };
      return {
        name: 'sample',
        train: write('sample-train.csv', train),
        test: write('sample-test.csv', test),
        labels: 'single',
        taggerColumns: [],
        pythonColumns: ['--text-column', 'title+description', '--tag-column', 'tag'],
        truth: test.map((r) => r.tag!),
        rows: train.length,
      };
    },
  },
  {
    name: 'banking77',
    quick: true,
    prepare: (dir, quick) =>
      textAndTag(
        'banking77',
        { train: join(REAL, 'banking77-train.csv'), test: join(REAL, 'banking77-test.csv') },
        { text: 'text', tag: 'category' },
        quick ? { train: 2_500, test: 600 } : null,
        dir,
      ),
  },
  {
    name: 'clinc150',
    quick: false,
    prepare: (dir, quick) =>
      textAndTag(
        'clinc150',
        { train: join(REAL, 'clinc150-train.csv'), test: join(REAL, 'clinc150-test.csv') },
        { text: 'text', tag: 'tag' },
        quick ? { train: 3_000, test: 1_000 } : null,
        dir,
        (tag) => (tag === OUT_OF_SCOPE ? 'other' : tag),
      ),
  },
  ...[4, 500].map(
    (tags): DataSetDefinition => ({
      name: `generated-50k-x${tags}`,
      quick: false,
      prepare(dir, quick) {
        const all = scaleRows({ rows: quick ? 4_000 : 50_000, tags, seed: 42 });
        const cut = Math.round(all.length * 0.8);
        const train = join(dir, `scale-${tags}-train.csv`);
        const test = join(dir, `scale-${tags}-test.csv`);
        writeFileSync(train, scaleCsv(all.slice(0, cut)));
        writeFileSync(test, scaleCsv(all.slice(cut)));
        return {
          name: `generated-${all.length / 1000}k-x${tags}`,
          train,
          test,
          labels: 'single',
          taggerColumns: [],
          pythonColumns: ['--text-column', 'title+description', '--tag-column', 'tag'],
          truth: all.slice(cut).map((row) => row.tag),
          rows: cut,
        };
      },
    }),
  ),
  {
    name: 'multilabel',
    quick: true,
    prepare(dir, quick) {
      const source = resolve(DATA_DIR, 'mlops-course_146d00b', 'projects.json');
      const records = JSON.parse(readFileSync(source, 'utf8')) as {
        title: string;
        description: string;
        tags: string[];
      }[];
      const rows = [...records];
      shuffleInPlace(rows, createRng(42));
      const kept = quick ? rows.slice(0, 800) : rows;
      const cut = Math.round(kept.length * 0.8);
      const write = (file: string, part: typeof rows): string => {
        const path = join(dir, file);
        writeFileSync(
          path,
          csvOf(
            ['title', 'description', 'tags'],
            part.map((r) => [r.title, r.description, [...new Set(r.tags)].join('|')]),
          ),
        );
        return path;
      };
      const counts = new Map<string, number>();
      for (const r of kept.slice(0, cut))
        for (const tag of new Set(r.tags)) counts.set(tag, (counts.get(tag) ?? 0) + 1);
      return {
        name: 'multilabel',
        keptTags: [...counts].filter(([, n]) => n >= 20).map(([tag]) => tag),
        train: write('multilabel-train.csv', kept.slice(0, cut)),
        test: write('multilabel-test.csv', kept.slice(cut)),
        labels: 'multi',
        taggerColumns: ['--tags-column', 'tags'],
        pythonColumns: ['--text-column', 'title+description', '--tags-column', 'tags'],
        truth: kept.slice(cut).map((r) => [...new Set(r.tags)].sort()),
        rows: cut,
      };
    },
  },
];

/** The papers' results beside BANKING77 and CLINC150 (../shared/data/real/SOURCES.md), to read against. */
export const PUBLISHED: readonly { data: string; system: string; figure: string }[] = [
  {
    data: 'banking77',
    system: 'USE + ConveRT dual encoders (Casanueva et al. 2020)',
    figure: 'accuracy ≈ 93.4',
  },
  { data: 'banking77', system: 'BERT fine-tuned (Casanueva et al. 2020)', figure: 'accuracy ≈ 93.7' },
  {
    data: 'clinc150',
    system: 'SVM, bag of words, oos-train (Larson et al. 2019)',
    figure: 'in-scope 91.0 / oos 14.5',
  },
  { data: 'clinc150', system: 'fastText, oos-train', figure: 'in-scope 89.0 / oos 9.7' },
  { data: 'clinc150', system: 'MLP on USE embeddings, oos-train', figure: 'in-scope 93.5 / oos 47.4' },
  { data: 'clinc150', system: 'MLP on USE embeddings, oos-threshold', figure: 'in-scope 93.4 / oos 49.1' },
  { data: 'clinc150', system: 'BERT fine-tuned, oos-train', figure: 'in-scope 96.9 / oos 40.3' },
  { data: 'clinc150', system: 'BERT fine-tuned, oos-threshold', figure: 'in-scope 96.2 / oos 52.3' },
];
