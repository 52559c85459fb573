/**
 * The review queue (`GET /review`): the served run's recorded predictions that most need a person, not
 * yet labelled. By default the smallest margin first — the best tag's probability minus the second best's
 * (for a multi-label run, the tag closest to its threshold) — the cheap, strong baseline of the
 * active-learning literature, which on BANKING77 and CLINC150 reaches the all-data model with fewer labels
 * than random sampling (bench/loop.ts, docs/benchmarks.md#closing-the-loop); mixed with a stated share
 * drawn at random from the same predictions — the only labels that are an unbiased sample of the traffic,
 * so the only ones live precision / recall / f1 are computed from (`selection: random_share`;
 * monitor.ts). Other orders: `uncertainty` (the least confident first: the answer's probability),
 * `drift` (the texts with the largest share of words training never saw first: what drives the
 * unseen_ngrams signal), `newest`, `random`.
 *
 * The random share is drawn uniformly from every unlabelled prediction of the window (a text sent twice
 * counts twice, as it does in the traffic) and is that share of the items listed (of `limit`, or of the
 * predictions there are when fewer). The ordered part leaves out texts that are the same as or near copies
 * of a text already labelled or listed (src/model/text/near-duplicates.ts: plain uncertainty sampling
 * otherwise keeps picking near copies of short, similar texts, each of which teaches little once one is
 * labelled). The two are interleaved evenly, so a person who stops early has still labelled some of the
 * random share. The decision on a training row that label-issue finding flagged (`keep`, `fix`) is
 * recorded in the same store (`LabelReview`); `decided` tells the rows already decided.
 */
import { NearDuplicateIndex } from '../model/index.js';
import type { LabelReview, RecordStore, ReviewCandidate } from './record-store.js';

export const REVIEW_ORDERS = ['margin', 'uncertainty', 'drift', 'newest', 'random'] as const;
export type ReviewOrder = (typeof REVIEW_ORDERS)[number];
/** The order GET /review lists in when none is asked for. */
export const DEFAULT_REVIEW_ORDER: ReviewOrder = 'margin';

/** Recent unlabelled predictions a queue is chosen from, at most (the newest). */
export const REVIEW_CANDIDATES = 5_000;

export interface ReviewRequest {
  scope: string;
  runId: string;
  limit: number;
  order: ReviewOrder;
  /** Share of the items drawn at random (0–1). */
  randomShare: number;
  /** Only predictions made at or after this time. */
  sinceMs: number;
  /** A multi-label run's per-tag thresholds (the margin is the distance to them); 0.5 for tags without. */
  thresholds?: Readonly<Record<string, number>> | undefined;
  random?: () => number;
}

export interface ReviewItem extends ReviewCandidate {
  /** `random_share`, or the order that chose it: what its feedback's `selection` should say. */
  selection: 'random_share' | ReviewOrder;
}

export interface ReviewQueue {
  items: ReviewItem[];
  /** Unlabelled predictions the queue was chosen from. */
  candidates: number;
  /** Items of the random share. */
  randomItems: number;
  /** Predictions passed over because their text is the same as or a near copy of one labelled or listed. */
  nearCopies: number;
}

/** How unsure the model was: a single-label answer's probability; a multi-label tag's distance from 0.5. */
function certainty(candidate: ReviewCandidate): number {
  if (!candidate.multiLabel) return candidate.confidence;
  let closest = 1;
  for (const p of Object.values(candidate.probabilities)) closest = Math.min(closest, Math.abs(p - 0.5));
  return closest;
}

/**
 * The margin of an answer: the best tag's probability minus the second best's (of the probabilities
 * recorded, which always hold the most probable ones); for a multi-label answer, the smallest distance of
 * a tag's probability from its threshold. The smaller, the more a label decides.
 */
export function marginOf(
  candidate: Pick<ReviewCandidate, 'multiLabel' | 'probabilities'>,
  thresholds?: Readonly<Record<string, number>>,
): number {
  if (candidate.multiLabel) {
    let closest = 1;
    for (const [tag, p] of Object.entries(candidate.probabilities)) {
      closest = Math.min(closest, Math.abs(p - (thresholds?.[tag] ?? 0.5)));
    }
    return closest;
  }
  let first = 0;
  let second = 0;
  for (const p of Object.values(candidate.probabilities)) {
    if (p > first) {
      second = first;
      first = p;
    } else if (p > second) second = p;
  }
  return first - second;
}

/** The texts that already have a label in the scope, indexed for "is this a copy of one of them?". */
async function labelledTexts(store: RecordStore, scope: string, index: NearDuplicateIndex): Promise<void> {
  let after: string | undefined;
  for (;;) {
    const page = await store.labelled({ scope, after, limit: 1_000 });
    if (page.length === 0) return;
    for (const row of page) if (row.text !== null) index.add(row.text);
    after = page.at(-1)!.predictionId;
  }
}

/** Fisher–Yates over a copy: `count` distinct elements in random order. */
function draw<T>(items: readonly T[], count: number, random: () => number): T[] {
  const copy = [...items];
  const n = Math.min(count, copy.length);
  for (let i = 0; i < n; i++) {
    const j = i + Math.floor(random() * (copy.length - i));
    [copy[i], copy[j]] = [copy[j]!, copy[i]!];
  }
  return copy.slice(0, n);
}

/** The candidates in the order asked for (the store gives them newest first). */
function ordered(
  candidates: readonly ReviewCandidate[],
  request: ReviewRequest,
  random: () => number,
): ReviewCandidate[] {
  switch (request.order) {
    case 'random':
      return draw(candidates, candidates.length, random);
    case 'newest':
      return [...candidates];
    case 'margin': {
      const margins = new Map(candidates.map((c) => [c, marginOf(c, request.thresholds)]));
      return [...candidates].sort((a, b) => margins.get(a)! - margins.get(b)! || b.createdMs - a.createdMs);
    }
    case 'uncertainty':
      return [...candidates].sort((a, b) => certainty(a) - certainty(b) || b.createdMs - a.createdMs);
    case 'drift':
      return [...candidates].sort((a, b) => b.unseenShare - a.unseenShare || certainty(a) - certainty(b));
  }
}

export async function reviewQueue(store: RecordStore, request: ReviewRequest): Promise<ReviewQueue> {
  const random = request.random ?? Math.random;
  const candidates = await store.reviewCandidates({
    scope: request.scope,
    runId: request.runId,
    sinceMs: request.sinceMs,
    limit: REVIEW_CANDIDATES,
  });
  // The share is of what is listed: with fewer predictions than the limit, of the predictions there are.
  const listed = Math.min(request.limit, candidates.length);
  const wantRandom = Math.round(listed * Math.min(1, Math.max(0, request.randomShare)));
  const randomItems = draw(candidates, wantRandom, random);
  const chosen = new Set(randomItems.map((item) => item.predictionId));
  const seen = new NearDuplicateIndex();
  await labelledTexts(store, request.scope, seen);
  for (const item of randomItems) seen.add(item.text ?? '');
  const wantOrdered = listed - randomItems.length;
  const picked: ReviewCandidate[] = [];
  let nearCopies = 0;
  for (const candidate of ordered(candidates, request, random)) {
    if (picked.length >= wantOrdered) break;
    if (chosen.has(candidate.predictionId)) continue;
    const text = candidate.text ?? '';
    if (seen.match(text) !== null) {
      nearCopies++;
      continue;
    }
    seen.add(text);
    picked.push(candidate);
  }
  const total = randomItems.length + picked.length;
  const items: ReviewItem[] = [];
  let r = 0;
  let o = 0;
  for (let i = 0; i < total; i++) {
    // The random share spread evenly: item i is random when the share's running count steps up there.
    const dueRandom = Math.floor(((i + 1) * randomItems.length) / total) > r;
    if ((dueRandom && r < randomItems.length) || o >= picked.length) {
      items.push({ ...randomItems[r++]!, selection: 'random_share' });
    } else {
      items.push({ ...picked[o++]!, selection: request.order });
    }
  }
  return { items, candidates: candidates.length, randomItems: randomItems.length, nearCopies };
}

/** What a decision must match to hide an issue: the text, and (for `keep`) the tags it kept. */
const sameTags = (a: readonly string[], b: readonly string[]): boolean =>
  a.length === b.length && [...a].sort().every((tag, i) => tag === [...b].sort()[i]);

/**
 * Whether a training row (by its text key and given tags) was decided already: fixed, or kept with the
 * tags it still has (a row kept once is not listed again; one whose tags changed since is).
 */
export function decided(
  reviews: ReadonlyMap<string, LabelReview>,
  textKey: string,
  givenTags: readonly string[],
): LabelReview | null {
  const review = reviews.get(textKey);
  if (review === undefined) return null;
  if (review.decision === 'fix' || sameTags(review.givenTags, givenTags)) return review;
  return null;
}
