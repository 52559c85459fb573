/**
 * SGD trainers: hand-computed update steps (invscaling + lazy L2, sparse intercept decay), agreement with
 * scikit-learn's SGDClassifier on a fixed problem, averaging, convergence, determinism, probabilities.
 */
import { describe, expect, it } from 'vitest';
import {
  argmax,
  modifiedHuberProbabilitiesInPlace,
  ovrProbabilitiesInPlace,
  sigmoid,
  softmaxInPlace,
} from '../../../../src/model/classifiers/links.js';
import { trainOvrSgd } from '../../../../src/model/classifiers/sgd/ovr-sgd.js';
import {
  averageLinearModels,
  binaryLoss,
  type LinearModel,
  meanLogLoss,
  rowProbabilities,
  rowScores,
  SPARSE_INTERCEPT_DECAY,
  trainSoftmaxSgd,
} from '../../../../src/model/classifiers/sgd/sgd-solver.js';
import {
  balancedClassWeights,
  OVERSAMPLE_MAX_GROWTH,
  oversampledOrder,
  oversampling,
} from '../../../../src/model/classifiers/training-rows.js';
import { createRng } from '../../../../src/model/rng.js';
import type { CsrMatrix } from '../../../../src/model/text/tfidf.js';

/** Dense rows → CSR (test helper). */
const csr = (rows: number[][]): CsrMatrix => {
  const indptr = [0];
  const indices: number[] = [];
  const data: number[] = [];
  for (const row of rows) {
    row.forEach((v, j) => {
      if (v !== 0) {
        indices.push(j);
        data.push(v);
      }
    });
    indptr.push(indices.length);
  }
  return {
    nRows: rows.length,
    nCols: rows[0]!.length,
    indptr: Int32Array.from(indptr),
    indices: Int32Array.from(indices),
    data: Float64Array.from(data),
  };
};

const base = { alpha: 0.1, learningRate: 0.5, powerT: 0.5, schedule: 'invscaling' as const, shuffle: false };

describe('softmaxInPlace', () => {
  it('normalises, is shift-invariant and survives huge scores', () => {
    const z = Float64Array.from([0, Math.log(3)]);
    softmaxInPlace(z);
    expect(z[0]).toBeCloseTo(0.25, 12);
    expect(z[1]).toBeCloseTo(0.75, 12);
    const big = Float64Array.from([1000, 1000 + Math.log(3)]);
    softmaxInPlace(big);
    expect(big[1]).toBeCloseTo(0.75, 12);
    const broken = Float64Array.from([Number.NaN, 1]);
    softmaxInPlace(broken);
    expect(Array.from(broken)).toEqual([0.5, 0.5]);
  });
});

describe('trainSoftmaxSgd', () => {
  it('matches two hand-computed SGD steps with invscaling and lazy L2 shrinkage', () => {
    const x = csr([[2, 0]]);
    const data = { x, y: Int32Array.from([0]) };
    const m = trainSoftmaxSgd(
      data,
      Int32Array.from([0, 0]),
      2,
      { ...base, epochs: 1, rng: createRng(1) },
      data,
    );
    // Step 1: t=1, eta=0.5, p=[.5,.5], g=[-.5,.5]; w = (1-eta*alpha)*0 - eta*g*x; b = -eta*g.
    let eta = 0.5;
    let w0 = 0 - eta * -0.5 * 2;
    let b0 = -eta * -0.5;
    // Step 2: t=2, eta=0.5/sqrt(2); softmax of the symmetric scores s=[w0*2+b0, -(w0*2+b0)].
    eta = 0.5 / Math.sqrt(2);
    const s = w0 * 2 + b0;
    const p0 = 1 / (1 + Math.exp(-2 * s));
    w0 = w0 * (1 - eta * 0.1) - eta * (p0 - 1) * 2;
    b0 = b0 - eta * (p0 - 1);
    expect(m.weights[0]).toBeCloseTo(w0, 12);
    expect(m.weights[1]).toBeCloseTo(-w0, 12);
    expect(m.weights[2]).toBe(0);
    expect(m.bias[0]).toBeCloseTo(b0, 12);
  });

  it('learns a separable problem and reports decreasing loss per epoch', () => {
    const x = csr([
      [1, 0, 0],
      [0.9, 0.1, 0],
      [0, 1, 0],
      [0, 0.8, 0.2],
      [0, 0, 1],
      [0.1, 0, 0.9],
    ]);
    const data = { x, y: Int32Array.from([0, 0, 1, 1, 2, 2]) };
    const losses: number[] = [];
    const valLosses: number[] = [];
    const m = trainSoftmaxSgd(
      data,
      Int32Array.from([0, 1, 2, 3, 4, 5]),
      3,
      {
        ...base,
        alpha: 1e-4,
        learningRate: 1,
        powerT: 0.1,
        epochs: 30,
        shuffle: true,
        rng: createRng(3),
        onEpoch: (_e, l, v) => {
          losses.push(l);
          valLosses.push(v);
        },
      },
      data,
    );
    expect(losses).toHaveLength(30);
    expect(losses[29]!).toBeLessThan(losses[0]!);
    // The validation set is the training set here, so the end-of-epoch validation loss is the model's loss.
    expect(meanLogLoss(m, data)).toBeCloseTo(valLosses[29]!, 12);
    expect(valLosses[29]!).toBeLessThan(valLosses[0]!);
    expect(meanLogLoss(m, data)).toBeLessThan(0.3);
  });

  it('is deterministic for a seed', () => {
    const x = csr([
      [1, 0],
      [0, 1],
      [1, 1],
    ]);
    const data = { x, y: Int32Array.from([0, 1, 1]) };
    const run = (seed: number) =>
      trainSoftmaxSgd(
        data,
        Int32Array.from([0, 1, 2]),
        2,
        { ...base, epochs: 5, shuffle: true, rng: createRng(seed) },
        data,
      );
    expect(run(5).weights).toEqual(run(5).weights);
    expect(run(5).weights).not.toEqual(run(6).weights);
  });
});

describe('ovrProbabilitiesInPlace', () => {
  it('normalises the sigmoids of the scores and falls back to uniform', () => {
    const z = Float64Array.from([0, Math.log(3)]); // sigmoids 0.5 and 0.75
    ovrProbabilitiesInPlace(z);
    expect(z[0]).toBeCloseTo(0.5 / 1.25, 12);
    expect(z[1]).toBeCloseTo(0.75 / 1.25, 12);
    const tiny = Float64Array.from([-800, -800, -800]); // every sigmoid underflows to 0
    ovrProbabilitiesInPlace(tiny);
    expect(Array.from(tiny)).toEqual([1 / 3, 1 / 3, 1 / 3]);
    const broken = Float64Array.from([Number.NaN, 1]);
    ovrProbabilitiesInPlace(broken);
    expect(Array.from(broken)).toEqual([0.5, 0.5]);
    expect(sigmoid(-1000)).toBe(0);
    expect(sigmoid(1000)).toBe(1);
  });
});

describe('trainOvrSgd', () => {
  it('matches two hand-computed binary steps per class (sklearn rule: decayed intercept)', () => {
    const x = csr([[2, 0]]);
    const data = { x, y: Int32Array.from([0]) };
    const m = trainOvrSgd(data, Int32Array.from([0, 0]), 2, { ...base, epochs: 1, rng: createRng(1) }, data);
    // Class k, target 1 for k=0 and 0 for k=1. Step 1: t=1, eta=0.5, score 0, dloss = 0.5 - target.
    const expected = (target: number) => {
      let eta = 0.5;
      let update = -eta * (0.5 - target);
      let w = update * 2; // (1 - eta*alpha) * 0 + update * x
      let b = update * SPARSE_INTERCEPT_DECAY;
      // Step 2: t=2.
      eta = 0.5 / Math.sqrt(2);
      update = -eta * (sigmoid(w * 2 + b) - target);
      w = w * (1 - eta * 0.1) + update * 2;
      b += update * SPARSE_INTERCEPT_DECAY;
      return { w, b };
    };
    const [c0, c1] = [expected(1), expected(0)];
    expect(m.link).toBe('ovr');
    expect(m.weights[0]).toBeCloseTo(c0.w, 12);
    expect(m.weights[1]).toBeCloseTo(c1.w, 12);
    expect(m.weights[2]).toBe(0);
    expect(m.weights[3]).toBe(0);
    expect(m.bias[0]).toBeCloseTo(c0.b, 12);
    expect(m.bias[1]).toBeCloseTo(c1.b, 12);
  });

  // Reference values: scikit-learn 1.9.1, SGDClassifier(loss='log_loss', penalty='l2', alpha=0.05,
  // learning_rate='invscaling', eta0=0.8, power_t=0.3, max_iter=3, tol=None, shuffle=False, average=…)
  // fitted on this CSR matrix; without shuffling the sample order is the same, so the results must agree.
  const rows = [
    [1, 0, 0.5],
    [0.9, 0.1, 0],
    [0, 1, 0],
    [0, 0.8, 0.2],
    [0, 0, 1],
    [0.1, 0, 0.9],
    [0.5, 0.5, 0],
  ];
  const sk = { alpha: 0.05, learningRate: 0.8, powerT: 0.3, schedule: 'invscaling' as const, shuffle: false };
  const fixed = { x: csr(rows), y: Int32Array.from([0, 0, 1, 1, 2, 2, 0]) };
  const fitFixed = (average: boolean) =>
    trainOvrSgd(
      fixed,
      Int32Array.from(rows.keys()),
      3,
      { ...sk, epochs: 3, average, rng: createRng(1) },
      fixed,
    );
  const coef = (m: ReturnType<typeof fitFixed>) =>
    [0, 1, 2].map((k) => [0, 1, 2].map((f) => m.weights[f * 3 + k]!));
  const expectClose = (actual: number[], expected: number[]) =>
    actual.forEach((v, i) => {
      expect(v).toBeCloseTo(expected[i]!, 12);
    });

  it.each([
    [
      false,
      [
        [1.0456210840813054, -0.5396529180467338, -0.68255490972666],
        [-1.0449828619986485, 0.5670490847108897, -0.8398469827412333],
        [-0.9605038590627107, -0.9370582587991823, 0.5745584110326002],
      ],
      [-0.004577265201718742, -0.013805150800250464, -0.014491772110021096],
      [0.5622623392621561, 0.156208213434352, 0.28152944730349194],
    ],
    [
      true,
      [
        [0.817520525768101, -0.42428793061833614, -0.3016886482961852],
        [-0.8161250780080014, 0.434632455697291, -0.5553012265049088],
        [-0.7839796508145335, -0.6237840660682998, 0.22304344386187186],
      ],
      [-0.001224757020142322, -0.00858565214158792, -0.011467598691472049],
      [0.5304378658557897, 0.20021221262567443, 0.269349921518536],
    ],
  ])('agrees with sklearn (average=%s): coef_, intercept_ and predict_proba', (average, c, b, proba) => {
    const m = fitFixed(average);
    coef(m).forEach((row, k) => {
      expectClose(row, [...c[k]!]);
    });
    expectClose(Array.from(m.bias), b);
    const p = new Float64Array(3);
    rowProbabilities(m, fixed.x, 0, p);
    expectClose(Array.from(p), proba);
  });

  // Reference values: scikit-learn 1.9.1, the same SGDClassifier as above (average=False) with loss=… and
  // class_weight=…; `balanced` there is n / (K × count) over these 7 rows: 7/9, 7/6, 7/6.
  it.each([
    [
      'hinge',
      false,
      [
        [1.6399293288368861, -0.7607381763379968, -1.3036460248364294],
        [-1.454001469963168, 1.3367497534993302, -1.0649620307714025],
        [-1.4847178992037677, -1.3373430437204217, 1.1730880309431715],
      ],
      [-0.009961858682634672, -0.013481606126698195, -0.017062172270771975],
      null,
    ],
    [
      'hinge',
      true,
      [
        [1.5167157615510007, -0.8803047548275108, -1.2661560775203013],
        [-1.454001469963168, 1.2758425966247553, -1.030730709012431],
        [-1.468106456754865, -1.3373430437204217, 1.490793465866088],
      ],
      [-0.013148463325297904, -0.0131845321246128, -0.013116198526402188],
      null,
    ],
    [
      'modified_huber',
      false,
      [
        [1.7704030166179534, -0.6415560872714208, -1.139454668985736],
        [-1.856358243335077, 0.8693901507785485, -0.8785795770916903],
        [-1.3027222796417242, -1.1774191556882547, 1.0980113066022659],
      ],
      [-0.007218742148931216, -0.017208650892359522, -0.011605488815933686],
      [
        [0.8949835739481028, 0.0, 0.1050164260518973],
        [0.12455880053860399, 0.7437468085286644, 0.13169439093273158],
      ],
    ],
    [
      'modified_huber',
      true,
      [
        [1.548972402600285, -0.6686496153440293, -1.1068193453045256],
        [-1.8797188747942493, 0.9142810798620792, -0.8770103250435157],
        [-1.3213304882608796, -1.1861945999668773, 1.13266669185538],
      ],
      [-0.009339827994467923, -0.016806744799878256, -0.01136680172610957],
      [
        [0.8947518466838422, 0.0, 0.10524815331615779],
        [0.11490156194358324, 0.7545903504510533, 0.1305080876053634],
      ],
    ],
  ] as const)(
    'agrees with sklearn (loss=%s, balanced=%s): coef_, intercept_ and predict_proba',
    (loss, balanced, c, b, proba) => {
      const classWeight = balanced ? balancedClassWeights(fixed.y, 3) : null;
      const m = trainOvrSgd(
        fixed,
        Int32Array.from(rows.keys()),
        3,
        { ...sk, epochs: 3, loss, classWeight, rng: createRng(1) },
        fixed,
      );
      expect(m.link).toBe(loss === 'modified_huber' ? 'modified_huber' : 'ovr');
      coef(m).forEach((row, k) => {
        expectClose(row, [...c[k]!]);
      });
      expectClose(Array.from(m.bias), [...b]);
      if (proba !== null) {
        [0, 3].forEach((r, i) => {
          const p = new Float64Array(3);
          rowProbabilities(m, fixed.x, r, p);
          expectClose(Array.from(p), [...proba[i]!]);
        });
      }
    },
  );

  it('agrees with sklearn when the L2 step zeroes the weight scale (reset with averaging)', () => {
    // alpha * eta = 1.2 >= 1: sklearn scales by max(0, 1 - eta*alpha) = 0 at every step, which forces a
    // reset of the scale that must also fold in the averaging coefficients. Reference: sklearn 1.9.1,
    // alpha=2, learning_rate='constant', eta0=0.6, max_iter=2, shuffle=False, average=True.
    const opts = { ...sk, alpha: 2, learningRate: 0.6, schedule: 'constant' as const, epochs: 2 };
    const m = trainOvrSgd(
      fixed,
      Int32Array.from(rows.keys()),
      3,
      { ...opts, average: true, rng: createRng(1) },
      fixed,
    );
    const expected = [
      [0.09274752402766315, -0.04828426472040551, -0.06205059506730076],
      [-0.09950589709564597, 0.04895116318742395, -0.09007023498618703],
      [-0.0923681289654967, -0.0973235493438678, 0.049674266242699654],
    ];
    coef(m).forEach((row, k) => {
      expectClose(row, expected[k]!);
    });
    expectClose(Array.from(m.bias), [-0.0014136852094961579, -0.008167513876991541, -0.011325042993758692]);
  });

  it('is deterministic for a seed, shuffles per class, and reports losses per epoch', () => {
    const run = (seed: number) => {
      const losses: number[][] = [];
      const m = trainOvrSgd(
        fixed,
        Int32Array.from(rows.keys()),
        3,
        {
          ...sk,
          epochs: 20,
          shuffle: true,
          rng: createRng(seed),
          onEpoch: (_e, l, v) => losses.push([l, v]),
        },
        fixed,
      );
      return { m, losses };
    };
    const a = run(5);
    expect(run(5).m.weights).toEqual(a.m.weights);
    expect(run(6).m.weights).not.toEqual(a.m.weights);
    expect(a.losses).toHaveLength(20);
    expect(a.losses[19]![0]!).toBeLessThan(a.losses[0]![0]!);
    expect(a.losses[19]![1]!).toBeCloseTo(meanLogLoss(a.m, fixed), 12);
    const p = new Float64Array(3);
    for (let r = 0; r < rows.length; r++) {
      rowProbabilities(a.m, fixed.x, r, p);
      expect(Math.abs(p.reduce((s, v) => s + v, 0) - 1)).toBeLessThan(1e-12);
    }
  });
});

describe('losses, links and class weights', () => {
  it("binaryLoss gives sklearn's loss values and derivatives", () => {
    expect(binaryLoss('hinge', 0.5, 1)).toEqual({ value: 0.5, dloss: -1 });
    expect(binaryLoss('hinge', 1.5, 1)).toEqual({ value: 0, dloss: 0 });
    expect(binaryLoss('hinge', 0.5, -1)).toEqual({ value: 1.5, dloss: 1 });
    expect(binaryLoss('modified_huber', 0.5, 1)).toEqual({ value: 0.25, dloss: -1 });
    expect(binaryLoss('modified_huber', -2, 1)).toEqual({ value: 8, dloss: -4 });
    expect(binaryLoss('modified_huber', 2, 1)).toEqual({ value: 0, dloss: 0 });
    const log = binaryLoss('log_loss', 0.3, -1);
    expect(log.value).toBeCloseTo(Math.log1p(Math.exp(0.3)), 12);
    expect(log.dloss).toBeCloseTo(sigmoid(0.3), 12);
  });

  it('modified-Huber probabilities clip, normalise and fall back to uniform', () => {
    const z = Float64Array.from([3, 0, -5]);
    modifiedHuberProbabilitiesInPlace(z);
    expect(Array.from(z)).toEqual([2 / 3, 1 / 3, 0]);
    const allLow = Float64Array.from([-2, -1, -7]);
    modifiedHuberProbabilitiesInPlace(allLow);
    expect(Array.from(allLow)).toEqual([1 / 3, 1 / 3, 1 / 3]);
  });

  it('predicts by the scores: two scores above 1 tie in probability but not in argmax', () => {
    const m: LinearModel = {
      nFeatures: 1,
      nClasses: 3,
      weights: Float64Array.from([1.5, 2.5, 0]),
      bias: new Float64Array(3),
      link: 'modified_huber',
    };
    const x = csr([[1]]);
    const z = new Float64Array(3);
    rowScores(m, x, 0, z);
    expect(argmax(z)).toBe(1);
    rowProbabilities(m, x, 0, z);
    expect(z[0]).toBe(z[1]);
  });

  it('a class weight scales the steps on samples of that class (one step: exactly), in both trainers', () => {
    const x = csr([[1, 0.5]]);
    const data = { x, y: Int32Array.from([1]) };
    const opts = { ...base, schedule: 'constant' as const, alpha: 0, epochs: 1 };
    const weights = Float64Array.from([1, 3]);
    for (const train of [trainOvrSgd, trainSoftmaxSgd]) {
      const plain = train(data, Int32Array.from([0]), 2, { ...opts, rng: createRng(1) }, data);
      const weighted = train(
        data,
        Int32Array.from([0]),
        2,
        { ...opts, classWeight: weights, rng: createRng(1) },
        data,
      );
      // The sample is class 1: softmax weighs its whole step by 3; one-vs-rest only class 1's problem,
      // where it is the positive sample (class 0's problem sees it as a negative, weight 1).
      const classFactor = train === trainSoftmaxSgd ? [3, 3] : [1, 3];
      for (let j = 0; j < 4; j++)
        expect(weighted.weights[j]).toBeCloseTo(plain.weights[j]! * classFactor[j % 2]!, 12);
      for (let k = 0; k < 2; k++) expect(weighted.bias[k]).toBeCloseTo(plain.bias[k]! * classFactor[k]!, 12);
      expect(plain.weights.some((v) => v !== 0)).toBe(true);
    }
  });

  it('balancedClassWeights is n / (K × count) over the classes present, 1 for an absent class', () => {
    expect(Array.from(balancedClassWeights(Int32Array.from([0, 0, 0, 1]), 3))).toEqual([4 / 6, 2, 1]);
  });
});

describe('trainSoftmaxSgd with average', () => {
  it('returns the mean of the iterates (checked against the unaveraged runs of 1, 2 and 3 steps)', () => {
    const x = csr([
      [1, 0.5],
      [0, 1],
      [1, 1],
    ]);
    const data = { x, y: Int32Array.from([0, 1, 1]) };
    const opts = { ...base, shuffle: false, epochs: 1, rng: createRng(1) };
    const steps = (n: number, average: boolean) =>
      trainSoftmaxSgd(data, Int32Array.from([0, 1, 2].slice(0, n)), 2, { ...opts, average }, data);
    const iterates = [1, 2, 3].map((n) => steps(n, false));
    const averaged = steps(3, true);
    expect(averaged.link).toBe('softmax');
    for (let j = 0; j < averaged.weights.length; j++) {
      expect(averaged.weights[j]).toBeCloseTo(iterates.reduce((s, m) => s + m.weights[j]!, 0) / 3, 12);
    }
    for (let k = 0; k < 2; k++) {
      expect(averaged.bias[k]).toBeCloseTo(iterates.reduce((s, m) => s + m.bias[k]!, 0) / 3, 12);
    }
  });
});

describe('averageLinearModels', () => {
  const model = (weights: number[], bias: number[]): LinearModel => ({
    nFeatures: 2,
    nClasses: 2,
    weights: Float64Array.from(weights),
    bias: Float64Array.from(bias),
    link: 'ovr',
  });

  it('averages weights and biases entry by entry (hand-computed)', () => {
    const a = model([1, 2, 3, 4], [0.5, -1]);
    const b = model([3, 0, -1, 8], [1.5, 1]);
    const c = model([2, 1, 7, 0], [1, 3]);
    const mean = averageLinearModels([a, b, c]);
    expect(Array.from(mean.weights)).toEqual([2, 1, 3, 4]);
    expect(Array.from(mean.bias)).toEqual([1, 1]);
    expect(mean).toMatchObject({ nFeatures: 2, nClasses: 2, link: 'ovr' });
    // Its scores are the members' mean scores: x = (0.5, 2) → class 0: 0.5·w00 + 2·w10 + b0.
    const score = (m: LinearModel, k: number): number =>
      0.5 * m.weights[0 * 2 + k]! + 2 * m.weights[1 * 2 + k]! + m.bias[k]!;
    for (const k of [0, 1]) {
      expect(score(mean, k)).toBeCloseTo((score(a, k) + score(b, k) + score(c, k)) / 3, 12);
    }
    // The members are not modified.
    expect(Array.from(a.weights)).toEqual([1, 2, 3, 4]);
  });

  it('returns a single model unchanged and rejects empty or mismatched lists', () => {
    const a = model([1, 2, 3, 4], [0, 0]);
    expect(averageLinearModels([a])).toBe(a);
    expect(() => averageLinearModels([])).toThrow(/at least one model/);
    expect(() => averageLinearModels([a, { ...a, link: 'softmax' }])).toThrow(/cannot average/);
    expect(() => averageLinearModels([a, { ...model([1, 2, 3], [0]), nClasses: 1, nFeatures: 3 }])).toThrow(
      /cannot average/,
    );
  });
});

describe('oversampling by weights (many tags: a pass over the rows, not over their repeats)', () => {
  // Class 0 has 12 rows, classes 1–5 two each: repeating rows would visit 6 x 12 = 72 rows (3x the 22).
  const y = Int32Array.from([...Array(12).fill(0), 1, 1, 2, 2, 3, 3, 4, 4, 5, 5]);

  it('repeats rows while that at most doubles them, as before', () => {
    const balanced = Int32Array.from([0, 0, 0, 1, 1, 2]);
    const { order, sampleWeight } = oversampling(balanced, 3, createRng(3));
    expect(sampleWeight).toBeNull();
    expect(Array.from(order)).toEqual(Array.from(oversampledOrder(balanced, 3, createRng(3))));
    expect(order.length).toBeLessThanOrEqual(OVERSAMPLE_MAX_GROWTH * balanced.length);
  });

  it("beyond that, visits every row once, each weighing what its class's repeats did (mean weight 1)", () => {
    const { order, sampleWeight } = oversampling(y, 6, createRng(3));
    expect(Array.from(order)).toEqual(Array.from(y.keys()));
    const w = sampleWeight!;
    expect(w.reduce((a, b) => a + b, 0) / w.length).toBeCloseTo(1, 12);
    // A row of a 2-row class weighs 6 times a row of the 12-row class; each class weighs the same in all.
    expect(w[12]! / w[0]!).toBeCloseTo(6, 12);
    const classMass = (k: number) => Array.from(y).reduce((sum, c, r) => sum + (c === k ? w[r]! : 0), 0);
    for (let k = 1; k < 6; k++) expect(classMass(k)).toBeCloseTo(classMass(0), 10);
  });

  it('weights of 1 train the same model as none; weights move the model as repeats do', () => {
    const rows = Array.from({ length: y.length }, (_, r) => {
      const row = new Array(7).fill(0);
      row[y[r]!] = 1;
      row[6] = 0.5;
      return row;
    });
    const data = { x: csr(rows), y };
    const order = Int32Array.from(y.keys());
    const options = { ...base, epochs: 3, shuffle: true };
    const plain = trainOvrSgd(data, order, 6, { ...options, rng: createRng(5) }, data);
    const ones = trainOvrSgd(
      data,
      order,
      6,
      { ...options, rng: createRng(5), sampleWeight: new Float64Array(y.length).fill(1) },
      data,
    );
    expect(ones).toEqual(plain);
    const { sampleWeight } = oversampling(y, 6, createRng(3));
    const weighted = trainOvrSgd(data, order, 6, { ...options, rng: createRng(5), sampleWeight }, data);
    // The small classes' own feature weighs more once their rows weigh more.
    const own = (m: LinearModel, k: number) => m.weights[k * m.nClasses + k]!;
    for (let k = 1; k < 6; k++) expect(own(weighted, k)).toBeGreaterThan(own(plain, k));
    for (const trainer of [trainSoftmaxSgd]) {
      const softOnes = trainer(data, order, 6, { ...options, rng: createRng(5), sampleWeight: null }, data);
      const softWeighted = trainer(data, order, 6, { ...options, rng: createRng(5), sampleWeight }, data);
      for (let k = 1; k < 6; k++) expect(own(softWeighted, k)).toBeGreaterThan(own(softOnes, k));
    }
  });

  it('reports the same validation loss as the returned model has, every epoch, averaged or not', () => {
    const rows = Array.from({ length: y.length }, (_, r) => [r % 3, y[r]! + 1, (r * 7) % 5]);
    const data = { x: csr(rows), y };
    const order = Int32Array.from(y.keys());
    for (const average of [false, true]) {
      for (const trainer of [trainOvrSgd, trainSoftmaxSgd]) {
        const losses: number[] = [];
        const model = trainer(
          data,
          order,
          6,
          {
            ...base,
            epochs: 2,
            average,
            rng: createRng(9),
            onEpoch: (_, __, valLoss) => losses.push(valLoss),
          },
          data,
        );
        expect(losses[1]).toBeCloseTo(meanLogLoss(model, data), 10);
      }
    }
  });
});
