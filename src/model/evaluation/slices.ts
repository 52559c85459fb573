/**
 * Data slices: named subsets of the evaluation rows whose metrics the performance report lists beside
 * the overall and per-tag ones (tagifai's `slices`). A slice is defined by data, not code, so a user
 * can give their own (`tagger train --slices <file>`) and the run can record what each slice meant:
 *
 *     slices:
 *       - name: nlp_cnn
 *         where: { tag: natural-language-processing, text_matches: "cnn|convolution" }
 *       - name: short_text
 *         where: { words_below: 8 }
 *
 * The conditions of one `where` must all hold. `tag` is the true tag as the model knows it (tags it
 * folded count as `other`); `text_matches` is a JavaScript regular expression, case-insensitive unless
 * `case_sensitive: true`; words are runs of non-blank characters of the raw text.
 */
import {
  at,
  integerIn,
  invalid,
  list,
  nonEmptyString,
  onlyKeys,
  record,
  uniqueNames,
  type Where,
} from './definition-file.js';

export interface SliceCondition {
  tag?: string;
  text_matches?: string;
  case_sensitive?: boolean;
  words_below?: number;
  words_at_least?: number;
}

export interface SliceDefinition {
  name: string;
  where: SliceCondition;
}

/** A slice ready to test rows, judged on the (already normalised) true tag and the raw text. */
export interface Slice {
  name: string;
  includes: (text: string, trueTag: string) => boolean;
}

/** tagifai's slices, for the course data: NLP projects that mention CNNs, and texts under 8 words. */
export const DEFAULT_SLICE_DEFINITIONS: readonly SliceDefinition[] = Object.freeze([
  { name: 'nlp_cnn', where: { tag: 'natural-language-processing', text_matches: 'cnn|convolution' } },
  { name: 'short_text', where: { words_below: 8 } },
]);

const SPACE_RE = /\s+/;
const wordCount = (text: string): number => text.split(SPACE_RE).filter((w) => w !== '').length;

/** Turns definitions into slices; the regular expressions were checked when the definitions were parsed. */
export function compileSlices(definitions: readonly SliceDefinition[]): Slice[] {
  return definitions.map(({ name, where }) => {
    const re =
      where.text_matches === undefined
        ? null
        : new RegExp(where.text_matches, where.case_sensitive === true ? 'u' : 'iu');
    return {
      name,
      includes: (text, tag) =>
        (where.tag === undefined || tag === where.tag) &&
        (re === null || re.test(text)) &&
        (where.words_below === undefined || wordCount(text) < where.words_below) &&
        (where.words_at_least === undefined || wordCount(text) >= where.words_at_least),
    };
  });
}

const CONDITIONS = ['tag', 'text_matches', 'case_sensitive', 'words_below', 'words_at_least'] as const;

function parseCondition(raw: unknown, where: Where): SliceCondition {
  const value = record(raw, where);
  onlyKeys(value, CONDITIONS, where);
  if (!CONDITIONS.some((key) => key !== 'case_sensitive' && value[key] !== undefined)) {
    throw invalid(where, 'needs at least one condition: tag, text_matches, words_below or words_at_least');
  }
  const out: SliceCondition = {};
  if (value.tag !== undefined) out.tag = nonEmptyString(value.tag, at(where, 'tag'));
  if (value.text_matches !== undefined) {
    const pattern = nonEmptyString(value.text_matches, at(where, 'text_matches'));
    try {
      new RegExp(pattern, 'u');
    } catch (error) {
      throw invalid(
        at(where, 'text_matches'),
        `is not a valid regular expression: ${(error as Error).message}`,
      );
    }
    out.text_matches = pattern;
  }
  if (value.case_sensitive !== undefined) {
    if (typeof value.case_sensitive !== 'boolean') {
      throw invalid(at(where, 'case_sensitive'), 'must be true or false');
    }
    out.case_sensitive = value.case_sensitive;
  }
  if (value.words_below !== undefined) {
    out.words_below = integerIn(value.words_below, 1, 1_000_000, at(where, 'words_below'));
  }
  if (value.words_at_least !== undefined) {
    out.words_at_least = integerIn(value.words_at_least, 0, 1_000_000, at(where, 'words_at_least'));
  }
  return out;
}

const NAME_RE = /^[\w.\- ]{1,100}$/;

/**
 * Slice definitions from a parsed JSON/YAML file: `{ slices: [{ name, where }, …] }`.
 * @throws ModelInputError naming the file and the bad value's path.
 */
export function parseSliceDefinitions(raw: unknown, source: string): SliceDefinition[] {
  const root: Where = { source, path: '' };
  const value = record(raw, root);
  onlyKeys(value, ['slices'], root);
  const items = list(value.slices, at(root, 'slices'));
  const definitions = items.map((item, index) => {
    const where = at(at(root, 'slices'), index);
    const entry = record(item, where);
    onlyKeys(entry, ['name', 'where'], where);
    const name = nonEmptyString(entry.name, at(where, 'name'));
    // Names become keys of /performance's `slices` and MLflow metric-like labels: keep them plain.
    if (!NAME_RE.test(name)) {
      throw invalid(at(where, 'name'), 'may hold only letters, digits, _ - . and spaces (at most 100)');
    }
    return { name, where: parseCondition(entry.where, at(where, 'where')) };
  });
  uniqueNames(
    definitions.map((d) => d.name),
    at(root, 'slices'),
    'slice',
  );
  return definitions;
}
