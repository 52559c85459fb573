import { beforeAll, describe, expect, it } from 'vitest';
import { type LabelledText, LEGACY_CLEANUP, parseTrainingArgs } from '../../src/model/index.js';
import { DataError, readDataset } from '../../src/train/data.js';
import {
  argsForData,
  LARGE_DATA_ROWS,
  largeDataSettings,
  MIN_STRATUM_ROWS,
  splitData,
  splitStratum,
  testSetDigest,
  trainAndEvaluate,
} from '../../src/train/pipeline.js';
import { SGD } from '../model/fixtures.js';
import { REPO_ROOT, SAMPLE_DATA } from '../support/components.js';

const FAST_ARGS = parseTrainingArgs({ ...SGD, num_epochs: 5, analyzer: 'char_wb', ngram_max_range: 4 });

let data: LabelledText[];
beforeAll(async () => {
  data = await readDataset(SAMPLE_DATA);
});

describe('splitData', () => {
  it('splits 70/15/15 stratified, disjoint and covering every row', () => {
    const { train, validation, test } = splitData(data, false, 7);
    expect(train.length + validation.length + test.length).toBe(data.length);
    expect(new Set([...train, ...validation, ...test]).size).toBe(data.length);
    expect(train.length / data.length).toBeCloseTo(0.7, 1);
    for (const tag of new Set(data.map((row) => row.tag))) {
      // Every tag is represented in every split (stratification).
      for (const part of [train, validation, test]) expect(part.some((row) => row.tag === tag)).toBe(true);
    }
  });

  it('splits 85/15 when a test file is given', () => {
    const { train, validation, test } = splitData(data, true, 7);
    expect(test).toEqual([]);
    expect(train.length + validation.length).toBe(data.length);
    expect(validation.length / data.length).toBeCloseTo(0.15, 1);
  });

  it('is deterministic for a seed and differs between seeds', () => {
    expect(splitData(data, false, 3)).toEqual(splitData(data, false, 3));
    expect(splitData(data, false, 3).train).not.toEqual(splitData(data, false, 4).train);
  });

  it('refuses too few examples with a message giving the minimum', () => {
    expect(() => splitData(data.slice(0, 5), false, 1)).toThrow(DataError);
    expect(() => splitData(data.slice(0, 5), false, 1)).toThrow(
      /5 example\(s\) are too few .* need at least 14/,
    );
  });
});

describe('trainAndEvaluate', () => {
  it('trains, evaluates on the test split and reports sizes and epoch history', () => {
    const outcome = trainAndEvaluate({ data, args: FAST_ARGS, seed: 1 });
    expect(outcome.history).toHaveLength(FAST_ARGS.num_epochs);
    expect(outcome.sizes.train + outcome.sizes.validation + outcome.sizes.test).toBe(data.length);
    expect(outcome.performance.overall.num_samples).toBe(outcome.sizes.test);
    expect(Object.keys(outcome.performance).sort()).toEqual(['averages', 'class', 'overall', 'slices']);
    // Far better than chance on well-separated sample data (4 tags).
    expect(outcome.performance.overall.f1).toBeGreaterThan(0.5);
  });

  it('uses the given test data for the test metrics', () => {
    const test = data.slice(0, 30);
    const outcome = trainAndEvaluate({ data, testData: test, args: FAST_ARGS, seed: 1 });
    expect(outcome.performance.overall.num_samples).toBe(30);
    expect(outcome.sizes.test).toBe(30);
  });

  it('applies subset before splitting', () => {
    const outcome = trainAndEvaluate({ data, args: { ...FAST_ARGS, subset: 100 }, seed: 1 });
    expect(outcome.sizes.train + outcome.sizes.validation + outcome.sizes.test).toBe(100);
  });

  it('gives the same model for the same seed', () => {
    const a = trainAndEvaluate({ data, args: FAST_ARGS, seed: 9 });
    const b = trainAndEvaluate({ data, args: FAST_ARGS, seed: 9 });
    const texts = data.slice(0, 5).map((row) => row.text);
    expect(a.model.predict(texts)).toEqual(b.model.predict(texts));
    expect(a.performance).toEqual(b.performance);
  });
});

describe('trainAndEvaluate: what the metrics were measured on, and data warnings', () => {
  it('records the test set by an order-independent digest and size; sample data raises no warning', () => {
    const outcome = trainAndEvaluate({ data, args: FAST_ARGS, seed: 1 });
    expect(outcome.testSet.size).toBe(outcome.sizes.test);
    expect(outcome.testSet.digest).toMatch(/^[0-9a-f]{64}$/);
    const { test } = splitData(data, false, 1);
    expect(testSetDigest([...test].reverse())).toBe(outcome.testSet.digest);
    expect(testSetDigest(test.slice(1))).not.toBe(outcome.testSet.digest);
    expect(outcome.trainedTags).toBeGreaterThanOrEqual(2);
    expect(outcome.warnings).toEqual([]);
  });

  it('refuses data of one tag, and data whose tags min_freq folds into other but one, before training', () => {
    const oneTag = data.slice(0, 40).map((row) => ({ ...row, tag: 'mlops' }));
    let epochs = 0;
    const train = (rows: LabelledText[], args = FAST_ARGS) =>
      trainAndEvaluate({ data: rows, args, seed: 1, onEpoch: () => epochs++ });
    expect(() => train(oneTag)).toThrow(DataError);
    expect(() => train(oneTag)).toThrow(
      "data: every training row has the tag 'mlops': a model of one tag answers it for every text; give rows of at least two tags",
    );
    expect(() => train(data, { ...FAST_ARGS, min_freq: 1_000 })).toThrow(
      /data: with min_freq 1000, every tag is folded into 'other' \('natural-language-processing': \d+ training rows; .*\), so the model would answer 'other' for every text; lower min_freq or accept more tags/,
    );
    expect(epochs).toBe(0);
  });

  it('warns, naming them with their counts, about tags folded into other, and on a tiny test split', () => {
    // min_freq keeps the two largest tags: the others but `other` itself are folded, and named.
    const folded = trainAndEvaluate({ data, args: { ...FAST_ARGS, min_freq: 50 }, seed: 1 });
    const counts = new Map<string, number>();
    // min_freq counts the whole file's rows, whichever split they fall in.
    for (const row of data) counts.set(row.tag, (counts.get(row.tag) ?? 0) + 1);
    const foldedTags = [...counts]
      .filter(([tag, n]) => n < 50 && tag !== 'other')
      .sort((a, b) => b[1] - a[1]);
    expect(foldedTags.length).toBeGreaterThan(0);
    const foldedRows = foldedTags.reduce((sum, [, n]) => sum + n, 0);
    expect(folded.warnings).toContain(
      `${foldedTags.length} tag(s) of ${counts.size}, on ${foldedRows} rows of the file in all, were folded into 'other': ${foldedTags.map(([tag, n]) => `'${tag}' (${n} rows in the file, under min_freq 50)`).join(', ')}`,
    );
    const accepted = trainAndEvaluate({
      data,
      args: { ...FAST_ARGS, accepted_tags: [foldedTags[0]![0], 'mlops'] },
      seed: 1,
    });
    expect(accepted.warnings.join('\n')).toMatch(/\(\d+ rows in the file, not in accepted_tags\)/);

    const small = [
      ...data.filter((r) => r.tag === 'mlops').slice(0, 20),
      ...data.filter((r) => r.tag === 'other').slice(0, 20),
    ];
    const tiny = trainAndEvaluate({ data: small, args: { ...FAST_ARGS, min_freq: 5 }, seed: 1 });
    expect(tiny.sizes.test).toBeLessThan(30);
    expect(tiny.warnings).toContain(
      `the test split has only ${tiny.sizes.test} rows: its f1 is too noisy to rank runs by (tagger serve skips runs tested on fewer than TAGGER_MIN_TEST_SIZE rows, default 30)`,
    );
  });

  it('warns about rows repeated within the training data and texts the model cannot read, by line', async () => {
    const rows = await readDataset(SAMPLE_DATA);
    const withProblems = [
      ...rows,
      // A repeat differing only in case and spacing, and two texts of stopwords and symbols only.
      { ...rows[3]!, text: `  ${rows[3]!.text.toUpperCase()}`, line: 900 },
      { text: 'The ... and / or?', tag: 'other', record: 0, line: 901 },
      { text: '深度学习 !!!', tag: 'other', record: 0, line: 902 },
    ];
    const outcome = trainAndEvaluate({
      data: withProblems,
      args: { ...FAST_ARGS, ...LEGACY_CLEANUP },
      seed: 1,
    });
    expect(outcome.warnings).toContain(
      "1 row(s) repeat an earlier row's text and tag (line 900): the model learns them twice, and a repeat split into the test rows inflates the test f1; remove the repeats",
    );
    expect(outcome.warnings).toContain(
      '2 row(s) have no feature: nothing is left of their text once stopwords, punctuation, non-ASCII letters and URLs are removed (lines 901 and 902); they teach the model nothing: rewrite or remove them, or train without "stopwords"',
    );
    // Without the clean-up (the default), the same texts have features; only a blank one has none.
    const plainCleanUp = trainAndEvaluate({
      data: [...withProblems, { text: ' \t ', tag: 'other', record: 0, line: 903 }],
      args: FAST_ARGS,
      seed: 1,
    });
    expect(plainCleanUp.warnings).toContain(
      '1 row(s) have no feature: nothing is left of their text once whitespace is trimmed (no clean-up step removes words) (line 903); they teach the model nothing: rewrite or remove them',
    );
    // Rows given in memory (no file lines) are named by position.
    const plain = data.map(({ text, tag }) => ({ text, tag }));
    const inMemory = trainAndEvaluate({ data: [...plain, plain[0]!], args: FAST_ARGS, seed: 1 });
    expect(inMemory.warnings.join('\n')).toMatch(
      new RegExp(`repeat an earlier row's text and tag \\(row ${data.length + 1}\\)`),
    );
  });

  it('warns about test rows that repeat training texts, and texts labelled with different tags', () => {
    const testData = data.slice(0, 40).map((row, i) => ({
      // Ten repeat a training text (with other case, spacing and punctuation); one of them with another tag.
      text:
        i < 10
          ? `  ${row.text.toUpperCase()}! `
          : `${row.text} (new text ${'abcdefghijklmnopqrstuvwxyz'[i % 26]}${'qrstuvwxyz'[i % 10]})`,
      tag: i === 0 ? 'some-other-tag' : row.tag,
    }));
    const outcome = trainAndEvaluate({ data, testData, args: FAST_ARGS, seed: 1 });
    const leaked = outcome.warnings.find((warning) => warning.includes('have the same text'));
    // Rows 0-9 of `data` are in train or validation (a test file means no test split is taken from data):
    // more than 2 % of the test rows, so they stay in the test split and hold the run back.
    expect(leaked).toBe(
      '10 of the 40 test rows (25.0%) have the same text as a training or validation row (case, spacing, punctuation and digits aside), more than the 2% taken out of a test split: the test f1 overstates how the model does on new texts; remove the duplicates',
    );
    expect(outcome.dataWarnings.map((w) => w.kind)).toContain('test_leak');
    expect(outcome.sizes.test).toBe(40);
    expect(outcome.warnings).toContain(
      '1 text(s) appear with different tags: no model can get both right; check those labels',
    );
  });

  it('takes a handful of repeated test rows out of the test split: not a leak, a smaller honest split', () => {
    const testData = data.slice(0, 100).map((row, i) => ({
      // One repeats a training text with "." and " #1" appended; the rest are new texts.
      text:
        i === 3
          ? `${row.text}. #1`
          : `${row.text} (new text ${'abcdefghijklmnopqrstuvwxyz'[i % 26]}${'qrstuvwxyz'[Math.floor(i / 10)]})`,
      tag: row.tag,
    }));
    const outcome = trainAndEvaluate({ data, testData, args: FAST_ARGS, seed: 1 });
    expect(outcome.sizes.test).toBe(99);
    expect(outcome.performance.overall.num_samples).toBe(99);
    expect(outcome.testSet.size).toBe(99);
    const kinds = outcome.dataWarnings.map((w) => w.kind);
    expect(kinds).toContain('test_repeats_removed');
    expect(kinds).not.toContain('test_leak');
    expect(outcome.warnings.join('\n')).toMatch(
      /^1 of the 100 test rows \(1\.0%\) repeat a training or validation text/m,
    );
  });
});

describe('multi-label data', () => {
  let multi: LabelledText[];
  beforeAll(async () => {
    multi = await readDataset(`${REPO_ROOT}/samples/projects-multilabel.csv`);
  });

  it('switches multi_label on, with tuned thresholds unless the args set them', () => {
    const args = parseTrainingArgs({});
    expect(argsForData(args, multi, new Set())).toMatchObject({ multi_label: true, threshold: 'tuned' });
    expect(argsForData({ ...args, threshold: 'auto' }, multi, new Set(['threshold']))).toMatchObject({
      multi_label: true,
      threshold: 'auto',
    });
    expect(argsForData(args, data, new Set())).toBe(args);
    expect(() => argsForData(args, multi, new Set(['multi_label']))).toThrow(
      /several tags per text \(a tags column\), but the args set multi_label to false/,
    );
    expect(() => argsForData({ ...args, classifier: 'softmax' }, multi, new Set(['classifier']))).toThrow(
      /needs a one-vs-rest classifier \(e\.g\. "classifier": "ovr" or "soft_vote"\), but the args set "softmax"/,
    );
    expect(argsForData({ ...args, classifier: 'linear_svm' }, multi, new Set())).toMatchObject({
      classifier: 'linear_svm',
      multi_label: true,
    });
  });

  it('refuses to train a single-label model on rows with several tags', () => {
    expect(() => trainAndEvaluate({ data: multi, args: FAST_ARGS, seed: 1 })).toThrow(
      /the rows give several tags per text, but the args train a single-label model/,
    );
  });

  it('stratifies by each row’s rarest tag of at least MIN_STRATUM_ROWS rows, so every tag is tested', () => {
    const stratum = splitStratum(multi);
    const rare = { text: 't', tag: 'a|b', tags: ['graph-learning', 'natural-language-processing'] };
    expect(stratum(rare)).toBe('graph-learning');
    expect(
      splitStratum([...multi, { text: 'u', tag: 'x|y', tags: ['x', 'y'] }])({ ...rare, tags: ['x'] }),
    ).toBe('');
    expect(MIN_STRATUM_ROWS).toBeGreaterThanOrEqual(7);
    const { test } = splitData(multi, false, 3);
    const tested = new Set(test.flatMap((row) => row.tags ?? []));
    expect(tested.size).toBe(8);
  });

  it('trains a multi-label model: averages, per-tag thresholds, tag-set mistakes and no confusion matrix', () => {
    const args = argsForData(FAST_ARGS, multi, new Set());
    const outcome = trainAndEvaluate({ data: multi, args, seed: 2 });
    expect(outcome.model.args.multi_label).toBe(true);
    expect(outcome.model.tagThresholds).toHaveLength(outcome.model.tags.length);
    expect(outcome.threshold).toBeNull();
    expect(outcome.performance.averages!.micro.num_samples).toBe(outcome.sizes.test);
    expect(outcome.performance.class.pytorch!.num_samples).toBeGreaterThan(0);
    expect(outcome.confusionAndMistakes.confusion).toBeNull();
    expect(outcome.confusionAndMistakes.mistakes.multi_label).toBe(true);
    expect(outcome.warnings).toEqual([]);
    expect(outcome.trainedTags).toBe(8);
  });

  it('names the tags min_freq drops, and refuses when one tag is all that is left', () => {
    const args = argsForData({ ...FAST_ARGS, min_freq: 50 }, multi, new Set());
    const outcome = trainAndEvaluate({ data: multi, args, seed: 2 });
    expect(outcome.warnings[0]).toMatch(
      /^\d tag\(s\) of 8, on \d+ rows of the file in all, were dropped \(a row left with none counts as 'other'\): '[\w-]+' \(\d+ rows in the file, under min_freq 50\)/,
    );
    expect(outcome.model.tags).toContain('other');
    const onlyNlp = multi.map((row) => ({
      ...row,
      tags: ['natural-language-processing', ...(row.tags ?? [])],
    }));
    expect(() =>
      trainAndEvaluate({ data: onlyNlp, args: { ...args, min_freq: 10_000, accepted_tags: null }, seed: 2 }),
    ).toThrow(/every tag but 'other' is dropped/);
    expect(() =>
      trainAndEvaluate({
        data: onlyNlp,
        args: { ...args, min_freq: 1, accepted_tags: ['natural-language-processing'] },
        seed: 2,
      }),
    ).toThrow(
      /every tag but 'natural-language-processing' is dropped .* would answer 'natural-language-processing' for every text/,
    );
  });
});

describe('argsForData on large data', () => {
  const rows = (n: number): LabelledText[] =>
    Array.from({ length: n }, (_, i) => ({ text: `text ${i}`, tag: `t${i % 7}` }));

  it('takes the large-data settings from LARGE_DATA_ROWS rows on, each unless the args set it', () => {
    const small = argsForData(parseTrainingArgs({}), rows(LARGE_DATA_ROWS - 1), new Set());
    expect(small).toEqual(parseTrainingArgs({}));
    const large = argsForData(parseTrainingArgs({}), rows(LARGE_DATA_ROWS), new Set());
    expect(large).toMatchObject({ min_df: 2, calibration_data: 'validation', refit_vocabulary: false });
    expect(large.members!.map((m) => `${m.classifier}/${m.calibration}`)).toEqual([
      'linear_svm/sigmoid',
      'multinomial_nb/none',
    ]);
    const chosen = argsForData(
      parseTrainingArgs({ min_df: 1, refit_vocabulary: true }),
      rows(LARGE_DATA_ROWS),
      new Set(['min_df', 'refit_vocabulary']),
    );
    expect(chosen).toMatchObject({ min_df: 1, calibration_data: 'validation', refit_vocabulary: true });
    expect(
      largeDataSettings(parseTrainingArgs({}), LARGE_DATA_ROWS, new Set(['members'])),
    ).not.toHaveProperty('members');
  });

  it('gives members only to a classifier that has them', () => {
    const svm = argsForData(
      parseTrainingArgs({ classifier: 'linear_svm' }),
      rows(LARGE_DATA_ROWS),
      new Set(['classifier']),
    );
    expect(svm.members).toBeNull();
    expect(svm.calibration_data).toBe('validation');
    const ft = argsForData(
      parseTrainingArgs({ classifier: 'fasttext' }),
      rows(LARGE_DATA_ROWS),
      new Set(['classifier']),
    );
    expect(ft.members).toBeNull();
  });

  it("gives fasttext its own setting (fastText's 2,000,000 buckets) and none of the TF-IDF kinds'", () => {
    const ft = (given: Record<string, unknown>, rowCount: number) =>
      argsForData(parseTrainingArgs(given), rows(rowCount), new Set(Object.keys(given)));
    const defaults = parseTrainingArgs({ classifier: 'fasttext' });
    expect(ft({ classifier: 'fasttext' }, LARGE_DATA_ROWS - 1)).toEqual(defaults);
    const large = ft({ classifier: 'fasttext' }, LARGE_DATA_ROWS);
    expect(large).toEqual({ ...defaults, ft_buckets: 2_000_000 });
    expect(ft({ classifier: 'fasttext', ft_buckets: 4096 }, LARGE_DATA_ROWS).ft_buckets).toBe(4096);
    // The TF-IDF kinds keep fasttext's default buckets (they do not use them).
    expect(argsForData(parseTrainingArgs({}), rows(LARGE_DATA_ROWS), new Set()).ft_buckets).toBe(
      defaults.ft_buckets,
    );
  });
});

describe('what the data decides before the training', () => {
  it('counts min_freq on the whole file: a tag of 21 rows is kept though its training split holds fewer, and has rows in every split', () => {
    const rare = data.filter((row) => row.tag === 'mlops').slice(0, 21);
    const rest = data.filter((row) => row.tag !== 'mlops');
    const rows = [...rest, ...rare];
    const outcome = trainAndEvaluate({ data: rows, args: { ...FAST_ARGS, min_freq: 20 }, seed: 1 });
    expect(outcome.model.tags).toContain('mlops');
    const split = splitData(rows, false, 1);
    for (const part of [split.train, split.validation, split.test]) {
      expect(part.some((row) => row.tag === 'mlops')).toBe(true);
    }
    expect(split.train.filter((row) => row.tag === 'mlops').length).toBeLessThan(20);
  });

  it('trains on a text of 12,000 characters, cut to the API limit and counted, instead of refusing it', () => {
    const long = { ...data[0]!, text: `${data[0]!.text} ${'vision '.repeat(2_000)}`.slice(0, 12_000) };
    const outcome = trainAndEvaluate({ data: [...data.slice(1), long], args: FAST_ARGS, seed: 1 });
    expect(outcome.warnings).toContain(
      `1 row(s) have texts longer than 10,000 characters (line ${(long as { line?: number }).line}): the model trained on their first 10,000, as the API cuts a longer text it is asked to (truncate)`,
    );
    expect(outcome.dataWarnings.map((w) => w.kind)).toContain('long_texts');
  });
});
