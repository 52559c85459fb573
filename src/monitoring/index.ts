/** Public surface of src/monitoring: prediction records, feedback, live quality and drift. */
export { CloudEventsSink, REQUEST_EVENT, RESPONSE_EVENT } from './cloudevents-sink.js';
export { ExportError, type ExportFilter, type ExportSummary, writeLabelledCsv } from './export.js';
export type { FeedbackItem, FeedbackOutcome, FeedbackResult } from './feedback.js';
export { predictionId } from './ids.js';
export { MemoryRecordStore } from './memory-record-store.js';
export type { HistoryPoint, MonitoredRun, MonitoringSnapshot, TagShare } from './monitor.js';
export {
  DRIFT_SIGNIFICANCE,
  MONITORING_DEFAULTS,
  Monitoring,
  type MonitoringConfig,
  type MonitoringDeps,
  PRUNE_EVERY_MS,
  vocabularyOf,
} from './monitoring.js';
export {
  checkRecordStoreUri,
  defaultRecordStoreUri,
  LOCAL_RECORD_STORE,
  MEMORY_RECORD_STORE,
  openRecordStore,
} from './open.js';
export {
  FEEDBACK_SELECTIONS,
  type FeedbackSelection,
  type LabelReview,
  type PredictionRecord,
  type RecordStore,
  RecordStoreError,
  recordScope,
} from './record-store.js';
export type { RecordOrigin } from './recorder.js';
export {
  DEFAULT_REVIEW_ORDER,
  decided,
  marginOf,
  REVIEW_ORDERS,
  type ReviewItem,
  type ReviewOrder,
  type ReviewQueue,
} from './review.js';
export type { MonitoringLog, RecordSink } from './sink-queue.js';
