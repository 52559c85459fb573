/**
 * Custom columns end to end (issue 40): a run trained with `--text-column`/`--tag-column` (one text
 * column, or several joined as title and description are) is retrained, exported merged and evaluated
 * with the columns it recorded, `retrain`'s column flags override them, and a file read with the wrong
 * columns stops with one line. Corrections that disagree (near copies with different tags, the same text
 * twice) are said in one line each and trained on as the merge decides. And a retrain's lease left behind by a retrain of this machine that has
 * exited (its store lost while promoting) is taken over at once instead of blocking for minutes.
 */
import { spawnSync } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { parse } from 'csv-parse/sync';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { holderExited } from '../../src/cli/retrain-lease.js';
import { openRecordStore, type RecordStore } from '../../src/monitoring/index.js';
import { openTrackingStore } from '../../src/tracking/index.js';
import { readDataset } from '../../src/train/data.js';
import { textKey } from '../../src/train/label-issues.js';
import { cliFolder, expectCleanFailure, trainArgv } from '../support/cli.js';
import { SAMPLE_DATA } from '../support/components.js';
import { type FeedbackLabel, recordLabels, robotics } from '../support/feedback-labels.js';

const cli = cliFolder('tagger-retrain-columns-');
const tagger = cli.tagger;

let uri: string;
let file: string;
let parent: string;
let scope: string;
let records: RecordStore;

const csvCell = (value: string) => `"${value.replaceAll('"', '""')}"`;

/** Feedback on predictions of `runId`, as a server and POST /feedback record it. */
const label = async (labels: readonly FeedbackLabel[], runId: string): Promise<void> => {
  await recordLabels(records, { scope, runId, probabilities: { other: 1 } }, labels);
};

beforeAll(async () => {
  // The sample data under other names: the text in two columns (subject, body), the tag in `section`.
  const rows = parse(await readFile(SAMPLE_DATA, 'utf8'), { columns: true }) as Record<string, string>[];
  file = join(cli.dir, 'packages.csv');
  await writeFile(
    file,
    `id,subject,body,section\n${rows.map((r, i) => `${i},${csvCell(r.title!)},${csvCell(r.description!)},${r.tag}`).join('\n')}\n`,
  );
  uri = `sqlite:///${join(cli.dir, 'mlflow.db')}`;
  const trained = await tagger(
    trainArgv(
      uri,
      ['--text-column', 'subject,body', '--tag-column', 'section', '--json', '--quiet', '--no-label-issues'],
      {
        data: file,
      },
    ),
  );
  expect(trained.code, trained.stderr).toBe(0);
  parent = JSON.parse(trained.stdout).run_id;
  scope = JSON.parse(trained.stdout).experiment_id;
  records = await openRecordStore(uri);
}, 240_000);

afterAll(async () => {
  await records?.close();
});

describe('a run trained on custom columns', () => {
  it('reads several text columns joined as title and description are', async () => {
    const custom = await readDataset(file, { text: 'subject,body', tag: 'section' });
    const standard = await readDataset(SAMPLE_DATA);
    expect(custom.map((row) => [row.text, row.tag])).toEqual(standard.map((row) => [row.text, row.tag]));
    await expect(readDataset(file, { text: 'subject,', tag: 'section' })).rejects.toThrow(
      /name a blank column/,
    );
  });

  it('is retrained, exported merged and evaluated with the columns it recorded', async () => {
    await label(robotics(6), parent);
    const retrained = await tagger([
      'retrain',
      ...['--tracking-uri', uri, '--no-label-issues', '--quiet', '--json', '--run-id', parent],
    ]);
    expect(retrained.code, retrained.stderr).toBe(0);
    const answer = JSON.parse(retrained.stdout) as { trained: boolean; run_id: string };
    expect(answer.trained).toBe(true);
    const store = await openTrackingStore(uri);
    try {
      const child = (await store.getRun(answer.run_id))!;
      // The columns of the user's files go on with the lineage.
      expect(child.params).toMatchObject({ text_column: 'subject,body', tag_column: 'section' });
    } finally {
      await store.close();
    }
    // The retrained run's own data (an artifact in Tagger's columns) is read again by the next retrain.
    await label(robotics(3, 50), answer.run_id);
    const again = await tagger([
      'retrain',
      ...['--tracking-uri', uri, '--no-label-issues', '--quiet', '--json', '--run-id', answer.run_id],
    ]);
    expect(again.code, again.stderr).toBe(0);
    expect(JSON.parse(again.stdout).trained).toBe(true);

    const merged = join(cli.dir, 'merged.csv');
    const exported = await tagger([
      'feedback',
      'export',
      ...['--merged', '--from-run', parent, '--output', merged, '--tracking-uri', uri, '--json'],
    ]);
    expect(exported.code, exported.stderr).toBe(0);
    const mergedRows = await readDataset(merged);
    expect(mergedRows.some((row) => row.tag === 'robotics')).toBe(true);

    // label-issues reads it with a run's columns too.
    const issues = await tagger([
      'label-issues',
      ...[
        '--data',
        file,
        '--run-id',
        answer.run_id,
        '--tracking-uri',
        uri,
        '--folds',
        '2',
        '--json',
        '--quiet',
      ],
    ]);
    expect(issues.code, issues.stderr).toBe(0);
    expect(JSON.parse(issues.stdout).rows).toBeGreaterThan(100);
    // evaluate reads the user's file with the run's columns, no flags needed.
    for (const runId of [parent, answer.run_id]) {
      const evaluated = await tagger([
        'evaluate',
        '--data',
        file,
        '--run-id',
        runId,
        '--tracking-uri',
        uri,
        '--json',
      ]);
      expect(evaluated.code, evaluated.stderr).toBe(0);
      expect(JSON.parse(evaluated.stdout).rows).toBeGreaterThan(100);
    }
  }, 240_000);

  it("takes retrain's column flags over the recorded ones, and a wrong column is one clear line", async () => {
    await label(robotics(2, 90), parent);
    expectCleanFailure(
      await tagger([
        'retrain',
        ...['--tracking-uri', uri, '--no-label-issues', '--quiet', '--run-id', parent],
        ...['--text-column', 'summary'],
      ]),
      /^tagger: retrain: .*packages\.csv: .*lacks column\(s\) summary; found id, subject, body, section; read with --text-column summary --tag-column section, as the run recorded them \(or as given\)/m,
    );
    const overridden = await tagger([
      'retrain',
      ...['--tracking-uri', uri, '--no-label-issues', '--quiet', '--json', '--run-id', parent],
      ...['--text-column', 'body', '--tag-column', 'section'],
    ]);
    // Read with body alone, the test rows are not the ones the run was tested on: refused, nothing trained.
    expect(overridden.code).toBe(1);
    expect(overridden.stderr).toMatch(/test rows of run .* cannot be reproduced/);
  }, 240_000);
});

describe('corrections that disagree', () => {
  it('says in one line when near copies got different tags, trains on both, and names contradictions', async () => {
    const base = 'A robot arm grasps boxes on a conveyor with a learned gripper policy and six servo motors';
    await label(
      [
        { text: base, tag: 'robotics' },
        { text: `${base} today`, tag: 'other' },
        // The same text (case and spacing aside) twice, with different tags: the latest wins.
        { text: 'Drone swarm mapping of orchards with lidar', tag: 'robotics' },
        { text: 'drone swarm  mapping of orchards with LIDAR', tag: 'computer-vision' },
        ...robotics(2, 300),
      ],
      parent,
    );
    const result = await tagger([
      'retrain',
      ...['--tracking-uri', uri, '--no-label-issues', '--quiet', '--run-id', parent],
    ]);
    expect(result.code, result.stderr).toBe(0);
    const warnings = result.stderr.split('\n').filter((line) => /near copies of each other/.test(line));
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatch(
      /^tagger: WARNING: \d+ pair\(s\) of corrected texts are near copies of each other with different tags, e\.g\. /,
    );
    expect(result.stdout, result.stdout).toMatch(
      /\d+ text\(s\) had contradictory labels: the latest one was used for each/,
    );
  }, 240_000);
});

describe('a new experiment on the same data', () => {
  it('takes the feedback and label-issue fixes given in the first one: they follow the texts', async () => {
    const trained = await tagger(
      trainArgv(
        uri,
        [
          ...['--experiment', 'again', '--text-column', 'subject,body', '--tag-column', 'section'],
          ...['--json', '--quiet', '--no-label-issues'],
        ],
        { data: file },
      ),
    );
    expect(trained.code, trained.stderr).toBe(0);
    await label(robotics(3, 400), parent);
    let given = 0;
    for (let after: string | undefined; ; ) {
      const page = await records.labelled({ scope, after, limit: 1_000 });
      if (page.length === 0) break;
      given += page.length;
      after = page.at(-1)!.predictionId;
    }
    expect(given).toBeGreaterThan(0);
    // A fix decided in the first experiment for a row of the data (by its text's key, as the page sends it).
    const row = (await readDataset(file, { text: 'subject,body', tag: 'section' }))[5]!;
    await records.putLabelReviews([
      {
        scope,
        textKey: textKey(row.text),
        text: row.text.slice(0, 40),
        givenTags: [row.tag],
        decision: 'fix',
        tags: ['robotics'],
        runId: parent,
        receivedMs: Date.now(),
      },
    ]);
    const result = await tagger([
      'retrain',
      ...['--experiment', 'again', '--tracking-uri', uri, '--no-label-issues', '--quiet', '--json'],
    ]);
    expect(result.code, result.stderr).toBe(0);
    const answer = JSON.parse(result.stdout);
    expect(answer.corrections.followed).toEqual({ feedback: given, fixes: 1, scopes: [scope] });
    expect(answer.trained).toBe(true);
    // Another file (the sample data in Tagger's columns: the same texts): the feedback, given to runs of
    // other data, stays; the fix follows its row's text, which this data has too.
    const other = await tagger(
      trainArgv(uri, ['--experiment', 'other-data', '--json', '--quiet', '--no-label-issues']),
    );
    expect(other.code, other.stderr).toBe(0);
    const elsewhere = await tagger([
      'retrain',
      ...['--experiment', 'other-data', '--tracking-uri', uri, '--no-label-issues', '--quiet', '--json'],
    ]);
    expect(elsewhere.code, elsewhere.stderr).toBe(0);
    expect(JSON.parse(elsewhere.stdout).corrections.followed).toEqual({
      feedback: 0,
      fixes: 1,
      scopes: [scope],
    });
  }, 240_000);
});

describe("a retrain's lease", () => {
  it('is taken over from a retrain of this machine that has exited, and kept from a live one', async () => {
    const exited = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], {
      encoding: 'utf8',
    });
    const deadHolder = `${hostname()}:${exited.stdout}:x`;
    expect(holderExited(deadHolder)).toBe(true);
    expect(holderExited(`${hostname()}:${process.pid}:x`)).toBe(false);
    expect(holderExited(`another-host:${exited.stdout}:x`)).toBe(false);
    await records.takeLease(`retrain:${scope}`, deadHolder, 5 * 60_000, Date.now());
    await label(robotics(2, 120), parent);
    const result = await tagger([
      'retrain',
      ...['--tracking-uri', uri, '--no-label-issues', '--quiet', '--json', '--run-id', parent],
    ]);
    expect(result.code, result.stderr).toBe(0);
    expect(JSON.parse(result.stdout).trained).toBe(true);
    // Released when it ended: the next one may take it.
    const after = await records.takeLease(`retrain:${scope}`, 'probe:1:x', 1_000, Date.now());
    expect(after.holder).toBe('probe:1:x');
    await records.releaseLease(`retrain:${scope}`, 'probe:1:x');
  }, 240_000);
});
