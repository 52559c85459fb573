/**
 * The `fasttext` model: a text's vector is the mean of its features' rows of the input matrix (its words,
 * word n-grams and, optionally, character n-grams: fasttext-features.ts), and the output layer turns it into
 * tag probabilities — a softmax, a hierarchical softmax (a Huffman tree over the tags, fasttext-tree.ts), or
 * for a multi-label model one sigmoid per tag (one-vs-all). Only the input rows training touched are kept
 * (`rowOf`); a feature whose row training never saw (a hashed n-gram no training text had) is left out of
 * the mean, as an unknown word is. Predictions follow the other families' rules (threshold fallback,
 * per-tag thresholds).
 *
 * Explanations are exact: a tag's score is output_k · mean(input rows) = Σ_f (output_k · input_f) / n, so
 * each feature's contribution is its row's dot product with the tag's output row over n (for `hs`, the sum
 * of the signed node scores on the tag's path: its log-odds along the path, additive the same way).
 */
import { ModelInputError } from '../../errors.js';
import type { LinearTagExplanation } from '../../explain.js';
import { type PredictOptions, predictionOf } from '../../prediction.js';
import type { Prediction, TagModel } from '../../tag-model.js';
import { cleanText } from '../../text/preprocess.js';
import type { TrainingArgs } from '../../training-args.js';
import { sigmoid, softmaxInPlace } from '../links.js';
import { END_OF_TEXT, type FastTextFeatures } from './fasttext-features.js';
import type { HuffmanTree } from './fasttext-tree.js';

/** How the output layer scores: a softmax over the tags, a hierarchical softmax, or one sigmoid per tag. */
export type FastTextOutput = 'softmax' | 'hs' | 'ova';

export interface FastTextParts {
  readonly features: FastTextFeatures;
  readonly dim: number;
  /** The kept input rows, rowCount × dim, row-major. */
  readonly input: Float32Array;
  /** For every input row of the features (words, then buckets): its row in `input`, or −1 (never trained). */
  readonly rowOf: Int32Array;
  /** softmax / ova: one row per tag; hs: one row per inner node of the tree. */
  readonly output: Float32Array;
  readonly loss: FastTextOutput;
  /** hs only: the tree over the tags, and the training rows per tag it was built from. */
  readonly tree: HuffmanTree | null;
  readonly tagCounts: readonly number[] | null;
}

export class FastTextTagModel implements TagModel {
  readonly tags: readonly string[];
  readonly args: TrainingArgs;
  readonly threshold: number | null;
  readonly tagThresholds: readonly number[] | null;
  readonly parts: FastTextParts;
  private readonly hidden: Float32Array;
  private readonly scores: Float64Array;
  private readonly nodeProbabilities: Float64Array;

  constructor(
    tags: readonly string[],
    args: TrainingArgs,
    threshold: number | null,
    parts: FastTextParts,
    tagThresholds: readonly number[] | null = null,
  ) {
    if (args.multi_label !== (tagThresholds !== null)) {
      throw new ModelInputError(
        'model/fasttext: a multi-label model needs one threshold per tag, and a single-label model none',
      );
    }
    if ((parts.loss === 'ova') !== args.multi_label) {
      throw new ModelInputError(
        'model/fasttext: a multi-label model is one-vs-all, a single-label one is not',
      );
    }
    const K = tags.length;
    const outputRows = parts.loss === 'hs' ? K - 1 : K;
    if (parts.output.length !== outputRows * parts.dim || parts.input.length % parts.dim !== 0) {
      throw new ModelInputError('model/fasttext: the matrices do not fit the tags and the dimension');
    }
    this.tags = Object.freeze([...tags]);
    this.args = Object.freeze({ ...args });
    this.threshold = threshold;
    this.tagThresholds = tagThresholds === null ? null : Object.freeze([...tagThresholds]);
    this.parts = parts;
    this.hidden = new Float32Array(parts.dim);
    this.scores = new Float64Array(K);
    this.nodeProbabilities = new Float64Array(Math.max(0, K - 1));
  }

  /**
   * The vocabulary words of the last text scored, the end-of-text mark aside (0: `no_known_features`).
   * Words, not rows: a hashed n-gram's bucket is shared with unrelated n-grams of the training texts, so
   * a bucket training touched says nothing of a text in a script it never saw.
   */
  private lastFeatures = 0;

  /** The mean of the text's known rows into `this.hidden`; returns how many rows it averaged. */
  private embed(clean: string): number {
    const { features, dim, input, rowOf } = this.parts;
    const h = this.hidden;
    h.fill(0);
    const n = features.rowsOf(clean);
    const rows = features.rowIndices;
    const words = features.words.length;
    const endOfText = features.wordRow(END_OF_TEXT);
    let known = 0;
    let knownWords = 0;
    for (let i = 0; i < n; i++) {
      const feature = rows[i]!;
      const row = rowOf[feature]!;
      if (row < 0) continue;
      known++;
      if (feature < words && feature !== endOfText) knownWords++;
      const base = row * dim;
      for (let d = 0; d < dim; d++) h[d]! += input[base + d]!;
    }
    if (known > 0) for (let d = 0; d < dim; d++) h[d]! /= known;
    this.lastFeatures = knownWords;
    return known;
  }

  /** The tags' probabilities of one text (model order) into `out`, without building a prediction. */
  probabilitiesInto(text: string, out: Float64Array): void {
    out.set(this.probabilitiesOf(text));
  }

  /**
   * The probability of tag `k` for one text: for a hierarchical softmax only the nodes on its path are
   * scored (what a log loss needs), else the whole layer.
   */
  probabilityOf(text: string, k: number): number {
    if (this.parts.loss !== 'hs') return this.probabilitiesOf(text)[k]!;
    this.embed(cleanText(String(text), this.args));
    const { output, dim, tree } = this.parts;
    const path = tree!.paths[k]!;
    const code = tree!.codes[k]!;
    let probability = 1;
    for (let i = 0; i < path.length; i++) {
      const q = sigmoid(dot(output, path[i]! * dim, this.hidden, dim));
      probability *= code[i] === 1 ? q : 1 - q;
    }
    return probability;
  }

  /** The tags' probabilities of one text into `this.scores`. */
  private probabilitiesOf(text: string): Float64Array {
    this.embed(cleanText(String(text), this.args));
    const { output, dim, loss, tree } = this.parts;
    const h = this.hidden;
    const p = this.scores;
    if (loss === 'hs') {
      const nodes = this.nodeProbabilities;
      for (let node = 0; node < nodes.length; node++) nodes[node] = sigmoid(dot(output, node * dim, h, dim));
      for (let k = 0; k < p.length; k++) {
        const path = tree!.paths[k]!;
        const code = tree!.codes[k]!;
        let probability = 1;
        for (let i = 0; i < path.length; i++) {
          const q = nodes[path[i]!]!;
          probability *= code[i] === 1 ? q : 1 - q;
        }
        p[k] = probability;
      }
      return p;
    }
    for (let k = 0; k < p.length; k++) p[k] = dot(output, k * dim, h, dim);
    if (loss === 'ova') for (let k = 0; k < p.length; k++) p[k] = sigmoid(p[k]!);
    else softmaxInPlace(p);
    return p;
  }

  predict(
    texts: readonly string[],
    _embeddings?: readonly Float32Array[],
    options?: PredictOptions,
  ): Prediction[] {
    return texts.map((text) => {
      const p = this.probabilitiesOf(text);
      let best = 0;
      for (let k = 1; k < p.length; k++) if (p[k]! > p[best]!) best = k;
      return predictionOf(this, p, best, options, this.lastFeatures);
    });
  }

  explain(text: string, top = 10, _embedding?: Float32Array): LinearTagExplanation {
    const clean = cleanText(String(text), this.args);
    const p = this.probabilitiesOf(text);
    let best = 0;
    for (let k = 1; k < p.length; k++) if (p[k]! > p[best]!) best = k;
    const { features, dim, input, rowOf, output, loss, tree } = this.parts;
    // The tag's score as a linear function of the text vector: its output row, or for hs the signed sum of
    // its path's node rows (the path's log-odds), so each feature's part is its row · that over n.
    const direction = new Float64Array(dim);
    if (loss === 'hs') {
      const path = tree!.paths[best]!;
      const code = tree!.codes[best]!;
      for (let i = 0; i < path.length; i++) {
        const sign = code[i] === 1 ? 1 : -1;
        for (let d = 0; d < dim; d++) direction[d]! += sign * output[path[i]! * dim + d]!;
      }
    } else for (let d = 0; d < dim; d++) direction[d] = output[best * dim + d]!;
    const n = features.rowsOf(clean);
    const rows = Array.from(features.rowIndices.subarray(0, n));
    const known = rows.filter((r) => rowOf[r]! >= 0);
    // A row that occurs several times (a repeated word) is one feature whose value is its count.
    const counts = new Map<number, number>();
    for (const r of known) counts.set(r, (counts.get(r) ?? 0) + 1);
    const parts = [...counts].map(([row, count]) => {
      const base = rowOf[row]! * dim;
      let c = 0;
      for (let d = 0; d < dim; d++) c += input[base + d]! * direction[d]!;
      return { row, value: count / known.length, contribution: (c * count) / known.length };
    });
    let score = 0;
    for (const part of parts) score += part.contribution;
    const order = [...parts].sort(
      (a, b) => Math.abs(b.contribution) - Math.abs(a.contribution) || a.row - b.row,
    );
    const shown = order.slice(0, Math.max(0, Math.trunc(top) || 0));
    const rest = order.slice(shown.length).reduce((sum, part) => sum + part.contribution, 0);
    return {
      tag: this.tags[best]!,
      score,
      bias: 0,
      contributions: shown.map((part) => {
        const name = features.nameOf(part.row, clean);
        // Character n-grams are taken within words, with < > around each: char_wb's kind of n-gram.
        const analyzer = part.row >= features.words.length && /[<>]/.test(name) ? 'char_wb' : 'word';
        return { feature: name, analyzer, value: part.value, contribution: part.contribution } as const;
      }),
      rest,
      features: counts.size,
    };
  }
}

/** a[from … from + n) · b. */
function dot(a: Float32Array, from: number, b: Float32Array, n: number): number {
  let sum = 0;
  for (let d = 0; d < n; d++) sum += a[from + d]! * b[d]!;
  return sum;
}
