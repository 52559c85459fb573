/**
 * No label is lost (issue 32): a real `tagger serve --workers 2` recording into its SQLite tracking
 * database at the default flush interval (records wait up to a second in the buffer of the worker that
 * answered), 1,000 single-text predictions spread over both workers, and the feedback for all of them
 * sent at once the moment the last answer arrived, newest first — to whichever worker each connection
 * lands on. Every
 * one of the 1,000 labels is stored; none is refused as unknown or left pending.
 */
import { Agent, request } from 'node:http';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../support/free-port.js';
import { splitSample, trainRun } from '../support/monitoring.js';
import { type ServeCommand, spawnServe } from '../support/serve-process.js';
import { useTempDir } from '../support/temp-dir.js';

const scratch = useTempDir('tagger-e2e-arrival-');
let server: ServeCommand | undefined;
let url: string;
let texts: string[];

/** What the two routes answer, as far as this test reads them. */
interface Answer {
  data: {
    predictions: { prediction_id: string }[];
    feedback: { status: number; result: string; detail: string }[];
  };
}

beforeAll(async () => {
  const sample = await splitSample(scratch.path);
  texts = sample.heldOut.map((row) => row.text);
  const uri = `sqlite:///${join(scratch.path, 'mlflow.db')}`;
  await trainRun(uri, { data: sample.train });
  const port = await freePort();
  url = `http://127.0.0.1:${port}`;
  server = spawnServe(['--port', String(port), '--workers', '2'], {
    // The record store is the tracking database (the default), flushed every second (the default).
    env: {
      MLFLOW_TRACKING_URI: uri,
      TAGGER_RELOAD_INTERVAL_MS: '0',
      TAGGER_SHUTDOWN_DELAY_MS: '0',
      // info: each worker logs "Server listening at" once it is up (then a request can land on either).
      TAGGER_LOG_LEVEL: 'info',
    },
  });
  const deadline = Date.now() + 90_000;
  for (;;) {
    const listening = server.output().match(/Server listening at/g)?.length ?? 0;
    const ready =
      listening >= 2 &&
      (await fetch(`${url}/health/ready`).then(
        (response) => response.ok,
        () => false,
      ));
    if (ready) break;
    if (server.child.exitCode !== null || Date.now() > deadline)
      throw new Error(`tagger serve --workers 2 did not start: ${server.output()}`);
    await new Promise((done) => setTimeout(done, 200));
  }
}, 180_000);

afterAll(async () => {
  await server?.stop();
});

describe('feedback the moment the answers arrive, over two workers', () => {
  it('stores all 1,000 labels of 1,000 single-text predictions, sent at once', async () => {
    // Many kept-alive connections, each handed to a worker by the primary in turn.
    const agent = new Agent({ keepAlive: true, maxSockets: 64 });
    const post = (path: string, body: unknown) =>
      new Promise<{ status: number; body: Answer }>((resolve, reject) => {
        const payload = JSON.stringify(body);
        const sent = request(
          `${url}${path}`,
          { method: 'POST', agent, headers: { 'content-type': 'application/json' } },
          (response) => {
            const chunks: Buffer[] = [];
            response.on('data', (chunk: Buffer) => chunks.push(chunk));
            response.on('end', () => {
              try {
                resolve({
                  status: response.statusCode ?? 0,
                  body: JSON.parse(Buffer.concat(chunks).toString('utf8')) as Answer,
                });
              } catch (error) {
                reject(error);
              }
            });
            response.on('error', reject);
          },
        );
        sent.on('error', reject);
        sent.end(payload);
      });
    try {
      // In the order the answers arrive, so the labels below go newest first: the records most likely to
      // still wait in a worker's buffer are labelled first.
      const predictions: { prediction_id: string }[] = [];
      await Promise.all(
        Array.from({ length: 1000 }, async (_, i) => {
          const answer = await post('/predict', { texts: [{ text: `${texts[i % texts.length]} (${i})` }] });
          expect(answer.status).toBe(200);
          predictions.push(answer.body.data.predictions[0]!);
        }),
      );
      const answers = await Promise.all(
        predictions
          .reverse()
          .map((p) => post('/feedback', { feedback: [{ prediction_id: p.prediction_id, tag: 'mlops' }] })),
      );
      const items = answers.map((answer) => {
        expect(answer.status).toBe(200);
        return answer.body.data.feedback[0]!;
      });
      const refused = items.filter((item) => item.status !== 200);
      expect(refused, JSON.stringify(refused.slice(0, 3))).toEqual([]);
    } finally {
      agent.destroy();
    }
    const db = new DatabaseSync(join(scratch.path, 'mlflow.db'), { readOnly: true });
    try {
      expect(db.prepare('SELECT COUNT(*) AS n FROM tagger_feedback').get()).toEqual({ n: 1000 });
      // Both workers recorded: each publishes its own writer mark on its flush timer (once a second), so
      // within a few seconds — the exchange above can be over sooner than that.
      const writers = () =>
        (db.prepare('SELECT COUNT(*) AS n FROM tagger_record_writers').get() as { n: number }).n;
      const until = Date.now() + 20_000;
      while (writers() < 2 && Date.now() < until) await new Promise((done) => setTimeout(done, 200));
      expect(writers()).toBeGreaterThanOrEqual(2);
    } finally {
      db.close();
    }
  }, 300_000);
});
