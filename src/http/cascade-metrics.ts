/**
 * The metrics of cascade runs (issue 33), in the app's registry: texts by the stage that answered them —
 * so the routed share (`encoder` + `fast_degraded` over all) and the degraded answers can be read —, why
 * requests were degraded, each stage's time per request, and whether the served cascade runs without its
 * encoder (an alert's signal: /health/ready stays 200 then).
 */
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import type { CascadeDegradation } from '../served-models/index.js';
import type { PredictionStage } from './schemas.js';

/** A cascade's stages whose time is measured: the fast model, and the encoder's wait plus its model. */
export type TimedStage = Exclude<PredictionStage, 'fast_degraded'>;

export class CascadeMetrics {
  private readonly texts: Counter<'stage'>;
  private readonly degraded: Counter<'reason'>;
  private readonly stageSeconds: Histogram<'stage'>;

  constructor(
    registry: Registry,
    /** Whether the served model is a cascade served without its encoder (`--allow-degraded`); null: none. */
    servedDegraded: () => boolean | null,
  ) {
    const registers = [registry];
    new Gauge({
      name: 'tagger_served_cascade_degraded',
      help: 'Whether the served model is a cascade served by its fast model alone because its sentence encoder cannot be used on this server (1; --allow-degraded, /health/ready says why) or not (0)',
      registers,
      // Across workers: 1 when any worker serves it so.
      aggregator: 'max',
      collect() {
        this.reset();
        const degraded = servedDegraded();
        if (degraded !== null) this.set(degraded ? 1 : 0);
      },
    });
    this.texts = new Counter({
      name: 'tagger_cascade_texts_total',
      help: 'Texts a cascade run answered, by stage: fast (its fast model was sure), encoder (unsure, answered by its encoder model), fast_degraded (unsure, answered by the fast model because the encoder could not take it)',
      labelNames: ['stage'],
      registers,
    });
    this.degraded = new Counter({
      name: 'tagger_cascade_degraded_requests_total',
      help: 'Requests whose unsure texts a cascade run answered with its fast model (stage fast_degraded), by why: queue_full, request_too_large, encoder_failed, encoder_missing (served without its encoder, --allow-degraded)',
      labelNames: ['reason'],
      registers,
    });
    this.stageSeconds = new Histogram({
      name: 'tagger_cascade_stage_seconds',
      help: "Time a cascade run's stage took for one request: fast (its fast model on every text), encoder (the unsure texts' wait for their embeddings plus the encoder model; requests that had some)",
      labelNames: ['stage'],
      buckets: [
        0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10,
      ],
      registers,
    });
    // Every series from the start, so a rate over them is defined before the first unsure text.
    for (const stage of ['fast', 'encoder', 'fast_degraded'] as const) this.texts.inc({ stage }, 0);
  }

  recordTexts(fast: number, encoder: number, fastDegraded: number): void {
    if (fast > 0) this.texts.inc({ stage: 'fast' }, fast);
    if (encoder > 0) this.texts.inc({ stage: 'encoder' }, encoder);
    if (fastDegraded > 0) this.texts.inc({ stage: 'fast_degraded' }, fastDegraded);
  }

  recordDegraded(reason: CascadeDegradation): void {
    this.degraded.inc({ reason });
  }

  observeStage(stage: TimedStage, seconds: number): void {
    this.stageSeconds.observe({ stage }, seconds);
  }
}
