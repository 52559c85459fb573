/**
 * Text clean-up before vectorising. Each step is a training argument (CleanOptions): lower-case, strip
 * URLs, drop English stopwords, keep only ASCII letters and digits, Porter-stem; whitespace is always
 * collapsed. All steps on is tagifai's `clean_text` (what every model saved before the steps were
 * arguments was trained with: LEGACY_CLEANUP); by default only lower-casing is on, and `tagger train`
 * turns the others on when the user's validation split prefers them (src/train/model-choice.ts).
 */
import { stemmer } from 'stemmer';

/** NLTK's English stopword list (179 words), in NLTK's order, as tagifai uses it. */
export const STOPWORDS: readonly string[] = Object.freeze(
  (
    "i me my myself we our ours ourselves you you're you've you'll you'd your yours yourself yourselves he him " +
    "his himself she she's her hers herself it it's its itself they them their theirs themselves what which who " +
    "whom this that that'll these those am is are was were be been being have has had having do does did doing a " +
    'an the and but if or because as until while of at by for with about against between into through during ' +
    'before after above below to from up down in out on off over under again further then once here there when ' +
    'where why how all any both each few more most other some such no nor not only own same so than too very s t ' +
    "can will just don don't should should've now d ll m o re ve y ain aren aren't couldn couldn't didn didn't " +
    "doesn doesn't hadn hadn't hasn hasn't haven haven't isn isn't ma mightn mightn't mustn mustn't needn needn't " +
    "shan shan't shouldn shouldn't wasn wasn't weren weren't won won't wouldn wouldn't"
  ).split(' '),
);

/** Polynomial hash of UTF-16 units, extended one unit at a time. */
const hashUnit = (h: number, unit: number): number => (Math.imul(h, 31) + unit) | 0;

/**
 * Stopwords by the hash of their UTF-16 units: a word run is checked against the few stopwords of its
 * hash in place, with no string sliced out of the text (the profile showed slicing every word for a set
 * lookup as most of this file's time).
 */
const STOPWORDS_BY_HASH: ReadonlyMap<number, readonly string[]> = (() => {
  const byHash = new Map<number, string[]>();
  for (const word of STOPWORDS) {
    let h = 0;
    for (let i = 0; i < word.length; i++) h = hashUnit(h, word.charCodeAt(i));
    byHash.set(h, [...(byHash.get(h) ?? []), word]);
  }
  return byHash;
})();

function isStopword(text: string, start: number, end: number, hash: number): boolean {
  const candidates = STOPWORDS_BY_HASH.get(hash);
  if (candidates === undefined) return false;
  return candidates.some((word) => word.length === end - start && text.startsWith(word, start));
}
// Stripped *before* punctuation removal: tagifai strips `http\S+` after it, which only removes the
// scheme word and leaves the host and path as tokens.
const URL_RE = /\b(?:https?:\/\/|www\.)\S*/gi;
const NON_ASCII_WORD_RE = /^[\p{L}\p{N}]$/u;

/** Python's `\w` (str.isalnum() or '_') for one code point; ASCII answered without a regex. */
function isWordCodePoint(c: number): boolean {
  if (c < 128) return (c >= 48 && c <= 57) || (c >= 65 && c <= 90) || (c >= 97 && c <= 122) || c === 95;
  return NON_ASCII_WORD_RE.test(String.fromCodePoint(c));
}

const isAsciiAlnum = (c: number): boolean =>
  (c >= 48 && c <= 57) || (c >= 65 && c <= 90) || (c >= 97 && c <= 122);

/**
 * tagifai removes stopwords with `re.sub(r"\b(w1|w2|...)\b\s*", "", text)` and then maps every
 * non-`[A-Za-z0-9]` run to one space. Because the stopword alternation must be bounded by non-word
 * characters on both sides, it removes exactly the maximal Unicode word runs equal to a stopword (every
 * stopword with an apostrophe has its apostrophe-free prefix earlier in the list, so it never matches
 * whole), and deleting them or blanking them gives the same final text. So one scan does both steps:
 * split into word runs, drop stopword runs, keep the ASCII-alphanumeric pieces of the others.
 * test/model/text/preprocess.test.ts checks this against the regex version on random strings.
 */
function asciiWords(text: string, dropStopwords: boolean, out: string[]): void {
  forEachWordRun(text, (start, end, hash) => {
    if (dropStopwords && isStopword(text, start, end, hash)) return;
    let piece = -1;
    for (let j = start; j < end; j++) {
      if (isAsciiAlnum(text.charCodeAt(j))) {
        if (piece < 0) piece = j;
      } else if (piece >= 0) {
        out.push(text.slice(piece, j));
        piece = -1;
      }
    }
    if (piece >= 0) out.push(text.slice(piece, end));
  });
}

/**
 * Without `ascii_only`: the text with its stopword runs (Unicode word runs, as asciiWords finds them)
 * dropped and, with `stem`, every other word run replaced by its stem; everything between word runs
 * (punctuation, symbols, spaces) is kept as it is.
 */
function rewriteWords(text: string, dropStopwords: boolean, stem: boolean): string {
  let out = '';
  let copied = 0;
  forEachWordRun(text, (start, end, hash) => {
    const dropped = dropStopwords && isStopword(text, start, end, hash);
    if (!dropped && !stem) return;
    out += text.slice(copied, start);
    if (!dropped) out += stemWord(text.slice(start, end));
    copied = end;
  });
  return copied === 0 ? text : out + text.slice(copied);
}

/**
 * Calls `visit` with every maximal run of Unicode word characters in `text` (`[start, end)` in UTF-16
 * units) and its hash (the one isStopword looks it up by), in order: the one scan asciiWords and
 * rewriteWords share.
 */
function forEachWordRun(text: string, visit: (start: number, end: number, hash: number) => void): void {
  const n = text.length;
  let i = 0;
  while (i < n) {
    let c = text.codePointAt(i)!;
    if (!isWordCodePoint(c)) {
      i += c > 0xffff ? 2 : 1;
      continue;
    }
    const start = i;
    let hash = 0;
    while (i < n) {
      c = text.codePointAt(i)!;
      if (!isWordCodePoint(c)) break;
      hash = hashUnit(hash, text.charCodeAt(i));
      if (c > 0xffff) hash = hashUnit(hash, text.charCodeAt(i + 1));
      i += c > 0xffff ? 2 : 1;
    }
    visit(start, i, hash);
  }
}

// Stemming dominates preprocessing time when enabled; a bounded memo keeps it cheap and pure.
const STEM_CACHE_LIMIT = 50_000;
const stemCache = new Map<string, string>();
function stemWord(word: string): string {
  let out = stemCache.get(word);
  if (out === undefined) {
    out = stemmer(word);
    if (stemCache.size >= STEM_CACHE_LIMIT) stemCache.clear();
    stemCache.set(word, out);
  }
  return out;
}

/** The clean-up steps (training arguments of the same names). */
export interface CleanOptions {
  /** Lower-case the text. */
  lower: boolean;
  /** Porter-stem every word (the `stemmer` package lower-cases its input, so stems are lower-case). */
  stem: boolean;
  /** Drop NLTK's 179 English stopwords (whole words only, as tagifai's regex). */
  stopwords: boolean;
  /** Keep only ASCII letters and digits: every other character (punctuation, accents, emoji) is a space. */
  ascii_only: boolean;
  /** Replace `http(s)://…` and `www.…` runs by a space. */
  strip_urls: boolean;
}

/** The steps of tagifai's `clean_text`, which every model saved before they were arguments used. */
export const LEGACY_CLEANUP = Object.freeze({ stopwords: true, ascii_only: true, strip_urls: true });

/** Python's `\s` runs (JS's `\s` is close enough here: the result is split on spaces by every analyzer). */
const SPACES_RE = /\s+/g;

/**
 * Cleans one text with the steps `options` turns on; whitespace runs always become one space, trimmed.
 * With `ascii_only` the result holds only `[A-Za-z0-9]` words separated by single spaces.
 * @example cleanText('The BERT model: https://x.io/a!', { lower: true, stem: false, ...LEGACY_CLEANUP }) // 'bert model'
 * @example cleanText('What can I do?', { lower: true, stem: false, stopwords: false, ascii_only: false, strip_urls: false }) // 'what can i do?'
 */
export function cleanText(text: string, options: CleanOptions): string {
  let out = options.lower ? text.toLowerCase() : text;
  if (options.strip_urls) out = out.replace(URL_RE, ' ');
  if (options.ascii_only) {
    const words: string[] = [];
    asciiWords(out, options.stopwords, words);
    return (options.stem ? words.map(stemWord) : words).join(' ');
  }
  if (options.stopwords || options.stem) out = rewriteWords(out, options.stopwords, options.stem);
  return out.replace(SPACES_RE, ' ').trim();
}
