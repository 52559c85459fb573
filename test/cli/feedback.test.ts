/**
 * `tagger feedback export`, closing the loop: a run trained by `tagger train` into a SQLite store is
 * served with monitoring (in-process, recording into that database as `tagger serve` does by default),
 * its predictions of the sample texts are labelled through POST /feedback, the export is a training file
 * that `tagger train --data` learns from and `tagger evaluate --data` scores a run on; and the export's
 * refusals (nothing labelled, only hashes kept, an unknown experiment, no records at all).
 */
import { readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parse } from 'csv-parse/sync';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openTrackingStore, type TrackingStore } from '../../src/tracking/index.js';
import { readDataset } from '../../src/train/data.js';
import { cliFolder, trainArgv } from '../support/cli.js';
import { SAMPLE_DATA } from '../support/components.js';
import { postJson } from '../support/http.js';
import { type MonitoredApp, monitoredApp } from '../support/monitoring.js';

const cli = cliFolder('tagger-cli-feedback-');
const tagger = cli.tagger;
const uri = () => `sqlite:///${join(cli.dir, 'mlflow.db')}`;
const rows = (parse(readFileSync(SAMPLE_DATA, 'utf8'), { columns: true }) as Record<string, string>[]).map(
  (row) => ({ text: `${row.title} ${row.description}`, tag: row.tag! }),
);

let store: TrackingStore;
let served: MonitoredApp;

beforeAll(async () => {
  const trained = await tagger(trainArgv(uri(), ['--quiet']));
  expect(trained.code, trained.stderr).toBe(0);
  store = await openTrackingStore(uri(), { readOnly: true });
  served = await monitoredApp(store, { config: { storeUri: uri(), storeDisplayUri: 'mlflow.db' } });
}, 120_000);

afterAll(async () => {
  await served?.close();
  await store?.close();
});

/** Predicts `texts` and labels each prediction with `tags[i]`, as a person reviewing them would. */
async function label(texts: string[], tags: string[]): Promise<void> {
  const predicted = await postJson(served.app, '/predict', { texts: texts.map((text) => ({ text })) });
  await served.monitoring.recorder.settle();
  const ids = (predicted.json().data.predictions as { prediction_id: string }[]).map((p) => p.prediction_id);
  const answered = await postJson(served.app, '/feedback', {
    feedback: ids.map((id, i) => ({ prediction_id: id, tag: tags[i] })),
  });
  expect(answered.json().data.accepted).toBe(texts.length);
}

describe('tagger feedback export', () => {
  it('refuses to write a file when nothing was recorded or labelled yet', async () => {
    const output = join(cli.dir, 'nothing.csv');
    const before = await tagger(['feedback', 'export', '--output', output, '--tracking-uri', uri()]);
    expect(before.code).toBe(1);
    expect(before.stderr).toMatch(
      /holds no prediction records \(no tagger_predictions table\): no server recorded predictions there/,
    );
    await postJson(served.app, '/predict', { texts: [{ text: 'Feature stores' }] });
    await served.monitoring.recorder.settle();
    const unlabelled = await tagger(['feedback', 'export', '--output', output, '--tracking-uri', uri()]);
    expect(unlabelled.code).toBe(1);
    expect(unlabelled.stderr).toMatch(
      /no feedback was given on the recorded predictions selected .*nothing was written/,
    );
    await expect(readFile(output)).rejects.toThrow(/ENOENT/);
  });

  it('writes the labelled predictions as a training file that train and evaluate read', async () => {
    await label(
      rows.map((row) => row.text),
      rows.map((row) => row.tag),
    );
    const output = join(cli.dir, 'labelled.csv');
    const exported = await tagger([
      'feedback',
      'export',
      '--output',
      output,
      '--tracking-uri',
      uri(),
      '--json',
    ]);
    expect(exported.code, exported.stderr).toBe(0);
    expect(JSON.parse(exported.stdout)).toMatchObject({
      rows: rows.length,
      hashed_only: 0,
      multi_label: false,
      runs: [served.servedRuns.bestRunId],
    });
    const written = parse(await readFile(output, 'utf8'), { columns: true }) as Record<string, string>[];
    expect(Object.keys(written[0]!)).toEqual(['title', 'description', 'tag']);
    const byText = new Map(written.map((row) => [row.title, row]));
    for (const row of rows)
      expect(byText.get(row.text)).toEqual({ title: row.text, description: '', tag: row.tag });

    const retrained = await tagger(
      trainArgv(uri(), ['--experiment', 'relabelled', '--quiet'], { data: output }),
    );
    expect(retrained.code, retrained.stderr).toBe(0);
    const scored = await tagger(['evaluate', '--data', output, '--tracking-uri', uri(), '--json']);
    expect(scored.code, scored.stderr).toBe(0);
    expect(JSON.parse(scored.stdout)).toMatchObject({
      rows: rows.length,
      run_id: served.servedRuns.bestRunId,
    });
  });

  it('writes texts sent through the API that a spreadsheet would run as formulas as text, and reads them back as sent', async () => {
    const hostile = [
      '=HYPERLINK("http://evil.example","click") invoice',
      '+1 555 0100 support line',
      '-2 degrees overnight',
      '@SUM(A1:A9) spreadsheet',
    ];
    await label(
      hostile,
      hostile.map(() => 'other'),
    );
    const output = join(cli.dir, 'formulas.csv');
    const exported = await tagger(['feedback', 'export', '--output', output, '--tracking-uri', uri()]);
    expect(exported.code, exported.stderr).toBe(0);
    const cells = (parse(await readFile(output, 'utf8'), { columns: true }) as Record<string, string>[]).map(
      (row) => row.title!,
    );
    // No cell starts with what a spreadsheet runs (OWASP: = + - @ tab CR) ...
    for (const cell of cells) expect(cell).not.toMatch(/^[=+\-@\t\r]/);
    for (const text of hostile) expect(cells).toContain(`'${text}`);
    // ... and training reads them as the texts that were sent.
    const read = await readDataset(output);
    for (const text of hostile) expect(read.map((row) => row.text.trim())).toContain(text);
  });

  it('leaves out records that kept only a hash, and says so', async () => {
    const hashing = await monitoredApp(store, {
      config: { storeUri: uri(), storeDisplayUri: 'mlflow.db', keepText: false },
    });
    try {
      const predicted = await postJson(hashing.app, '/predict', { texts: [{ text: 'A private text' }] });
      await hashing.monitoring.recorder.settle();
      const id = predicted.json().data.predictions[0].prediction_id;
      await postJson(hashing.app, '/feedback', { feedback: [{ prediction_id: id, tag: 'other' }] });
    } finally {
      await hashing.close();
    }
    const output = join(cli.dir, 'some.csv');
    const result = await tagger(['feedback', 'export', '--output', output, '--tracking-uri', uri()]);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toMatch(
      /Wrote \d+ labelled predictions \(tag column\) of run \w+ to .*some\.csv; 1 kept only a hash of their text and were left out/,
    );
    expect(await readFile(output, 'utf8')).not.toContain('A private text');
  });

  it('names what is wrong: an unknown experiment, a store without records, a bad date', async () => {
    const unknown = await tagger([
      'feedback',
      'export',
      '--output',
      'x.csv',
      '--experiment',
      'nope',
      '--tracking-uri',
      uri(),
    ]);
    expect(unknown.stderr).toMatch(/there is no experiment 'nope' in sqlite:/);
    const none = await tagger([
      'feedback',
      'export',
      '--output',
      'x.csv',
      '--tracking-uri',
      uri(),
      '--record-store',
      `sqlite:///${join(cli.dir, 'none.db')}`,
    ]);
    expect(none.code).toBe(1);
    expect(none.stderr).toMatch(/there is no database at .*none\.db .*no server recorded predictions there/);
    const date = await tagger([
      'feedback',
      'export',
      '--output',
      'x.csv',
      '--since',
      'yesterday',
      '--tracking-uri',
      uri(),
    ]);
    expect(date.stderr).toMatch(/--since must be an ISO 8601 date/);
  });
});
