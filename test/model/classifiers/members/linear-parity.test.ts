/**
 * Parity with scikit-learn 1.9.1 (python/sklearn_linear.py) of the member classifiers: the dual coordinate
 * descent solvers against liblinear (LinearSVC, LogisticRegression(solver='liblinear', dual=True)), naive
 * Bayes against MultinomialNB / ComplementNB, NB-LR / NB-SVM against liblinear on the same NB-scaled
 * features, Platt scaling against `_sigmoid_calibration`, a calibrated SVM against
 * CalibratedClassifierCV(ensemble=False) on the same folds, and the soft vote's probabilities — on
 * dataset.csv's tf-idf rows. The dual solvers run to a tight tolerance on both sides here (1e-10), so
 * weights, intercepts and test probabilities agree to 1e-9 (measured: ≤ 1.4e-11; 1e-7 with a Platt
 * calibration, as sklearn's L-BFGS stops at gradient 1e-6), Platt's a and b to 1e-6;
 * at the default tolerance (1e-4) both stop near the same optimum: probabilities within 1e-3 (measured
 * 1.1e-5) and the same predicted tag for every test row.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parse } from 'csv-parse/sync';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { combinedProbabilities } from '../../../../src/model/classifiers/members/combine.js';
import { solveLogisticDual, solveSvmDual } from '../../../../src/model/classifiers/members/dual-cd.js';
import type { MemberTrainingData } from '../../../../src/model/classifiers/members/member.js';
import type { MemberSpec } from '../../../../src/model/classifiers/members/member-args.js';
import { MEMBER_CLASSIFIERS } from '../../../../src/model/classifiers/members/member-table.js';
import { toDense } from '../../../../src/model/classifiers/members/member-weights.js';
import { fitPlatt } from '../../../../src/model/classifiers/members/platt.js';
import { type Member, trainMember } from '../../../../src/model/classifiers/members/train-member.js';
import { createRng, randomInt } from '../../../../src/model/rng.js';
import { stratifiedSplit } from '../../../../src/model/split.js';
import { fitVectorizer } from '../../../../src/model/text/features.js';
import { cleanText, LEGACY_CLEANUP } from '../../../../src/model/text/preprocess.js';
import type { CsrMatrix } from '../../../../src/model/text/tfidf.js';
import { REPO_ROOT, sharedDataset, venvPython } from '../../../support/components.js';

const python = venvPython();
const datasetPath = sharedDataset('dataset.csv');

const TIGHT = { tol: 1e-10, maxIter: 20_000 };
const TAGS = ['computer-vision', 'mlops', 'natural-language-processing', 'other'];

const csrSpec = (x: CsrMatrix) => ({
  indptr: Array.from(x.indptr),
  indices: Array.from(x.indices),
  data: Array.from(x.data),
  n_cols: x.nCols,
});

const BASE: Omit<MemberSpec, 'classifier'> = {
  weight: 1,
  C: 1,
  svm_loss: 'squared_hinge',
  nb_alpha: 0.03,
  nb_ratio_alpha: 1,
  nb_svm_beta: 0.25,
  calibration: 'none',
};

const maxDiff = (a: ArrayLike<number>, b: ArrayLike<number>): number => {
  expect(a.length).toBe(b.length);
  let max = 0;
  for (let i = 0; i < a.length; i++) max = Math.max(max, Math.abs(a[i]! - b[i]!));
  return max;
};

interface MemberResult {
  coef: number[][];
  intercept: number[];
  calibration: { a: number[]; b: number[] } | null;
  proba: number[][];
}

describe.skipIf(python === null || datasetPath === null)(
  'member classifiers: parity with scikit-learn',
  () => {
    let dir: string;
    let train: MemberTrainingData;
    let multi: MemberTrainingData;
    let test: CsrMatrix;
    const cases: { kind: string; [key: string]: unknown }[] = [];
    const ours: (() => unknown)[] = [];
    let results: unknown[];
    const at = (name: string): number => cases.findIndex((c) => c.name === name);

    /** Registers a case: Tagger's side is computed now, sklearn's after all cases ran in one process. */
    const add = (name: string, sklearn: Record<string, unknown>, tagger: () => unknown): void => {
      cases.push({ name, kind: String(sklearn.kind), ...sklearn });
      ours.push(tagger);
    };

    const membersCase = (
      name: string,
      data: MemberTrainingData,
      specs: MemberSpec[],
      options: { seed: number; folds?: number; tol?: number; maxIter?: number } = { seed: 3 },
    ): void => {
      const folds = options.folds ?? 5;
      const trained = specs.map((spec) =>
        trainMember(spec, data, { seed: options.seed, calibrationFolds: folds, ...TIGHT, ...pick(options) }),
      );
      // The calibration folds trainMember draws (train-member.ts: stratified by class, seeded with the member's seed).
      const rows = Array.from({ length: data.x.nRows }, (_, r) => r).filter((r) => data.rowWeight[r]! > 0);
      const calibrationFolds = stratifiedSplit(
        rows,
        (r) => String(data.y[r]),
        Array.from({ length: folds }, () => 1 / folds),
        options.seed,
      );
      const K = data.nClasses;
      add(
        name,
        {
          kind: 'members',
          x: csrSpec(data.x),
          y: data.labels === undefined ? Array.from(data.y) : null,
          labels:
            data.labels === undefined
              ? null
              : Array.from({ length: data.x.nRows }, (_, r) =>
                  Array.from(data.labels!.subarray(r * K, r * K + K)),
                ),
          group: Array.from(data.y),
          n_classes: K,
          row_weight: Array.from(data.rowWeight),
          class_weight: data.classWeight === null ? null : Array.from(data.classWeight),
          members: specs,
          calibration_folds: calibrationFolds,
          tol: options.tol ?? TIGHT.tol,
          max_iter: options.maxIter ?? TIGHT.maxIter,
          test: csrSpec(test),
        },
        () => trained,
      );
    };

    beforeAll(() => {
      const rows = (parse(readFileSync(datasetPath!), { columns: true }) as Record<string, string>[]).map(
        (r) => ({
          text: cleanText(`${r.title} ${r.description}`, { lower: true, stem: false, ...LEGACY_CLEANUP }),
          tag: r.tag!,
        }),
      );
      const trainRows = rows.slice(0, 360);
      const testRows = rows.slice(360, 460);
      const vectorizer = fitVectorizer(
        trainRows.map((r) => r.text),
        { analyzer: 'char_wb+word', ngram_max_range: 4, sublinear_tf: false },
      );
      const x = vectorizer.transform(trainRows.map((r) => r.text));
      test = vectorizer.transform(testRows.map((r) => r.text));
      const y = Int32Array.from(trainRows, (r) => TAGS.indexOf(r.tag));
      const rng = createRng(5);
      // Oversampling multiplicities and class weights, as trainMemberTagger hands them over.
      const rowWeight = Float64Array.from(y, () => 1 + randomInt(rng, 3));
      train = {
        x,
        rowWeight,
        y,
        nClasses: 4,
        tagNames: TAGS,
        classWeight: Float64Array.of(1, 2.5, 0.8, 1.6),
        embeddingColumns: 0,
      };
      // Multi-label: each row's tag, plus `other` on every third row (other rows keep their one tag).
      const labels = new Uint8Array(x.nRows * 4);
      y.forEach((k, r) => {
        labels[r * 4 + k] = 1;
        if (r % 3 === 0) labels[r * 4 + 3] = 1;
      });
      multi = {
        x,
        rowWeight: new Float64Array(x.nRows).fill(1),
        y,
        labels,
        nClasses: 4,
        tagNames: TAGS,
        classWeight: null,
        embeddingColumns: 0,
      };

      // Binary problems straight into the solvers.
      const positive = Int8Array.from(y, (k) => (k === 1 ? 1 : -1));
      for (const [solver, C] of [
        ['squared_hinge', 1],
        ['hinge', 0.5],
        ['logistic', 2],
      ] as const) {
        const cost = Float64Array.from(rowWeight, (w) => C * w);
        const problem = {
          indptr: x.indptr,
          indices: x.indices,
          values: x.data,
          nFeatures: x.nCols,
          y: positive,
          cost,
        };
        add(
          `binary ${solver} C=${C}`,
          {
            kind: 'binary',
            x: csrSpec(x),
            y: Array.from(positive, (v) => (v > 0 ? 1 : 0)),
            sample_weight: Array.from(rowWeight),
            C,
            solver,
            tol: TIGHT.tol,
            max_iter: TIGHT.maxIter,
          },
          () =>
            solver === 'logistic'
              ? solveLogisticDual(problem, { ...TIGHT, rng: createRng(1) })
              : solveSvmDual(problem, solver, { ...TIGHT, rng: createRng(1) }),
        );
      }
      for (const classifier of MEMBER_CLASSIFIERS) {
        membersCase(`${classifier}, row and class weights`, train, [{ ...BASE, classifier }]);
        membersCase(`${classifier}, multi-label`, multi, [{ ...BASE, classifier }]);
      }
      membersCase('linear_svm, hinge loss, C 0.3', train, [
        { ...BASE, classifier: 'linear_svm', svm_loss: 'hinge', C: 0.3 },
      ]);
      membersCase('calibrated linear_svm (sigmoid, 5 folds)', train, [
        { ...BASE, classifier: 'linear_svm', calibration: 'sigmoid' },
      ]);
      membersCase('calibrated linear_svm, multi-label', multi, [
        { ...BASE, classifier: 'linear_svm', calibration: 'sigmoid' },
      ]);
      const issueVote: MemberSpec[] = [
        { ...BASE, classifier: 'linear_svm', calibration: 'sigmoid' },
        { ...BASE, classifier: 'nb_lr' },
        { ...BASE, classifier: 'multinomial_nb', weight: 2 },
      ];
      membersCase('soft vote: calibrated SVM + NB-LR + MNB (weight 2)', train, issueVote);
      membersCase('soft vote at the default tolerance (1e-4)', train, issueVote, {
        seed: 9,
        tol: 1e-4,
        maxIter: 1000,
      });

      const scores = Float64Array.from({ length: 300 }, (_, i) => Math.sin(i) * 3 + (i % 7) / 3);
      const labelsOf = Array.from(scores, (s, i) => s + Math.cos(i * 1.7) > 0.4);
      const weights = Float64Array.from({ length: 300 }, (_, i) => 1 + (i % 4));
      add('platt', { kind: 'platt', scores: Array.from(scores), y: labelsOf.map(Number) }, () =>
        fitPlatt(scores, labelsOf),
      );
      add(
        'platt, weighted, scores above 30',
        {
          kind: 'platt',
          scores: Array.from(scores, (s) => s * 20),
          y: labelsOf.map(Number),
          sample_weight: Array.from(weights),
        },
        () =>
          fitPlatt(
            Float64Array.from(scores, (s) => s * 20),
            labelsOf,
            weights,
          ),
      );

      dir = mkdtempSync(join(tmpdir(), 'tagger-linear-parity-'));
      writeFileSync(join(dir, 'in.json'), JSON.stringify(cases));
      execFileSync(
        python!,
        [resolve(REPO_ROOT, 'python', 'sklearn_linear.py'), join(dir, 'in.json'), join(dir, 'out.json')],
        { stdio: ['ignore', 'ignore', 'inherit'] },
      );
      results = JSON.parse(readFileSync(join(dir, 'out.json'), 'utf8')) as unknown[];
    }, 300_000);

    afterAll(() => {
      if (dir) rmSync(dir, { recursive: true, force: true });
    });

    it.each(['binary squared_hinge C=1', 'binary hinge C=0.5', 'binary logistic C=2'])(
      '%s: the dual solver finds liblinear’s coefficients and intercept (to 1e-9)',
      (name) => {
        const i = at(name);
        const mine = ours[i]!() as { w: Float64Array; bias: number; iterations: number };
        const theirs = results[i] as { coef: number[]; intercept: number };
        expect(mine.iterations).toBeLessThan(TIGHT.maxIter);
        expect(maxDiff(mine.w, theirs.coef)).toBeLessThan(1e-9);
        expect(Math.abs(mine.bias - theirs.intercept)).toBeLessThan(1e-9);
      },
    );

    const memberNames = () => cases.filter((c) => c.kind === 'members').map((c) => String(c.name));
    it.each(memberNamesOf())('%s: same weights, calibration and test probabilities', (name) => {
      const i = at(name);
      const members = ours[i]!() as Member[];
      const theirs = results[i] as { members: MemberResult[]; proba: number[][] };
      const loose = name.includes('default tolerance');
      members.forEach((member, m) => {
        const expected = theirs.members[m]!;
        // sklearn's coef is V × K as Tagger's weights (feature-major).
        const weights = toDense(member.weights);
        const scale = Math.max(1, ...weights.map(Math.abs));
        expect(maxDiff(weights, expected.coef.flat()) / scale, name).toBeLessThan(loose ? 1e-3 : 1e-9);
        expect(maxDiff(member.bias, expected.intercept), name).toBeLessThan(loose ? 1e-3 : 1e-9);
        if (expected.calibration === null) expect(member.calibration).toBeNull();
        else {
          expect(maxDiff(member.calibration!.a, expected.calibration.a), name).toBeLessThan(
            loose ? 1e-3 : 1e-6,
          );
          expect(maxDiff(member.calibration!.b, expected.calibration.b), name).toBeLessThan(
            loose ? 1e-3 : 1e-6,
          );
        }
      });
      const data = name.includes('multi-label') ? multi : train;
      const parts = { members, classes: Int32Array.of(0, 1, 2, 3), multiLabel: data.labels !== undefined };
      const out = new Float64Array(4);
      const scratch = new Float64Array(4);
      let worst = 0;
      let sameTop = 0;
      for (let r = 0; r < test.nRows; r++) {
        combinedProbabilities(
          parts,
          test.indices,
          test.data,
          test.indptr[r]!,
          test.indptr[r + 1]!,
          out,
          scratch,
        );
        const expected = theirs.proba[r]!;
        worst = Math.max(worst, maxDiff(out, expected));
        const top = (p: ArrayLike<number>) => Array.from(p).indexOf(Math.max(...Array.from(p)));
        if (top(out) === top(expected)) sameTop++;
      }
      // Calibrated members: sklearn's L-BFGS stops at gradient 1e-6 (Platt's a, b within ~1e-8 of the optimum).
      expect(worst, name).toBeLessThan(loose ? 1e-3 : name.includes('calibrated') ? 1e-7 : 1e-9);
      expect(sameTop, name).toBe(test.nRows);
    });

    it.each(['platt', 'platt, weighted, scores above 30'])(
      '%s: a and b as sklearn’s _sigmoid_calibration (to 1e-6)',
      (name) => {
        const i = at(name);
        const mine = ours[i]!() as { a: number; b: number };
        const theirs = results[i] as { a: number; b: number };
        expect(Math.abs(mine.a - theirs.a)).toBeLessThan(1e-6 * Math.max(1, Math.abs(theirs.a)));
        expect(Math.abs(mine.b - theirs.b)).toBeLessThan(1e-6 * Math.max(1, Math.abs(theirs.b)));
      },
    );

    function memberNamesOf(): string[] {
      // it.each needs the names before beforeAll runs: the same list membersCase registers, in order.
      return [
        ...MEMBER_CLASSIFIERS.flatMap((c) => [`${c}, row and class weights`, `${c}, multi-label`]),
        'linear_svm, hinge loss, C 0.3',
        'calibrated linear_svm (sigmoid, 5 folds)',
        'calibrated linear_svm, multi-label',
        'soft vote: calibrated SVM + NB-LR + MNB (weight 2)',
        'soft vote at the default tolerance (1e-4)',
      ];
    }
    it('lists every members case', () => {
      expect(memberNames()).toEqual(memberNamesOf());
    });
  },
);

const pick = (o: { tol?: number; maxIter?: number }) => ({
  ...(o.tol === undefined ? {} : { tol: o.tol }),
  ...(o.maxIter === undefined ? {} : { maxIter: o.maxIter }),
});
