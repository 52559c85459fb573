/**
 * Duplicate and near-duplicate texts, as training, retraining and the review queue judge them.
 *
 * Two texts are **the same** when their duplicate keys are equal: Unicode NFKC, lower case, runs of digits
 * dropped, every run of anything that is not a letter (punctuation, symbols, spacing) one space, trimmed —
 * so "Top up my card." and "top up  my card" are one text, and so are "set a timer for 5 minutes" and "set
 * a timer for 10 minutes", or a text and itself with " #12" appended. Two texts are **near copies** when
 * the Jaccard similarity of their keys' character 4-gram sets is at least NEAR_DUPLICATE_SIMILARITY
 * (0.8): "Where do I order a virtual card from?" and "Where do I order a virtual card?" (0.85) are; "How
 * do I top up my card?" and "How do I top up my account?" (0.59), or "... by bank transfer?" (0.36), are
 * not. On BANKING77's published splits 27 test texts are the same as a training text and 166 more (5 %)
 * are near copies of one; on CLINC150's, 37 and 98 (2 %) (docs/cli.md#duplicates).
 *
 * Near copies are found by MinHash locality-sensitive hashing — a one-permutation signature of 120 bins
 * in 20 bands of 6, so two texts at similarity s share a band with probability about 1 − (1 − s⁶)²⁰
 * (0.998 at 0.8, 0.99996 at 0.9; 0.27 at 0.5, which keeps the candidates few: 2 a query on BANKING77) —
 * and every candidate's similarity is then computed exactly, so nothing below the threshold is ever
 * called a near copy (on both data sets the index found every pair a brute-force comparison found).
 * Written here because no maintained npm package offers a banded MinHash index (bloom-filters' MinHash
 * only estimates the similarity of two given sets). Pure and deterministic: the hashes are fixed.
 */

/** The Jaccard similarity of 4-gram sets from which two texts are near copies. */
export const NEAR_DUPLICATE_SIMILARITY = 0.8;

/** Characters per shingle (the duplicate key's character n-grams). */
const SHINGLE = 4;
const BANDS = 20;
const ROWS = 6;
const HASHES = BANDS * ROWS;

/** The text as duplicate checks compare it (see the header). */
export function duplicateKey(text: string): string {
  return text
    .normalize('NFKC')
    .toLowerCase()
    .replace(/\p{Nd}+/gu, ' ')
    .replace(/[^\p{L}\p{M}\p{N}]+/gu, ' ')
    .trim();
}

/** murmur3's 32-bit finaliser: a cheap, well-mixed hash of a 32-bit value. */
function mix(value: number): number {
  let h = value >>> 0;
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

/** FNV-1a of a string's UTF-16 code units, finalised. */
function hashString(text: string, from: number, to: number): number {
  let h = 0x811c9dc5;
  for (let i = from; i < to; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return mix(h);
}

/** The key's 4-gram hashes, sorted and distinct (a key shorter than 4 characters is one shingle). */
export function shingleHashes(key: string, size = SHINGLE): Uint32Array {
  const chars = [...key];
  // Code points, not code units, so an emoji or a CJK character counts as one character.
  const starts: number[] = [];
  let offset = 0;
  for (const char of chars) {
    starts.push(offset);
    offset += char.length;
  }
  starts.push(offset);
  const count = Math.max(1, chars.length - size + 1);
  const hashes = new Uint32Array(count);
  for (let i = 0; i < count; i++) {
    hashes[i] = hashString(key, starts[i]!, starts[Math.min(i + size, chars.length)]!);
  }
  hashes.sort();
  let distinct = 0;
  for (let i = 0; i < hashes.length; i++) {
    if (i === 0 || hashes[i] !== hashes[distinct - 1]) hashes[distinct++] = hashes[i]!;
  }
  return hashes.slice(0, distinct);
}

/** |a ∩ b| / |a ∪ b| of two sorted, distinct hash arrays. */
export function jaccard(a: Uint32Array, b: Uint32Array): number {
  if (a.length === 0 && b.length === 0) return 1;
  let i = 0;
  let j = 0;
  let common = 0;
  while (i < a.length && j < b.length) {
    const x = a[i]!;
    const y = b[j]!;
    if (x === y) {
      common++;
      i++;
      j++;
    } else if (x < y) i++;
    else j++;
  }
  return common / (a.length + b.length - common);
}

/**
 * The 20 band keys of a shingle set, from its one-permutation MinHash signature: each shingle's hash picks
 * one of 120 bins and competes there with a second hash of it (one hash per shingle instead of 120, so
 * long texts cost little); an empty bin takes the minimum of a full bin picked by a hash of its number
 * ("optimal densification", Shrivastava 2017), which keeps two signatures' agreement per bin close to
 * their Jaccard similarity even for short texts. Each band's 6 bins are combined into one number.
 */
function bandKeys(shingles: Uint32Array): number[] {
  const EMPTY = 0xffffffff;
  const minimum = new Uint32Array(HASHES).fill(EMPTY);
  for (const shingle of shingles) {
    const bin = Math.floor(((shingle >>> 8) * HASHES) / 0x1000000);
    const value = mix(shingle ^ 0x5bd1e995) >>> 1;
    if (value < minimum[bin]!) minimum[bin] = value;
  }
  // An empty bin takes the minimum of a full bin chosen by hashing its number and the attempt — the same
  // choice for every text, so two texts agree there as often as they agree on full bins.
  const signature = new Uint32Array(HASHES);
  for (let bin = 0; bin < HASHES; bin++) {
    if (minimum[bin] !== EMPTY) {
      signature[bin] = minimum[bin]!;
      continue;
    }
    let value = EMPTY;
    for (let attempt = 1; attempt <= 4 * HASHES; attempt++) {
      const from = Math.floor((mix(Math.imul(bin + 1, 0x9e3779b1) ^ attempt) / 0x100000000) * HASHES);
      if (minimum[from] !== EMPTY) {
        value = minimum[from]!;
        break;
      }
    }
    signature[bin] = value;
  }
  const keys: number[] = [];
  for (let band = 0; band < BANDS; band++) {
    let h = mix(band + 1);
    for (let r = 0; r < ROWS; r++) h = mix(h ^ signature[band * ROWS + r]!);
    // Band b's keys are kept apart from band c's by the band number in the hash; 30 bits, so the Map's
    // keys are small integers (a collision only adds a candidate, whose similarity is computed exactly).
    keys.push(h & 0x3fffffff);
  }
  return keys;
}

/** A text of the index that another one repeats: its id (the order it was added in) and how alike they are. */
export interface DuplicateMatch {
  id: number;
  /** 1 for the same text (equal duplicate keys), else the Jaccard similarity of their 4-gram sets. */
  similarity: number;
}

/** Texts indexed once, then asked "is this a copy or a near copy of one of them?" (see the header). */
export class NearDuplicateIndex {
  private readonly byKey = new Map<string, number>();
  private readonly shingles: Uint32Array[] = [];
  private readonly buckets = new Map<number, number[]>();
  private tried = new Uint32Array(0);
  private queries = 0;
  readonly similarity: number;

  constructor(options: { similarity?: number } = {}) {
    this.similarity = options.similarity ?? NEAR_DUPLICATE_SIMILARITY;
  }

  /** How many texts were added. */
  get size(): number {
    return this.shingles.length;
  }

  /** Adds a text; its id is the number of texts added before it. */
  add(text: string): number {
    const id = this.shingles.length;
    const key = duplicateKey(text);
    const shingles = shingleHashes(key);
    this.shingles.push(shingles);
    // A text with no letter or word left (digits and punctuation only) is nobody's copy.
    if (key === '') return id;
    if (!this.byKey.has(key)) this.byKey.set(key, id);
    for (const band of bandKeys(shingles)) {
      const bucket = this.buckets.get(band);
      if (bucket === undefined) this.buckets.set(band, [id]);
      else bucket.push(id);
    }
    return id;
  }

  /**
   * The indexed text `text` repeats: the first one with the same duplicate key, else the most alike of
   * those at or above the similarity threshold (the first added among equals); null when none is, and
   * for a text with an empty key (digits and punctuation only), which is nobody's copy.
   */
  match(text: string): DuplicateMatch | null {
    const key = duplicateKey(text);
    if (key === '') return null;
    const same = this.byKey.get(key);
    if (same !== undefined) return { id: same, similarity: 1 };
    const shingles = shingleHashes(key);
    let best: DuplicateMatch | null = null;
    // Each candidate once: marked with this query's number (cheaper than a Set per query).
    const query = ++this.queries;
    if (this.tried.length < this.shingles.length) {
      const grown = new Uint32Array(Math.max(1024, this.shingles.length * 2));
      grown.set(this.tried);
      this.tried = grown;
    }
    for (const band of bandKeys(shingles)) {
      const bucket = this.buckets.get(band);
      if (bucket === undefined) continue;
      for (let k = 0; k < bucket.length; k++) {
        const id = bucket[k]!;
        if (this.tried[id] === query) continue;
        this.tried[id] = query;
        const similarity = jaccard(shingles, this.shingles[id]!);
        if (similarity < this.similarity) continue;
        if (
          best === null ||
          similarity > best.similarity ||
          (similarity === best.similarity && id < best.id)
        ) {
          best = { id, similarity };
        }
      }
    }
    return best;
  }
}

/** How alike two texts are: 1 when their keys are equal, else their 4-gram Jaccard (0 for an empty key). */
export function textSimilarity(a: string, b: string): number {
  const ka = duplicateKey(a);
  const kb = duplicateKey(b);
  if (ka === '' || kb === '') return 0;
  return ka === kb ? 1 : jaccard(shingleHashes(ka), shingleHashes(kb));
}
