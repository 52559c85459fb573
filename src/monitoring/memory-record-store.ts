/**
 * Prediction records in this process's memory (`TAGGER_RECORD_STORE=memory:`): nothing is written to
 * disk, nothing survives a restart, and each `--workers` process holds its own — for one process, and for
 * tests. Bounded: beyond `capacity` records the oldest are forgotten (with their feedback), as retention
 * would forget them.
 */
import { binOf } from '../model/index.js';
import type {
  FeedbackEntry,
  FeedbackQuery,
  FeedbackSelection,
  FeedbackWindow,
  LabelledQuery,
  LabelledRecord,
  LabelReview,
  Lease,
  PredictionRecord,
  RecordedPrediction,
  RecordStore,
  ReviewCandidate,
  ReviewQuery,
  WindowCounts,
  WindowQuery,
  WriterMark,
} from './record-store.js';

/** Records a memory store keeps by default: ~100 MB at most with texts of a few hundred characters. */
export const MEMORY_CAPACITY = 200_000;

interface Feedback {
  tags: string[];
  receivedMs: number;
  scope: string;
  runId: string;
  selection: FeedbackSelection;
}

export class MemoryRecordStore implements RecordStore {
  readonly displayUri = 'memory:';
  /** Insertion order is creation order (records arrive in batches, in time order), so the first is the oldest. */
  private readonly records = new Map<string, PredictionRecord>();
  private readonly feedback = new Map<string, Feedback>();
  private readonly marks = new Map<string, WriterMark>();
  private readonly reviews = new Map<string, LabelReview>();
  private readonly leases = new Map<string, Lease>();

  constructor(private readonly capacity = MEMORY_CAPACITY) {}

  async append(records: readonly PredictionRecord[]): Promise<void> {
    for (const record of records) {
      if (this.records.has(record.predictionId)) continue;
      // A copy, so a caller changing its object later changes nothing recorded; NUL as the SQL stores keep it.
      const copy = structuredClone(record) as PredictionRecord;
      if (copy.text !== null) copy.text = copy.text.replaceAll('\u0000', '\uFFFD');
      this.records.set(record.predictionId, copy);
    }
    for (const id of this.records.keys()) {
      if (this.records.size <= this.capacity) break;
      this.records.delete(id);
      this.feedback.delete(id);
    }
  }

  async find(scope: string, ids: readonly string[]): Promise<Map<string, RecordedPrediction>> {
    const found = new Map<string, RecordedPrediction>();
    for (const id of ids) {
      const record = this.records.get(id);
      if (record === undefined || record.scope !== scope) continue;
      found.set(id, {
        predictionId: id,
        runId: record.runId,
        multiLabel: record.multiLabel,
        tags: Object.keys(record.probabilities).sort(),
        createdMs: record.createdMs,
      });
    }
    return found;
  }

  async putFeedback(entries: readonly FeedbackEntry[]): Promise<Set<string>> {
    const replaced = new Set<string>();
    for (const entry of entries) if (this.feedback.has(entry.predictionId)) replaced.add(entry.predictionId);
    for (const entry of entries) {
      this.feedback.set(entry.predictionId, {
        tags: [...entry.tags],
        receivedMs: entry.receivedMs,
        scope: entry.scope,
        runId: entry.runId,
        selection: entry.selection ?? 'unspecified',
      });
    }
    return replaced;
  }

  async windowCounts(query: WindowQuery): Promise<WindowCounts> {
    // Newest first from the end of the insertion order, which is (batch by batch) time order: no sort
    // of every record held at each refresh.
    const all = [...this.records.values()];
    const window: PredictionRecord[] = [];
    for (let i = all.length - 1; i >= 0 && window.length < query.limit; i--) {
      const r = all[i]!;
      if (r.scope === query.scope && r.runId === query.runId && r.createdMs >= query.sinceMs) window.push(r);
    }
    const counts: WindowCounts = {
      predictions: window.length,
      predicted_tag: {},
      confidence: new Array<number>(query.bins.confidence.length).fill(0),
      unseen_ngrams: new Array<number>(query.bins.unseen_ngrams.length).fill(0),
      text_length: new Array<number>(query.bins.text_length.length).fill(0),
      stages: {},
    };
    for (const record of window) {
      if (record.stage != null) counts.stages[record.stage] = (counts.stages[record.stage] ?? 0) + 1;
      counts.predicted_tag[record.predictedTag] = (counts.predicted_tag[record.predictedTag] ?? 0) + 1;
      counts.confidence[binOf(record.confidence, query.bins.confidence)]!++;
      counts.unseen_ngrams[binOf(record.unseenShare, query.bins.unseen_ngrams)]!++;
      counts.text_length[binOf(record.textLength, query.bins.text_length)]!++;
    }
    return counts;
  }

  async feedbackWindow(query: FeedbackQuery): Promise<FeedbackWindow> {
    let lastReceivedMs: number | null = null;
    const rows: {
      predicted: string[];
      truth: string[];
      selection: FeedbackSelection;
      stage: string | null;
      receivedMs: number;
    }[] = [];
    for (const [id, feedback] of this.feedback) {
      if (feedback.scope !== query.scope || feedback.runId !== query.runId) continue;
      lastReceivedMs = Math.max(lastReceivedMs ?? 0, feedback.receivedMs);
      const record = this.records.get(id);
      if (record === undefined || feedback.receivedMs < query.sinceMs) continue;
      rows.push({
        predicted: [...record.predictedTags],
        truth: [...feedback.tags],
        selection: feedback.selection,
        stage: record.stage ?? null,
        receivedMs: feedback.receivedMs,
      });
    }
    rows.sort((a, b) => b.receivedMs - a.receivedMs);
    return {
      labelled: rows
        .slice(0, query.limit)
        .map(({ predicted, truth, selection, stage }) => ({ predicted, truth, selection, stage })),
      lastReceivedMs,
    };
  }

  async labelled(query: LabelledQuery): Promise<LabelledRecord[]> {
    const out: LabelledRecord[] = [];
    for (const [id, feedback] of this.feedback) {
      const record = this.records.get(id);
      if (record === undefined) continue;
      if (query.scope !== undefined && feedback.scope !== query.scope) continue;
      if (query.runId !== undefined && feedback.runId !== query.runId) continue;
      if (query.sinceMs !== undefined && feedback.receivedMs < query.sinceMs) continue;
      if (query.after !== undefined && !(id > query.after)) continue;
      out.push({
        predictionId: id,
        runId: record.runId,
        createdMs: record.createdMs,
        text: record.text,
        multiLabel: record.multiLabel,
        tags: [...feedback.tags],
        receivedMs: feedback.receivedMs,
        selection: feedback.selection,
      });
    }
    return out.sort((a, b) => (a.predictionId < b.predictionId ? -1 : 1)).slice(0, query.limit);
  }

  async prune(beforeMs: number, keepRows?: number): Promise<number> {
    let deleted = 0;
    for (const [id, record] of this.records) {
      if (record.createdMs >= beforeMs) continue;
      this.records.delete(id);
      this.feedback.delete(id);
      deleted++;
    }
    if (keepRows !== undefined && keepRows > 0 && this.records.size > keepRows) {
      // Ids sort by time: the oldest are the smallest.
      const ids = [...this.records.keys()].sort();
      for (const id of ids.slice(0, ids.length - keepRows)) {
        this.records.delete(id);
        this.feedback.delete(id);
        deleted++;
      }
    }
    for (const [id, mark] of this.marks) if (mark.heartbeatMs < beforeMs) this.marks.delete(id);
    return deleted;
  }

  async putWriterMark(mark: WriterMark): Promise<void> {
    this.marks.set(mark.writerId, { ...mark });
  }

  async removeWriterMark(writerId: string): Promise<void> {
    this.marks.delete(writerId);
  }

  async writerMarks(): Promise<WriterMark[]> {
    return [...this.marks.values()].map((mark) => ({ ...mark }));
  }

  async reviewCandidates(query: ReviewQuery): Promise<ReviewCandidate[]> {
    const all = [...this.records.values()];
    const out: ReviewCandidate[] = [];
    for (let i = all.length - 1; i >= 0 && out.length < query.limit; i--) {
      const r = all[i]!;
      if (r.scope !== query.scope || r.runId !== query.runId || r.createdMs < query.sinceMs) continue;
      if (this.feedback.has(r.predictionId) || r.text === null) continue;
      out.push({
        predictionId: r.predictionId,
        createdMs: r.createdMs,
        runId: r.runId,
        multiLabel: r.multiLabel,
        predictedTag: r.predictedTag,
        predictedTags: [...r.predictedTags],
        probabilities: { ...r.probabilities },
        confidence: r.confidence,
        unseenShare: r.unseenShare,
        text: r.text,
      });
    }
    return out;
  }

  async putLabelReviews(reviews: readonly LabelReview[]): Promise<void> {
    for (const review of reviews) {
      const copy = structuredClone(review) as LabelReview;
      copy.text = copy.text.replaceAll('\u0000', '\uFFFD');
      this.reviews.set(`${review.scope}\u0000${review.textKey}`, copy);
    }
  }

  async labelReviews(scope?: string): Promise<LabelReview[]> {
    return [...this.reviews.values()]
      .filter((review) => scope === undefined || review.scope === scope)
      .sort((a, b) => a.receivedMs - b.receivedMs || (a.textKey < b.textKey ? -1 : 1))
      .map((review) => structuredClone(review) as LabelReview);
  }

  async takeLease(name: string, holder: string, ttlMs: number, nowMs: number): Promise<Lease> {
    const held = this.leases.get(name);
    if (held !== undefined && held.holder !== holder && held.expiresMs > nowMs) return { ...held };
    const lease = {
      name,
      holder,
      acquiredMs: held?.holder === holder ? held.acquiredMs : nowMs,
      expiresMs: nowMs + ttlMs,
    };
    this.leases.set(name, lease);
    return { ...lease };
  }

  async releaseLease(name: string, holder: string): Promise<void> {
    if (this.leases.get(name)?.holder === holder) this.leases.delete(name);
  }

  async close(): Promise<void> {
    this.records.clear();
    this.feedback.clear();
  }
}
