/**
 * People's labels as a server and POST /feedback record them, for the tests of what `tagger retrain`
 * learns from: each text a recorded prediction of `runId` in `scope`, then its feedback. And robotics
 * texts, a tag the sample data does not have.
 */
import { predictionId } from '../../src/monitoring/ids.js';
import type { RecordStore } from '../../src/monitoring/index.js';

export interface FeedbackLabel {
  text: string;
  tag: string;
  selection?: 'random_share' | 'uncertainty' | 'correction';
  receivedMs?: number;
}

/** Records a prediction of `runId` per label (answered `other` with `probabilities`) and its feedback; their ids. */
export async function recordLabels(
  records: RecordStore,
  where: { scope: string; runId: string; probabilities: Record<string, number> },
  labels: readonly FeedbackLabel[],
): Promise<string[]> {
  const now = Date.now();
  const confidence = where.probabilities.other ?? 0;
  const recorded = labels.map((entry, i) => ({
    predictionId: predictionId(now - labels.length + i),
    createdMs: now,
    scope: where.scope,
    runId: where.runId,
    modelVersion: null,
    multiLabel: false,
    predictedTag: 'other',
    predictedTags: ['other'],
    probabilities: where.probabilities,
    confidence,
    unseenShare: 0,
    textLength: entry.text.length,
    text: entry.text,
    textSha256: null,
  }));
  await records.append(recorded);
  await records.putFeedback(
    recorded.map((record, i) => ({
      predictionId: record.predictionId,
      scope: where.scope,
      runId: where.runId,
      tags: [labels[i]!.tag],
      receivedMs: labels[i]!.receivedMs ?? now,
      selection: labels[i]!.selection ?? 'uncertainty',
    })),
  );
  return recorded.map((record) => record.predictionId);
}

/** `n` texts of a robot arm, tagged `robotics` (numbered from `offset`, so each set is new). */
export const robotics = (n: number, offset = 0): FeedbackLabel[] =>
  Array.from({ length: n }, (_, i) => ({
    text: `Robot arm number ${i + offset} grasps objects with a learned gripper policy and servo motors`,
    tag: 'robotics',
  }));
