/**
 * A run's `model_choice.json` (src/train/model-choice/choose.ts writes it, src/train/log-run.ts logs it)
 * as GET /runs/{run_id} and the inspection page read it: how `tagger train` chose the model on the user's
 * validation split — every candidate with its validation f1, training time, predict µs and model size, or
 * why it was skipped; the budget and the clean-up kept. Checked field by field like every artifact.
 */
import { type CandidateReport, type ChoiceReport, type CleanupTry, RUN_ARTIFACTS } from '../model/index.js';
import { ArtifactFormatError, type ArtifactReader, readJsonArtifact } from './artifacts.js';

/** The record as served: the shape train writes (src/model/model-choice-report.ts). */
export type ServedCandidate = CandidateReport;
export type ServedCleanupTry = CleanupTry;
export type ServedModelChoice = ChoiceReport;

const where = RUN_ARTIFACTS.modelChoice;
const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);
const isNumber = (value: unknown): value is number => typeof value === 'number' && Number.isFinite(value);
const isCount = (value: unknown): value is number => Number.isSafeInteger(value) && (value as number) >= 0;
const STATUSES = ['chosen', 'trained', 'skipped', 'failed'] as const;
const OPTIONAL_NUMBERS = [
  'training_seconds',
  'training_cpu_seconds',
  'validation_f1',
  'validation_balanced',
  'validation_f1_argmax',
  'predict_us',
  'encoder_predict_us',
  'estimated_predict_us',
  'model_bytes',
] as const;

function candidate(raw: unknown, index: number): ServedCandidate {
  const at = `${where}: candidates[${index}]`;
  if (
    !isRecord(raw) ||
    typeof raw.name !== 'string' ||
    typeof raw.summary !== 'string' ||
    !isRecord(raw.args) ||
    !STATUSES.includes(raw.status as (typeof STATUSES)[number]) ||
    !isNumber(raw.estimated_seconds)
  ) {
    throw new ArtifactFormatError(
      `${at} must have name, summary, args (an object), status (${STATUSES.join(', ')}) and estimated_seconds`,
    );
  }
  const out: ServedCandidate = {
    name: raw.name,
    summary: raw.summary,
    args: { ...raw.args },
    status: raw.status as ServedCandidate['status'],
    estimated_seconds: raw.estimated_seconds,
  };
  if (raw.reason !== undefined) {
    if (typeof raw.reason !== 'string') throw new ArtifactFormatError(`${at}: reason must be a string`);
    out.reason = raw.reason;
  }
  for (const key of OPTIONAL_NUMBERS) {
    const value = raw[key];
    if (value === undefined) continue;
    if (!isNumber(value)) throw new ArtifactFormatError(`${at}: ${key} must be a number`);
    out[key] = value;
  }
  if (raw.threshold !== undefined) {
    if (raw.threshold !== null && !isNumber(raw.threshold))
      throw new ArtifactFormatError(`${at}: threshold must be a number or null`);
    out.threshold = raw.threshold;
  }
  return out;
}

/** model_choice.json, checked. */
export function parseModelChoice(raw: unknown): ServedModelChoice {
  if (!isRecord(raw)) throw new ArtifactFormatError(`${where} must hold a JSON object`);
  const {
    method,
    training_rows,
    validation_rows,
    budget_seconds,
    budget_source,
    objective,
    other_rows,
    cleanup,
    candidates,
    chosen,
    rule,
    seconds,
  } = raw;
  if (method !== 'validation_split')
    throw new ArtifactFormatError(`${where}: method must be validation_split`);
  if (!isCount(training_rows) || !isCount(validation_rows))
    throw new ArtifactFormatError(`${where}: training_rows and validation_rows must be counts`);
  if (!isNumber(budget_seconds) || !isNumber(seconds))
    throw new ArtifactFormatError(`${where}: budget_seconds and seconds must be numbers`);
  if (budget_source !== 'default' && budget_source !== 'given')
    throw new ArtifactFormatError(`${where}: budget_source must be default or given`);
  if (objective !== 'weighted_f1' && objective !== 'balanced_other')
    throw new ArtifactFormatError(`${where}: objective must be weighted_f1 or balanced_other`);
  if (!isCount(other_rows)) throw new ArtifactFormatError(`${where}: other_rows must be a count`);
  if (
    !isRecord(cleanup) ||
    typeof cleanup.chosen !== 'string' ||
    !Array.isArray(cleanup.tried) ||
    !cleanup.tried.every(
      (t) =>
        isRecord(t) &&
        typeof t.name === 'string' &&
        isNumber(t.validation_f1) &&
        (t.validation_balanced === undefined || isNumber(t.validation_balanced)),
    )
  ) {
    throw new ArtifactFormatError(
      `${where}: cleanup must have chosen and tried [{name, validation_f1, validation_balanced?}]`,
    );
  }
  if (cleanup.reason !== undefined && typeof cleanup.reason !== 'string')
    throw new ArtifactFormatError(`${where}: cleanup.reason must be a string`);
  if (!Array.isArray(candidates) || candidates.length === 0)
    throw new ArtifactFormatError(`${where}: candidates must be a non-empty array`);
  const parsed = candidates.map(candidate);
  if (typeof chosen !== 'string' || !parsed.some((c) => c.name === chosen && c.status === 'chosen')) {
    throw new ArtifactFormatError(`${where}: chosen must name the candidate whose status is chosen`);
  }
  if (typeof rule !== 'string') throw new ArtifactFormatError(`${where}: rule must be a string`);
  return {
    method,
    training_rows,
    validation_rows,
    budget_seconds,
    budget_source,
    objective,
    other_rows,
    cleanup: {
      chosen: cleanup.chosen,
      tried: (cleanup.tried as ServedCleanupTry[]).map((t) => ({
        name: t.name,
        validation_f1: t.validation_f1,
        ...(t.validation_balanced === undefined ? {} : { validation_balanced: t.validation_balanced }),
      })),
      ...(cleanup.reason === undefined ? {} : { reason: cleanup.reason as string }),
    },
    candidates: parsed,
    chosen,
    rule,
    seconds,
  };
}

/** Reads and checks a run's model choice; rejects with the reader's error (e.g. NOT_FOUND) or a format error. */
export async function readModelChoice(read: ArtifactReader): Promise<ServedModelChoice> {
  return parseModelChoice(await readJsonArtifact(read, RUN_ARTIFACTS.modelChoice));
}
