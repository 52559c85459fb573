/**
 * Encoder runs served by the real server process (the real minilm encoder; skipped without `npm run
 * setup:encoder`):
 * - a TF-IDF process never maps ONNX Runtime; an encoder process does, in its encoder thread;
 * - /health/live stays fast while the encoder is saturated (its p99 against the encoder's batch time:
 *   an encoder on the event loop would hold every probe for a batch);
 * - SIGHUP to a run with another encoder under load fails no request, and the old encoder is closed;
 * - an encoder missing on the serving machine holds its run back with the reason in /health/ready while
 *   the next run serves (no crash);
 * - the encoder's queue is bounded by work (issue 34, item 4, the probe's request): 300 texts of 1,100
 *   CJK characters are refused at once with 413 (before: 110 s of encoder time here, 201 s and 981 MB on
 *   the probe's machine); a long request past the queue's token bound waits alone (issue 42: a one-text
 *   request beside it is refused at once with 503 + Retry-After), and a one-text request taken once what
 *   is left of it fits is answered before it (before: after all of it).
 * Loopback only.
 */
import { readFileSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { Agent, request } from 'node:http';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openTrackingStore, type TrackingStore } from '../../src/tracking/index.js';
import { minilmDir } from '../support/components.js';
import { otherEncoder, sampleEmbeddings, trainEncoderModel } from '../support/encoder-fixture.js';
import { type TrainedModel, trainModel } from '../support/fixtures.js';
import { KeepAliveLoad, killServers, logServedRun, spawnServer } from '../support/serve-process.js';
import { useTempDir } from '../support/temp-dir.js';

const dir = minilmDir();

/** Texts of a few hundred characters, like the data's (title + description). */
const LONG = Array.from(
  { length: 16 },
  (_, i) =>
    `Project ${i}: a practical guide to fine-tuning transformer encoders for text classification, with data augmentation, ` +
    'class imbalance handling, evaluation on held-out data, error analysis and serving the model behind an HTTP API on CPUs.',
);

const mapsOnnxRuntime = (pid: number): boolean =>
  readFileSync(`/proc/${pid}/maps`, 'utf8').includes('onnxruntime');

/** GET `path` over `agent`, resolving with the milliseconds it took. */
function timedGet(url: string, agent: Agent): Promise<number> {
  const started = performance.now();
  return new Promise((resolve, reject) => {
    request(url, { agent }, (response) => {
      response.resume();
      response.once('end', () => resolve(performance.now() - started));
    })
      .once('error', reject)
      .end();
  });
}

const quantile = (values: number[], q: number): number => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
};

/** A metric's value from Prometheus text (the first sample of that name). */
const metric = (text: string, name: string): number =>
  Number(new RegExp(`^${name}(?:\\{[^}]*\\})? (\\S+)$`, 'm').exec(text)?.[1] ?? Number.NaN);

describe.skipIf(dir === null)('encoder runs in the server process', () => {
  const tmp = useTempDir('tagger-e2e-encoder-');
  let store: TrackingStore;
  let tfidfOnly: string;
  let encoderModel: TrainedModel;
  let otherModel: TrainedModel;
  const runs: Record<string, string> = {};

  beforeAll(async () => {
    const tfidf = trainModel({ analyzer: 'word', ngram_max_range: 2 });
    encoderModel = trainEncoderModel(await sampleEmbeddings('minilm'));
    otherModel = trainEncoderModel(await sampleEmbeddings(await otherEncoder(tmp.path)));
    tfidfOnly = join(tmp.path, 'tfidf-only');
    const only = await openTrackingStore(tfidfOnly);
    await logServedRun(only, 'best', { name: 'tfidf', f1: 0.8, model: tfidf });
    await only.close();
    store = await openTrackingStore(join(tmp.path, 'mlruns'));
    runs.tfidf = await logServedRun(store, 'best', { name: 'tfidf', f1: 0.8, model: tfidf });
    runs.enc = await logServedRun(store, 'best', { name: 'enc', f1: 0.95, model: encoderModel });
  }, 300_000);

  afterAll(async () => {
    killServers();
    await store?.close();
  });

  it('a TF-IDF process never loads ONNX Runtime', async () => {
    const server = await spawnServer({ MLFLOW_TRACKING_URI: tfidfOnly });
    try {
      const response = await fetch(`${server.url}/predict`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ texts: [{ text: LONG[0] }] }),
      });
      expect(response.status).toBe(200);
      expect(mapsOnnxRuntime(server.child.pid!)).toBe(false);
    } finally {
      server.child.kill('SIGTERM');
      await server.exited;
    }
  }, 120_000);

  it('holds an encoder run back when its encoder is missing here, saying why, and serves the next run', async () => {
    const empty = join(tmp.path, 'no-encoders');
    await mkdir(empty, { recursive: true });
    const server = await spawnServer({
      MLFLOW_TRACKING_URI: join(tmp.path, 'mlruns'),
      TAGGER_ENCODERS_DIR: empty,
    });
    try {
      const ready = (await (await fetch(`${server.url}/health/ready`)).json()) as {
        data: { run_id: string; problems?: string[] };
      };
      expect(ready.data.run_id).toBe(runs.tfidf);
      const text = JSON.stringify(ready.data);
      expect(text).toContain(runs.enc);
      expect(text).toMatch(/its sentence encoder cannot be used on this server: .*minilm/);
      expect(text).not.toContain(empty);
      expect(server.child.exitCode).toBe(null);
    } finally {
      server.child.kill('SIGTERM');
      await server.exited;
    }
  }, 120_000);

  it('keeps /health/live fast while the encoder is saturated, and swaps encoders under load failing nothing', async () => {
    const server = await spawnServer({
      MLFLOW_TRACKING_URI: join(tmp.path, 'mlruns'),
      TAGGER_LOG_LEVEL: 'info',
      TAGGER_ENCODER_THREADS: '2',
    });
    const body = JSON.stringify({ texts: LONG.slice(0, 8).map((text) => ({ text })) });
    const load = new KeepAliveLoad(server.url, { connections: 8, body }).start();
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    try {
      expect(mapsOnnxRuntime(server.child.pid!)).toBe(true);
      await load.settleMore(16);
      const before = await (await fetch(`${server.url}/metrics`)).text();
      const live: number[] = [];
      const deadline = Date.now() + 90_000;
      let after = before;
      const count = (text: string, name: string) => metric(text, name) - metric(before, name);
      // At least 200 probes over at least 5 encoder batches (the machine may be slow and shared).
      while (Date.now() < deadline) {
        live.push(await timedGet(`${server.url}/health/live`, agent));
        await new Promise((done) => setTimeout(done, 5));
        if (live.length % 50 === 0) {
          after = await (await fetch(`${server.url}/metrics`)).text();
          if (live.length >= 200 && count(after, 'tagger_encoder_batch_seconds_count') >= 5) break;
        }
      }
      const batches = count(after, 'tagger_encoder_batch_seconds_count');
      const batchSeconds = count(after, 'tagger_encoder_batch_seconds_sum') / batches;
      const p99 = quantile(live, 0.99);
      process.stderr.write(
        `[encoder-serve] /health/live under a saturated encoder: p50 ${quantile(live, 0.5).toFixed(1)} ms, p99 ${p99.toFixed(1)} ms; encoder batches meanwhile ${batches}, mean ${(batchSeconds * 1000).toFixed(0)} ms\n`,
      );
      // The encoder worked all along (saturated), and a probe never waited for a batch.
      expect(batches).toBeGreaterThanOrEqual(5);
      expect(p99).toBeLessThan(batchSeconds * 1000);

      // A better run with another encoder, announced with SIGHUP while the load goes on.
      runs.other = await logServedRun(store, 'best', { name: 'other', f1: 0.97, model: otherModel });
      server.child.kill('SIGHUP');
      while (!load.outcomes.some((o) => o.runId === runs.other)) await load.settleMore(1);
      await load.settleMore(24);
      const outcomes = await load.stop();
      expect(outcomes.filter((o) => o.status !== 200)).toEqual([]);
      expect(new Set(outcomes.map((o) => o.runId))).toEqual(new Set([runs.enc, runs.other]));
      const closed = await server.waitForLog(
        (line) => line.msg.startsWith('sentence encoder closed'),
        'the old encoder closed',
      );
      expect(closed.encoder).toBe('minilm');
      const metrics = await (await fetch(`${server.url}/metrics`)).text();
      expect(metric(metrics, 'tagger_encoders_open')).toBe(1);
    } finally {
      await load.stop();
      agent.destroy();
      server.child.kill('SIGTERM');
      expect((await server.exited).code).toBe(0);
    }
  }, 300_000);

  it('bounds the queue by work: a request past the bound waits alone, then shares the encoder; one past the cap is a 413', async () => {
    // The minilm run (256 tokens a text), whatever the tests before made best (one swaps to an encoder of
    // 128 tokens, under which the probe's request is half the work).
    const server = await spawnServer({
      MLFLOW_TRACKING_URI: join(tmp.path, 'mlruns'),
      TAGGER_RUN_ID: runs.enc!,
      TAGGER_ENCODER_THREADS: '1',
    });
    try {
      const cjk = '機械学習による画像分類と自然言語処理の研究開発をしています深層学習モデル';
      const text = (i: number) =>
        Array.from({ length: 1_100 }, (_, k) => cjk[(k * 7 + i) % cjk.length]).join('');
      const post = (texts: string[]) =>
        fetch(`${server.url}/predict`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ texts: texts.map((t) => ({ text: t })) }),
        });
      const queuedTexts = async () =>
        metric(await (await fetch(`${server.url}/metrics`)).text(), 'tagger_encoder_queue_texts');
      // The probe's request: ~77,000 tokens of encoder work, refused at once.
      const probe = await post(Array.from({ length: 300 }, (_, i) => text(i)));
      expect(probe.status).toBe(413);
      expect(((await probe.json()) as { detail: string }).detail).toMatch(
        /^this request is ~76800 tokens of encoder work \(300 texts\), more than the 65536 one request may take/,
      );
      // A long request within the cap but past the queue's bound (40 texts of 256 tokens: 10,240 of the
      // 8,192 tokens): taken, since nothing waits, and then it waits alone.
      const order: string[] = [];
      const long = post(Array.from({ length: 40 }, (_, i) => text(i))).then((response) => {
        order.push('long');
        return response.status;
      });
      while ((await queuedTexts()) === 0) await new Promise((done) => setTimeout(done, 20));
      const refused = await post(['Object detection with YOLO on drone images']);
      expect(refused.status).toBe(503);
      expect(refused.headers.get('retry-after')).toMatch(/^\d+$/);
      expect(((await refused.json()) as { detail: string }).detail).toMatch(
        /^the encoder is at capacity \(~\d+ tokens of work waiting, at most 8192; this request has ~\d+\)/,
      );
      // Once what is left of it fits the bound beside a one-text request (31 texts: 7,936 tokens), one is
      // taken and leaves with the next batch: answered before the long request, not after all of it.
      while ((await queuedTexts()) > 31) await new Promise((done) => setTimeout(done, 20));
      const short = post(['Object detection with YOLO on drone images']).then((response) => {
        order.push('short');
        return response.status;
      });
      expect(await Promise.all([long, short])).toEqual([200, 200]);
      expect(order).toEqual(['short', 'long']);
    } finally {
      server.kill();
      await server.exited;
    }
  }, 300_000);
});
