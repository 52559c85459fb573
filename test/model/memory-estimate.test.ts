/**
 * The memory estimate before a training: the data's shape measured on a sample and extrapolated, each
 * family's parts growing with what its training holds (features x tags for dense weights, words and hash
 * buckets for fasttext), and sizes written for a person.
 */
import { describe, expect, it } from 'vitest';
import {
  type DataShape,
  dataShape,
  describeEstimate,
  estimateTrainingMemory,
  formatBytes,
  parseTrainingArgs,
} from '../../src/model/index.js';
import { TRAIN } from './fixtures.js';

const shape: DataShape = {
  rows: 50_000,
  tags: 50,
  features: 800_000,
  nonZeros: 27_000_000,
  words: 56_000,
  tokens: 1_770_000,
  textBytes: 26_000_000,
};

describe('dataShape', () => {
  it('counts the rows, and extrapolates features and words beyond the sample, never below it', () => {
    const args = parseTrainingArgs({ min_freq: 1 });
    const texts = TRAIN.map((row) => row.text);
    const measured = dataShape(texts, 4, args);
    expect(measured).toMatchObject({ rows: texts.length, tags: 4 });
    expect(measured.features).toBeGreaterThan(0);
    expect(measured.nonZeros).toBeGreaterThan(measured.rows);
    // Ten copies of the texts: the same vocabulary, ten times the rows, words and non-zeros (all in the sample).
    const many = dataShape(Array.from({ length: 10 }, () => texts).flat(), 4, args);
    expect(many.rows).toBe(10 * texts.length);
    expect(many.nonZeros).toBeGreaterThanOrEqual(9 * measured.nonZeros);
    expect(many.features).toBeGreaterThanOrEqual(measured.features);
    expect(many.textBytes).toBe(10 * measured.textBytes);
  });
});

describe('estimateTrainingMemory', () => {
  it("grows with features x tags for the members' dense weights, and names its largest parts", () => {
    const args = parseTrainingArgs({ classifier: 'linear_svm' });
    const few = estimateTrainingMemory({ ...shape, tags: 4 }, args, 2);
    const many = estimateTrainingMemory({ ...shape, tags: 500 }, args, 2);
    // 800,000 features x 496 more tags x 12 bytes (Float64 training weights, a Float32 copy saved).
    expect(many.bytes - few.bytes).toBeGreaterThan(800_000 * 496 * 12 * 0.99);
    expect(many.parts.reduce((sum, part) => sum + part.bytes, 0)).toBe(many.bytes);
    expect(describeEstimate(many)).toMatch(
      /^about \d+\.\d GB \(1 dense member weights: 800,000 features x 500 tags: /,
    );
  });

  it("keeps fasttext's size to its words and buckets, whatever the tags", () => {
    const args = parseTrainingArgs({ classifier: 'fasttext' });
    const few = estimateTrainingMemory({ ...shape, tags: 4 }, args, 2);
    const many = estimateTrainingMemory({ ...shape, tags: 500 }, args, 2);
    expect(many.bytes - few.bytes).toBeLessThan(1024 * 1024);
    const buckets = parseTrainingArgs({ classifier: 'fasttext', ft_buckets: 1 << 16 });
    expect(estimateTrainingMemory(shape, buckets, 2).bytes).toBeLessThan(few.bytes);
  });

  it('counts the SGD weights once per copy the training keeps (average, ensemble)', () => {
    const plain = estimateTrainingMemory(shape, parseTrainingArgs({ classifier: 'ovr' }), 1);
    const averaged = estimateTrainingMemory(
      shape,
      parseTrainingArgs({ classifier: 'ovr', average: true }),
      1,
    );
    expect(averaged.bytes - plain.bytes).toBe(8 * shape.features * shape.tags);
  });

  it('estimates a cascade as its larger stage (the stages and their fold models train one after another)', () => {
    const cascade = parseTrainingArgs({ encoder: 'minilm', cascade: true });
    const encoderStage = parseTrainingArgs({ encoder: 'minilm' });
    const fastStage = parseTrainingArgs({});
    const bytes = (args: typeof cascade) => estimateTrainingMemory(shape, args, 2).bytes;
    expect(bytes(cascade)).toBe(Math.max(bytes(encoderStage), bytes(fastStage)));
  });
});

describe('formatBytes', () => {
  it('writes sizes in powers of 1024', () => {
    expect(formatBytes(512)).toBe('512 B');
    expect(formatBytes(2048)).toBe('2 KB');
    expect(formatBytes(1.5 * 2 ** 20)).toBe('1.5 MB');
    expect(formatBytes(6.25 * 2 ** 30)).toBe('6.3 GB');
  });
});
