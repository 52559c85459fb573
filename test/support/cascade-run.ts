/**
 * Cascade runs for tests that need one without the real encoder (the real one: test/cli/encoder.test.ts):
 * synthetic embeddings that know a little of each text's tag (so the encoder stage has something to add),
 * and a cascade trained on the sample data with them and logged the real way.
 */
import {
  createRng,
  type EncoderSpec,
  type LabelledText,
  parseTrainingArgs,
  type TrainEncoder,
  type TrainingArgs,
} from '../../src/model/index.js';
import { openTrackingStore } from '../../src/tracking/index.js';
import { readDataset } from '../../src/train/data.js';
import { textsToEmbed } from '../../src/train/embeddings.js';
import { logTrainingRun } from '../../src/train/log-run.js';
import { type TrainingOutcome, trainAndEvaluate } from '../../src/train/pipeline.js';
import { FakeEncoders } from './cascade-fixture.js';
import { SAMPLE_DATA } from './components.js';

const DIM = 16;
export const SYNTHETIC_ENCODER: EncoderSpec = {
  name: 'synthetic',
  source: 'local:/nowhere',
  model_sha256: 'a'.repeat(64),
  tokenizer_sha256: 'b'.repeat(64),
  pooling: 'mean',
  max_tokens: 64,
  dim: DIM,
};

/** A cascade's args with the synthetic encoder (few epochs: fast to train). */
export const SYNTHETIC_CASCADE_ARGS: TrainingArgs = parseTrainingArgs({
  encoder: SYNTHETIC_ENCODER.name,
  cascade: true,
  num_epochs: 4,
  ngram_max_range: 3,
});

/** A text's seeded noise: the same vector for the same text. */
function syntheticVector(text: string): Float32Array {
  let seed = 0;
  for (let i = 0; i < text.length; i++) seed = (Math.imul(seed, 31) + text.charCodeAt(i)) >>> 0;
  const rng = createRng(seed);
  return new Float32Array(DIM).map(() => rng() - 0.5);
}

/** Seeded noise per text plus a pull toward its tag's direction for the texts of `rows`. */
export function syntheticEmbeddings(texts: Iterable<string>, rows: readonly LabelledText[]): TrainEncoder {
  const tagOf = new Map(rows.map((row) => [row.text, row.tag]));
  const tags = [...new Set(rows.map((row) => row.tag))].sort();
  const embeddings = new Map<string, Float32Array>();
  for (const text of texts) {
    const vector = syntheticVector(text);
    const tag = tagOf.get(text);
    if (tag !== undefined) vector[tags.indexOf(tag) % DIM]! += 0.8;
    embeddings.set(text, vector);
  }
  return { spec: SYNTHETIC_ENCODER, embeddings };
}

/**
 * Serves the synthetic encoder as the encoder pool would serve a real one (tests of served cascade runs
 * without the real encoder): any text gets its seeded vector; `calls` records each embed call's texts.
 */
export const syntheticEncoders = (): FakeEncoders => new FakeEncoders(syntheticVector, SYNTHETIC_ENCODER);

/** A cascade trained on the sample data with the synthetic embeddings (seed 3). */
export async function sampleCascade(): Promise<{
  data: LabelledText[];
  encoder: TrainEncoder;
  outcome: TrainingOutcome;
}> {
  const data = await readDataset(SAMPLE_DATA);
  const encoder = syntheticEmbeddings(textsToEmbed({ data }), data);
  const outcome = trainAndEvaluate({ data, args: SYNTHETIC_CASCADE_ARGS, seed: 3, encoder });
  return { data, encoder, outcome };
}

/** Logs the sample cascade to an experiment (`best`) of the store; its run id. */
export async function logSampleCascade(trackingUri: string, experiment = 'best'): Promise<string> {
  const { outcome } = await sampleCascade();
  const store = await openTrackingStore(trackingUri);
  try {
    const logged = await logTrainingRun(store, {
      experiment,
      runName: 'cascade',
      args: SYNTHETIC_CASCADE_ARGS,
      seed: 3,
      outcome,
      source: 'test',
    });
    return logged.runId;
  } finally {
    await store.close();
  }
}
