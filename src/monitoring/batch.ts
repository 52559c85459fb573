/**
 * Captured predictions on their way to a store, column by column: what the request path kept (ids,
 * times, texts, answers, probabilities), with the records' origins listed once. Columns are cheap to
 * hand to a worker thread (arrays of strings and one Float64Array instead of an object per record: ~0.3
 * µs a record against ~4 µs, measured), and completing them — confidence, the unseen-word share, the
 * text's hash, JSON — happens where the batch is written: in the record store's worker thread for SQL
 * stores, so none of it runs on the thread that answers requests.
 */
import { createHash } from 'node:crypto';
import { unseenShareHashed } from '../model/index.js';
import type { CapturedBatch, PredictionRecord, Vocabulary } from './record-store.js';

/** Vocabularies (served runs) a record store's worker keeps; a swap to a ninth run forgets the oldest. */
export const VOCABULARIES_KEPT = 8;

/** Completes a batch into records (confidence, unseen share, hash, the text or not). */
export function completeBatch(
  batch: Omit<CapturedBatch, 'vocabularies'>,
  vocabularies: ReadonlyMap<string, Pick<Vocabulary, 'set' | 'hashed'>>,
): PredictionRecord[] {
  const records: PredictionRecord[] = new Array(batch.ids.length);
  let offset = 0;
  for (let i = 0; i < batch.ids.length; i++) {
    const origin = batch.origins[batch.origin[i]!]!;
    const probabilities: Record<string, number> = {};
    let best = 0;
    for (let k = 0; k < origin.tags.length; k++) {
      const p = batch.probabilities[offset + k]!;
      probabilities[origin.tags[k]!] = p;
      if (p > best) best = p;
    }
    offset += origin.tags.length;
    const text = batch.texts[i]!;
    const predictedTag = batch.predictedTag[i]!;
    const vocabulary = origin.vocabularyKey === null ? undefined : vocabularies.get(origin.vocabularyKey);
    records[i] = {
      predictionId: batch.ids[i]!,
      createdMs: batch.createdMs[i]!,
      scope: origin.scope,
      runId: origin.runId,
      modelVersion: origin.modelVersion,
      multiLabel: origin.multiLabel,
      predictedTag,
      predictedTags: batch.predictedTags[i] ?? [predictedTag],
      probabilities,
      // As src/model/drift/profile.ts's confidenceOf: the answer's probability, or the highest (multi-label).
      confidence: origin.multiLabel ? best : (probabilities[predictedTag] ?? 0),
      unseenShare: vocabulary === undefined ? 0 : unseenShareHashed(text, vocabulary.hashed, vocabulary.set),
      textLength: text.length,
      text: batch.keepText ? text : null,
      textSha256: batch.keepText ? null : createHash('sha256').update(text).digest('hex'),
      stage: batch.stage?.[i] ?? null,
      protocol: batch.protocol?.[i] ?? null,
    };
  }
  return records;
}

/** How many records a batch holds. */
export const batchSize = (batch: CapturedBatch): number => batch.ids.length;
