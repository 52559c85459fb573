/**
 * What a text is to a `fasttext` model: the ids of its rows in the input matrix — one per dictionary word,
 * one per hashed word n-gram (two or more consecutive words), and one per hashed character n-gram of each
 * word when `ft_maxn` > 0 — as fastText's supervised model builds them (Joulin et al., "Bag of Tricks for
 * Efficient Text Classification", 2017). Rows [0, words) are the dictionary's words; rows [words, words +
 * buckets) are shared by the hashed n-grams. Written by hand: no maintained JS library builds fastText's
 * features, and the hashing here only has to be stable for Tagger's own models (FNV-1a over UTF-16 code
 * units, not fastText's bytes).
 */

/** The settings the features depend on (the model records them). */
export interface FastTextFeatureSpec {
  wordNgrams: number;
  minn: number;
  maxn: number;
  buckets: number;
}

/** 32-bit FNV-1a of a string's UTF-16 code units. */
export function hashString(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

/** fastText's multiplier for hashing a word n-gram from its words' hashes. */
const NGRAM_MULTIPLIER = 116049371;

/**
 * fastText's end-of-line token: every text has it once, as its last word, so its row acts as a learned bias
 * (a text with no known word still gets the tags' prior).
 */
export const END_OF_TEXT = '</s>';

/** The words of a cleaned text (preprocess.ts's `cleanText`: lower-cased, single spaces), then END_OF_TEXT. */
export const tokensOf = (clean: string): string[] =>
  clean === '' ? [END_OF_TEXT] : [...clean.split(' '), END_OF_TEXT];

export class FastTextFeatures {
  readonly words: readonly string[];
  readonly spec: FastTextFeatureSpec;
  private readonly ids: Map<string, number>;
  /** Scratch for `rowsOf` (grown when a text needs more). */
  private rows = new Int32Array(256);
  private hashes = new Uint32Array(64);

  constructor(words: readonly string[], spec: FastTextFeatureSpec) {
    this.words = Object.freeze([...words]);
    this.spec = Object.freeze({ ...spec });
    this.ids = new Map(words.map((w, i) => [w, i]));
  }

  /** A word's row (its id), or -1 when it is not in the vocabulary. */
  wordRow(word: string): number {
    return this.ids.get(word) ?? -1;
  }

  /** Rows of the input matrix: the words, then the buckets. */
  get inputRows(): number {
    return this.words.length + this.spec.buckets;
  }

  /** The input rows of a cleaned text, in `rowIndices` [0, returned count); overwritten by the next call. */
  rowsOf(clean: string): number {
    const tokens = tokensOf(clean);
    const { wordNgrams, maxn, buckets } = this.spec;
    const nWords = this.words.length;
    if (this.hashes.length < tokens.length) this.hashes = new Uint32Array(tokens.length * 2);
    this.ensure(0, tokens.length);
    let n = 0;
    for (let i = 0; i < tokens.length; i++) {
      const token = tokens[i]!;
      this.hashes[i] = hashString(token);
      const id = this.ids.get(token);
      if (id !== undefined) this.rows[n++] = id;
      if (maxn > 0 && token !== END_OF_TEXT) n = this.addSubwords(token, n, nWords, buckets);
    }
    this.ensure(n, tokens.length * (wordNgrams - 1));
    for (let i = 0; i < tokens.length; i++) {
      let h = this.hashes[i]!;
      for (let j = i + 1; j < tokens.length && j < i + wordNgrams; j++) {
        h = (Math.imul(h, NGRAM_MULTIPLIER) + this.hashes[j]!) >>> 0;
        this.rows[n++] = nWords + (h % buckets);
      }
    }
    return n;
  }

  /** Room for `more` rows after the first `used` (kept). */
  private ensure(used: number, more: number): void {
    if (this.rows.length >= used + more) return;
    const grown = new Int32Array((used + more) * 2 + 16);
    grown.set(this.rows.subarray(0, used));
    this.rows = grown;
  }

  /** The row indices of the last `rowsOf` call. */
  get rowIndices(): Int32Array {
    return this.rows;
  }

  /** The character n-grams of `<token>` (fastText's: not the lone `<` or `>`), as bucket rows. */
  private addSubwords(token: string, n: number, nWords: number, buckets: number): number {
    const word = `<${token}>`;
    const { minn, maxn } = this.spec;
    this.ensure(n, subwordCount(word.length, minn, maxn));
    for (let i = 0; i < word.length; i++) {
      for (let len = minn; len <= maxn && i + len <= word.length; len++) {
        if (len === 1 && (i === 0 || i + len === word.length)) continue;
        this.rows[n++] = nWords + (hashString(word.slice(i, i + len)) % buckets);
      }
    }
    return n;
  }

  /** A readable name for an input row (explanations): the word, or the n-gram found in `clean` that hashed there. */
  nameOf(row: number, clean: string): string {
    if (row < this.words.length) return this.words[row]!;
    const tokens = tokensOf(clean);
    const { wordNgrams, minn, maxn, buckets } = this.spec;
    const bucket = row - this.words.length;
    for (let i = 0; i < tokens.length; i++) {
      for (let len = 2; len <= wordNgrams && i + len <= tokens.length; len++) {
        const words = tokens.slice(i, i + len);
        let h = hashString(words[0]!);
        for (const w of words.slice(1)) h = (Math.imul(h, NGRAM_MULTIPLIER) + hashString(w)) >>> 0;
        if (h % buckets === bucket) return words.join(' ');
      }
      if (maxn > 0) {
        const word = `<${tokens[i]}>`;
        for (let s = 0; s < word.length; s++) {
          for (let len = minn; len <= maxn && s + len <= word.length; len++) {
            const gram = word.slice(s, s + len);
            if (hashString(gram) % buckets === bucket) return gram;
          }
        }
      }
    }
    return `#${bucket}`;
  }
}

/** At most how many character n-grams a word of `length` characters (with its `<` `>`) has. */
function subwordCount(length: number, minn: number, maxn: number): number {
  let count = 0;
  for (let len = minn; len <= maxn; len++) count += Math.max(0, length - len + 1);
  return count;
}

/** The dictionary of training texts: every word seen at least `minCount` times, most frequent first. */
export function buildDictionary(cleanTexts: readonly string[], minCount: number): string[] {
  const counts = new Map<string, number>();
  for (const text of cleanTexts)
    for (const token of tokensOf(text)) counts.set(token, (counts.get(token) ?? 0) + 1);
  return [...counts]
    .filter(([, count]) => count >= minCount)
    .sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0))
    .map(([word]) => word);
}
