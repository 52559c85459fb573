/**
 * Chart.js charts as Preact components. Only the controllers the page uses are registered, so the bundle
 * carries no more of Chart.js than it draws; the confusion matrix uses chartjs-chart-matrix.
 */
import {
  BarController,
  BarElement,
  CategoryScale,
  Chart,
  type ChartConfiguration,
  Legend,
  LinearScale,
  LineController,
  LineElement,
  type Plugin,
  PointElement,
  Tooltip,
} from 'chart.js';
import { MatrixController, MatrixElement } from 'chartjs-chart-matrix';
import { useEffect, useRef } from 'preact/hooks';

Chart.register(
  BarController,
  BarElement,
  CategoryScale,
  LinearScale,
  LineController,
  LineElement,
  PointElement,
  Legend,
  Tooltip,
  MatrixController,
  MatrixElement,
);
// Charts follow the page's width; the height is the wrapper's (CSS), so nothing overflows on a phone.
Chart.defaults.maintainAspectRatio = false;
Chart.defaults.animation = false;

/** Colour-blind-safe palette (Okabe–Ito). */
export const PALETTE = ['#0072b2', '#e69f00', '#009e73', '#cc79a7', '#56b4e9', '#d55e00', '#f0e442'];

// biome-ignore lint/suspicious/noExplicitAny: a Chart.js config is generic over the chart type.
type AnyConfig = ChartConfiguration<any, any, any>;

/**
 * Where the plot area is, on the canvas as `data-chart-area` (CSS pixels): lets a test click a given
 * heatmap cell the way a person would.
 */
const exposeChartArea: Plugin = {
  id: 'exposeChartArea',
  afterLayout(chart) {
    const { left, top, right, bottom } = chart.chartArea;
    chart.canvas.dataset.chartArea = JSON.stringify({ left, top, right, bottom });
  },
};

interface ChartProps {
  config: AnyConfig;
  /** What the chart shows, for screen readers (the canvas itself says nothing). */
  label: string;
  height?: number;
  onClick?: (chart: Chart, event: MouseEvent) => void;
}

export function ChartCanvas({ config, label, height = 280, onClick }: ChartProps) {
  const canvas = useRef<HTMLCanvasElement>(null);
  useEffect(() => {
    if (canvas.current === null) return;
    const chart = new Chart(canvas.current, {
      ...config,
      plugins: [...(config.plugins ?? []), exposeChartArea],
    });
    const element = canvas.current;
    const click = (event: MouseEvent) => onClick?.(chart, event);
    element.addEventListener('click', click);
    return () => {
      element.removeEventListener('click', click);
      chart.destroy();
    };
  }, [config, onClick]);
  return (
    <div class="chart" style={{ height: `${height}px` }}>
      <canvas ref={canvas} role="img" aria-label={label} />
    </div>
  );
}

/** Writes each matrix cell's count in its middle, dark on light cells and light on dark ones. */
const cellCounts: Plugin<'matrix'> = {
  id: 'cellCounts',
  afterDatasetsDraw(chart) {
    const { ctx } = chart;
    const meta = chart.getDatasetMeta(0);
    const data = chart.data.datasets[0]?.data as unknown as MatrixCell[] | undefined;
    if (data === undefined) return;
    ctx.save();
    ctx.textAlign = 'center';
    ctx.textBaseline = 'middle';
    ctx.font = '600 12px system-ui, sans-serif';
    meta.data.forEach((element, index) => {
      const cell = data[index];
      if (cell === undefined) return;
      const { x, y, width, height } = element.getProps(['x', 'y', 'width', 'height'], true) as {
        x: number;
        y: number;
        width: number;
        height: number;
      };
      ctx.fillStyle = cell.share > 0.55 ? '#ffffff' : '#1b1b1b';
      ctx.fillText(String(cell.v), x + width / 2, y + height / 2);
    });
    ctx.restore();
  },
};

export interface MatrixCell {
  x: string;
  y: string;
  v: number;
  /** The cell's share of its row (true tag): what the colour shows, so small tags are as readable. */
  share: number;
}

/**
 * A confusion-matrix heatmap config: rows are true tags, columns predicted tags. `rowTotals`: each true
 * tag's rows over every tag, when the matrix shows only some of them (else its rows' sums).
 */
export function confusionConfig(
  labels: string[],
  matrix: number[][],
  rowTotals?: readonly number[],
): AnyConfig {
  const cells: MatrixCell[] = [];
  matrix.forEach((row, t) => {
    const sum = rowTotals?.[t] ?? row.reduce((a, b) => a + b, 0);
    row.forEach((v, p) => {
      cells.push({ x: labels[p]!, y: labels[t]!, v, share: sum === 0 ? 0 : v / sum });
    });
  });
  const n = Math.max(labels.length, 1);
  return {
    type: 'matrix',
    data: {
      datasets: [
        {
          label: 'test rows',
          data: cells,
          backgroundColor: (context: { raw?: MatrixCell }) =>
            `rgba(0, 84, 147, ${0.06 + 0.94 * (context.raw?.share ?? 0)})`,
          borderColor: '#ffffff',
          borderWidth: 1,
          width: ({ chart }: { chart: Chart }) => (chart.chartArea?.width ?? 0) / n - 1,
          height: ({ chart }: { chart: Chart }) => (chart.chartArea?.height ?? 0) / n - 1,
        },
      ],
    },
    options: {
      plugins: {
        legend: { display: false },
        tooltip: {
          callbacks: {
            title: () => '',
            label: (item: { raw: MatrixCell }) =>
              `true ${item.raw.y} → predicted ${item.raw.x}: ${item.raw.v} (${(100 * item.raw.share).toFixed(0)}% of ${item.raw.y})`,
          },
        },
      },
      scales: {
        x: {
          type: 'category',
          labels,
          offset: true,
          grid: { display: false },
          title: { display: true, text: 'predicted tag' },
        },
        y: {
          type: 'category',
          labels,
          // Stated, not left to the default: the first tag on top, so the diagonal runs from top left to
          // bottom right as in the table version.
          reverse: false,
          offset: true,
          grid: { display: false },
          title: { display: true, text: 'true tag' },
        },
      },
    },
    plugins: [cellCounts],
  };
}
