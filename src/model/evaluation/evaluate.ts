/** Scoring a model on labelled texts: the performance report and what it got wrong, from one pass. */
import { ModelInputError } from '../errors.js';
import { normalizeTag, normalizeTagSet } from '../labels.js';
import { type LabelledText, type TagModel, tagsOf } from '../tag-model.js';
import {
  type ConfusionAndMistakes,
  confusionAndMistakes,
  multiLabelMistakes,
} from './confusion-and-mistakes.js';
import { multiLabelReport, type Performance, performanceReport } from './metrics.js';
import type { Slice } from './slices.js';

/**
 * Scores a model on labelled texts: weighted overall metrics, per-class metrics for every model tag and
 * the slices (tagifai's nlp_cnn / short_text unless others are given; empty ones left out). True tags the
 * model does not know count as `other`.
 */
export function evaluate(model: TagModel, data: LabelledText[], slices?: readonly Slice[]): Performance {
  return evaluateWithErrors(model, data, slices).performance;
}

/** The performance report and what the model got wrong (confusion matrix, mistakes), from one prediction pass. */
export function evaluateWithErrors(
  model: TagModel,
  data: readonly LabelledText[],
  slices?: readonly Slice[],
): { performance: Performance; errors: ConfusionAndMistakes } {
  const classes = new Set(model.tags);
  const texts = data.map((r) => r.text);
  // Scoring needs only the predicted tags' probabilities (and the largest): not every tag's of every row.
  const top = { probabilities: 1 } as const;
  if (model.args.multi_label) {
    const trueSets = data.map((row) => normalizeTagSet(tagsOf(row), classes));
    const predicted = model.predict(texts, undefined, top);
    return {
      performance: multiLabelReport(
        texts,
        trueSets,
        predicted.map((p) => p.predicted_tags),
        model.tags,
        slices,
      ),
      errors: multiLabelMistakes(texts, trueSets, predicted),
    };
  }
  if (data.some((row) => row.tags !== undefined && row.tags.length > 1)) {
    throw new ModelInputError(
      'model/tagger: this model gives one tag per text, but the data gives several tags per row; score it on single-label data (a `tag` column)',
    );
  }
  const yTrue = data.map((r) => normalizeTag(r.tag, classes));
  const predictions = model.predict(texts, undefined, top).map((p) => ({
    tag: p.predicted_tag,
    confidence: p.probabilities[p.predicted_tag] ?? 0,
  }));
  const yPred = predictions.map((p) => p.tag);
  return {
    performance: performanceReport(texts, yTrue, yPred, model.tags, slices),
    errors: confusionAndMistakes(texts, yTrue, predictions, model.tags),
  };
}
