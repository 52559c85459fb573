/**
 * "The best run" is one thing, whoever asks: a server that has been running since the first run, a
 * server started now, and `tagger predict` / `tagger evaluate` choose the same run of an experiment.
 *
 * The newcomer's path (issue 27, item 14): `npm start` serves a run trained on the sample data; a run
 * trained on other data with a better f1 arrives. The promotion gate compares f1 only between runs
 * measured on the same test set, so the running server holds the new run back — while `tagger predict`
 * used it, and so did any server started afterwards (the gate compared with "the served run", which a
 * process starting has not got). The reference is now a property of the store — the test set of the
 * experiment's first finished run — so all of them hold it back, and a run measured on that test set
 * with a better f1 is taken up by all of them.
 *
 * A real server process (test/support/serve-process.ts) on a SQLite store; the CLI in-process. Runs are
 * logged with the evaluation tags training writes (test-set digest and size, tags learnt) and chosen f1s.
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EVALUATION_TAGS } from '../../src/model/index.js';
import { openTrackingStore, type TrackingStore } from '../../src/tracking/index.js';
import { runCli } from '../support/cli.js';
import { SAMPLE_DATA } from '../support/components.js';
import { type TrainedModel, trainModel } from '../support/fixtures.js';
import {
  killServers,
  type LogLine,
  logServedRun,
  type ServerProcess,
  servedRunId,
  spawnServer,
} from '../support/serve-process.js';
import { useTempDir } from '../support/temp-dir.js';

const scratch = useTempDir('tagger-best-run-');
let uri: string;
let store: TrackingStore;
let model: TrainedModel;
let running: ServerProcess;

const evaluatedOn = (digest: string) => ({
  [EVALUATION_TAGS.testSetDigest]: digest,
  [EVALUATION_TAGS.testSetSize]: '200',
  [EVALUATION_TAGS.trainedTags]: '4',
});

const log = (name: string, f1: number, digest: string): Promise<string> =>
  logServedRun(store, 'best', { name, f1, model, tags: evaluatedOn(digest) });

const servedBy = (server: ServerProcess): Promise<string> => servedRunId(server.url);

async function sighup(server: ServerProcess): Promise<LogLine> {
  const from = server.lines.length;
  server.child.kill('SIGHUP');
  return server.waitForLog(
    (line) => line.msg === 'SIGHUP reload finished' && server.lines.indexOf(line) >= from,
    'SIGHUP reload finished',
  );
}

/** The run `tagger predict` and `tagger evaluate` use, with what they printed on stderr. */
async function chosenByCli(): Promise<{ predict: string; evaluate: string; stderr: string }> {
  const predict = await runCli(['predict', 'Transfer learning with transformers', '--tracking-uri', uri]);
  expect(predict.code, predict.stderr).toBe(0);
  const evaluate = await runCli(['evaluate', '--data', SAMPLE_DATA, '--tracking-uri', uri, '--json']);
  expect(evaluate.code, evaluate.stderr).toBe(0);
  return {
    predict: (JSON.parse(predict.stdout) as { run_id: string }).run_id,
    evaluate: (JSON.parse(evaluate.stdout) as { run_id: string }).run_id,
    stderr: predict.stderr,
  };
}

beforeAll(async () => {
  uri = `sqlite:///${join(scratch.path, 'mlflow.db')}`;
  store = await openTrackingStore(uri);
  model = trainModel({});
}, 60_000);

afterAll(async () => {
  killServers();
  await store?.close();
});

describe.sequential('the best run, as the server and the CLI see it', () => {
  let sample: string;
  let otherData: string;

  it('a better run measured on another test set: held back by the running server, a new one and the CLI', async () => {
    sample = await log('sample', 0.8, 'sample-test-set');
    running = await spawnServer({ MLFLOW_TRACKING_URI: uri, TAGGER_LOG_LEVEL: 'info' });
    expect(await servedBy(running)).toBe(sample);

    otherData = await log('other-data', 0.95, 'other-test-set');
    expect(await sighup(running)).toMatchObject({ runId: sample });
    expect(await servedBy(running)).toBe(sample);
    const ready = (await (await fetch(`${running.url}/health/ready`)).json()) as {
      data: { problems?: string[] };
    };
    expect(ready.data.problems?.join('\n')).toMatch(
      new RegExp(`run ${otherData} ranks above the served run but is not served: .*another test set`),
    );

    const cli = await chosenByCli();
    expect(cli.predict).toBe(sample);
    expect(cli.evaluate).toBe(sample);
    // The CLI says why the run ranked first is not the one it used.
    expect(cli.stderr).toMatch(new RegExp(`tagger: run ${otherData} .*not used: .*another test set`));

    const fresh = await spawnServer({ MLFLOW_TRACKING_URI: uri });
    try {
      expect(await servedBy(fresh)).toBe(sample);
    } finally {
      fresh.kill();
    }
  });

  it('a better run on the same test set is taken up by all of them', async () => {
    const better = await log('better-on-sample', 0.9, 'sample-test-set');
    expect(await sighup(running)).toMatchObject({ outcome: 'swapped', runId: better });
    expect(await servedBy(running)).toBe(better);
    const cli = await chosenByCli();
    expect(cli.predict).toBe(better);
    expect(cli.evaluate).toBe(better);
    const fresh = await spawnServer({ MLFLOW_TRACKING_URI: uri });
    try {
      expect(await servedBy(fresh)).toBe(better);
    } finally {
      fresh.kill();
    }
    expect(otherData).not.toBe(better);
  });

  it('TAGGER_ALLOW_INCOMPARABLE=true makes the server and the CLI both take the best f1', async () => {
    const env = { MLFLOW_TRACKING_URI: uri, TAGGER_ALLOW_INCOMPARABLE: 'true' };
    const server = await spawnServer(env);
    try {
      expect(await servedBy(server)).toBe(otherData);
    } finally {
      server.kill();
    }
    const predict = await runCli(['predict', 'Transfer learning'], { env });
    expect(predict.code, predict.stderr).toBe(0);
    expect((JSON.parse(predict.stdout) as { run_id: string }).run_id).toBe(otherData);
  });
});
