/**
 * TF-IDF vectorizer with scikit-learn's TfidfVectorizer semantics (smooth_idf=True, sublinear_tf=False
 * unless `sublinearTf` is set, norm='l2', token_pattern `(?u)\b\w\w+\b`, char_wb padding, vocabulary sorted by code point), hand-written
 * because no maintained JS library matches sklearn exactly. Lower-casing is *not* done here (sklearn is
 * called with lowercase=False): the `lower` training arg decides it during preprocessing.
 *
 * Hot path (transform): a document is decoded once into a code-point buffer in which every n-gram is a
 * contiguous slice (words joined by one space for `word`, space-padded words for `char_wb`). For each start
 * position the n-grams are prefixes of each other, so their keys are extended one code point at a time
 * and looked up in an open-addressing table; no string is allocated per n-gram. Lookups are exact: an
 * n-gram of at most 8 ASCII characters is its own key (7 bits per character packed into two ints), any
 * other n-gram is keyed by a 32-bit polynomial hash and verified code point by code point on a hit. The
 * table is a cache miss per n-gram (8 MB for 150,737 word n-grams), so a document's keys are queued and
 * their slots read in a loop of their own before they are counted (countQueued): the misses overlap.
 */

import { ModelFormatError, ModelInputError } from '../errors.js';

/** Compressed sparse rows; row r's entries are indices/data[indptr[r] .. indptr[r+1]). */
export interface CsrMatrix {
  nRows: number;
  nCols: number;
  indptr: Int32Array;
  indices: Int32Array;
  data: Float64Array;
}

/** The analyzers of a single TfidfVectorizer (`char_wb+word` is a union of two, see features.ts). */
export type TfidfAnalyzer = 'word' | 'char' | 'char_wb';

export interface TfidfOptions {
  analyzer: TfidfAnalyzer;
  ngramMin: number;
  ngramMax: number;
  /** sklearn's sublinear_tf: a term count c becomes 1 + ln(c) before the idf weighting (default false). */
  sublinearTf?: boolean;
}

/** What only fitting needs (a fitted vectorizer is its vocabulary and idf). */
export interface TfidfFitOptions extends TfidfOptions {
  /** sklearn's integer min_df: keep n-grams found in at least this many documents (default 1: all). */
  minDf?: number;
}

/** Python's str.isspace(), which sklearn's `\s` and str.split() use (JS `\s` differs: it has U+FEFF, lacks U+001C..U+001F and U+0085). */
function isPySpace(c: number): boolean {
  if (c <= 32) return c === 32 || (c >= 9 && c <= 13) || c >= 0x1c;
  if (c < 0x85) return false;
  return (
    c === 0x85 ||
    c === 0xa0 ||
    c === 0x1680 ||
    (c >= 0x2000 && c <= 0x200a) ||
    c === 0x2028 ||
    c === 0x2029 ||
    c === 0x202f ||
    c === 0x205f ||
    c === 0x3000
  );
}

const NON_ASCII_WORD_RE = /^[\p{L}\p{N}]$/u;
/** Python's `\w` (str.isalnum() or '_'). */
function isPyWord(c: number): boolean {
  if (c < 128) return (c >= 48 && c <= 57) || (c >= 65 && c <= 90) || (c >= 97 && c <= 122) || c === 95;
  return NON_ASCII_WORD_RE.test(String.fromCodePoint(c));
}

const HASH_BASE = 0x01000193;
/** Marks a key as hashed (not packed): packed keys use only the low 28 bits of their second int. */
const HASHED = -1;
const PACK_LIMIT = 8;
/** N-grams queued before they are counted (countQueued). */
const QUEUED = 512;

/** Multiplicative (Fibonacci) hashing: the top bits of key × 2³²/φ index a table of 2^(32 − shift) slots. */
function slotOf(k0: number, k1: number, shift: number): number {
  return Math.imul(k0 ^ Math.imul(k1, 0x85ebca6b), 0x9e3779b1) >>> shift;
}

/** Orders strings by code point, as Python's sorted() does (JS's default compares UTF-16 units). */
export function compareCodePoints(a: string, b: string): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    let x = a.charCodeAt(i);
    let y = b.charCodeAt(i);
    if (x === y) continue;
    // Surrogates encode code points above every BMP unit, so move them above U+E000..U+FFFF.
    if (x >= 0xd800) x += x < 0xe000 ? 0x2000 : -0x800;
    if (y >= 0xd800) y += y < 0xe000 ? 0x2000 : -0x800;
    return x - y;
  }
  return a.length - b.length;
}

export class TfidfVectorizer {
  readonly analyzer: TfidfAnalyzer;
  readonly ngramMin: number;
  readonly ngramMax: number;
  readonly sublinearTf: boolean;
  /** Feature strings, sorted by code point; a feature's index is its position here. */
  readonly vocabulary: readonly string[];
  /** Smoothed idf per feature: ln((1 + n) / (1 + df)) + 1. */
  readonly idf: Float64Array;

  // Lookup table, built once from the vocabulary: slot s holds key ints (table[4s], table[4s+1]), feature
  // index + 1 in table[4s+2] (0 = empty slot) and the feature's count in the current document in
  // table[4s+3] (0 between calls). Counting in the slot the lookup has just read, rather than in an array
  // indexed by feature, saves a random memory read per n-gram (the profile's hottest lines were the two).
  private readonly table: Int32Array;
  private readonly mask: number;
  private readonly shift: number;
  // Code points of every feature, for verifying hashed keys: feature f is pool[poolStart[f] .. poolStart[f+1]).
  private readonly poolStart: Int32Array;
  private readonly pool: Int32Array;

  // Per-call scratch, grown on demand and overwritten by every load()/transformOne() call.
  private cp = new Int32Array(256); // code points of the analysed document
  private len = 0; // number of code points in cp
  private marks = new Int32Array(64); // char_wb: segment [start, end) pairs; word: token [start, end) pairs
  private nMarks = 0;
  private asciiOnly = false; // char/char_wb: the loaded document is ASCII (countAll may use packed keys only)
  private touchedSlots: Int32Array; // table slots of the features counted in the current document
  private features: Int32Array; // vectorize(): feature index of touchedSlots[k]
  private values = new Float64Array(256); // vectorize(): tf-idf of features[k]
  private nTouched = 0;
  private readonly queue = new Int32Array(5 * QUEUED); // n-grams not counted yet (queueKey)
  private nQueued = 0;
  /** What countQueued's first loops read, kept so that no compiler drops them as unused (nothing reads it). */
  prefetched = 0;

  private constructor(options: TfidfOptions, vocabulary: readonly string[], idf: Float64Array) {
    this.analyzer = options.analyzer;
    this.ngramMin = options.ngramMin;
    this.ngramMax = options.ngramMax;
    this.sublinearTf = options.sublinearTf === true;
    this.vocabulary = vocabulary;
    this.idf = idf;
    const v = vocabulary.length;
    let size = 16;
    while (size < v * 2) size *= 2;
    this.table = new Int32Array(size * 4);
    this.mask = size - 1;
    this.shift = 32 - Math.log2(size);
    this.poolStart = new Int32Array(v + 1);
    const points: number[] = [];
    for (let f = 0; f < v; f++) {
      this.poolStart[f] = points.length;
      for (const ch of vocabulary[f]!) points.push(ch.codePointAt(0)!);
    }
    this.poolStart[v] = points.length;
    this.pool = Int32Array.from(points);
    for (let f = 0; f < v; f++) this.insert(f);
    this.touchedSlots = new Int32Array(Math.max(16, Math.min(v, 4096)));
    this.features = new Int32Array(this.touchedSlots.length);
  }

  /** Adds feature f to the table under the same key transformOne computes for its code points. */
  private insert(f: number): void {
    const start = this.poolStart[f]!;
    const len = this.poolStart[f + 1]! - start;
    let h = 0;
    let a = 0;
    let b = 0;
    let packed = len <= PACK_LIMIT;
    for (let i = 0; i < len; i++) {
      const c = this.pool[start + i]!;
      h = (Math.imul(h, HASH_BASE) + c) | 0;
      if (c >= 128) packed = false;
      else if (i < 4) a |= c << (7 * i);
      else b |= c << (7 * (i - 4));
    }
    const k0 = packed ? a | (len << 28) : h;
    const k1 = packed ? b : HASHED;
    let slot = slotOf(k0, k1, this.shift);
    for (;;) {
      const entry = this.table[4 * slot + 2]!;
      if (entry === 0) break;
      if (this.table[4 * slot] === k0 && this.table[4 * slot + 1] === k1 && this.sameFeature(entry - 1, f)) {
        throw new ModelFormatError(
          `model/tfidf: vocabulary has the duplicate feature ${JSON.stringify(this.vocabulary[f])}; the model is corrupt, retrain it`,
        );
      }
      slot = (slot + 1) & this.mask;
    }
    this.table[4 * slot] = k0;
    this.table[4 * slot + 1] = k1;
    this.table[4 * slot + 2] = f + 1;
  }

  private sameFeature(x: number, y: number): boolean {
    const sx = this.poolStart[x]!;
    const sy = this.poolStart[y]!;
    const len = this.poolStart[x + 1]! - sx;
    if (len !== this.poolStart[y + 1]! - sy) return false;
    for (let i = 0; i < len; i++) if (this.pool[sx + i] !== this.pool[sy + i]) return false;
    return true;
  }

  /** Learns the vocabulary and idf from documents (sklearn's fit). */
  static fit(docs: readonly string[], options: TfidfFitOptions): TfidfVectorizer {
    validateOptions(options);
    const minDf = options.minDf ?? 1;
    if (!Number.isInteger(minDf) || minDf < 1) {
      throw new ModelInputError(`model/tfidf: min_df must be an integer >= 1, got ${minDf}`);
    }
    const df = new Map<string, number>();
    const probe = new TfidfVectorizer(options, [], new Float64Array(0));
    const seen = new Set<string>();
    let u16 = new Int32Array(256); // u16[i]: UTF-16 offset of code point i in `text`
    for (const doc of docs) {
      seen.clear();
      probe.load(doc);
      // One string per document, sliced per n-gram (cheaper than building each n-gram from code points).
      const { cp, len } = probe;
      if (u16.length <= len) u16 = new Int32Array(2 * (len + 1));
      const parts: string[] = [];
      let offset = 0;
      for (let i = 0; i < len; i++) {
        u16[i] = offset;
        const ch = String.fromCodePoint(cp[i]!);
        parts.push(ch);
        offset += ch.length;
      }
      u16[len] = offset;
      const text = parts.join('');
      probe.forEachGram((start, length) => {
        seen.add(text.slice(u16[start]!, u16[start + length]!));
      });
      for (const gram of seen) df.set(gram, (df.get(gram) ?? 0) + 1);
    }
    const vocabulary = [...df.keys()].filter((g) => df.get(g)! >= minDf).sort(compareCodePoints);
    if (vocabulary.length === 0) {
      throw new ModelInputError(
        `model/tfidf: empty vocabulary (${docs.length} documents produced no ${options.analyzer} n-grams${minDf > 1 ? ` in at least min_df = ${minDf} of them` : ''}); check the training texts`,
      );
    }
    const n = docs.length;
    const idf = Float64Array.from(vocabulary, (g) => Math.log((1 + n) / (1 + df.get(g)!)) + 1);
    return new TfidfVectorizer(options, vocabulary, idf);
  }

  /** Rebuilds a fitted vectorizer from saved parts (see artifact.ts). */
  static fromParts(options: TfidfOptions, vocabulary: readonly string[], idf: Float64Array): TfidfVectorizer {
    validateOptions(options);
    if (idf.length !== vocabulary.length) {
      throw new ModelFormatError(
        `model/tfidf: ${idf.length} idf values for ${vocabulary.length} features; the model is corrupt, retrain it`,
      );
    }
    return new TfidfVectorizer(options, vocabulary, idf);
  }

  get size(): number {
    return this.vocabulary.length;
  }

  /**
   * Decodes `doc` into the code-point buffer as sklearn's analyzers see it. char: runs of two or more
   * whitespace characters become one space; char_wb: " w1  w2 " (each whitespace-separated word padded
   * with one space, marks = segment bounds); word: "t1 t2" (tokens = maximal runs of >= 2 word
   * characters, marks = token bounds).
   */
  private load(doc: string): void {
    this.len = 0;
    this.nMarks = 0;
    // No analyzer writes more than two code points (a character and a pad or separator) per UTF-16 unit
    // of the document plus a closing pad, nor more than one mark per unit plus two: sized here, the
    // loops below write without checks.
    if (this.cp.length < 2 * doc.length + 2) this.cp = new Int32Array(2 * doc.length + 2);
    if (this.marks.length < doc.length + 2) this.marks = new Int32Array(doc.length + 2);
    if (this.analyzer === 'char') this.loadChar(doc);
    else if (this.analyzer === 'char_wb') this.loadCharWb(doc);
    else this.loadWord(doc);
  }

  private loadChar(doc: string): void {
    const cp = this.cp;
    let len = 0;
    let bits = 0; // OR of every code point: < 128 when the document is ASCII
    let pendingSpace = 0; // whitespace characters seen since the last non-space
    let lastSpace = 0; // that whitespace character, kept when it stands alone
    for (let i = 0; i < doc.length; i++) {
      const c = doc.codePointAt(i)!;
      if (c > 0xffff) i++;
      if (isPySpace(c)) {
        pendingSpace++;
        lastSpace = c;
        bits |= c; // a lone non-ASCII space is kept as it is
        continue;
      }
      if (pendingSpace > 0) cp[len++] = pendingSpace === 1 ? lastSpace : 32;
      pendingSpace = 0;
      cp[len++] = c;
      bits |= c;
    }
    if (pendingSpace > 0) cp[len++] = pendingSpace === 1 ? lastSpace : 32;
    this.len = len;
    this.asciiOnly = bits < 128;
  }

  private loadCharWb(doc: string): void {
    const { cp, marks } = this;
    let len = 0;
    let nMarks = 0;
    let bits = 0; // OR of every code point: < 128 when the document is ASCII
    let runStart = -1; // buffer index where the current word began, else -1
    for (let i = 0; i < doc.length; i++) {
      const c = doc.codePointAt(i)!;
      if (c > 0xffff) i++;
      if (isPySpace(c)) {
        if (runStart >= 0) {
          cp[len++] = 32;
          marks[nMarks++] = runStart;
          marks[nMarks++] = len;
          runStart = -1;
        }
        continue;
      }
      if (runStart < 0) {
        runStart = len;
        cp[len++] = 32;
      }
      cp[len++] = c;
      bits |= c;
    }
    if (runStart >= 0) {
      cp[len++] = 32;
      marks[nMarks++] = runStart;
      marks[nMarks++] = len;
    }
    this.len = len;
    this.nMarks = nMarks;
    this.asciiOnly = bits < 128;
  }

  private loadWord(doc: string): void {
    const { cp, marks } = this;
    let len = 0;
    let nMarks = 0;
    let runStart = -1; // buffer index where the current token began, else -1
    for (let i = 0; i <= doc.length; i++) {
      // i === doc.length closes the last token
      const c = i < doc.length ? doc.codePointAt(i)! : 32;
      if (c > 0xffff) i++;
      if (isPyWord(c)) {
        if (runStart < 0) {
          if (len > 0) cp[len++] = 32;
          runStart = len;
        }
        cp[len++] = c;
      } else if (runStart >= 0) {
        if (len - runStart >= 2) {
          marks[nMarks++] = runStart;
          marks[nMarks++] = len;
        } else {
          len = runStart > 0 ? runStart - 1 : 0; // `\w\w+`: drop a one-character token and its separator
        }
        runStart = -1;
      }
    }
    this.len = len;
    this.nMarks = nMarks;
  }

  /** Calls emit(start, length) for every n-gram slice of the loaded buffer, in sklearn's order (fit only). */
  private forEachGram(emit: (start: number, length: number) => void): void {
    const { ngramMin: min, ngramMax: max, len, marks } = this;
    if (this.analyzer === 'char') {
      for (let n = min; n <= Math.min(max, len); n++) {
        for (let i = 0; i + n <= len; i++) emit(i, n);
      }
    } else if (this.analyzer === 'char_wb') {
      for (let s = 0; s < this.nMarks; s += 2) {
        const start = marks[s]!;
        const wlen = marks[s + 1]! - start;
        for (let n = min; n <= max; n++) {
          let offset = 0;
          emit(start, Math.min(n, wlen));
          while (offset + n < wlen) {
            offset++;
            emit(start + offset, n);
          }
          if (offset === 0) break; // sklearn counts a word shorter than n only once
        }
      }
    } else {
      const nTokens = this.nMarks >> 1;
      for (let n = min; n <= Math.min(max, nTokens); n++) {
        for (let i = 0; i + n <= nTokens; i++) {
          const start = marks[2 * i]!;
          emit(start, marks[2 * (i + n - 1) + 1]! - start);
        }
      }
    }
  }

  /**
   * Counts the n-grams [start, start + n) for n = minLen..maxLen whose end lands on an allowed end:
   * every position (ends === null) or the token ends listed in marks from index `endMark` on (word).
   * Keys are extended one code point at a time, so this costs O(maxLen) per start.
   */
  private countFrom(start: number, minLen: number, maxLen: number, endMark: number): void {
    const cp = this.cp;
    let h = 0;
    let a = 0;
    let b = 0;
    let ascii = true;
    let m = endMark;
    for (let n = 1; n <= maxLen; n++) {
      const c = cp[start + n - 1]!;
      h = (Math.imul(h, HASH_BASE) + c) | 0;
      if (c >= 128) ascii = false;
      else if (n <= 4) a |= c << (7 * (n - 1));
      else if (n <= PACK_LIMIT) b |= c << (7 * (n - 5));
      if (n < minLen) continue;
      if (m >= 0) {
        // word analyzer: only slices ending at a token end are n-grams
        if (start + n !== this.marks[m]) continue;
        m += 2;
      }
      const packed = ascii && n <= PACK_LIMIT;
      this.queueKey(packed ? a | (n << 28) : h, packed ? b : HASHED, start, n);
    }
  }

  /**
   * countFrom for an ASCII document and n-grams of at most PACK_LIMIT characters (char and char_wb): every
   * key is its packed code points, so no hash and no verification.
   */
  private countPackedFrom(start: number, minLen: number, maxLen: number): void {
    const cp = this.cp;
    let a = 0;
    let b = 0;
    for (let n = 1; n <= maxLen; n++) {
      const c = cp[start + n - 1]!;
      if (n <= 4) a |= c << (7 * (n - 1));
      else b |= c << (7 * (n - 5));
      if (n >= minLen) this.queueKey(a | (n << 28), b, start, n);
    }
  }

  /**
   * Queues the n-gram keyed (k0, k1) at cp[start, start + n) for countQueued, which counts the queue in
   * order (so features are touched in the order they were before queueing).
   */
  private queueKey(k0: number, k1: number, start: number, n: number): void {
    const q = 5 * this.nQueued;
    const queue = this.queue;
    queue[q] = slotOf(k0, k1, this.shift);
    queue[q + 1] = k0;
    queue[q + 2] = k1;
    queue[q + 3] = start;
    queue[q + 4] = n;
    if (++this.nQueued === QUEUED) this.countQueued();
  }

  /**
   * Counts the queued n-grams. The table is a cache miss per n-gram (8 MB for 150,737 word n-grams), and
   * probing key by key the misses come one after the other (a probe's branches wait for its slot); so every
   * queued key's first slot is read first in a loop of nothing else, where the misses overlap, and the
   * probes that follow find their slots in the cache.
   */
  private countQueued(): void {
    const { queue, table } = this;
    const n = this.nQueued;
    const { poolStart, pool } = this;
    let any = 0;
    for (let i = 0; i < n; i++) any |= table[4 * queue[5 * i]! + 2]!;
    // A hashed key's feature is then verified against its code points (where they start, and they).
    for (let i = 0; i < n; i++) {
      const slot = queue[5 * i]!;
      const entry = table[4 * slot + 2]!;
      if (entry > 0 && queue[5 * i + 2] === HASHED && table[4 * slot + 1] === HASHED) {
        any |= pool[poolStart[entry - 1]!]!;
      }
    }
    this.prefetched = any;
    for (let i = 0; i < n; i++) {
      const q = 5 * i;
      this.countKey(queue[q]!, queue[q + 1]!, queue[q + 2]!, queue[q + 3]!, queue[q + 4]!);
    }
    this.nQueued = 0;
  }

  /**
   * Counts the feature keyed (k0, k1), first looked for in table slot `slot`, if the vocabulary has it: a
   * packed key is exact, a hashed one (k1 = HASHED) is verified against the code points cp[start, start + n).
   */
  private countKey(slot: number, k0: number, k1: number, start: number, n: number): void {
    const table = this.table;
    for (;;) {
      const entry = table[4 * slot + 2]!;
      if (entry === 0) return;
      if (
        table[4 * slot] === k0 &&
        table[4 * slot + 1] === k1 &&
        (k1 !== HASHED || this.matches(entry - 1, start, n))
      ) {
        this.count(slot);
        return;
      }
      slot = (slot + 1) & this.mask;
    }
  }

  private matches(f: number, start: number, n: number): boolean {
    const ps = this.poolStart[f]!;
    if (this.poolStart[f + 1]! - ps !== n) return false;
    for (let i = 0; i < n; i++) if (this.pool[ps + i] !== this.cp[start + i]) return false;
    return true;
  }

  /** Counts one occurrence of the feature in table slot `slot`. */
  private count(slot: number): void {
    if (this.table[4 * slot + 3] === 0) {
      if (this.nTouched === this.touchedSlots.length) {
        const grown = new Int32Array(this.touchedSlots.length * 2);
        grown.set(this.touchedSlots);
        this.touchedSlots = grown;
      }
      this.touchedSlots[this.nTouched++] = slot;
    }
    this.table[4 * slot + 3]! += 1;
  }

  /** Counts every n-gram of the loaded buffer (same multiset as forEachGram, grouped by start). */
  private countAll(): void {
    this.nQueued = 0;
    this.queueAll();
    this.countQueued();
  }

  /** countAll's n-grams, queued (queueKey) in the order they are counted. */
  private queueAll(): void {
    const { ngramMin: min, ngramMax: max, len, marks } = this;
    if (this.analyzer === 'word') {
      this.countWordGrams();
      return;
    }
    // Cleaned texts are ASCII, and char n-grams short: then every key is packed, and the cheaper loop counts.
    const packed = this.asciiOnly && max <= PACK_LIMIT;
    if (this.analyzer === 'char') {
      for (let i = 0; i < len; i++) {
        if (packed) this.countPackedFrom(i, min, Math.min(max, len - i));
        else this.countFrom(i, min, Math.min(max, len - i), -1);
      }
    } else {
      for (let s = 0; s < this.nMarks; s += 2) {
        const start = marks[s]!;
        const wlen = marks[s + 1]! - start;
        if (wlen < min) {
          this.countFrom(start, wlen, wlen, -1); // a padded word shorter than every n counts once
          continue;
        }
        for (let o = 0; o + min <= wlen; o++) {
          if (packed) this.countPackedFrom(start + o, min, Math.min(max, wlen - o));
          else this.countFrom(start + o, min, Math.min(max, wlen - o), -1);
        }
      }
    }
  }

  /** word: counts the n-grams of min..max tokens from every token on. */
  private countWordGrams(): void {
    const { ngramMin: min, ngramMax: max, marks } = this;
    const nTokens = this.nMarks >> 1;
    for (let i = 0; i + min <= nTokens; i++) {
      const last = Math.min(i + max, nTokens) - 1; // last token an n-gram from token i may end with
      const start = marks[2 * i]!;
      this.countFrom(
        start,
        marks[2 * (i + min - 1) + 1]! - start,
        marks[2 * last + 1]! - start,
        2 * (i + min - 1) + 1,
      );
    }
  }

  /**
   * Vectorises one document into scratch buffers without allocating: returns the number of non-zero
   * features; their indices are `vectorIndices[0..n)` and their l2-normalised tf-idf values
   * `vectorValues[0..n)`, both valid until the next call. Used by prediction.
   */
  vectorize(doc: string): number {
    const n = this.countTerms(doc);
    if (this.values.length < n) {
      this.values = new Float64Array(this.touchedSlots.length);
      this.features = new Int32Array(this.touchedSlots.length);
    }
    this.writeVector(this.features, this.values, 0, 0, 1);
    return n;
  }

  /**
   * First half of vectorize: counts the document's known n-grams in the table; returns how many distinct
   * features it has. `writeVector` must follow before the next document (it also clears the counts).
   */
  countTerms(doc: string): number {
    // Counts a caller left behind (countTerms without writeVector) must not leak into this document.
    for (let k = 0; k < this.nTouched; k++) this.table[4 * this.touchedSlots[k]! + 3] = 0;
    this.load(doc);
    this.nTouched = 0;
    this.countAll();
    return this.nTouched;
  }

  /**
   * Second half of vectorize: writes the counted features' l2-normalised tf-idf, times `weight`, to
   * `values[at..]` with their column (`columnOffset` + feature index) in `indices[at..]`; the arrays must
   * have room for the count countTerms returned. A feature union writes each block straight into its own
   * arrays this way, with no copy of the block's vector.
   */
  writeVector(
    indices: Int32Array,
    values: Float64Array,
    at: number,
    columnOffset: number,
    weight: number,
  ): void {
    const { table, touchedSlots, idf } = this;
    const n = this.nTouched;
    const sublinear = this.sublinearTf;
    let sq = 0;
    for (let k = 0; k < n; k++) {
      const slot = touchedSlots[k]!;
      const f = table[4 * slot + 2]! - 1;
      const c = table[4 * slot + 3]!;
      table[4 * slot + 3] = 0;
      const v = (sublinear ? 1 + Math.log(c) : c) * idf[f]!;
      indices[at + k] = f + columnOffset;
      values[at + k] = v;
      sq += v * v;
    }
    this.nTouched = 0;
    const scale = sq > 0 ? 1 / Math.sqrt(sq) : 0;
    // (value × scale) × weight, in that order, as the union computed it when it copied the blocks.
    for (let k = at; k < at + n; k++) values[k] = values[k]! * scale * weight;
  }

  get vectorIndices(): Int32Array {
    return this.features;
  }

  get vectorValues(): Float64Array {
    return this.values;
  }

  /** Vectorises one document, passing its (feature, l2-normalised tf-idf) pairs to `visit`. */
  transformOne(doc: string, visit: (feature: number, value: number) => void): void {
    const n = this.vectorize(doc);
    for (let k = 0; k < n; k++) visit(this.features[k]!, this.values[k]!);
  }

  /** Vectorises documents into a CSR matrix (sklearn's transform); column indices ascend within a row. */
  transform(docs: readonly string[], shared = false): CsrMatrix {
    return transformToCsr(this, docs, shared);
  }
}

/** What prediction and training need from a fitted vectorizer (a TfidfVectorizer or a union of them). */
export interface TextVectorizer {
  /** Number of features (columns). */
  readonly size: number;
  /** Vectorises one document into scratch buffers; returns the number of non-zero features (see TfidfVectorizer). */
  vectorize(doc: string): number;
  readonly vectorIndices: Int32Array;
  readonly vectorValues: Float64Array;
  /** The documents' rows (`shared`: in shared memory, for threads: src/model/parallel.ts). */
  transform(docs: readonly string[], shared?: boolean): CsrMatrix;
}

/** Vectorises documents into a CSR matrix with column indices ascending within each row. */
export function transformToCsr(
  vectorizer: TextVectorizer,
  docs: readonly string[],
  shared = false,
): CsrMatrix {
  const indptr = new Int32Array(docs.length + 1);
  let indices = new Int32Array(1024);
  let data = new Float64Array(1024);
  let nnz = 0;
  let order = new Int32Array(256);
  for (let r = 0; r < docs.length; r++) {
    const n = vectorizer.vectorize(docs[r]!);
    if (nnz + n > indices.length) {
      const size = 2 * (nnz + n);
      const i2 = new Int32Array(size);
      i2.set(indices.subarray(0, nnz));
      indices = i2;
      const d2 = new Float64Array(size);
      d2.set(data.subarray(0, nnz));
      data = d2;
    }
    if (order.length < n) order = new Int32Array(2 * n);
    for (let k = 0; k < n; k++) order[k] = k;
    const touched = vectorizer.vectorIndices;
    const values = vectorizer.vectorValues;
    const sorted = order.subarray(0, n).sort((x, y) => touched[x]! - touched[y]!);
    for (let k = 0; k < n; k++) {
      indices[nnz] = touched[sorted[k]!]!;
      data[nnz] = values[sorted[k]!]!;
      nnz++;
    }
    indptr[r + 1] = nnz;
  }
  // Exactly sized (and in shared memory when threads will read it: src/model/parallel.ts).
  const exact = <T extends Int32Array | Float64Array>(array: T, length: number): T => {
    if (!shared) return (array.length === length ? array : array.slice(0, length)) as T;
    const Kind = array.constructor as new (buffer: SharedArrayBuffer) => T;
    const copy = new Kind(new SharedArrayBuffer(length * array.BYTES_PER_ELEMENT));
    copy.set(array.subarray(0, length) as never);
    return copy;
  };
  return {
    nRows: docs.length,
    nCols: vectorizer.size,
    indptr: exact(indptr, indptr.length),
    indices: exact(indices, nnz),
    data: exact(data, nnz),
  };
}

function validateOptions(options: TfidfOptions): void {
  const { analyzer, ngramMin, ngramMax, sublinearTf } = options;
  if (analyzer !== 'word' && analyzer !== 'char' && analyzer !== 'char_wb') {
    throw new ModelInputError(
      `model/tfidf: analyzer must be word, char or char_wb, got ${JSON.stringify(analyzer)}`,
    );
  }
  if (sublinearTf !== undefined && typeof sublinearTf !== 'boolean') {
    throw new ModelInputError(
      `model/tfidf: sublinearTf must be a boolean, got ${JSON.stringify(sublinearTf)}`,
    );
  }
  if (!Number.isInteger(ngramMin) || !Number.isInteger(ngramMax) || ngramMin < 1 || ngramMax < ngramMin) {
    throw new ModelInputError(
      `model/tfidf: n-gram range must be integers 1 <= min <= max, got (${ngramMin}, ${ngramMax})`,
    );
  }
}
