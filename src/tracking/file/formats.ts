/**
 * The file formats of MLflow's `mlruns/` layout, read and written exactly as MLflow's FileStore does:
 * metric files (`<timestamp> <value> <step>` per line, values as Python's `float()` reads them) and
 * `meta.yaml` (YAML 1.1 as PyYAML writes it; ids stay strings). Pure: no I/O.
 */
import { isMap, isScalar, isSeq, parseDocument, stringify } from 'yaml';
import type { LifecycleStage, MetricPoint } from '../store.js';
import { TrackingError } from '../store.js';

/** A `meta.yaml` scalar as written: its text and whether it was quoted (quoted text is always a string). */
export interface RawScalar {
  text: string;
  plain: boolean;
}
export type RawMeta = Map<string, RawScalar | 'collection'>;

export const malformed = (file: string, problem: string): TrackingError =>
  new TrackingError(
    'MALFORMED',
    `tracking: ${file} is malformed: ${problem}; fix or remove that file (MLflow would fail on it too)`,
  );

const DECIMAL_RE = /^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/;

/** Python's `float()` on MLflow's metric text: decimals, exponents, and nan/inf/infinity in any case. */
export function parseMetricValue(text: string): number | null {
  const special = /^([+-]?)(nan|inf|infinity)$/i.exec(text);
  if (special) {
    if (special[2]!.toLowerCase() === 'nan') return Number.NaN;
    return special[1] === '-' ? Number.NEGATIVE_INFINITY : Number.POSITIVE_INFINITY;
  }
  if (!DECIMAL_RE.test(text)) return null;
  return Number(text);
}

/** The value as MLflow writes it (`f"{value}"`): `nan`, `inf`, `-inf`, otherwise JS's shortest repr. */
export function formatMetricValue(value: number): string {
  if (Number.isNaN(value)) return 'nan';
  if (value === Number.POSITIVE_INFINITY) return 'inf';
  if (value === Number.NEGATIVE_INFINITY) return '-inf';
  return String(value);
}

const INT_RE = /^[+-]?\d+$/;

/**
 * Parses one metric line: `<ts> <value> [<step> [<dataset_name> <dataset_digest>]]` — 2, 3 or 5 fields
 * separated by single spaces, as `_get_metric_from_line` does (5-field lines keep step 0, like MLflow).
 */
export function parseMetricLine(key: string, line: string, file: string): MetricPoint {
  const fields = line.trim().split(' ');
  if (fields.length !== 2 && fields.length !== 3 && fields.length !== 5) {
    throw malformed(file, `a line has ${fields.length} fields, expected 2, 3 or 5: '${line.slice(0, 80)}'`);
  }
  const [timestampText, valueText, stepText] = fields as [string, string, string | undefined];
  if (!INT_RE.test(timestampText)) throw malformed(file, `timestamp '${timestampText}' is not an integer`);
  const value = parseMetricValue(valueText);
  if (value === null) throw malformed(file, `value '${valueText}' is not a number`);
  let step = 0;
  if (fields.length === 3) {
    if (!INT_RE.test(stepText!)) throw malformed(file, `step '${stepText}' is not an integer`);
    step = Number(stepText);
  }
  return { key, value, timestamp: Number(timestampText), step };
}

/**
 * The latest value (`latestMetric`'s rule) of a metric file's text, for loading runs. Equal to parsing
 * every line with parseMetricLine and taking latestMetric, errors included, but without a MetricPoint
 * or a split array per line: the common line (`<int> <number> <int>` or `<int> <number>`, printable
 * ASCII at both ends so trimming is a no-op) is scanned in place, every other line goes through
 * parseMetricLine. Measured on 5,000 metric files (120,000 lines) of a 1,000-run store: 120 ms with
 * parseMetricLine per line, ~55 ms with this scan.
 */
export function latestMetricValue(key: string, text: string, file: string): number | undefined {
  // Python's readlines(): a trailing newline does not start another line.
  if (text === '') throw malformed(file, 'no data');
  let found = false;
  let bestStep = 0;
  let bestTimestamp = 0;
  let bestValue = 0;
  let start = 0;
  while (start < text.length) {
    let end = text.indexOf('\n', start);
    if (end === -1) end = text.length;
    const line = text.slice(start, end);
    start = end + 1;
    let timestamp = Number.NaN;
    let value: number | null = null;
    let step = 0;
    const first = line.charCodeAt(0);
    const last = line.charCodeAt(line.length - 1);
    const space1 = line.indexOf(' ');
    const space2 = space1 === -1 ? -1 : line.indexOf(' ', space1 + 1);
    if (
      first > 32 &&
      first < 127 &&
      last > 32 &&
      last < 127 &&
      space1 !== -1 &&
      (space2 === -1 || line.indexOf(' ', space2 + 1) === -1)
    ) {
      const timestampText = line.slice(0, space1);
      const stepText = space2 === -1 ? '0' : line.slice(space2 + 1);
      if (INT_RE.test(timestampText) && INT_RE.test(stepText)) {
        timestamp = Number(timestampText);
        step = Number(stepText);
        const valueText = space2 === -1 ? line.slice(space1 + 1) : line.slice(space1 + 1, space2);
        // Decimal first: nan/inf spellings are rare, and parseMetricValue tries them first.
        value = DECIMAL_RE.test(valueText) ? Number(valueText) : parseMetricValue(valueText);
      }
    }
    if (value === null) {
      // Anything unusual (5 fields, surrounding whitespace, or an error to report) takes the full path.
      const point = parseMetricLine(key, line, file);
      ({ timestamp, value, step } = point);
    }
    if (
      !found ||
      step > bestStep ||
      (step === bestStep && (timestamp > bestTimestamp || (timestamp === bestTimestamp && value > bestValue)))
    ) {
      found = true;
      bestStep = step;
      bestTimestamp = timestamp;
      bestValue = value;
    }
  }
  return found ? bestValue : undefined;
}

/**
 * Parses a `meta.yaml`: the common flat shape by hand (`parseFlatMeta`), anything else with the `yaml`
 * package (`parseMetaWithYaml`); both give the same result for every text the hand parser accepts.
 */
export function parseMeta(text: string, file: string): RawMeta {
  return parseFlatMeta(text) ?? parseMetaWithYaml(text, file);
}

/** A top-level `key:` line of a flat mapping, and the rest of the line. */
const FLAT_LINE_RE = /^([A-Za-z_][A-Za-z0-9_]*):(?: +(.*))?$/;
/**
 * Plain scalars the hand parser takes as they are: ASCII from a set with no YAML indicator that could
 * change their meaning (no `#`, quotes, brackets, `&`, `*`, `!`, `|`, `>`, `?`), not starting with `-`
 * (a sequence entry when followed by a space) or `%`, `@`, `,` (indicators), no `: ` or trailing `:` (a nested mapping), no
 * trailing space. `1e5`, `null`, `file:///a/b`, `my run 2` all qualify; what they mean is decided later
 * (metaString/metaInt) exactly as for the yaml package's result.
 */
const FLAT_PLAIN_RE = /^[A-Za-z0-9_./~+=(][A-Za-z0-9 _./~+:@%=,()-]*$/;
/** A single-quoted scalar on one line: `''` is an escaped quote, nothing else is special. */
const FLAT_SINGLE_QUOTED_RE = /^'((?:[^']|'')*)'$/;
/** A double-quoted scalar on one line without escapes. */
const FLAT_DOUBLE_QUOTED_RE = /^"([^"\\]*)"$/;

/**
 * Hand parser for the flat `key: value` meta.yaml that MLflow (PyYAML `safe_dump`) and Tagger write;
 * null when the text has anything else (comments, multi-line or nested values, non-ASCII, CR, tabs,
 * duplicate keys, flow collections other than `[]`/`{}`, ...), which then goes to the yaml package.
 * Why by hand: `yaml`'s parseDocument took ~0.25 ms per run meta.yaml, a third of searchRuns on a
 * 1,000-run experiment (0.3 s of startup on the 2-core bench machine); this takes a few microseconds.
 * The result equals parseMetaWithYaml's (test/tracking/file/file-store.test.ts compares them).
 */
function parseFlatMeta(text: string): RawMeta | null {
  // Printable ASCII and newlines only: no tabs, CR, BOM or Unicode line/space characters to interpret.
  if (!/^[\x20-\x7e\n]+$/.test(text)) return null;
  const lines = text.split('\n');
  if (lines.at(-1) === '') lines.pop();
  if (lines.length === 0) return null;
  const meta: RawMeta = new Map();
  for (const line of lines) {
    const match = FLAT_LINE_RE.exec(line);
    if (match === null) return null;
    const key = match[1]!;
    if (meta.has(key)) return null;
    const value = (match[2] ?? '').trimEnd();
    if (value === '') {
      meta.set(key, { text: '', plain: true });
    } else if (value === '[]' || value === '{}') {
      meta.set(key, 'collection');
    } else if (value.startsWith("'")) {
      const quoted = FLAT_SINGLE_QUOTED_RE.exec(value);
      if (quoted === null) return null;
      meta.set(key, { text: quoted[1]!.replaceAll("''", "'"), plain: false });
    } else if (value.startsWith('"')) {
      const quoted = FLAT_DOUBLE_QUOTED_RE.exec(value);
      if (quoted === null) return null;
      meta.set(key, { text: quoted[1]!, plain: false });
    } else if (FLAT_PLAIN_RE.test(value) && !value.includes(': ') && !value.endsWith(':')) {
      meta.set(key, { text: value, plain: true });
    } else {
      return null;
    }
  }
  return meta;
}

/**
 * Parses a `meta.yaml` with the failsafe schema (every scalar a string) and keeps quoting, so values
 * are interpreted the way PyYAML wrote them: PyYAML quotes any string that YAML 1.1 would read as
 * something else, so a plain `1e5` is the string "1e5" and a plain `null` is null. This avoids YAML
 * 1.1/1.2 disagreements and never turns 18-digit ids into lossy numbers.
 */
export function parseMetaWithYaml(text: string, file: string): RawMeta {
  const doc = parseDocument(text, { schema: 'failsafe', uniqueKeys: true });
  if (doc.errors.length > 0) throw malformed(file, `invalid YAML (${doc.errors[0]!.message.split('\n')[0]})`);
  if (!isMap(doc.contents)) throw malformed(file, 'expected a mapping of fields');
  const meta: RawMeta = new Map();
  for (const item of doc.contents.items) {
    if (!isScalar(item.key)) throw malformed(file, 'a field name is not a plain string');
    const key = String(item.key.value);
    if (item.value === null || item.value === undefined) {
      meta.set(key, { text: '', plain: true });
    } else if (isScalar(item.value)) {
      meta.set(key, { text: String(item.value.value), plain: item.value.type === 'PLAIN' });
    } else if (isSeq(item.value) || isMap(item.value)) {
      meta.set(key, 'collection');
    } else {
      throw malformed(file, `field '${key}' has an unsupported value`);
    }
  }
  return meta;
}

const isNullScalar = (raw: RawScalar): boolean =>
  raw.plain && ['', '~', 'null', 'Null', 'NULL'].includes(raw.text);

export function metaString(meta: RawMeta, field: string, file: string): string | null {
  const raw = meta.get(field);
  if (raw === undefined) return null;
  if (raw === 'collection') throw malformed(file, `field '${field}' must be a string`);
  return isNullScalar(raw) ? null : raw.text;
}

export function metaInt(meta: RawMeta, field: string, file: string): number | null {
  const text = metaString(meta, field, file);
  if (text === null) return null;
  if (!INT_RE.test(text)) throw malformed(file, `field '${field}' must be an integer, got '${text}'`);
  return Number(text);
}

export function metaLifecycle(meta: RawMeta, file: string): LifecycleStage {
  const stage = metaString(meta, 'lifecycle_stage', file) ?? 'active';
  if (stage !== 'active' && stage !== 'deleted') {
    throw malformed(file, `lifecycle_stage must be 'active' or 'deleted', got '${stage}'`);
  }
  return stage;
}

/** Serializes a meta.yaml like MLflow (sorted keys, block style), quoting anything YAML 1.1 would retype. */
export function dumpMeta(
  data: Record<string, string | number | null | never[] | Record<string, string>>,
): string {
  return stringify(data, { version: '1.1', sortMapEntries: true, lineWidth: 0, singleQuote: true });
}
