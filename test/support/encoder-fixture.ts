/**
 * Encoder runs for serving tests (they need `npm run setup:encoder`): models of the encoder kind trained
 * in-process on samples/projects.csv with the real minilm embeddings, a second encoder with another
 * identity (a copy of minilm whose token limit is 128: the same files, another encoder as far as a model
 * is concerned), and a model whose manifest names a digest no file has.
 */
import { cp, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import {
  bindEmbeddings,
  encodeModel,
  evaluateWithErrors,
  parseTrainingArgs,
  type TrainEncoder,
  type TrainingArgs,
  trainTagger,
} from '../../src/model/index.js';
import { embedTexts } from '../../src/train/embeddings.js';
import { minilmDir } from './components.js';
import { sampleTexts, type TrainedModel } from './fixtures.js';

/** Embeddings of the sample texts (and any extra ones) with the encoder `name`. */
export async function sampleEmbeddings(name: string, extra: readonly string[] = []): Promise<TrainEncoder> {
  return embedTexts(name, [...sampleTexts().map((row) => row.text), ...extra], { threads: 1 });
}

/** An encoder model trained on the sample data (80/20, seed 7) with the given embeddings. */
export function trainEncoderModel(
  encoder: TrainEncoder,
  overrides: Partial<TrainingArgs> = {},
): TrainedModel {
  const rows = sampleTexts();
  const train = rows.filter((_, i) => i % 5 !== 0);
  const test = rows.filter((_, i) => i % 5 === 0);
  const args = parseTrainingArgs({
    num_epochs: 5,
    min_freq: 5,
    threshold: 'argmax',
    encoder: encoder.spec.name,
    encoder_weight: 0.75,
    ...overrides,
  });
  const { model } = trainTagger(train, test, args, { seed: 7, encoder });
  const bound = bindEmbeddings(model, encoder.embeddings);
  const { performance, errors } = evaluateWithErrors(bound, test);
  return { model, args, performance, errors, files: encodeModel(model) };
}

/**
 * A copy of the minilm folder in `dir` whose sentence_bert_config.json says 128 tokens: an encoder of
 * its own identity (another token limit), named by its path.
 */
export async function otherEncoder(dir: string): Promise<string> {
  const source = minilmDir();
  if (source === null) throw new Error('otherEncoder: minilm is not installed');
  const target = join(dir, 'minilm-128');
  await cp(source, target, { recursive: true });
  await writeFile(join(target, 'sentence_bert_config.json'), JSON.stringify({ max_seq_length: 128 }));
  return target;
}

/** The model's files with its manifest naming another model.onnx digest (no such file exists). */
export function withWrongDigest(files: Record<string, Uint8Array>): Record<string, Uint8Array> {
  const manifest = JSON.parse(new TextDecoder().decode(files['tagger-model.json']!)) as {
    encoder: { model_sha256: string };
  };
  manifest.encoder.model_sha256 = '0'.repeat(64);
  return { ...files, 'tagger-model.json': new TextEncoder().encode(JSON.stringify(manifest)) };
}
