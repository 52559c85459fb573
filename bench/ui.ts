/**
 * The inspection page (/ui/): the size of what a browser downloads (built by Vite from ui/, as
 * `npm run build` does) and how fast it paints and shows the runs from a local server in headless
 * Chromium. The server serves two real trainings on the bundled samples from a temporary file store.
 * Page loads are repeated (fresh browser contexts, no cache) and the median is reported.
 */
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { build } from 'vite';
import { createApp } from '../src/app.js';
import { parseTrainingArgs } from '../src/model/index.js';
import { ServedRuns } from '../src/served-models/index.js';
import { openTrackingStore } from '../src/tracking/index.js';
import { readDataset } from '../src/train/data.js';
import { logTrainingRun } from '../src/train/log-run.js';
import { trainAndEvaluate } from '../src/train/pipeline.js';
import { launchOfflineChromium } from '../test/support/chromium.js';
import { REPO } from './paths.js';
import type { BenchOptions, SectionResult } from './section.js';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const FIRST_PAINT_TARGET_MS = 1000;

const median = (values: number[]): number => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
};

/** Bytes and gzipped bytes of the built files with this extension. */
function assetSize(dir: string, extension: string): { raw: number; gzip: number } {
  let raw = 0;
  let gzip = 0;
  for (const name of readdirSync(join(dir, 'assets')).filter((file) => file.endsWith(extension))) {
    const bytes = readFileSync(join(dir, 'assets', name));
    raw += bytes.length;
    gzip += gzipSync(bytes, { level: 6 }).length;
  }
  return { raw, gzip };
}

export async function run(opts: BenchOptions): Promise<SectionResult> {
  if (!existsSync(CHROMIUM)) {
    return { rows: [], notes: [`ui: skipped, no Chromium at ${CHROMIUM} (apt-get install chromium)`] };
  }
  const dir = mkdtempSync(join(tmpdir(), 'tagger-bench-ui-'));
  const uiDir = join(dir, 'ui');
  const store = await openTrackingStore(join(dir, 'mlruns'));
  let app: ReturnType<typeof createApp> | undefined;
  const browser = await launchOfflineChromium(CHROMIUM);
  try {
    await build({
      configFile: join(REPO, 'ui', 'vite.config.ts'),
      build: { outDir: uiDir, emptyOutDir: true },
      logLevel: 'warn',
    });
    const js = assetSize(uiDir, '.js');
    const css = assetSize(uiDir, '.css');

    const data = await readDataset(join(REPO, 'samples', 'projects.csv'));
    for (const [name, overrides] of [
      ['word', { analyzer: 'word', ngram_max_range: 2, num_epochs: 5 }],
      ['char_wb', { analyzer: 'char_wb', ngram_max_range: 3, num_epochs: 5 }],
    ] as const) {
      const args = parseTrainingArgs({ min_freq: 5, ...overrides });
      const outcome = trainAndEvaluate({ data, args, seed: 42 });
      await logTrainingRun(store, {
        experiment: 'best',
        runName: name,
        args,
        seed: 42,
        outcome,
        source: 'bench',
      });
    }
    const servedRuns = await ServedRuns.load(store, {
      experiment: 'best',
      modelCacheSize: 2,
      log: { info: () => undefined, warn: () => undefined },
    });
    app = createApp({ serving: { mode: 'runs', servedRuns }, uiDir });
    const base = await app.listen({ host: '127.0.0.1', port: 0 });

    const loads = opts.quick ? 3 : 9;
    const paints: number[] = [];
    const tables: number[] = [];
    for (let i = 0; i < loads; i++) {
      const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
      const page = await context.newPage();
      const started = Date.now();
      await page.goto(`${base}/ui/`);
      await page.locator('table.runs tbody tr').nth(1).waitFor();
      tables.push(Date.now() - started);
      const paint = await page.evaluate(
        () => performance.getEntriesByName('first-contentful-paint')[0]?.startTime ?? Number.NaN,
      );
      paints.push(paint);
      await context.close();
    }
    const firstPaint = median(paints);
    const kb = (bytes: number) => bytes / 1024;
    return {
      rows: [
        {
          section: 'ui',
          metric: 'JavaScript',
          unit: 'kB',
          tagger: kb(js.raw),
          reference: null,
          note: `${kb(js.gzip).toFixed(1)} kB gzipped`,
        },
        {
          section: 'ui',
          metric: 'CSS',
          unit: 'kB',
          tagger: kb(css.raw),
          reference: null,
          note: `${kb(css.gzip).toFixed(1)} kB gzipped`,
        },
        {
          section: 'ui',
          metric: 'first contentful paint (median)',
          unit: 'ms',
          tagger: firstPaint,
          reference: null,
          note: `${loads} loads, local server, headless Chromium`,
          target: { text: `< ${FIRST_PAINT_TARGET_MS} ms`, pass: firstPaint < FIRST_PAINT_TARGET_MS },
        },
        {
          section: 'ui',
          metric: 'runs table shown (median)',
          unit: 'ms',
          tagger: median(tables),
          reference: null,
          note: 'navigation start to the runs listed (page, assets and GET /runs)',
        },
      ],
      details: { paints, tables, js, css },
    };
  } finally {
    await browser.close();
    await app?.close();
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  }
}
