/**
 * Cascade runs for serving tests, built from the model layer (src/model/cascade) the way training builds
 * them: the fast stage and the encoder stage trained on the same rows, τ set between the fast model's
 * confidences on a few probe texts so that some of them are routed to the encoder model and some are not.
 * `fakeCascade` uses hashed stand-in embeddings and a fake encoder provider (no ONNX Runtime: quick, and
 * failures on demand); `realCascade` the real minilm embeddings (tests that use it skip without
 * `npm run setup:encoder`).
 */
import { createHash } from 'node:crypto';
import { join } from 'node:path';
import {
  bindEmbeddings,
  CascadeTagModel,
  type EncoderSpec,
  encodeModel,
  encoderStageArgs,
  evaluateWithErrors,
  fastStageArgs,
  type LabelledText,
  parseTrainingArgs,
  routingConfidence,
  type TrainEncoder,
  trainTagger,
} from '../../src/model/index.js';
import { type EncoderLease, EncoderLoadError, type EncoderProvider } from '../../src/served-models/index.js';
import { readDataset } from '../../src/train/data.js';
import { TRAIN, VALIDATION } from '../model/fixtures.js';
import { REPO_ROOT } from './components.js';
import { sampleTexts, type TrainedModel } from './fixtures.js';

const DIM = 4;
export const FAKE_SPEC: EncoderSpec = {
  name: 'cascade-fake',
  source: 'local:/cascade-fake',
  model_sha256: 'c'.repeat(64),
  tokenizer_sha256: 'd'.repeat(64),
  pooling: 'mean',
  max_tokens: 64,
  dim: DIM,
};

/** A stand-in sentence embedding: a few bytes of the text's SHA-256, the same for the same text. */
export const fakeEmbedding = (text: string): Float32Array => {
  const h = createHash('sha256').update(text).digest();
  return Float32Array.from({ length: DIM }, (_, i) => (h[i]! - 128) / 64);
};

export interface CascadeFixture extends TrainedModel {
  model: CascadeTagModel;
  /** Texts the fast model is sure of (answered by it) and unsure of (routed to the encoder model). */
  confident: string[];
  unsure: string[];
}

const CHOICE = {
  rule: { kind: 'tolerance', tolerance: 0.002 },
  reason: 'a test cascade: τ set between the probes’ confidences',
  cv: { routed: 0.5, f1: 0.9, fast_f1: 0.8, encoder_f1: 0.9, rows: 0 },
} as const;

/** Trains both stages on `train`, sets τ between the probes' fast confidences, evaluates on `test`. */
function buildCascade(
  train: LabelledText[],
  test: LabelledText[],
  encoder: TrainEncoder,
  probes: readonly string[],
  overrides: Record<string, unknown>,
): CascadeFixture {
  const args = parseTrainingArgs({ encoder: encoder.spec.name, cascade: true, ...overrides });
  const fast = trainTagger(train, test, fastStageArgs(args), { seed: 7 }).model;
  const encoderModel = trainTagger(train, test, encoderStageArgs(args), { seed: 7, encoder }).model;
  // Routing's own confidence (single-label: the top probability; multi-label: the least sure tag's margin).
  const confidences = fast.predict(probes).map((p) => routingConfidence(fast, p));
  const sorted = [...new Set(confidences)].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  if (middle === 0) throw new Error('cascade fixture: the probes need at least two distinct confidences');
  const threshold = (sorted[middle - 1]! + sorted[middle]!) / 2;
  const model = new CascadeTagModel({ args, fast, encoder: encoderModel, threshold, choice: CHOICE });
  const { routed } = model.predictFast(probes);
  const { performance, errors } = evaluateWithErrors(bindEmbeddings(model, encoder.embeddings), test);
  return {
    model,
    args,
    performance,
    errors,
    files: encodeModel(model),
    confident: probes.filter((_, i) => !routed.includes(i)),
    unsure: probes.filter((_, i) => routed.includes(i)),
  };
}

/** Probe texts of the tiny corpus: some clearly on a topic, some on none. */
export const FAKE_PROBES = [
  'transformer language model for text',
  'object detection images',
  'kubernetes serving of models',
  'a graph of nodes',
  'something else entirely',
  'image segmentation and text translation with docker',
];

/** A cascade on the tiny corpus of test/model/fixtures.ts with hashed stand-in embeddings. */
export function fakeCascade(): CascadeFixture {
  const texts = [...TRAIN, ...VALIDATION].map((row) => row.text);
  const embeddings = new Map([...texts, ...FAKE_PROBES].map((text) => [text, fakeEmbedding(text)]));
  return buildCascade(TRAIN, VALIDATION, { spec: FAKE_SPEC, embeddings }, FAKE_PROBES, {
    min_freq: 2,
    num_epochs: 3,
  });
}

/**
 * A multi-label cascade on samples/projects-multilabel.csv (80/20) with hashed stand-in embeddings; its
 * probes are some of its test rows' texts.
 */
export async function fakeMultiLabelCascade(): Promise<CascadeFixture> {
  const rows = await readDataset(join(REPO_ROOT, 'samples', 'projects-multilabel.csv'));
  const train = rows.filter((_, i) => i % 5 !== 0);
  const test = rows.filter((_, i) => i % 5 === 0);
  const probes = test.slice(0, 10).map((row) => row.text);
  const embeddings = new Map(rows.map((row) => [row.text, fakeEmbedding(row.text)]));
  return buildCascade(train, test, { spec: FAKE_SPEC, embeddings }, probes, {
    multi_label: true,
    threshold: 'tuned',
    num_epochs: 5,
  });
}

/**
 * A cascade on the sample data (80/20, seed 7) with real embeddings (`sampleEmbeddings`); `probes` must
 * be among the embedded texts.
 */
export function realCascade(encoder: TrainEncoder, probes: readonly string[]): CascadeFixture {
  const rows = sampleTexts();
  const train = rows.filter((_, i) => i % 5 !== 0);
  const test = rows.filter((_, i) => i % 5 === 0);
  return buildCascade(train, test, encoder, probes, { num_epochs: 5, min_freq: 5, encoder_weight: 0.75 });
}

/**
 * An EncoderProvider of stand-in embeddings (`vectorOf`, by default `fakeEmbedding`) that records what it
 * embeds: `missing` makes the encoder unopenable (EncoderLoadError, as for files missing on the machine),
 * `failWith` makes every embed call reject with that error (a full queue, a failed thread…); with `only`,
 * an encoder of other files is unopenable too, as a real pool would find it.
 */
export class FakeEncoders implements EncoderProvider {
  /** The texts of every embed call, in order. */
  readonly calls: string[][] = [];
  missing = false;
  failWith: Error | null = null;
  leases = 0;

  constructor(
    private readonly vectorOf: (text: string) => Float32Array = fakeEmbedding,
    private readonly only: EncoderSpec | null = null,
  ) {}

  async acquire(spec: EncoderSpec): Promise<EncoderLease> {
    if (this.missing) {
      throw new EncoderLoadError(
        `encoder ${spec.name}: /srv/tagger/encoders/${spec.name}/model.onnx is missing`,
      );
    }
    if (this.only !== null && spec.model_sha256 !== this.only.model_sha256) {
      throw new EncoderLoadError(`encoder ${spec.name}: only the ${this.only.name} encoder is here`);
    }
    this.leases += 1;
    return {
      spec,
      embed: async (texts) => {
        this.calls.push([...texts]);
        if (this.failWith !== null) throw this.failWith;
        return texts.map((text) => this.vectorOf(text));
      },
      release: () => {
        this.leases -= 1;
      },
    };
  }
}
