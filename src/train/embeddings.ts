/**
 * The embeddings an encoder run trains and is scored on, computed once per distinct text before any
 * training starts and reused by every split, CV fold, training seed and search trial (the model code in
 * src/model takes them as an input block). src/encoder is loaded here with a dynamic `import()`, so runs
 * without an encoder never load ONNX Runtime or the tokenizer.
 */
import { availableParallelism } from 'node:os';
import {
  type BehaviourSuite,
  behaviourTexts,
  DEFAULT_BEHAVIOUR_SUITE,
  type EncoderSpec,
  type LabelledText,
  type TrainEncoder,
} from '../model/index.js';

export interface EmbedTextsOptions {
  /** ONNX Runtime threads (default: the machine's cores, capped at 4: nothing else runs meanwhile). */
  threads?: number;
  /** The digests the encoder's files must have (a trained model's spec). */
  expect?: Pick<EncoderSpec, 'model_sha256' | 'tokenizer_sha256'>;
  /** Progress of the embedding pass: texts done of the total. */
  onProgress?: (done: number, total: number) => void;
  /** Told once the encoder is loaded and checked, before the texts are embedded. */
  onLoaded?: (spec: EncoderSpec) => void;
}

/**
 * Loads the encoder `name` (resolving and checking its files: a problem is one EncoderError line) and
 * embeds every distinct text once.
 * @example const encoder = await embedTexts('minilm', rows.map((r) => r.text));
 */
export async function embedTexts(
  name: string,
  texts: Iterable<string>,
  options: EmbedTextsOptions = {},
): Promise<TrainEncoder> {
  const { openEncoder } = await import('../encoder/index.js');
  const encoder = await openEncoder(name, {
    threads: options.threads ?? Math.min(4, availableParallelism()),
    ...(options.expect ? { expect: options.expect } : {}),
  });
  try {
    const spec: EncoderSpec = { ...encoder.identity };
    options.onLoaded?.(spec);
    const distinct = [...new Set(texts)];
    const vectors = await encoder.embed(
      distinct,
      options.onProgress ? { onProgress: options.onProgress } : {},
    );
    return { spec, embeddings: new Map(distinct.map((text, i) => [text, vectors[i]!])) };
  } finally {
    await encoder.close();
  }
}

/**
 * Every text a training sees: the data, the test data and the behavioural suite's texts (whose
 * perturbations are fixed by the suite's seed, so they are known before the model is).
 */
export function textsToEmbed(input: {
  data: readonly LabelledText[];
  testData?: readonly LabelledText[];
  behaviour?: BehaviourSuite;
}): string[] {
  return [
    ...input.data.map((row) => row.text),
    ...(input.testData ?? []).map((row) => row.text),
    ...behaviourTexts(input.behaviour ?? DEFAULT_BEHAVIOUR_SUITE),
  ];
}
