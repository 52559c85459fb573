/**
 * The model of the member classifiers: one vectorizer, whose features are computed once per text, and one
 * member (a classifier alone) or several (a soft vote), each a linear model over them. A member's scores
 * become its probabilities by its link or its Platt sigmoids; a lone member's are the model's, a vote's are
 * the weighted mean of its members' (combine.ts). Tags no training row had get probability 0. Predictions
 * then follow the same rules as the SGD model's (threshold fallback, per-tag thresholds).
 */

import { ModelInputError } from '../../errors.js';
import type { Explanation } from '../../explain.js';
import { type PredictOptions, predictionOf } from '../../prediction.js';
import type { Prediction, TagModel } from '../../tag-model.js';
import type { TaggerVectorizer } from '../../text/features.js';
import { cleanText } from '../../text/preprocess.js';
import type { TrainingArgs } from '../../training-args.js';
import { combinedProbabilities, type MemberParts } from './combine.js';
import { explainMembers } from './member-explain.js';
import type { Member } from './train-member.js';

/** The TagModel of the member classifiers (one alone, or a soft vote); member-artifact.ts reads its parts. */
export class MemberTagModel implements TagModel, MemberParts {
  readonly tags: readonly string[];
  readonly args: TrainingArgs;
  readonly threshold: number | null;
  readonly tagThresholds: readonly number[] | null;
  readonly vectorizer: TaggerVectorizer;
  readonly members: readonly Member[];
  readonly classes: Int32Array;
  readonly multiLabel: boolean;
  // Scratch for predict(); overwritten by every call (JS is single-threaded).
  private readonly probabilities: Float64Array;
  private readonly scratch: Float64Array;

  constructor(
    tags: readonly string[],
    args: TrainingArgs,
    threshold: number | null,
    vectorizer: TaggerVectorizer,
    members: readonly Member[],
    classes: Int32Array,
    tagThresholds: readonly number[] | null = null,
  ) {
    if (args.multi_label !== (tagThresholds !== null)) {
      throw new ModelInputError(
        'model/members: a multi-label model needs one threshold per tag, and a single-label model none',
      );
    }
    if (members.length === 0 || members.some((m) => m.nClasses !== classes.length)) {
      throw new ModelInputError('model/members: every member must score the same trained tags');
    }
    this.tags = Object.freeze([...tags]);
    this.args = Object.freeze({ ...args });
    this.threshold = threshold;
    this.tagThresholds = tagThresholds === null ? null : Object.freeze([...tagThresholds]);
    this.vectorizer = vectorizer;
    this.members = Object.freeze([...members]);
    this.classes = classes;
    this.multiLabel = args.multi_label;
    this.probabilities = new Float64Array(tags.length);
    this.scratch = new Float64Array(classes.length);
  }

  /** The features the last text scored had in the vocabulary (0: the answer is the prior). */
  private lastFeatures = 0;

  /** The model's probabilities of one text into `this.probabilities` (the features computed once). */
  private probabilitiesOf(text: string): Float64Array {
    const clean = cleanText(String(text), { lower: this.args.lower, stem: this.args.stem });
    const n = this.vectorizer.vectorize(clean);
    this.lastFeatures = n;
    const { vectorIndices, vectorValues } = this.vectorizer;
    combinedProbabilities(this, vectorIndices, vectorValues, 0, n, this.probabilities, this.scratch);
    return this.probabilities;
  }

  /** The member classifiers take no sentence embeddings (only the SGD ones do): `_embeddings` is ignored. */
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

  explain(text: string, top = 10, _embedding?: Float32Array): Explanation {
    return explainMembers(this, text, top);
  }
}
