/**
 * Batch tagging of a file (`tagger predict --input … --output …`, src/batch/batch-predict.ts) against
 * in-process prediction of the same texts in batches of the same size, side by side (in-process before
 * and after the file run, averaged), plus how much the process grows while it streams a large file.
 * The file is generated from holdout.csv's texts: 20,000 rows with --quick, else about
 * TAGGER_BENCH_BATCH_MB megabytes (default 100).
 */
import { once } from 'node:events';
import { createWriteStream, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parse } from 'csv-parse/sync';
import { tagFile } from '../src/batch/batch-predict.js';
import { DEFAULT_TRAINING_ARGS, stratifiedSplit, trainTagger } from '../src/model/index.js';
import { predictorFor } from '../src/served-models/index.js';
import { DATA_DIR as DATA } from './paths.js';
import type { BenchOptions, BenchRow } from './section.js';

const BATCH = 512;

function load(file: string): { text: string; tag: string }[] {
  const rows = parse(readFileSync(resolve(DATA, file)), { columns: true }) as Record<string, string>[];
  return rows.map((r) => ({ text: `${r.title} ${r.description}`, tag: r.tag! }));
}

export async function run(opts: BenchOptions): Promise<BenchRow[]> {
  const dataset = load('dataset.csv');
  const texts = load('holdout.csv').map((row) => row.text);
  const [train, validation] = stratifiedSplit(dataset, (r) => r.tag, [0.85, 0.15], 42);
  const { model } = trainTagger(train!, validation!, DEFAULT_TRAINING_ARGS, { seed: 42 });

  const dir = mkdtempSync(join(tmpdir(), 'tagger-bench-batch-'));
  try {
    const input = join(dir, 'input.csv');
    const targetBytes = opts.quick ? 0 : Number(process.env.TAGGER_BENCH_BATCH_MB ?? 100) * 1024 * 1024;
    const out = createWriteStream(input);
    out.write('id,text\n');
    let rows = 0;
    let bytes = 0;
    while (opts.quick ? rows < 20_000 : bytes < targetBytes) {
      const chunk = texts.map((text, i) => `${rows + i},"${text.replaceAll('"', '""')}"\n`).join('');
      rows += texts.length;
      bytes += chunk.length;
      if (!out.write(chunk)) await once(out, 'drain');
    }
    out.end();
    await once(out, 'finish');
    const fileMb = statSync(input).size / 1024 / 1024;

    // In-process: the same number of texts, predicted in batches of BATCH, without any I/O.
    const inProcess = (): number => {
      const started = performance.now();
      let done = 0;
      const batch = Array.from({ length: BATCH }, (_, i) => texts[i % texts.length]!);
      while (done < rows) {
        const size = Math.min(BATCH, rows - done);
        model.predict(size === BATCH ? batch : batch.slice(0, size));
        done += size;
      }
      return rows / ((performance.now() - started) / 1000);
    };
    inProcess(); // warm-up
    const before = inProcess();

    const rssBefore = process.memoryUsage.rss();
    let rssPeak = rssBefore;
    const sampler = setInterval(() => {
      rssPeak = Math.max(rssPeak, process.memoryUsage.rss());
    }, 20);
    const result = await tagFile(predictorFor(model), {
      input,
      output: join(dir, 'output.csv'),
      batchSize: BATCH,
    });
    clearInterval(sampler);
    rssPeak = Math.max(rssPeak, process.memoryUsage.rss());
    const fileRate = result.tagged / result.seconds;
    const after = inProcess();
    const reference = (before + after) / 2;

    return [
      {
        section: 'batch',
        metric: `tag a ${fileMb.toFixed(0)} MB CSV (${rows.toLocaleString('en-US')} rows) to CSV vs in-process predict`,
        unit: 'texts/s',
        tagger: fileRate,
        reference,
        note: `reference = model.predict in batches of ${BATCH}, same texts, no I/O (mean of before and after)`,
        target: { text: '≥ 0.8×', pass: fileRate / reference >= 0.8 },
      },
      {
        section: 'batch',
        metric: 'process growth while streaming that file (peak RSS − RSS before)',
        unit: 'MB',
        tagger: (rssPeak - rssBefore) / 1024 / 1024,
        reference: null,
        note: `RSS before ${(rssBefore / 1024 / 1024).toFixed(0)} MB; flat memory: it must not grow with the file`,
      },
    ];
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
