/** Prediction ids (src/monitoring/ids.ts): version-7 UUIDs, unique, ordered by time, carrying it. */
import { describe, expect, it } from 'vitest';
import { predictionId } from '../../src/monitoring/ids.js';

describe('predictionId', () => {
  it('makes RFC 9562 version-7 UUIDs that carry their millisecond and sort by it', () => {
    const ids = Array.from({ length: 5000 }, (_, i) => predictionId(1_767_225_600_000 + i));
    for (const id of ids)
      expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(new Set(ids).size).toBe(ids.length);
    expect([...ids].sort()).toEqual(ids);
    expect(Number.parseInt(ids[0]!.replace(/-/g, '').slice(0, 12), 16)).toBe(1_767_225_600_000);
  });

  it('never repeats within one millisecond', () => {
    const now = Date.now();
    const ids = Array.from({ length: 20_000 }, () => predictionId(now));
    expect(new Set(ids).size).toBe(ids.length);
  });
});
