/**
 * The defaults of the monitoring settings, in a module of their own: the settings table of `tagger serve`
 * (src/server/settings.ts), which every command loads, reads them without loading the monitoring layer.
 */
export const MONITORING_DEFAULTS = {
  sampleRate: 1,
  keepText: true,
  bufferSize: 10_000,
  flushMs: 1_000,
  retentionDays: 30,
  /** ~2.4 GB of SQLite at ~480 bytes a record (dataset.csv's texts, 4 tags; docs/monitoring.md). */
  retentionRows: 5_000_000,
  windowSeconds: 3_600,
  windowPredictions: 5_000,
  feedbackWindowSeconds: 7 * 86_400,
  minPredictions: 200,
  driftThreshold: 0.2,
  intervalMs: 10_000,
} as const;
