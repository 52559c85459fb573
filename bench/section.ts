/**
 * What a benchmark section is, shared by bench/run.ts and the sections: the options it runs with, the rows
 * it returns (or a SectionResult with breakage and notes), and a row maker. run.ts imports the sections and
 * the sections import this module, never run.ts, so the imports point one way (no cycle through run.ts's
 * top-level `await main()`).
 */

export interface BenchOptions {
  /** Fewer repetitions, for a smoke run. */
  quick: boolean;
}

export interface BenchRow {
  /** Section name, e.g. "model". */
  section: string;
  metric: string;
  unit: string;
  /** Tagger's (TypeScript) value. */
  tagger: number | null;
  /** The reference implementation's value (scikit-learn, ...), or null when there is none. */
  reference: number | null;
  note?: string;
  /** A target this figure is judged against, e.g. ">= 0.6x floor". */
  target?: { text: string; pass: boolean };
}

export interface SectionResult {
  rows: BenchRow[];
  /** What can only mean something is broken; makes the run exit non-zero. */
  breakage?: string[];
  notes?: string[];
  /** Raw measurements, written to the JSON file only. */
  details?: unknown;
}

/** What a section module exports. */
export interface SectionModule {
  run(opts: BenchOptions): Promise<BenchRow[] | SectionResult>;
}

/** `row(metric, unit, tagger, reference, note?)` for one section. */
export const rowsOf =
  (section: string) =>
  (metric: string, unit: string, tagger: number | null, reference: number | null, note?: string): BenchRow =>
    note === undefined
      ? { section, metric, unit, tagger, reference }
      : { section, metric, unit, tagger, reference, note };

/**
 * One row of a section's table as a named case, as Hono's router benchmarks list their routes: its
 * values, note and target read off the section's results `R`, shown only `when` what it compares was
 * measured. A section lists its rows in a table of these and makes them in one loop (`rowsFrom`).
 */
export interface RowCase<R> {
  metric: string | ((r: R) => string);
  unit: string;
  when?(r: R): boolean;
  tagger(r: R): number | null;
  reference(r: R): number | null;
  note?(r: R): string;
  /** Judged when it applies (`when`, default always). */
  target?: { text: string; pass(r: R): boolean; when?(r: R): boolean };
}

/** The rows of `cases` that apply to `results`, in the table's order. */
export function rowsFrom<R>(section: string, cases: readonly RowCase<R>[], results: R): BenchRow[] {
  return cases
    .filter((c) => c.when?.(results) ?? true)
    .map((c) => {
      const metric = typeof c.metric === 'string' ? c.metric : c.metric(results);
      const row = rowsOf(section)(metric, c.unit, c.tagger(results), c.reference(results), c.note?.(results));
      const { target } = c;
      return target && (target.when?.(results) ?? true)
        ? { ...row, target: { text: target.text, pass: target.pass(results) } }
        : row;
    });
}
