/**
 * Labelled data of any size for the `scale` benchmark (issue 31): texts of 10–60 words drawn from a
 * Zipf-distributed common vocabulary and from their tag's topic vocabulary and its cluster's (ten related
 * tags share words, so tags are not trivially apart), tag frequencies mildly imbalanced (Zipf exponent 0.5),
 * 5 % of labels replaced by another tag at random. The words are made-up syllable strings, so character
 * n-grams and word n-grams both carry signal, as in real text. Seeded: the same spec gives the same rows,
 * on every machine, for Tagger, scikit-learn and fastText alike. Written by the Tagger team; no real data.
 */
import { createRng, randomInt } from '../src/model/rng.js';

export interface ScaleDataSpec {
  rows: number;
  tags: number;
  seed: number;
}

export interface ScaleRow {
  title: string;
  description: string;
  tag: string;
}

const CONSONANTS = 'bcdfghjklmnprstvz';
const VOWELS = 'aeiou';
const COMMON_WORDS = 20_000;
const TOPIC_WORDS = 120;
const CLUSTER_WORDS = 300;
const CLUSTER_SIZE = 10;
/** Per word of a text: the chance it is a topic word of its tag, or a word of its tag's cluster. */
const P_TOPIC = 0.14;
const P_CLUSTER = 0.12;
const LABEL_NOISE = 0.05;

/** A pronounceable made-up word of 2–4 syllables. */
function word(random: () => number): string {
  const syllables = 2 + randomInt(random, 3);
  let out = '';
  for (let s = 0; s < syllables; s++) {
    out += CONSONANTS[randomInt(random, CONSONANTS.length)]! + VOWELS[randomInt(random, VOWELS.length)]!;
    if (random() < 0.25) out += CONSONANTS[randomInt(random, CONSONANTS.length)]!;
  }
  return out;
}

/** `count` distinct words not in `taken` (which they join). */
function words(count: number, random: () => number, taken: Set<string>): string[] {
  const out: string[] = [];
  while (out.length < count) {
    const w = word(random);
    if (taken.has(w)) continue;
    taken.add(w);
    out.push(w);
  }
  return out;
}

/** A sampler of indices 0..n-1 with probability ∝ 1 / (i + 1)^s (cumulative table, binary search). */
function zipf(n: number, s: number): (random: () => number) => number {
  const cumulative = new Float64Array(n);
  let total = 0;
  for (let i = 0; i < n; i++) {
    total += 1 / (i + 1) ** s;
    cumulative[i] = total;
  }
  return (random) => {
    const target = random() * total;
    let low = 0;
    let high = n - 1;
    while (low < high) {
      const mid = (low + high) >> 1;
      if (cumulative[mid]! < target) low = mid + 1;
      else high = mid;
    }
    return low;
  };
}

/** The rows of a spec, in a random order. */
export function scaleRows(spec: ScaleDataSpec): ScaleRow[] {
  const random = createRng(spec.seed);
  const taken = new Set<string>();
  const common = words(COMMON_WORDS, random, taken);
  const clusters = Array.from({ length: Math.ceil(spec.tags / CLUSTER_SIZE) }, () =>
    words(CLUSTER_WORDS, random, taken),
  );
  const topics = Array.from({ length: spec.tags }, () => words(TOPIC_WORDS, random, taken));
  const tagNames = Array.from(
    { length: spec.tags },
    (_, k) => `t${String(k + 1).padStart(3, '0')}-${topics[k]![0]}`,
  );
  const pickCommon = zipf(COMMON_WORDS, 1.07);
  const pickTopic = zipf(TOPIC_WORDS, 1);
  const pickCluster = zipf(CLUSTER_WORDS, 1);
  const pickTag = zipf(spec.tags, 0.5);
  const rows: ScaleRow[] = [];
  for (let r = 0; r < spec.rows; r++) {
    const k = pickTag(random);
    const length = 10 + randomInt(random, 51);
    const text: string[] = [];
    for (let i = 0; i < length; i++) {
      const u = random();
      text.push(
        u < P_TOPIC
          ? topics[k]![pickTopic(random)]!
          : u < P_TOPIC + P_CLUSTER
            ? clusters[Math.floor(k / CLUSTER_SIZE)]![pickCluster(random)]!
            : common[pickCommon(random)]!,
      );
    }
    const noisy = random() < LABEL_NOISE ? (k + 1 + randomInt(random, spec.tags - 1)) % spec.tags : k;
    const titleWords = 3 + randomInt(random, 4);
    rows.push({
      title: text.slice(0, titleWords).join(' '),
      description: text.slice(titleWords).join(' '),
      tag: tagNames[noisy]!,
    });
  }
  return rows;
}

/** RFC 4180 CSV of rows with `title`, `description` and `tag` columns (the words need no quoting). */
export function scaleCsv(rows: readonly ScaleRow[]): string {
  return `title,description,tag\n${rows.map((r) => `${r.title},${r.description},${r.tag}`).join('\n')}\n`;
}
