/**
 * A row maker for the sections' tables. Not in run.ts: a section importing a value from run.ts would wait
 * for run.ts's top-level `await main()`, which waits for the section (an import cycle that never settles).
 */
import type { BenchRow } from './run.js';

/** `row(metric, unit, tagger, reference, note?)` for one section. */
export const rowsOf =
  (section: string) =>
  (metric: string, unit: string, tagger: number | null, reference: number | null, note?: string): BenchRow =>
    note === undefined
      ? { section, metric, unit, tagger, reference }
      : { section, metric, unit, tagger, reference, note };
