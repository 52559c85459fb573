/**
 * Training on threads (src/train/parallel.ts behind src/model/parallel.ts's ParallelRunner): results come
 * back in task order, a failing task fails the run with its message, the member classifiers' classes
 * solved on threads and SGD ovr's classes trained on them give the same model as in one thread, and
 * fasttext trains its epochs on them.
 */
import { afterAll, describe, expect, it } from 'vitest';
import {
  type EpochReport,
  encodeModel,
  type LabelledText,
  type ParallelRunner,
  parseTrainingArgs,
  trainTagger,
} from '../../src/model/index.js';
import { createParallelRunner } from '../../src/train/parallel.js';
import { SGD, TRAIN, VALIDATION } from '../model/fixtures.js';

/** A small valid `member-dual-class` work: 40 classes of 30 rows over 5 features. */
function classWork() {
  const rows = 30;
  const indptr = Int32Array.from({ length: rows + 1 }, (_, r) => 2 * r);
  const indices = Int32Array.from({ length: 2 * rows }, (_, i) => (i * 3) % 5);
  const data = Float64Array.from({ length: 2 * rows }, (_, i) => 1 + (i % 3));
  return {
    x: { nRows: rows, nCols: 5, indptr, indices, data },
    rowWeight: new Float64Array(rows).fill(1),
    y: Int32Array.from({ length: rows }, (_, r) => r % 40),
    labels: null,
    nClasses: 40,
    classWeight: null,
    C: 1,
    solver: 'svm',
    svmLoss: 'squared_hinge',
    seeds: Int32Array.from({ length: 40 }, (_, k) => k + 1),
    tol: 1e-4,
    maxIter: 1000,
  };
}

describe('a parallel runner', () => {
  const runner = createParallelRunner(2);
  afterAll(() => runner.close());

  it('fails a run with the message of a task that throws, and refuses an unknown job', () => {
    expect(() => runner.run('member-dual-class', {}, 4)).toThrow(/a training thread failed: TypeError/);
    expect(() => runner.run('no-such-job', {}, 2)).toThrow(/unknown parallel job "no-such-job"/);
  });

  it('solves the member classifiers classes on its threads into the same model as one thread does', () => {
    const args = parseTrainingArgs({ classifier: 'soft_vote', min_freq: 2, analyzer: 'word' });
    const serial = trainTagger(TRAIN, VALIDATION, args, { seed: 8 }).model;
    const threaded = trainTagger(TRAIN, VALIDATION, args, { seed: 8, parallel: runner }).model;
    expect(encodeModel(threaded)).toEqual(encodeModel(serial));
    // The worker took part (the runner waits for it to be up before a run, then both claim tasks).
    let spread = 0;
    for (let i = 0; i < 20 && spread === 0; i++) {
      runner.run('member-dual-class', { ...classWork() }, 40);
      spread = runner.lastRunOnWorkers;
    }
    expect(spread).toBeGreaterThan(0);
  });

  it("trains SGD ovr's classes on its threads into the same model and losses as one thread does", () => {
    // Counts the tasks its worker did over every run of a training (a worker's writes to memory that is not
    // shared would be lost, and the model would differ).
    let onWorkers = 0;
    const counting: ParallelRunner = {
      threads: runner.threads,
      run(job, shared, count, onProgress) {
        const results = runner.run(job, shared, count, onProgress);
        onWorkers += runner.lastRunOnWorkers;
        return results;
      },
    };
    // Multi-label rows: every third text also carries the next text's tag.
    const multi = (rows: readonly LabelledText[]): LabelledText[] =>
      rows.map((row, i) => {
        const tags = [
          ...new Set([row.tag, ...(i % 3 === 0 ? [rows[(i + 1) % rows.length]!.tag] : [])]),
        ].sort();
        return { text: row.text, tag: tags.join('|'), tags };
      });
    const cases: [Record<string, unknown>, LabelledText[], LabelledText[]][] = [
      [{ ...SGD, min_freq: 2, analyzer: 'word' }, TRAIN, VALIDATION],
      [
        {
          ...SGD,
          min_freq: 2,
          num_epochs: 15,
          average: true,
          class_weight: 'balanced',
          loss: 'modified_huber',
        },
        TRAIN,
        VALIDATION,
      ],
      [
        { ...SGD, min_freq: 2, num_epochs: 15, loss: 'hinge', shuffle: false, ensemble: 2 },
        TRAIN,
        VALIDATION,
      ],
      [
        { ...SGD, min_freq: 1, num_epochs: 15, multi_label: true, average: true },
        multi(TRAIN),
        multi(VALIDATION),
      ],
    ];
    for (const [raw, trainRows, validationRows] of cases) {
      const args = parseTrainingArgs(raw);
      const train = (parallel?: ParallelRunner) => {
        const epochs: EpochReport[] = [];
        const trained = trainTagger(trainRows, validationRows, args, {
          seed: 8,
          ...(parallel === undefined ? {} : { parallel }),
          onEpoch: (r) => epochs.push(r),
          onRefitEpoch: (r) => epochs.push(r),
        });
        return { files: encodeModel(trained.model), epochs, f1: trained.validationF1 };
      };
      const serial = train();
      expect(train(counting)).toEqual(serial);
      expect(serial.epochs).toHaveLength(2 * args.num_epochs);
    }
    expect(onWorkers).toBeGreaterThan(0);
  });

  it('tells the calling thread how many tasks are done, ending with all of them', () => {
    const heard: number[] = [];
    runner.run('member-dual-class', { ...classWork() }, 40, (done) => heard.push(done));
    expect(heard.at(-1)).toBe(40);
    expect(heard).toEqual([...heard].sort((a, b) => a - b));
    expect(heard.every((done) => done >= 0 && done <= 40)).toBe(true);
  });

  it('trains fasttext epochs on its threads (Hogwild!: a model that learns, not the same bits)', () => {
    const args = parseTrainingArgs({ classifier: 'fasttext', min_freq: 2, ft_epochs: 40, ft_dim: 16 });
    const { model } = trainTagger(TRAIN, VALIDATION, args, { seed: 8, parallel: runner });
    expect(model.predict(['images with yolo'])[0]!.predicted_tag).toBe('computer-vision');
  });
});
