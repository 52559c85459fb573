/**
 * A model of many tags (hundreds, as issue 31's users bring) for the serving and page tests: labelled
 * texts generated here — a small copy of bench/scale-data.ts's idea (tests do not import bench/): each
 * tag has its own made-up topic words, mixed with common words, seeded — and a fastText-style run trained
 * on them in seconds and logged the real way (performance, confusion matrix, mistakes).
 */

import { type LabelledText, parseTrainingArgs } from '../../src/model/index.js';
import { createRng, randomInt } from '../../src/model/rng.js';
import { openTrackingStore } from '../../src/tracking/index.js';
import { logTrainingRun } from '../../src/train/log-run.js';
import { trainAndEvaluate } from '../../src/train/pipeline.js';

/** `tag-000`, `tag-001`, … : sorted as the model sorts its tags. */
export const manyTagName = (k: number): string => `tag-${String(k).padStart(3, '0')}`;

/** A made-up word: two or three syllables. */
function word(random: () => number): string {
  let out = '';
  for (let s = 2 + randomInt(random, 2); s > 0; s--)
    out += 'bdfgklmnprstvz'[randomInt(random, 14)]! + 'aeiou'[randomInt(random, 5)]!;
  return out;
}

/** `rows` texts over `tags` tags (equally often), each of 12 words, half of them its tag’s own. */
export function manyTagRows(rows: number, tags: number, seed = 31): LabelledText[] {
  const random = createRng(seed);
  const common = Array.from({ length: 2000 }, () => word(random));
  const topics = Array.from({ length: tags }, () => Array.from({ length: 8 }, () => word(random)));
  return Array.from({ length: rows }, (_, i) => {
    const k = i % tags;
    const words = Array.from({ length: 12 }, () =>
      random() < 0.5 ? topics[k]![randomInt(random, 8)]! : common[randomInt(random, common.length)]!,
    );
    return { text: words.join(' '), tag: manyTagName(k) };
  });
}

/** Training arguments that fit hundreds of tags in seconds: fasttext, every tag kept, few epochs. */
export const MANY_TAG_ARGS = { classifier: 'fasttext', min_freq: 1, ft_epochs: 25, ft_dim: 16 } as const;

/**
 * Trains a `tags`-tag model on `rows` generated rows and logs it as a run of experiment `best` in the
 * store at `trackingUri`; its run id.
 */
export async function logManyTagRun(trackingUri: string, tags: number, rows = tags * 8): Promise<string> {
  const store = await openTrackingStore(trackingUri);
  try {
    const args = parseTrainingArgs({ ...MANY_TAG_ARGS });
    const outcome = trainAndEvaluate({ data: manyTagRows(rows, tags), args, seed: 42 });
    const logged = await logTrainingRun(store, {
      experiment: 'best',
      runName: `${tags}-tags`,
      args,
      seed: 42,
      outcome,
      source: 'test',
    });
    return logged.runId;
  } finally {
    await store.close();
  }
}
