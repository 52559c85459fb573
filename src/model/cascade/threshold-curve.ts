/**
 * Choosing a cascade's threshold τ from out-of-fold predictions: each training row predicted by a fast
 * model and an encoder model that never saw it (src/train/cascade-training.ts computes them). For every τ of
 * a fixed grid the curve says which share of the rows would be routed to the encoder and the weighted f1
 * of the answers (the encoder's for routed rows, the fast model's for the others); a rule fixed before
 * looking picks a point of it:
 *
 * - `tolerance` (the default): the fewest rows routed whose f1 is within the tolerance of the encoder
 *   model's alone (ties: the better f1). When no point is (the fast model's surest answers are wrong more
 *   often than the tolerance allows), the point of best f1.
 * - `budget`: the best f1 among the points routing at most the budget's share (ties: fewer routed); when
 *   even the lowest τ routes more, that lowest τ.
 * - `fixed`: the τ given, scored the same way.
 */
import { multiLabelMetrics, weightedMetrics } from '../evaluation/metrics.js';
import { isRouted } from './routing.js';

/** The τ the curve is computed at: 0.01, 0.02, … 1 (a grid fixed before looking at any data). */
export const CURVE_THRESHOLDS: readonly number[] = Object.freeze(
  Array.from({ length: 100 }, (_, i) => Number(((i + 1) / 100).toFixed(2))),
);

export interface CurvePoint {
  /** τ: texts whose fast confidence is below it are routed. */
  threshold: number;
  /** Share of the rows routed to the encoder (0 … 1). */
  routed: number;
  /** Weighted f1 of the cascade's answers at this τ. */
  f1: number;
}

export interface CascadeCurve {
  points: CurvePoint[];
  /** Weighted f1 of each model alone on the same rows. */
  fast_f1: number;
  encoder_f1: number;
  /** Rows the curve was computed on (each predicted out of fold). */
  rows: number;
}

export type CascadeRule =
  | { kind: 'tolerance'; tolerance: number }
  | { kind: 'budget'; maxRouted: number }
  | { kind: 'fixed'; threshold: number };

export interface CascadeChoice {
  rule: CascadeRule;
  /** The chosen point (τ, its routed share and CV f1). */
  point: CurvePoint;
  /** Why, in a sentence a run's params and the page show. */
  reason: string;
}

/** The out-of-fold answers of both models for each row, and the row's true tags. */
export interface OutOfFoldAnswers {
  /** The fast model's confidence per row (routing.ts). */
  confidence: readonly number[];
  fast: readonly (readonly string[])[];
  encoder: readonly (readonly string[])[];
  truth: readonly (readonly string[])[];
  multiLabel: boolean;
}

function f1Of(
  truth: readonly (readonly string[])[],
  predicted: readonly (readonly string[])[],
  multiLabel: boolean,
): number {
  if (multiLabel) return multiLabelMetrics(truth, predicted).averages.weighted.f1;
  return weightedMetrics(
    truth.map((tags) => tags[0]!),
    predicted.map((tags) => tags[0]!),
  ).f1;
}

/** The point of one τ. */
export function curvePoint(answers: OutOfFoldAnswers, threshold: number): CurvePoint {
  const { confidence, fast, encoder, truth, multiLabel } = answers;
  let routed = 0;
  const combined = confidence.map((c, i) => {
    if (!isRouted(c, threshold)) return fast[i]!;
    routed += 1;
    return encoder[i]!;
  });
  return {
    threshold,
    routed: confidence.length === 0 ? 0 : routed / confidence.length,
    f1: f1Of(truth, combined, multiLabel),
  };
}

/** The curve over CURVE_THRESHOLDS. */
export function cascadeCurve(answers: OutOfFoldAnswers): CascadeCurve {
  const n = answers.confidence.length;
  if (answers.fast.length !== n || answers.encoder.length !== n || answers.truth.length !== n) {
    throw new RangeError("model/cascade: every row needs a confidence, both models' answers and its tags");
  }
  return {
    points: CURVE_THRESHOLDS.map((threshold) => curvePoint(answers, threshold)),
    fast_f1: f1Of(answers.truth, answers.fast, answers.multiLabel),
    encoder_f1: f1Of(answers.truth, answers.encoder, answers.multiLabel),
    rows: n,
  };
}

const percent = (share: number): string => `${(share * 100).toFixed(1)} %`;
const f1Text = (f1: number): string => f1.toFixed(4);

/** The point the rule picks (see the module comment), with the reason. */
export function chooseThreshold(
  curve: CascadeCurve,
  rule: CascadeRule,
  answers?: OutOfFoldAnswers,
): CascadeChoice {
  const { points } = curve;
  if (points.length === 0) throw new RangeError('model/cascade: the curve has no points');
  if (rule.kind === 'fixed') {
    const point =
      points.find((p) => p.threshold === rule.threshold) ??
      (answers ? curvePoint(answers, rule.threshold) : undefined);
    if (point === undefined)
      throw new RangeError(`model/cascade: no point of the curve at τ ${rule.threshold}`);
    return {
      rule,
      point,
      reason: `τ ${rule.threshold} as given (cascade_threshold): ${percent(point.routed)} of the training rows routed, CV f1 ${f1Text(point.f1)} against the encoder model's ${f1Text(curve.encoder_f1)}`,
    };
  }
  if (rule.kind === 'budget') {
    const within = points.filter((p) => p.routed <= rule.maxRouted);
    if (within.length === 0) {
      const lowest = points[0]!;
      return {
        rule,
        point: lowest,
        reason: `even the lowest τ (${lowest.threshold}) routes ${percent(lowest.routed)} of the training rows, more than the budget of ${percent(rule.maxRouted)} (cascade_max_routed); it is taken`,
      };
    }
    const best = within.reduce((a, b) => (b.f1 > a.f1 || (b.f1 === a.f1 && b.routed < a.routed) ? b : a));
    return {
      rule,
      point: best,
      reason: `the best CV f1 (${f1Text(best.f1)}) among thresholds routing at most ${percent(rule.maxRouted)} of the training rows (cascade_max_routed): τ ${best.threshold}, ${percent(best.routed)} routed; the encoder model alone ${f1Text(curve.encoder_f1)}`,
    };
  }
  const floor = curve.encoder_f1 - rule.tolerance;
  const good = points.filter((p) => p.f1 >= floor);
  if (good.length === 0) {
    const best = points.reduce((a, b) => (b.f1 > a.f1 || (b.f1 === a.f1 && b.routed < a.routed) ? b : a));
    return {
      rule,
      point: best,
      reason: `no threshold came within ${rule.tolerance} of the encoder model's CV f1 (${f1Text(curve.encoder_f1)}); the best, τ ${best.threshold} (CV f1 ${f1Text(best.f1)}, ${percent(best.routed)} routed), is taken`,
    };
  }
  const fewest = good.reduce((a, b) =>
    b.routed < a.routed || (b.routed === a.routed && b.f1 > a.f1) ? b : a,
  );
  return {
    rule,
    point: fewest,
    reason: `the fewest training rows routed (${percent(fewest.routed)}, τ ${fewest.threshold}) whose CV f1 (${f1Text(fewest.f1)}) is within ${rule.tolerance} of the encoder model's alone (${f1Text(curve.encoder_f1)}; the fast model alone ${f1Text(curve.fast_f1)})`,
  };
}

/** The rule the args ask for (cascade_threshold, else cascade_max_routed, else the tolerance). */
export function ruleOf(args: {
  cascade_threshold: number | null;
  cascade_max_routed: number | null;
  cascade_tolerance: number;
}): CascadeRule {
  if (args.cascade_threshold !== null) return { kind: 'fixed', threshold: args.cascade_threshold };
  if (args.cascade_max_routed !== null) return { kind: 'budget', maxRouted: args.cascade_max_routed };
  return { kind: 'tolerance', tolerance: args.cascade_tolerance };
}
