/**
 * What the inspection page reads and where it lives: a run's test errors and training curves, the built
 * page under /ui/ (headers, public like /docs), the landing page a browser gets at `/`, and MLflow links.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TaggerApp } from '../../src/http/index.js';
import { runRecord } from '../../src/http/responses.js';
import { cascadeCurve, chooseThreshold } from '../../src/model/index.js';
import type { RunSummary } from '../../src/served-models/index.js';
import { cascadeCurveArtifact } from '../../src/train/log-run.js';
import { expectEnvelope, runsApp } from '../support/http.js';
import { useServingFixture } from '../support/serving-fixture.js';
import { useTempDir } from '../support/temp-dir.js';

const fx = useServingFixture();
let app: TaggerApp;
const ui = useTempDir('tagger-ui-');
const apps: TaggerApp[] = [];

const INDEX_HTML =
  '<!doctype html><title>page</title><script type="module" src="./assets/app-1a2b.js"></script>';

beforeAll(async () => {
  // A stand-in for dist/ui (the real build is exercised by the browser test): what matters here is how
  // the files are served.
  await mkdir(join(ui.path, 'assets'));
  await writeFile(join(ui.path, 'index.html'), INDEX_HTML);
  await writeFile(join(ui.path, 'assets', 'app-1a2b.js'), 'console.log(1);\n');
  ({ app } = await runsApp(fx.store, { deps: { uiDir: ui.path } }));
  apps.push(app);
});

afterAll(async () => {
  await Promise.all(apps.map((each) => each.close()));
});

const get = (url: string, headers: Record<string, string> = {}) =>
  app.inject({ method: 'GET', url, headers });

describe('GET /runs/{run_id}/errors', () => {
  it("answers the run's confusion matrix and its mistakes as logged", async () => {
    const url = `/runs/${fx.runs.alpha}/errors`;
    const response = await get(url);
    expect(response.statusCode).toBe(200);
    const { data } = expectEnvelope(response, { method: 'GET', url }) as { data: Record<string, unknown> };
    const { confusion, mistakes } = fx.modelA.errors;
    expect(data).toEqual({
      run_id: fx.runs.alpha,
      labels: confusion!.labels,
      matrix: confusion!.matrix,
      total: mistakes.total,
      mistakes: mistakes.mistakes,
    });
    expect(mistakes.total).toBeGreaterThan(0);
  });

  it('is a 404 that says so for a run that did not log them, and for an unknown run', async () => {
    const notLogged = await get(`/runs/${fx.runs.beta}/errors`);
    expect(notLogged.statusCode).toBe(404);
    expect(notLogged.json().detail).toBe(
      `run ${fx.runs.beta} has no test-set errors (confusion_matrix.json, test_mistakes.json) logged; runs trained by this version of tagger have it`,
    );
    const unknown = await get('/runs/nope/errors');
    expect(unknown.statusCode).toBe(404);
    expect(unknown.json().detail).toContain('is not a run of this experiment');
  });

  it('is a 409 naming the file when an artifact is broken, without server paths', async () => {
    await fx.store.logArtifact(
      fx.runs.nof1,
      'confusion_matrix.json',
      new TextEncoder().encode('{"labels": ["a"], "matrix": [[1, 2]]}'),
    );
    await fx.store.logArtifact(
      fx.runs.nof1,
      'test_mistakes.json',
      new TextEncoder().encode('{"total": 0, "mistakes": []}'),
    );
    const response = await get(`/runs/${fx.runs.nof1}/errors`);
    expect(response.statusCode).toBe(409);
    const detail = response.json().detail as string;
    expect(detail).toBe(
      `run ${fx.runs.nof1} cannot be served: confusion_matrix.json: matrix must be 1 rows of 1 counts (one per label)`,
    );
    expect(detail).not.toContain(fx.dir);
  });
});

describe('GET /runs/{run_id}/label-issues', () => {
  it("answers the run's label issues as logged: line, text, given and suggested tag, both probabilities", async () => {
    const url = `/runs/${fx.runs.alpha}/label-issues`;
    const response = await get(url);
    expect(response.statusCode).toBe(200);
    const { data } = expectEnvelope(response, { method: 'GET', url }) as { data: Record<string, unknown> };
    const { thresholds: _, ...served } = fx.labelIssues;
    expect(data).toEqual({
      run_id: fx.runs.alpha,
      ...served,
      // The row index is the training's own; a person finds the row by its line.
      issues: served.issues.map(({ row: _row, ...issue }) => issue),
    });
    expect(fx.labelIssues.found).toBeGreaterThan(0);
    expect(data.issues).toContainEqual(
      expect.objectContaining({ kind: 'tag', line: expect.any(Number), given_tag: expect.any(String) }),
    );
  });

  it('is a 404 that says why for a run that did not log them, and a 409 for a broken file', async () => {
    const notLogged = await get(`/runs/${fx.runs.beta}/label-issues`);
    expect(notLogged.statusCode).toBe(404);
    expect(notLogged.json().detail).toMatch(
      new RegExp(
        `^run ${fx.runs.beta} has no label issues \\(label_issues.json\\) logged; tagger train logs them unless`,
      ),
    );
    await fx.store.logArtifact(
      fx.runs.nof1,
      'label_issues.json',
      new TextEncoder().encode(
        '{"multi_label": false, "rows": 3, "folds": 2, "seed": 1, "tags": ["a"], "found": 1, "issues": [{"rank": 1, "line": 2, "text": "x", "kind": "tag", "given_tag": "a", "given_probability": 2, "suggested_tag": "b", "suggested_probability": 0.5, "confident": true}]}',
      ),
    );
    const broken = await get(`/runs/${fx.runs.nof1}/label-issues`);
    expect(broken.statusCode).toBe(409);
    expect(broken.json().detail).toMatch(/label_issues\.json: issues\[0\] must have rank/);
    expect(broken.json().detail).not.toContain(fx.dir);
  });
});

describe('GET /runs/{run_id}/label-issues of larger data', () => {
  it('says when the rows looked at were a sample, and of how many', async () => {
    const report = {
      multi_label: false,
      rows: 20_000,
      sampled_from: 200_000,
      folds: 5,
      seed: 1,
      tags: ['a', 'b'],
      found: 1,
      issues: [
        {
          rank: 1,
          row: 150_123,
          line: 150_125,
          text: 'x',
          kind: 'tag',
          given_tag: 'a',
          given_probability: 0.1,
          suggested_tag: 'b',
          suggested_probability: 0.9,
          confident: true,
        },
      ],
    };
    await fx.store.logArtifact(
      fx.runs.noperf,
      'label_issues.json',
      new TextEncoder().encode(JSON.stringify(report)),
    );
    const response = await get(`/runs/${fx.runs.noperf}/label-issues`);
    expect(response.statusCode).toBe(200);
    expect(response.json().data).toMatchObject({ rows: 20_000, sampled_from: 200_000, found: 1 });
    // Not a sample: no sampled_from, as before.
    const whole = await get(`/runs/${fx.runs.alpha}/label-issues`);
    expect(whole.json().data).not.toHaveProperty('sampled_from');
  });
});

describe('GET /runs/{run_id}/history', () => {
  it('answers the per-epoch losses in step order, and empty series for a run without them', async () => {
    const response = await get(`/runs/${fx.runs.alpha}/history`);
    expect(response.statusCode).toBe(200);
    expect(response.json().data).toEqual({
      run_id: fx.runs.alpha,
      history: {
        train_loss: [
          { step: 1, value: 0.9 },
          { step: 2, value: 0.5 },
          { step: 3, value: 0.4 },
        ],
        val_loss: [
          { step: 1, value: 1 },
          { step: 2, value: 0.6 },
          { step: 3, value: 0.5 },
        ],
      },
    });
    const none = await get(`/runs/${fx.runs.beta}/history`);
    expect(none.json().data.history).toEqual({ train_loss: [], val_loss: [] });
  });
});

describe('the page at /ui/', () => {
  it('redirects /ui to /ui/ and serves the page fresh and the hashed assets for a year, with a CSP', async () => {
    const bare = await get('/ui');
    expect(bare.statusCode).toBe(301);
    expect(bare.headers.location).toBe('/ui/');
    const page = await get('/ui/');
    expect(page.statusCode).toBe(200);
    expect(page.body).toBe(INDEX_HTML);
    expect(page.headers['content-type']).toMatch(/^text\/html/);
    expect(page.headers['cache-control']).toBe('no-cache');
    expect(page.headers['content-security-policy']).toContain("default-src 'self'");
    const asset = await get('/ui/assets/app-1a2b.js');
    expect(asset.statusCode).toBe(200);
    expect(asset.headers['cache-control']).toBe('public, max-age=31536000, immutable');
    expect(asset.headers['x-content-type-options']).toBe('nosniff');
  });

  it('answers anything else under /ui/ with the API 404', async () => {
    const response = await get('/ui/../package.json');
    expect(response.statusCode).toBe(404);
    const missing = await get('/ui/assets/nope.js');
    expect(missing.statusCode).toBe(404);
    expectEnvelope(missing, { method: 'GET', url: '/ui/assets/nope.js' });
  });

  it('says how to build the page when it was not built', async () => {
    const { app: unbuilt } = await runsApp(fx.store, { deps: { uiDir: join(ui.path, 'missing') } });
    apps.push(unbuilt);
    const response = await unbuilt.inject({ method: 'GET', url: '/ui/' });
    expect(response.statusCode).toBe(404);
    expect(response.json().detail).toContain('npm run build');
  });

  it('is public like /docs when API keys are set, while the data it reads needs a key', async () => {
    const { app: keyed } = await runsApp(fx.store, {
      deps: { uiDir: ui.path, http: { apiKeys: ['ui-key-1'] } },
    });
    apps.push(keyed);
    expect((await keyed.inject({ url: '/ui/' })).statusCode).toBe(200);
    expect((await keyed.inject({ url: `/runs/${fx.runs.alpha}/errors` })).statusCode).toBe(401);
    const withKey = await keyed.inject({
      url: `/runs/${fx.runs.alpha}/history`,
      headers: { authorization: 'Bearer ui-key-1' },
    });
    expect(withKey.statusCode).toBe(200);
    const { app: closed } = await runsApp(fx.store, {
      deps: { uiDir: ui.path, http: { apiKeys: ['ui-key-1'], protectDocs: true } },
    });
    apps.push(closed);
    expect((await closed.inject({ url: '/ui/' })).statusCode).toBe(401);
  });
});

describe('GET / for people', () => {
  it('gives a browser a page linking the inspection page and the docs; API clients keep the JSON health check', async () => {
    const browser = await get('/', {
      accept: 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8',
    });
    expect(browser.statusCode).toBe(200);
    expect(browser.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(browser.body).toContain('href="ui/"');
    expect(browser.body).toContain('href="docs"');
    for (const accept of [undefined, '*/*', 'application/json', 'application/json, text/html']) {
      const response = await get('/', accept === undefined ? {} : { accept });
      expect(response.statusCode).toBe(200);
      expect(expectEnvelope(response, { method: 'GET', url: '/' }).data).toEqual({});
    }
  });

  it('links the page from the API description shown at /docs', async () => {
    const document = (await get('/openapi.json')).json() as { info: { description: string } };
    expect(document.info.description).toContain('[the inspection page](../ui/)');
  });
});

describe('links to MLflow', () => {
  const run: RunSummary = {
    runId: 'abc123',
    experimentId: '7',
    runName: 'r',
    status: 'FINISHED',
    startTime: 0,
    endTime: 1,
    metrics: {},
    params: {},
    warnings: [],
    promotion: null,
  };

  it("link each run to MLflow's UI when the store is a tracking server, and not otherwise", async () => {
    expect(runRecord(run, { servedRunId: 'x', mlflowUiUrl: 'http://mlflow:5000' }).mlflow_url).toBe(
      'http://mlflow:5000/#/experiments/7/runs/abc123',
    );
    expect(runRecord(run, { servedRunId: 'x', mlflowUiUrl: null })).not.toHaveProperty('mlflow_url');
    const listed = (await get('/runs')).json().data.runs as Record<string, unknown>[];
    expect(listed.every((record) => !('mlflow_url' in record))).toBe(true);
  });
});

describe('GET /runs/{run_id}/cascade', () => {
  it("answers a cascade run's threshold curve as logged, the rule's choice and the test split's figures", async () => {
    const answers = {
      confidence: [0.95, 0.9, 0.6, 0.4],
      fast: [['a'], ['b'], ['b'], ['a']],
      encoder: [['a'], ['b'], ['a'], ['b']],
      truth: [['a'], ['b'], ['a'], ['b']],
      multiLabel: false,
    };
    const curve = cascadeCurve(answers);
    const choice = chooseThreshold(curve, { kind: 'tolerance', tolerance: 0.002 });
    const logged = cascadeCurveArtifact({
      curve,
      choice,
      fastClassifier: 'soft_vote',
      test: { routed: 0.25, fast_f1: 0.8, encoder_f1: 0.9 },
    });
    await fx.store.logArtifact(
      fx.runs.alpha,
      'cascade_curve.json',
      new TextEncoder().encode(JSON.stringify(logged)),
    );
    const url = `/runs/${fx.runs.alpha}/cascade`;
    const response = await get(url);
    expect(response.statusCode).toBe(200);
    const { data } = expectEnvelope(response, { method: 'GET', url }) as { data: Record<string, unknown> };
    expect(data).toEqual({ run_id: fx.runs.alpha, ...logged });
    expect(data.chosen).toEqual({ threshold: 0.61, routed: 0.5, f1: 1 });
  });

  it('is a 404 that says which runs have one, and a 409 for a broken file', async () => {
    const notLogged = await get(`/runs/${fx.runs.beta}/cascade`);
    expect(notLogged.statusCode).toBe(404);
    expect(notLogged.json().detail).toBe(
      `run ${fx.runs.beta} has no cascade threshold curve (cascade_curve.json) logged; only cascade runs (tagger train --encoder … --cascade) log one`,
    );
    await fx.store.logArtifact(
      fx.runs.nof1,
      'cascade_curve.json',
      new TextEncoder().encode(
        '{"rule": {"kind": "tolerance", "tolerance": 0.002}, "reason": "r", "points": [{"threshold": 0, "routed": 0, "f1": 1}]}',
      ),
    );
    const broken = await get(`/runs/${fx.runs.nof1}/cascade`);
    expect(broken.statusCode).toBe(409);
    expect(broken.json().detail).toMatch(/cascade_curve\.json: chosen must have threshold/);
  });
});
