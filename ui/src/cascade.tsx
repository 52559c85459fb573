/**
 * A cascade run's threshold (GET /runs/{id}/cascade): how τ was chosen — the curve of the share of training
 * rows routed to the encoder model against the out-of-fold f1, the encoder model alone as a line, the
 * chosen point marked — and how the test split was routed and scored stage by stage.
 */
import { useMemo } from 'preact/hooks';
import type { RunCascadeData } from '../../src/http/api-types.js';
import { api } from './api';
import { ChartCanvas, PALETTE } from './charts';
import { Failure, useLoad } from './load';

const percent = (share: number): string => `${(100 * share).toFixed(1)} %`;

/** Whether a run's params say it is a cascade. */
export const isCascadeRun = (params: Record<string, string>): boolean => params.cascade === 'true';

function CascadeCurve({ curve }: { curve: RunCascadeData }) {
  const config = useMemo(() => {
    const points = curve.points.map((p) => ({ x: 100 * p.routed, y: p.f1, threshold: p.threshold }));
    const xs = points.map((p) => p.x);
    const span = [Math.min(0, ...xs), Math.max(100, ...xs)];
    return {
      type: 'line' as const,
      data: {
        datasets: [
          {
            label: 'cascade, out of fold (each point a τ)',
            data: points,
            borderColor: PALETTE[0],
            pointRadius: 0,
            borderWidth: 2,
          },
          {
            label: 'encoder model alone',
            data: span.map((x) => ({ x, y: curve.cv.encoder_f1 })),
            borderColor: PALETTE[1],
            borderDash: [6, 4],
            pointRadius: 0,
            borderWidth: 1.5,
          },
          {
            label: 'fast model alone',
            data: span.map((x) => ({ x, y: curve.cv.fast_f1 })),
            borderColor: PALETTE[2],
            borderDash: [2, 3],
            pointRadius: 0,
            borderWidth: 1.5,
          },
          {
            label: `chosen: τ ${curve.chosen.threshold}`,
            data: [{ x: 100 * curve.chosen.routed, y: curve.chosen.f1 }],
            borderColor: PALETTE[5],
            backgroundColor: PALETTE[5],
            pointRadius: 6,
            showLine: false,
          },
        ],
      },
      options: {
        parsing: false,
        scales: {
          x: {
            type: 'linear',
            min: 0,
            max: 100,
            title: { display: true, text: '% of texts routed to the encoder' },
          },
          y: { title: { display: true, text: 'weighted f1 (out of fold)' } },
        },
        plugins: {
          tooltip: {
            callbacks: {
              label: (item: { raw: { x: number; y: number; threshold?: number } }) =>
                `${item.raw.threshold === undefined ? '' : `τ ${item.raw.threshold}: `}${item.raw.x.toFixed(1)} % routed, f1 ${item.raw.y.toFixed(4)}`,
            },
          },
        },
      },
    };
  }, [curve]);
  return (
    <ChartCanvas
      config={config}
      label={`Share of texts routed to the encoder model against out-of-fold f1; chosen τ ${curve.chosen.threshold}: ${percent(curve.chosen.routed)} routed, f1 ${curve.chosen.f1.toFixed(4)}; the encoder model alone ${curve.cv.encoder_f1.toFixed(4)}`}
    />
  );
}

export function CascadePart({ runId, f1 }: { runId: string; f1: number | undefined }) {
  const curve = useLoad(() => api.cascade(runId), [runId]);
  return (
    <section aria-labelledby="cascade-title" data-testid="cascade">
      <h3 id="cascade-title">Cascade: fast model first, the encoder when unsure</h3>
      {curve.error ? (
        <Failure error={curve.error} />
      ) : curve.value ? (
        <>
          <p data-testid="cascade-choice">
            τ <strong>{curve.value.chosen.threshold}</strong>: {curve.value.reason}.
          </p>
          <p data-testid="cascade-test">
            On the test split {percent(curve.value.test.routed)} of the texts went to the encoder model; f1 of
            the cascade {f1 === undefined ? '–' : f1.toFixed(4)}, of the fast model alone{' '}
            {curve.value.test.fast_f1.toFixed(4)}, of the encoder model alone{' '}
            {curve.value.test.encoder_f1.toFixed(4)}.
          </p>
          <CascadeCurve curve={curve.value} />
        </>
      ) : (
        <p class="loading">Loading the cascade’s curve…</p>
      )}
    </section>
  );
}
