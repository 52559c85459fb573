/** Reading a run's error artifacts: single-label (matrix + mistakes) and multi-label (mistakes only). */
import { describe, expect, it } from 'vitest';
import { RUN_ARTIFACTS } from '../../src/model/index.js';
import { readMistakes } from '../../src/served-models/inspection.js';
import { TrackingError } from '../../src/tracking/index.js';

const reader =
  (files: Record<string, unknown>) =>
  async (path: string): Promise<Uint8Array> => {
    if (!(path in files)) throw new TrackingError('NOT_FOUND', `no ${path}`);
    return new TextEncoder().encode(JSON.stringify(files[path]));
  };

const multiMistake = {
  text: 't',
  true_tag: 'a|b',
  predicted_tag: 'a',
  confidence: 0.9,
  true_tags: ['a', 'b'],
  predicted_tags: ['a'],
};

describe('readMistakes', () => {
  it('reads a multi-label run’s mistakes without a confusion matrix', async () => {
    const read = reader({
      [RUN_ARTIFACTS.mistakes]: { multi_label: true, total: 3, mistakes: [multiMistake] },
    });
    expect(await readMistakes(read)).toEqual({ confusion: null, total: 3, mistakes: [multiMistake] });
  });

  it('needs the tag lists of a multi-label mistake', async () => {
    const { true_tags: _, ...withoutTrueTags } = multiMistake;
    const read = reader({
      [RUN_ARTIFACTS.mistakes]: { multi_label: true, total: 1, mistakes: [withoutTrueTags] },
    });
    await expect(readMistakes(read)).rejects.toThrow(
      /mistakes\[0\] must have .* true_tags and predicted_tags/,
    );
  });

  it('still needs the matrix of a single-label run (a missing one is the store’s NOT_FOUND)', async () => {
    const mistake = { text: 't', true_tag: 'a', predicted_tag: 'b', confidence: 0.5 };
    const read = reader({ [RUN_ARTIFACTS.mistakes]: { total: 1, mistakes: [mistake] } });
    await expect(readMistakes(read)).rejects.toMatchObject({ code: 'NOT_FOUND' });
    const withMatrix = reader({
      [RUN_ARTIFACTS.mistakes]: { total: 1, mistakes: [mistake] },
      [RUN_ARTIFACTS.confusion]: {
        labels: ['a', 'b'],
        matrix: [
          [0, 1],
          [0, 0],
        ],
      },
    });
    expect(await readMistakes(withMatrix)).toEqual({
      confusion: {
        labels: ['a', 'b'],
        matrix: [
          [0, 1],
          [0, 0],
        ],
      },
      total: 1,
      mistakes: [mistake],
    });
  });
});
