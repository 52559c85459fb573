/**
 * Parity with scikit-learn: TfidfVectorizer (lowercase=False, otherwise defaults) and our TfidfVectorizer
 * must produce the same vocabulary and the same matrix (to 1e-6) on the shared dataset, for every analyzer;
 * also with sublinear_tf and min_df, and Tagger's `char_wb+word` union against sklearn's FeatureUnion.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parse } from 'csv-parse/sync';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Analyzer } from '../../../src/model/args.js';
import { fitVectorizer } from '../../../src/model/text/features.js';
import { cleanText, LEGACY_CLEANUP } from '../../../src/model/text/preprocess.js';
import { TfidfVectorizer } from '../../../src/model/text/tfidf.js';
import { REPO_ROOT, sharedDataset, venvPython } from '../../support/components.js';

const python = venvPython();
const datasetPath = sharedDataset('dataset.csv');

interface Case {
  name: string;
  docs: string[];
  analyzer: Analyzer;
  ngram_range: [number, number];
  sublinear_tf?: boolean;
  min_df?: number;
}
interface SklearnResult {
  vocabulary: string[];
  indptr: number[];
  indices: number[];
  data: number[];
}

// Raw (unpreprocessed) extras exercise Unicode: accents, non-BMP emoji (code-point sort order vs UTF-16),
// Python-only whitespace (U+001F, U+0085), tabs and runs of spaces.
const UNICODE_DOCS = [
  'Café naïve façade — déjà vu',
  'emoji 😀 rocket 🚀 and \uff21 fullwidth',
  'tabs\tand  double  spaces\u001fsep\u0085next',
  'x y z',
  '',
];

// "clean" = the shared dataset after Tagger's preprocessing (what the model sees); "raw" = 50 unprocessed
// dataset texts plus UNICODE_DOCS. Ranges beyond 8 characters exercise the hashed (non-packed) lookups.
const SPECS: (Omit<Case, 'docs'> & { source: 'clean' | 'raw' })[] = [
  { name: 'word 2..3 (preprocessed)', source: 'clean', analyzer: 'word', ngram_range: [2, 3] },
  { name: 'char 2..4 (preprocessed)', source: 'clean', analyzer: 'char', ngram_range: [2, 4] },
  {
    name: 'char_wb 2..5 (preprocessed, default args)',
    source: 'clean',
    analyzer: 'char_wb',
    ngram_range: [2, 5],
  },
  { name: 'word 1..2 (raw Unicode)', source: 'raw', analyzer: 'word', ngram_range: [1, 2] },
  { name: 'char 1..3 (raw Unicode)', source: 'raw', analyzer: 'char', ngram_range: [1, 3] },
  { name: 'char_wb 2..10 (raw Unicode)', source: 'raw', analyzer: 'char_wb', ngram_range: [2, 10] },
  {
    name: 'char_wb 2..5 sublinear_tf (preprocessed)',
    source: 'clean',
    analyzer: 'char_wb',
    ngram_range: [2, 5],
    sublinear_tf: true,
  },
  {
    name: 'char_wb+word 2..5 (preprocessed)',
    source: 'clean',
    analyzer: 'char_wb+word',
    ngram_range: [2, 5],
  },
  {
    name: 'char_wb+word 2..4 sublinear_tf (raw Unicode)',
    source: 'raw',
    analyzer: 'char_wb+word',
    ngram_range: [2, 4],
    sublinear_tf: true,
  },
  {
    name: 'word 1..2 min_df 2 (preprocessed)',
    source: 'clean',
    analyzer: 'word',
    ngram_range: [1, 2],
    min_df: 2,
  },
  {
    name: 'char_wb+word 1..4 min_df 3 (preprocessed)',
    source: 'clean',
    analyzer: 'char_wb+word',
    ngram_range: [1, 4],
    min_df: 3,
  },
];

describe.skipIf(python === null || datasetPath === null)('TF-IDF parity with scikit-learn', () => {
  let dir: string;
  let cases: Case[];
  let results: SklearnResult[];

  beforeAll(() => {
    const rows = parse(readFileSync(datasetPath!), { columns: true }) as Record<string, string>[];
    const raw = rows.map((r) => `${r.title} ${r.description}`);
    const docs = {
      clean: raw.map((t) => cleanText(t, { lower: true, stem: false, ...LEGACY_CLEANUP })),
      raw: [...raw.slice(0, 50), ...UNICODE_DOCS],
    };
    cases = SPECS.map(({ source, ...spec }) => ({ ...spec, docs: docs[source] }));
    dir = mkdtempSync(join(tmpdir(), 'tagger-parity-'));
    writeFileSync(join(dir, 'in.json'), JSON.stringify(cases));
    execFileSync(
      python!,
      [resolve(REPO_ROOT, 'python', 'sklearn_tfidf.py'), join(dir, 'in.json'), join(dir, 'out.json')],
      {
        stdio: ['ignore', 'ignore', 'inherit'],
      },
    );
    results = JSON.parse(readFileSync(join(dir, 'out.json'), 'utf8')) as SklearnResult[];
  }, 120_000);

  afterAll(() => {
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it.each(SPECS.map((spec, i) => [spec.name, i] as const))(
    '%s: same vocabulary and values to 1e-6',
    (_name, i) => {
      const c = cases[i]!;
      const expected = results[i]!;
      const sublinearTf = c.sublinear_tf === true;
      const ours =
        c.analyzer === 'char_wb+word'
          ? fitVectorizer(c.docs, {
              analyzer: c.analyzer,
              ngram_min_range: c.ngram_range[0],
              ngram_max_range: c.ngram_range[1],
              sublinear_tf: sublinearTf,
              min_df: c.min_df ?? 1,
            })
          : TfidfVectorizer.fit(c.docs, {
              analyzer: c.analyzer,
              ngramMin: c.ngram_range[0],
              ngramMax: c.ngram_range[1],
              sublinearTf,
              minDf: c.min_df ?? 1,
            });
      expect(ours.vocabulary, c.name).toEqual(expected.vocabulary);
      const m = ours.transform(c.docs);
      expect(Array.from(m.indptr), c.name).toEqual(expected.indptr);
      expect(Array.from(m.indices), c.name).toEqual(expected.indices);
      let maxDiff = 0;
      m.data.forEach((v, j) => {
        maxDiff = Math.max(maxDiff, Math.abs(v - expected.data[j]!));
      });
      expect(maxDiff, c.name).toBeLessThan(1e-6);
      expect(m.data.length).toBeGreaterThan(0);
    },
  );
});
