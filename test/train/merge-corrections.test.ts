/**
 * The merge of `tagger retrain`, pure: a correction of a training text relabels every row of it (case and
 * spacing aside), one of a new text adds a row, one of a test text is left out (the test rows stay), the
 * latest of disagreeing corrections wins and is counted; and the training file it writes reads back to
 * the very same texts.
 */
import { describe, expect, it } from 'vitest';
import { parseDataset } from '../../src/train/data.js';
import { type Correction, mergeCorrections, trainingCsv } from '../../src/train/merge-corrections.js';

const row = (text: string, tag: string) => ({ text, tag });
const fix = (
  text: string,
  tag: string,
  receivedMs = 1,
  source: Correction['source'] = 'feedback',
): Correction => ({
  text,
  tags: [tag],
  source,
  receivedMs,
});

describe('mergeCorrections', () => {
  it('relabels, adds, keeps the test rows, and says what it did', () => {
    const pool = [row('YOLO for drones', 'nlp'), row('yolo  for DRONES', 'nlp'), row('BERT for NER', 'nlp')];
    const test = [row('GANs for faces', 'cv')];
    const { rows, summary } = mergeCorrections({
      pool,
      test,
      multiLabel: false,
      corrections: [
        fix('YOLO for drones', 'other', 1),
        fix('Yolo for drones ', 'cv', 2, 'label_issue'),
        fix('BERT for NER', 'nlp'),
        fix('GANs for faces', 'nlp'),
        fix('Kubeflow pipelines', 'mlops'),
      ],
    });
    expect(rows.map((r) => [r.text, r.tag, r.origin])).toEqual([
      ['YOLO for drones', 'cv', 'label_issue'],
      ['yolo  for DRONES', 'cv', 'label_issue'],
      ['BERT for NER', 'nlp', 'data'],
      ['Kubeflow pipelines', 'mlops', 'feedback'],
    ]);
    expect(summary).toEqual({
      relabelled: { feedback: 0, label_issue: 2 },
      confirmed: 1,
      added: { feedback: 1, label_issue: 0 },
      testCorrections: 1,
      nearTest: { feedback: 0, label_issue: 0 },
      dataTestRepeats: 0,
      contradictions: 1,
      nearContradictions: 0,
    });
  });

  it('keeps corrections of near copies of test rows out of training, and the data rows that repeat one', () => {
    const test = [
      row('Transfer learning with transformers for text classification', 'nlp'),
      row('How do I top up my card?', 'top_up'),
    ];
    const pool = [
      row('Object detection with YOLO on drone images', 'cv'),
      // The replaced run's own row, the same text as a test row (a run from before issue 40).
      row('how do i top up my card', 'top_up'),
      // A true neighbour of a test row: it stays, and its correction applies.
      row('How do I top up my account?', 'top_up'),
    ];
    const { rows, summary } = mergeCorrections({
      pool,
      test,
      multiLabel: false,
      corrections: [
        // The probe of issue 40: test texts with "." and " #i" appended, case changed, a word added.
        fix('Transfer learning with transformers for text classification.', 'cv'),
        fix('How do I top up my card? #17', 'cv', 2),
        fix('TRANSFER LEARNING WITH TRANSFORMERS FOR TEXT CLASSIFICATION', 'cv', 3, 'label_issue'),
        fix('Transfer learning with transformers for text classification, really', 'cv', 4),
        fix('How do I top up my account?', 'balance', 5),
        fix('Kubeflow pipelines', 'mlops', 6),
      ],
    });
    expect(rows.map((r) => [r.text, r.tag, r.origin])).toEqual([
      ['Object detection with YOLO on drone images', 'cv', 'data'],
      ['How do I top up my account?', 'balance', 'feedback'],
      ['Kubeflow pipelines', 'mlops', 'feedback'],
    ]);
    expect(summary).toMatchObject({
      // The upper-case fix is the test text but for case: a correction of a test row; ".", " #17" (the
      // card's) and ", really" are kept out as the same text as a test row or a near copy of one.
      nearTest: { feedback: 3, label_issue: 0 },
      testCorrections: 1,
      dataTestRepeats: 1,
      relabelled: { feedback: 1, label_issue: 0 },
      added: { feedback: 1, label_issue: 0 },
    });
  });

  it('counts near copies labelled with different tags, and keeps both', () => {
    const { rows, summary } = mergeCorrections({
      pool: [],
      test: [],
      multiLabel: false,
      corrections: [
        fix('Fine-tuning BERT for sentiment analysis of product reviews', 'nlp', 1),
        fix('Fine-tuning BERT for sentiment analysis of product reviews!!', 'nlp', 2),
        fix('Fine-tuning BERT for sentiment analysis of the product reviews', 'cv', 3),
        fix('Object detection with YOLO', 'cv', 4),
      ],
    });
    // "!!" makes another text for the merge (it relabels rows by case and spacing only), with the same tag.
    expect(rows).toHaveLength(4);
    expect(summary.contradictions).toBe(0);
    expect(summary.nearContradictions).toBe(1);
    expect(summary.nearContradiction).toEqual({
      texts: [
        'Fine-tuning BERT for sentiment analysis of product reviews',
        'Fine-tuning BERT for sentiment analysis of the product reviews',
      ],
      tags: [['nlp'], ['cv']],
    });
  });

  it('merges multi-label corrections as tag sets', () => {
    const { rows } = mergeCorrections({
      pool: [{ text: 'a b', tag: 'x', tags: ['x'] }],
      test: [],
      multiLabel: true,
      corrections: [{ text: 'a b', tags: ['y', 'x'], source: 'feedback', receivedMs: 1 }],
    });
    expect(rows).toEqual([{ text: 'a b', tag: 'x|y', tags: ['x', 'y'], origin: 'feedback' }]);
  });
});

describe('trainingCsv', () => {
  it('writes rows that read back to the very same texts and tags', () => {
    const rows = [
      row('Transfer learning, "quoted" and\nmultiline', 'nlp'),
      row(' leading space and  two spaces ', 'cv'),
      row('single', 'other'),
    ];
    const back = parseDataset(trainingCsv(rows, false), 'merged.csv');
    expect(back.map((r) => [r.text, r.tag])).toEqual([
      ['Transfer learning, "quoted" and\nmultiline', 'nlp'],
      [' leading space and  two spaces ', 'cv'],
      // No space to split at: all title, read back with training's joining space.
      ['single ', 'other'],
    ]);
    const multi = parseDataset(trainingCsv([{ text: 'a b', tag: 'x|y', tags: ['y', 'x'] }], true), 'm.csv');
    expect(multi[0]).toMatchObject({ text: 'a b', tags: ['x', 'y'] });
  });
});
