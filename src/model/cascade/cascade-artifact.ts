/**
 * A cascade in the saved format (`tagger-model/1.7`; artifact.ts has the format history): the same two
 * files as every model. The manifest's `cascade` holds τ, how it was chosen, and each stage's own
 * manifest (a complete model manifest, with its own format, args and checksum); weights.bin holds the
 * stages' weights one after the other, in the order of `cascade.stages`, each `bytes` long. So a stage is
 * decoded exactly as a model of its own is (artifact.ts calls decodeModel on it), and nothing of the
 * families knows about cascades.
 */
import { bad, MANIFEST, WEIGHTS } from '../artifact-common.js';
import type { CascadeChoiceRecord } from './cascade-model.js';
import { CASCADE_STAGES, type CascadeStage } from './stages.js';
import type { CascadeRule } from './threshold-curve.js';

/** The format that introduced cascades. */
export const CASCADE_SINCE = 'tagger-model/1.7';

export interface CascadeManifest {
  threshold: number;
  choice: CascadeChoiceRecord;
  stages: { name: CascadeStage; manifest: Record<string, unknown>; bytes: number }[];
}

/** One stage's files, as encodeModel writes them (name → bytes). */
export type StageFiles = Record<string, Uint8Array>;

/** The manifest's `cascade` and the weights of both stages, from each stage's encoded files. */
export function packCascade(
  threshold: number,
  choice: CascadeChoiceRecord,
  stages: readonly { name: CascadeStage; manifest: Uint8Array; weights: Uint8Array }[],
): { cascade: CascadeManifest; bytes: Uint8Array } {
  const total = stages.reduce((n, stage) => n + stage.weights.length, 0);
  const bytes = new Uint8Array(total);
  let offset = 0;
  for (const stage of stages) {
    bytes.set(stage.weights, offset);
    offset += stage.weights.length;
  }
  return {
    cascade: {
      threshold,
      choice,
      stages: stages.map((stage) => ({
        name: stage.name,
        manifest: JSON.parse(new TextDecoder().decode(stage.manifest)) as Record<string, unknown>,
        bytes: stage.weights.length,
      })),
    },
    bytes,
  };
}

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

function checkRule(raw: unknown): CascadeRule {
  if (!isRecord(raw)) return bad('cascade.choice.rule must be an object');
  const { kind } = raw;
  const number = (key: string, ok: (v: number) => boolean): number => {
    const v = raw[key];
    return typeof v === 'number' && Number.isFinite(v) && ok(v)
      ? v
      : bad(`cascade.choice.rule.${key} is out of range (${JSON.stringify(v)})`);
  };
  if (kind === 'tolerance') return { kind, tolerance: number('tolerance', (v) => v >= 0 && v <= 0.5) };
  if (kind === 'budget') return { kind, maxRouted: number('maxRouted', (v) => v > 0 && v < 1) };
  if (kind === 'fixed') return { kind, threshold: number('threshold', (v) => v > 0 && v <= 1) };
  return bad(`cascade.choice.rule.kind must be tolerance, budget or fixed, got ${JSON.stringify(kind)}`);
}

function checkChoice(raw: unknown): CascadeChoiceRecord {
  if (!isRecord(raw) || typeof raw.reason !== 'string' || !isRecord(raw.cv)) {
    return bad('cascade.choice must hold the rule, the reason and the CV figures');
  }
  const cv = raw.cv;
  const share = (key: string): number => {
    const v = cv[key];
    return typeof v === 'number' && v >= 0 && v <= 1 ? v : bad(`cascade.choice.cv.${key} must be in [0, 1]`);
  };
  const rows = cv.rows;
  if (!Number.isInteger(rows) || (rows as number) < 0) bad('cascade.choice.cv.rows must be a whole number');
  return {
    rule: checkRule(raw.rule),
    reason: raw.reason,
    cv: {
      routed: share('routed'),
      f1: share('f1'),
      fast_f1: share('fast_f1'),
      encoder_f1: share('encoder_f1'),
      rows: rows as number,
    },
  };
}

/**
 * The stages' files (manifest bytes and weights) and τ from a checked cascade manifest and weights.bin;
 * a ModelFormatError for anything out of place.
 */
export function unpackCascade(
  raw: unknown,
  bytes: Uint8Array,
): { threshold: number; choice: CascadeChoiceRecord; stages: Map<CascadeStage, StageFiles> } {
  if (!isRecord(raw)) return bad('cascade must be an object');
  const { threshold } = raw;
  if (typeof threshold !== 'number' || !(threshold > 0 && threshold <= 1)) {
    bad(`cascade.threshold must be a number in (0, 1], got ${JSON.stringify(threshold)}`);
  }
  const choice = checkChoice(raw.choice);
  const stages = raw.stages;
  if (
    !Array.isArray(stages) ||
    stages.length !== CASCADE_STAGES.length ||
    stages.some((stage, i) => !isRecord(stage) || stage.name !== CASCADE_STAGES[i])
  ) {
    bad(`cascade.stages must list the stages ${CASCADE_STAGES.join(', ')} in that order`);
  }
  const out = new Map<CascadeStage, StageFiles>();
  let offset = 0;
  for (const stage of stages as Record<string, unknown>[]) {
    const length = stage.bytes;
    if (!Number.isInteger(length) || (length as number) < 0 || offset + (length as number) > bytes.length) {
      bad(
        `cascade stage ${String(stage.name)}: its ${JSON.stringify(length)} bytes do not fit weights.bin (${bytes.length} bytes)`,
      );
    }
    if (!isRecord(stage.manifest)) bad(`cascade stage ${String(stage.name)}: its manifest must be an object`);
    out.set(stage.name as CascadeStage, {
      [MANIFEST]: new TextEncoder().encode(JSON.stringify(stage.manifest)),
      [WEIGHTS]: bytes.subarray(offset, offset + (length as number)),
    });
    offset += length as number;
  }
  if (offset !== bytes.length) bad(`weights.bin has ${bytes.length - offset} bytes no stage owns`);
  return { threshold: threshold as number, choice, stages: out };
}
