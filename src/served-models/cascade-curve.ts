/**
 * A cascade run's `cascade_curve.json` (src/train/log-run.ts writes it) as the inspection page reads it:
 * the threshold curve (share routed and CV f1 at each τ), the rule and the point it chose, and the test
 * split's figures. Checked field by field like every artifact: a broken file is an ArtifactFormatError.
 */
import { RUN_ARTIFACTS } from '../model/index.js';
import { ArtifactFormatError, type ArtifactReader, readJsonArtifact } from './artifacts.js';

export interface ServedCurvePoint {
  threshold: number;
  routed: number;
  f1: number;
}

export interface ServedCascadeCurve {
  rule:
    | { kind: 'tolerance'; tolerance: number }
    | { kind: 'budget'; maxRouted: number }
    | { kind: 'fixed'; threshold: number };
  reason: string;
  chosen: ServedCurvePoint;
  cv: { rows: number; fast_f1: number; encoder_f1: number };
  test: { routed: number; fast_f1: number; encoder_f1: number };
  points: ServedCurvePoint[];
}

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);
const isShare = (value: unknown): value is number => typeof value === 'number' && value >= 0 && value <= 1;
const where = RUN_ARTIFACTS.cascadeCurve;

function point(raw: unknown, at: string): ServedCurvePoint {
  if (
    !isRecord(raw) ||
    !isShare(raw.threshold) ||
    raw.threshold === 0 ||
    !isShare(raw.routed) ||
    !isShare(raw.f1)
  ) {
    throw new ArtifactFormatError(`${where}: ${at} must have threshold in (0, 1], routed and f1 in [0, 1]`);
  }
  return { threshold: raw.threshold, routed: raw.routed, f1: raw.f1 };
}

function figures(raw: unknown, at: string, keys: readonly string[]): Record<string, number> {
  if (
    !isRecord(raw) ||
    !keys.every((key) => isShare(raw[key]) || (key === 'rows' && Number.isSafeInteger(raw[key])))
  ) {
    throw new ArtifactFormatError(`${where}: ${at} must have ${keys.join(', ')}`);
  }
  return Object.fromEntries(keys.map((key) => [key, raw[key] as number]));
}

function rule(raw: unknown): ServedCascadeCurve['rule'] {
  if (isRecord(raw)) {
    if (raw.kind === 'tolerance' && isShare(raw.tolerance))
      return { kind: 'tolerance', tolerance: raw.tolerance };
    if (raw.kind === 'budget' && isShare(raw.maxRouted)) return { kind: 'budget', maxRouted: raw.maxRouted };
    if (raw.kind === 'fixed' && isShare(raw.threshold)) return { kind: 'fixed', threshold: raw.threshold };
  }
  throw new ArtifactFormatError(`${where}: rule must be tolerance, budget or fixed with its number`);
}

/** cascade_curve.json, checked. */
export function parseCascadeCurve(raw: unknown): ServedCascadeCurve {
  if (!isRecord(raw)) throw new ArtifactFormatError(`${where} must hold a JSON object`);
  if (typeof raw.reason !== 'string') throw new ArtifactFormatError(`${where}: reason must be a string`);
  if (!Array.isArray(raw.points) || raw.points.length === 0) {
    throw new ArtifactFormatError(`${where}: points must be a non-empty array`);
  }
  return {
    rule: rule(raw.rule),
    reason: raw.reason,
    chosen: point(raw.chosen, 'chosen'),
    cv: figures(raw.cv, 'cv', ['rows', 'fast_f1', 'encoder_f1']) as ServedCascadeCurve['cv'],
    test: figures(raw.test, 'test', ['routed', 'fast_f1', 'encoder_f1']) as ServedCascadeCurve['test'],
    points: raw.points.map((p, i) => point(p, `points[${i}]`)),
  };
}

/** Reads and checks a run's cascade curve; rejects with the reader's error (e.g. NOT_FOUND) or a format error. */
export async function readCascadeCurve(read: ArtifactReader): Promise<ServedCascadeCurve> {
  return parseCascadeCurve(await readJsonArtifact(read, RUN_ARTIFACTS.cascadeCurve));
}
