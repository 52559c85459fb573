/**
 * Reading and checking the artifacts serving needs (`args.json`, `performance.json`, `model/*`), the
 * contract described in docs/ARCHITECTURE.md. The same code reads a run through a tracking store and a
 * saved model directory through the file system; only the `ArtifactReader` differs.
 */

import {
  decodeModel,
  isCascade,
  MODEL_FILES,
  parseReferenceProfile,
  parseSavedArgs,
  type ReferenceProfile,
  RUN_ARTIFACTS,
  statedWeightsBytes,
  type TagModel,
  weightsSizeProblem,
} from '../model/index.js';
import { type EncoderLease, EncoderLoadError, type EncoderProvider } from './encoders.js';
import { type Predictor, predictorFor } from './predictor.js';

/** Reads one artifact by its run-relative POSIX path; rejects when it cannot be read. */
export type ArtifactReader = ((path: string) => Promise<Uint8Array>) & {
  /**
   * The size in bytes of one artifact file, without reading it (null: the store does not say); lets a
   * loader refuse a file of the wrong size before reading it. Optional: a reader without it reads first.
   */
  size?: (path: string) => Promise<number | null>;
};

/** Metric values as stored: JSON has no NaN, so a NaN written by training arrives as null. */
export interface ServedMetrics {
  precision: number | null;
  recall: number | null;
  f1: number | null;
  num_samples: number | null;
}

export interface ServedPerformance {
  overall: ServedMetrics;
  class: Record<string, ServedMetrics>;
  slices: Record<string, ServedMetrics>;
  /** Micro, macro and weighted averages; absent from reports of runs trained before they were written. */
  averages?: { micro: ServedMetrics; macro: ServedMetrics; weighted: ServedMetrics };
}

/** Everything a loaded run (or model directory) serves. */
export interface ServedModel {
  readonly model: TagModel;
  /** The training arguments of args.json, validated and completed by parseTrainingArgs (null prototype). */
  readonly args: Readonly<Record<string, unknown>>;
  readonly performance: ServedPerformance;
  /**
   * How the model answers texts (predictor.ts): the one way every caller predicts, which holds an encoder
   * model's encoder (its lease, released with `predictor.release()` when the model leaves the served runs).
   */
  readonly predictor: Predictor;
  /**
   * A cascade run served by its fast model alone because its encoder cannot be used here (allowed by
   * `LoadOptions.allowDegraded`): why (EncoderLoadError's public reason), for /health/ready. Its predictor
   * then holds no encoder, and every text its fast model is unsure of is answered by the fast model,
   * marked `fast_degraded`.
   */
  readonly degraded?: string;
  /**
   * The test split's reference profile for drift monitoring; null when the run has none (logged before
   * Tagger wrote it) or it cannot be read — `referenceProblem` then says which. Absent in models built
   * by hand (tests): read as null.
   */
  readonly reference?: ReferenceProfile | null;
  readonly referenceProblem?: string;
}

export interface LoadOptions {
  /**
   * Opens the encoder of an encoder model. Without it an encoder model is refused (decodeModel's reason),
   * as by a reader that cannot compute embeddings.
   */
  encoders?: EncoderProvider | undefined;
  /**
   * Only check that the artifacts load (a reload's look at the run already served): an encoder model is
   * decoded but its encoder is not opened.
   */
  checkOnly?: boolean;
  /**
   * A cascade model whose encoder cannot be opened here (EncoderLoadError) loads without it, served by
   * its fast model alone (`ServedModel.degraded` says why), instead of being refused. Other encoder
   * models are refused all the same: they have no model that answers without the encoder.
   */
  allowDegraded?: boolean | undefined;
}

/** How models are loaded for serving: their encoders, and whether a cascade may serve without its own. */
export type ModelLoading = Pick<LoadOptions, 'encoders' | 'allowDegraded'>;

/** An artifact that is present but unusable (not JSON, wrong shape, undecodable model). */
export class ArtifactFormatError extends Error {
  override readonly name = 'ArtifactFormatError';
}

const decoder = new TextDecoder('utf-8', { fatal: true });

/** One JSON artifact, parsed; a file that is not UTF-8 JSON is an ArtifactFormatError naming it. */
export async function readJsonArtifact(read: ArtifactReader, path: string): Promise<unknown> {
  const bytes = await read(path);
  try {
    return JSON.parse(decoder.decode(bytes));
  } catch (error) {
    throw new ArtifactFormatError(`${path} is not valid UTF-8 JSON (${(error as Error).message})`);
  }
}

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

function parseMetrics(raw: unknown, where: string): ServedMetrics {
  if (!isRecord(raw)) throw new ArtifactFormatError(`performance.json: ${where} must be an object`);
  const value = (key: keyof ServedMetrics): number | null => {
    const v = raw[key];
    if (v === null || (typeof v === 'number' && Number.isFinite(v))) return v;
    throw new ArtifactFormatError(
      `performance.json: ${where}.${key} must be a number or null, got ${JSON.stringify(v) ?? 'nothing'}`,
    );
  };
  return {
    precision: value('precision'),
    recall: value('recall'),
    f1: value('f1'),
    num_samples: value('num_samples'),
  };
}

function parseMetricsMap(raw: unknown, where: string): Record<string, ServedMetrics> {
  if (!isRecord(raw)) throw new ArtifactFormatError(`performance.json: ${where} must be an object`);
  // Object.fromEntries defines own properties, so a tag named `__proto__` stays an ordinary key.
  return Object.fromEntries(Object.entries(raw).map(([k, v]) => [k, parseMetrics(v, `${where}.${k}`)]));
}

/** Parses the `{overall, class, slices, averages?}` report training writes. */
export function parsePerformance(raw: unknown): ServedPerformance {
  if (!isRecord(raw)) throw new ArtifactFormatError('performance.json must hold a JSON object');
  const report: ServedPerformance = {
    overall: parseMetrics(raw.overall, 'overall'),
    class: parseMetricsMap(raw.class, 'class'),
    slices: parseMetricsMap(raw.slices, 'slices'),
  };
  if (raw.averages === undefined) return report;
  if (!isRecord(raw.averages)) throw new ArtifactFormatError('performance.json: averages must be an object');
  const { micro, macro, weighted } = raw.averages;
  return {
    ...report,
    averages: {
      micro: parseMetrics(micro, 'averages.micro'),
      macro: parseMetrics(macro, 'averages.macro'),
      weighted: parseMetrics(weighted, 'averages.weighted'),
    },
  };
}

/** Reads only `performance.json` (what GET /runs/{run_id} needs). */
export async function readPerformance(read: ArtifactReader): Promise<ServedPerformance> {
  return parsePerformance(await readJsonArtifact(read, RUN_ARTIFACTS.performance));
}

function parseArgs(raw: unknown): Readonly<Record<string, unknown>> {
  if (!isRecord(raw)) throw new ArtifactFormatError('args.json must hold a JSON object');
  let args: Record<string, unknown>;
  try {
    // Validated and completed the way a saved model's are, so every documented key is present and a key
    // the run predates says what it was trained with.
    args = parseSavedArgs(raw) as unknown as Record<string, unknown>;
  } catch (error) {
    throw new ArtifactFormatError(`args.json: ${(error as Error).message}`);
  }
  // A null prototype: a lookup of `constructor` or `__proto__` finds nothing inherited.
  return Object.freeze(Object.assign(Object.create(null) as Record<string, unknown>, args));
}

/**
 * The optional reference profile: never a reason not to serve the run, so every failure becomes a
 * problem to report instead (a missing file is an older run, anything else a broken artifact).
 */
async function readReference(
  read: ArtifactReader,
): Promise<{ reference: ReferenceProfile | null; referenceProblem?: string }> {
  try {
    return { reference: parseReferenceProfile(await readJsonArtifact(read, RUN_ARTIFACTS.referenceProfile)) };
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    const reason =
      code === 'NOT_FOUND' || code === 'ENOENT'
        ? `the run has no ${RUN_ARTIFACTS.referenceProfile} (trained before Tagger logged one); train it again to monitor drift`
        : `${RUN_ARTIFACTS.referenceProfile} cannot be used: ${(error as Error).message}`;
    return { reference: null, referenceProblem: reason };
  }
}

/**
 * The model's files: the manifest first, then — once the weights file's size is the one the manifest
 * states (when both are known) — the weights, so a file of another size (a sparse 1 GiB file cost 2.2
 * GB and 8.3 s before, issue 42) is refused without being read.
 */
async function readModelFiles(read: ArtifactReader): Promise<[string, Uint8Array][]> {
  const [manifestName, weightsName] = MODEL_FILES as [string, string];
  const manifest = await read(`${RUN_ARTIFACTS.modelDir}/${manifestName}`);
  const stated = statedWeightsBytes(manifest);
  const path = `${RUN_ARTIFACTS.modelDir}/${weightsName}`;
  if (stated !== null && read.size !== undefined) {
    const actual = await read.size(path);
    if (actual !== null && actual !== stated)
      throw new ArtifactFormatError(`${RUN_ARTIFACTS.modelDir}/: ${weightsSizeProblem(actual, stated)}`);
  }
  return [
    [manifestName, manifest],
    [weightsName, await read(path)],
  ];
}

/**
 * Reads and checks every serving artifact, and opens an encoder model's encoder (options.encoders);
 * rejects with the reader's error, an ArtifactFormatError, or an EncoderLoadError when the encoder cannot
 * be used on this machine.
 */
export async function loadServedModel(read: ArtifactReader, options: LoadOptions = {}): Promise<ServedModel> {
  const [rawArgs, performance, modelFiles, reference] = await Promise.all([
    readJsonArtifact(read, RUN_ARTIFACTS.args),
    readPerformance(read),
    readModelFiles(read),
    readReference(read),
  ]);
  const args = parseArgs(rawArgs);
  let model: TagModel;
  try {
    model = decodeModel(Object.fromEntries(modelFiles), {
      withEncoder: options.encoders !== undefined || options.checkOnly === true,
    });
  } catch (error) {
    throw new ArtifactFormatError(`${RUN_ARTIFACTS.modelDir}/: ${(error as Error).message}`);
  }
  if (!model.encoder || options.checkOnly || options.encoders === undefined) {
    // checkOnly: never asked to predict (a reload's look at the served run); an encoder model without
    // encoders was refused by decodeModel above.
    const predictor = model.encoder ? unusedPredictor(model) : predictorFor(model);
    return { model, args, performance, predictor, ...reference };
  }
  // Last: everything else is checked before an encoder is opened (a thread, ONNX Runtime, ~200 MB).
  let embedder: EncoderLease;
  try {
    embedder = await options.encoders.acquire(model.encoder);
  } catch (error) {
    if (!(isCascade(model) && error instanceof EncoderLoadError)) throw error;
    if (!options.allowDegraded) {
      // Said where it is read (the held-back reason, a startup failure): the cascade could serve anyway.
      throw new EncoderLoadError(
        `${error.message}; \`tagger serve --allow-degraded\` (TAGGER_ALLOW_DEGRADED=true) serves this cascade by its fast model alone`,
        { cause: error },
      );
    }
    return {
      model,
      args,
      performance,
      predictor: predictorFor(model),
      ...reference,
      degraded: error.publicReason,
    };
  }
  return {
    model,
    args,
    performance,
    predictor: predictorFor(model, embedder, options.encoders),
    ...reference,
  };
}

/** The predictor of a model loaded only to check its artifacts: it answers nothing. */
function unusedPredictor(model: TagModel): Predictor {
  const refuse = (): never => {
    throw new Error('served-models: a model loaded with checkOnly answers nothing');
  };
  return {
    model,
    encoder: model.encoder ?? null,
    routing: null,
    holdsEncoder: false,
    predict: async () => refuse(),
    prepare: async () => refuse(),
    release: () => undefined,
  };
}
