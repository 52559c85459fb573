/**
 * Planted label errors, for the tests and the benchmark of label-issue finding and of reviewing them: rows
 * whose tag is moved, seeded, to another tag of the data.
 */
import { createRng } from '../../src/model/index.js';
import { randomInt } from '../../src/model/rng.js';
import { type DatasetRow, readDataset } from '../../src/train/data.js';
import { SAMPLE_DATA } from './components.js';

/** `count` distinct rows (seeded) given another tag, drawn uniformly from the other tags. */
export function flipTags(
  rows: readonly DatasetRow[],
  count: number,
  seed: number,
): { rows: DatasetRow[]; flipped: Set<number> } {
  const rng = createRng(seed);
  const tags = [...new Set(rows.map((r) => r.tag))].sort();
  const flipped = new Set<number>();
  while (flipped.size < count) flipped.add(randomInt(rng, rows.length));
  return {
    rows: rows.map((row, i) => {
      if (!flipped.has(i)) return row;
      const others = tags.filter((t) => t !== row.tag);
      return { ...row, tag: others[randomInt(rng, others.length)]! };
    }),
    flipped,
  };
}

/**
 * The sample data with every 50th row (from the 8th) moved between mlops and computer-vision: a run
 * trained on it has label issues to review.
 */
export async function sampleWithWrongTags(): Promise<DatasetRow[]> {
  return (await readDataset(SAMPLE_DATA)).map((row, i) =>
    i % 50 === 7 ? { ...row, tag: row.tag === 'mlops' ? 'computer-vision' : 'mlops' } : row,
  );
}
