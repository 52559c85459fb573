/**
 * The review queue (`GET /review`): the served run's recorded predictions that most need a person, not
 * yet labelled. By default the least confident first (uncertainty sampling: the answers the model is
 * least sure of teach it most per label), mixed with a stated share drawn at random from the same
 * predictions — the only labels that are an unbiased sample of the traffic, so the only ones live
 * precision / recall / f1 are computed from (`selection: random_share`; monitor.ts). Other orders: `drift`
 * (the texts with the largest share of words training never saw first: what drives the unseen_ngrams
 * signal), `newest`, `random`.
 *
 * The random share is drawn uniformly from every unlabelled prediction of the window (a text sent twice
 * counts twice, as it does in the traffic); the ordered part lists each text once and leaves out texts
 * that already have a label. The two are interleaved evenly, so a person who stops early has still
 * labelled some of the random share. The decision on a training row that label-issue finding flagged
 * (`keep`, `fix`) is recorded in the same store (`LabelReview`); `pendingIssues` leaves out the rows
 * already decided.
 */
import type { LabelReview, RecordStore, ReviewCandidate } from './record-store.js';

export const REVIEW_ORDERS = ['uncertainty', 'drift', 'newest', 'random'] as const;
export type ReviewOrder = (typeof REVIEW_ORDERS)[number];

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
}

/** How unsure the model was: a single-label answer's probability; a multi-label tag's distance from 0.5. */
function certainty(candidate: ReviewCandidate): number {
  if (!candidate.multiLabel) return candidate.confidence;
  let closest = 1;
  for (const p of Object.values(candidate.probabilities)) closest = Math.min(closest, Math.abs(p - 0.5));
  return closest;
}

const normal = (text: string): string => text.toLowerCase().replace(/\s+/g, ' ').trim();

/** Texts that already have a label in the scope (normalised as duplicate checks compare them). */
async function labelledTexts(store: RecordStore, scope: string): Promise<Set<string>> {
  const texts = new Set<string>();
  let after: string | undefined;
  for (;;) {
    const page = await store.labelled({ scope, after, limit: 1_000 });
    if (page.length === 0) return texts;
    for (const row of page) if (row.text !== null) texts.add(normal(row.text));
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

export async function reviewQueue(store: RecordStore, request: ReviewRequest): Promise<ReviewQueue> {
  const random = request.random ?? Math.random;
  const candidates = await store.reviewCandidates({
    scope: request.scope,
    runId: request.runId,
    sinceMs: request.sinceMs,
    limit: REVIEW_CANDIDATES,
  });
  const wantRandom = Math.min(
    candidates.length,
    Math.round(request.limit * Math.min(1, Math.max(0, request.randomShare))),
  );
  const randomItems = draw(candidates, wantRandom, random);
  const chosen = new Set(randomItems.map((item) => item.predictionId));
  const labelled = await labelledTexts(store, request.scope);
  const seen = new Set(randomItems.map((item) => normal(item.text ?? '')));
  // Newest first already (the store's order): the first of each text is kept.
  const rest: ReviewCandidate[] = [];
  for (const candidate of candidates) {
    const text = normal(candidate.text ?? '');
    if (chosen.has(candidate.predictionId) || labelled.has(text) || seen.has(text)) continue;
    seen.add(text);
    rest.push(candidate);
  }
  const ordered =
    request.order === 'random'
      ? draw(rest, rest.length, random)
      : request.order === 'newest'
        ? rest
        : [...rest].sort((a, b) =>
            request.order === 'uncertainty'
              ? certainty(a) - certainty(b) || b.createdMs - a.createdMs
              : b.unseenShare - a.unseenShare || certainty(a) - certainty(b),
          );
  const wantOrdered = Math.min(ordered.length, request.limit - randomItems.length);
  const total = randomItems.length + wantOrdered;
  const items: ReviewItem[] = [];
  let r = 0;
  let o = 0;
  for (let i = 0; i < total; i++) {
    // The random share spread evenly: item i is random when the share's running count steps up there.
    const dueRandom = Math.floor(((i + 1) * randomItems.length) / total) > r;
    if ((dueRandom && r < randomItems.length) || o >= wantOrdered) {
      items.push({ ...randomItems[r++]!, selection: 'random_share' });
    } else {
      items.push({ ...ordered[o++]!, selection: request.order });
    }
  }
  return { items, candidates: candidates.length, randomItems: randomItems.length };
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
