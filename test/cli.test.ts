/** The `tagger` CLI as users run it: a real process, real files, a real local store. */
import { execFile } from 'node:child_process';
import { chmod, mkdtemp, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SERVE_SETTINGS, type Setting } from '../src/serve/config.js';
import { openTrackingStore } from '../src/tracking/index.js';
import { nobodyCanRunHere, REPO_ROOT, SAMPLE_DATA, TSX_LOADER } from './support/components.js';

interface Result {
  code: number;
  stdout: string;
  stderr: string;
}

const FAST = JSON.stringify({ num_epochs: 3, ngram_max_range: 4 });

function tagger(
  args: string[],
  env: NodeJS.ProcessEnv = {},
  user: { uid?: number; gid?: number; cwd?: string } = {},
): Promise<Result> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      ['--import', TSX_LOADER, join(REPO_ROOT, 'src', 'cli.ts'), ...args],
      { cwd: dir, env: { ...process.env, MLFLOW_TRACKING_URI: '', ...env }, timeout: 120_000, ...user },
      (error, stdout, stderr) => {
        const code = error ? (typeof error.code === 'number' ? error.code : 1) : 0;
        resolve({ code, stdout, stderr });
      },
    );
  });
}

/** A clean failure: non-zero exit, a `tagger:` message, and no stack trace. */
function expectCleanFailure(result: Result, message: RegExp): void {
  expect(result.code).not.toBe(0);
  expect(result.stderr).toMatch(message);
  expect(result.stderr).not.toMatch(/^\s+at /m);
}

let dir: string;
let store: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'tagger-cli-'));
  store = join(dir, 'mlruns');
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('tagger --help', () => {
  it('lists the commands', async () => {
    const result = await tagger(['--help']);
    expect(result.code).toBe(0);
    for (const command of ['train', 'optimize', 'predict', 'serve']) expect(result.stdout).toContain(command);
  });
});

describe('tagger train', () => {
  it('trains, logs a run and prints one JSON object with --json', async () => {
    const result = await tagger([
      'train',
      '--data',
      SAMPLE_DATA,
      '--args',
      FAST,
      '--tracking-uri',
      store,
      '--run-name',
      'cli-run',
      '--json',
    ]);
    expect(result.code, result.stderr).toBe(0);
    const lines = result.stdout.trim().split('\n');
    expect(lines).toHaveLength(1);
    const output = JSON.parse(lines[0] ?? '');
    expect(output.experiment).toBe('best');
    expect(output.run_id).toMatch(/^[0-9a-f]{32}$/);
    for (const key of ['precision', 'recall', 'f1']) expect(output.metrics[key]).toBeTypeOf('number');
    // Progress goes to stderr when it is not a terminal: plain lines, no escape codes.
    // 3 epochs of the validated fit + 3 of the refit on train + validation.
    expect(result.stderr).toMatch(/training: 6\/6 refit on train\+validation/);
    expect(result.stderr).not.toContain('\u001b[');

    const tracking = await openTrackingStore(store);
    try {
      const run = await tracking.getRun(output.run_id);
      expect(run?.info.runName).toBe('cli-run');
      expect(run?.metrics.f1).toBe(output.metrics.f1);
    } finally {
      await tracking.close();
    }
  });

  it('runs the behavioural tests and the slices of --behaviour and --slices files, logs them and prints a summary', async () => {
    const suite = join(dir, 'suite.yaml');
    await writeFile(
      suite,
      [
        'name: cli suite',
        'cases:',
        '  - { kind: mft, name: kubernetes, text: "Deploying models with Docker and Kubernetes.", expected: mlops }',
        '  # deliberately wrong: the summary must name it',
        '  - { kind: mft, name: wrong on purpose, text: "Object detection in images with YOLO.", expected: mlops }',
        '  - { kind: inv, name: typos, text: "Image segmentation with convolutional networks.", perturbation: typos }',
        '  - { kind: mft, name: unknown tag, text: "Graph neural networks.", expected: graph-learning }',
      ].join('\n'),
    );
    const slices = join(dir, 'slices.json');
    await writeFile(
      slices,
      JSON.stringify({
        slices: [
          { name: 'vision', where: { tag: 'computer-vision' } },
          { name: 'never', where: { text_matches: 'no text says xyzzy' } },
        ],
      }),
    );
    const uri = `sqlite:///${join(dir, 'behaviour.db')}`;
    const args = ['train', '--data', SAMPLE_DATA, '--args', FAST, '--tracking-uri', uri, '--quiet'];
    const result = await tagger([...args, '--behaviour', suite, '--slices', slices]);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toMatch(/^Slices: vision \(\d+ rows\) f1 \d\.\d{4}, never \(no rows; left out\)$/m);
    expect(result.stdout).toMatch(
      /^Behavioural tests \(cli suite\): 2\/3 passed \(66\.7%; mft 1\/2, inv 1\/1\), 1 skipped$/m,
    );
    expect(result.stdout).toMatch(
      /^ {2}FAILED mft 'wrong on purpose': expected mlops; got computer-vision$/m,
    );
    expect(result.stdout).toMatch(/^ {2}skipped mft 'unknown tag': the model has no tag 'graph-learning'/m);

    const json = await tagger([...args, '--json']);
    expect(json.code, json.stderr).toBe(0);
    const answer = JSON.parse(json.stdout) as {
      run_id: string;
      behavioural: { suite: string; pass_rate: number };
      slices: Record<string, number>;
    };
    // Without the files: the default suite and tagifai's slices.
    expect(answer.behavioural.suite).toBe('default (dataset.csv tags)');
    expect(answer.behavioural.pass_rate).toBeGreaterThan(0);
    expect(Object.keys(answer.slices)).toEqual(['nlp_cnn', 'short_text']);

    const tracking = await openTrackingStore(uri);
    try {
      const experiment = await tracking.getExperimentByName('best');
      const [withFiles] = (await tracking.searchRuns(experiment!.experimentId)).filter(
        (run) => run.info.runId !== answer.run_id,
      );
      const runId = withFiles!.info.runId;
      expect(withFiles!.metrics.behavioural_pass_rate).toBeCloseTo(2 / 3, 12);
      expect(withFiles!.metrics['behavioural_pass_rate.mft']).toBe(0.5);
      expect(withFiles!.params.behaviour).toBe(suite);
      const read = async (path: string) =>
        JSON.parse(new TextDecoder().decode(await tracking.readArtifact(runId, path)));
      const behavioural = await read('behavioural.json');
      expect(behavioural.cases.map((c: { name: string; pass: boolean | null }) => [c.name, c.pass])).toEqual([
        ['kubernetes', true],
        ['wrong on purpose', false],
        ['typos', true],
        ['unknown tag', null],
      ]);
      const performance = await read('performance.json');
      expect(Object.keys(performance.slices)).toEqual(['vision']);
      const logged = await read('slices.json');
      expect(logged.slices.map((d: { name: string; rows: number }) => [d.name, d.rows])).toEqual([
        ['vision', performance.slices.vision.num_samples],
        ['never', 0],
      ]);
    } finally {
      await tracking.close();
    }
  });

  it('refuses a bad --behaviour or --slices file before training, naming the file and the bad value', async () => {
    const bad = join(dir, 'bad-suite.yaml');
    await writeFile(bad, 'cases:\n  - { kind: mft, name: a, text: hello }\n');
    const notYaml = join(dir, 'broken.yaml');
    await writeFile(notYaml, 'cases: [\n');
    const badSlices = join(dir, 'bad-slices.yaml');
    await writeFile(badSlices, 'slices:\n  - { name: s, where: { text_matches: "(" } }\n');
    const train = ['train', '--data', SAMPLE_DATA, '--args', FAST, '--tracking-uri', store];
    expectCleanFailure(
      await tagger([...train, '--behaviour', bad]),
      /tagger: .*bad-suite\.yaml: cases\[0\]\.expected must be a non-empty string/,
    );
    expectCleanFailure(
      await tagger([...train, '--behaviour', notYaml]),
      /--behaviour: .* is not valid YAML or JSON/,
    );
    expectCleanFailure(
      await tagger([...train, '--behaviour', join(dir, 'nope.yaml')]),
      /--behaviour: file not found/,
    );
    expectCleanFailure(
      await tagger([...train, '--slices', badSlices]),
      /bad-slices\.yaml: slices\[0\]\.where\.text_matches is not a valid regular expression/,
    );
  });

  it('reads MLFLOW_TRACKING_URI and --experiment', async () => {
    const result = await tagger(
      ['train', '--data', SAMPLE_DATA, '--args', FAST, '--experiment', 'other-exp', '--json'],
      {
        MLFLOW_TRACKING_URI: store,
      },
    );
    expect(result.code, result.stderr).toBe(0);
    const tracking = await openTrackingStore(store);
    try {
      const experiment = await tracking.getExperimentByName('other-exp');
      expect(experiment).not.toBeNull();
      expect(await tracking.searchRuns(experiment?.experimentId ?? '')).toHaveLength(1);
    } finally {
      await tracking.close();
    }
  });

  it('logs to a SQLite database with artifacts under --artifact-root (or TAGGER_ARTIFACT_ROOT)', async () => {
    const uri = `sqlite:///${join(dir, 'db', 'mlflow.db')}`;
    const viaFlag = join(dir, 'shared-artifacts');
    const viaEnv = join(dir, 'env-artifacts');
    const first = await tagger([
      'train',
      '--data',
      SAMPLE_DATA,
      '--args',
      FAST,
      '--json',
      '--tracking-uri',
      uri,
      '--experiment',
      'flag-root',
      '--artifact-root',
      viaFlag,
    ]);
    expect(first.code, first.stderr).toBe(0);
    const second = await tagger(
      [
        'train',
        '--data',
        SAMPLE_DATA,
        '--args',
        FAST,
        '--json',
        '--tracking-uri',
        uri,
        '--experiment',
        'env-root',
      ],
      { TAGGER_ARTIFACT_ROOT: viaEnv },
    );
    expect(second.code, second.stderr).toBe(0);
    const tracking = await openTrackingStore(uri);
    try {
      for (const [name, root, answer] of [
        ['flag-root', viaFlag, first],
        ['env-root', viaEnv, second],
      ] as const) {
        const experiment = await tracking.getExperimentByName(name);
        expect(experiment?.artifactLocation).toBe(join(root, experiment!.experimentId));
        const runId = (JSON.parse(answer.stdout) as { run_id: string }).run_id;
        await stat(join(root, experiment!.experimentId, runId, 'artifacts', 'model'));
        expect((await tracking.getRun(runId))?.info.status).toBe('FINISHED');
      }
    } finally {
      await tracking.close();
    }
  });

  it('warns loudly about data whose metrics mean nothing (tiny test split, repeated rows), and records the test set', async () => {
    const rows = (await readFile(SAMPLE_DATA, 'utf8')).trim().split('\n').slice(1, 41);
    const small = join(dir, 'small.csv');
    // Two tags, 40 rows (a 6-row test split), and the first row again at the end (line 42).
    await writeFile(
      small,
      [
        'id,created_on,title,description,tag',
        ...rows.map((row, i) => row.replace(/,[^,]+$/, i % 2 === 0 ? ',mlops' : ',other')),
        rows[0]!.replace(/,[^,]+$/, ',mlops'),
      ].join('\n'),
    );
    const uri = `sqlite:///${join(dir, 'warned.db')}`;
    // min_freq 5: the default (20) would fold both tags of 20 rows into other, which is refused.
    const args = JSON.stringify({ ...(JSON.parse(FAST) as object), min_freq: 5 });
    const result = await tagger(['train', '--data', small, '--args', args, '--json', '--tracking-uri', uri]);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stderr).toMatch(/tagger: WARNING: the test split has only \d+ rows/);
    expect(result.stderr).toMatch(
      /tagger: WARNING: 1 row\(s\) repeat an earlier row's text and tag \(line 42\)/,
    );
    const answer = JSON.parse(result.stdout) as {
      run_id: string;
      warnings: string[];
      test_set: { size: number };
    };
    expect(answer.warnings.length).toBeGreaterThanOrEqual(2);
    const tracking = await openTrackingStore(uri);
    try {
      const run = await tracking.getRun(answer.run_id);
      expect(run?.tags['tagger.test_set.size']).toBe(String(answer.test_set.size));
      expect(run?.tags['tagger.trained_tags']).toBe('2');
      expect(run?.tags['tagger.test_set.digest']).toMatch(/^[0-9a-f]{64}$/);
      expect(run?.tags['tagger.warnings']).toContain('repeat an earlier row');
    } finally {
      await tracking.close();
    }
  });

  it('refuses data of one tag before training, and rows without text by line', async () => {
    const rows = (await readFile(SAMPLE_DATA, 'utf8')).trim().split('\n').slice(1, 41);
    const oneTag = join(dir, 'one-tag.csv');
    await writeFile(
      oneTag,
      ['id,created_on,title,description,tag', ...rows.map((row) => row.replace(/,[^,]+$/, ',mlops'))].join(
        '\n',
      ),
    );
    const uri = `sqlite:///${join(dir, 'refused.db')}`;
    const refused = await tagger(['train', '--data', oneTag, '--args', FAST, '--tracking-uri', uri]);
    expectCleanFailure(refused, /tagger: data: every training row has the tag 'mlops'/);
    expect(refused.stderr).not.toMatch(/training: \d+\/\d+/);
    const noText = join(dir, 'no-text.csv');
    await writeFile(noText, 'title,description,tag\nA,b,nlp\n , ,cv\n,,cv\n');
    expectCleanFailure(
      await tagger(['train', '--data', noText, '--args', FAST, '--tracking-uri', uri]),
      /2 row\(s\) have neither a title nor a description \(lines 3 and 4\)/,
    );
  });

  it('reports a missing data file', async () => {
    expectCleanFailure(
      await tagger(['train', '--data', 'missing.csv', '--tracking-uri', store]),
      /data: file not found: missing\.csv/,
    );
  });

  it('reports missing columns', async () => {
    const path = join(dir, 'columns.csv');
    await writeFile(path, 'title,text\na,b\n');
    expectCleanFailure(
      await tagger(['train', '--data', path, '--tracking-uri', store]),
      /lacks column\(s\) description, tag/,
    );
  });

  it('reports empty data', async () => {
    const path = join(dir, 'empty.csv');
    await writeFile(path, 'title,description,tag\n');
    expectCleanFailure(
      await tagger(['train', '--data', path, '--tracking-uri', store]),
      /has a header but no rows/,
    );
  });

  it('reports too few examples for the split', async () => {
    const path = join(dir, 'few.csv');
    await writeFile(path, 'title,description,tag\na,b,x\nc,d,y\ne,f,x\n');
    expectCleanFailure(await tagger(['train', '--data', path, '--tracking-uri', store]), /too few to split/);
  });

  it('reports an unknown analyzer', async () => {
    expectCleanFailure(
      await tagger([
        'train',
        '--data',
        SAMPLE_DATA,
        '--args',
        '{"analyzer":"bogus"}',
        '--tracking-uri',
        store,
      ]),
      /analyzer.*bogus/,
    );
  });

  it('reports non-numeric arguments', async () => {
    expectCleanFailure(
      await tagger(['train', '--data', SAMPLE_DATA, '--args', '{"alpha":"big"}', '--tracking-uri', store]),
      /alpha.*big/,
    );
    expectCleanFailure(
      await tagger(['train', '--data', SAMPLE_DATA, '--seed', 'abc']),
      /--seed must be a whole number, got 'abc'/,
    );
  });

  it('reports invalid JSON and a missing --args file', async () => {
    expectCleanFailure(
      await tagger(['train', '--data', SAMPLE_DATA, '--args', '{nope']),
      /--args: .* is not valid JSON/,
    );
    expectCleanFailure(
      await tagger(['train', '--data', SAMPLE_DATA, '--args', 'nope.json']),
      /--args: file not found: nope\.json/,
    );
  });

  // Tests run as root, whom file permissions do not stop: the CLI runs as `nobody` against a store
  // that root owns, like a training job whose volume is mounted read-only.
  const asNobody = nobodyCanRunHere();
  it.skipIf(!asNobody)(
    'a store this user cannot write fails before training, for folders and SQLite files [as nobody]',
    async () => {
      // Traversable by nobody (mkdtemp makes 0700 folders), writable only by root.
      const stores = await mkdtemp(join(tmpdir(), 'tagger-root-owned-'));
      await chmod(stores, 0o755);
      const sqlite = `sqlite:///${join(stores, 'mlflow.db')}`;
      await (await openTrackingStore(sqlite)).close();
      await (await openTrackingStore(join(stores, 'mlruns'))).close();
      await chmod(join(stores, 'mlflow.db'), 0o644);
      for (const uri of [join(stores, 'mlruns'), sqlite]) {
        const result = await tagger(
          ['train', '--data', SAMPLE_DATA, '--args', FAST, '--tracking-uri', uri],
          {},
          { uid: 65534, gid: 65534, cwd: stores },
        );
        expectCleanFailure(result, /tagger: tracking: .*(cannot write to|cannot be written)/);
        // Failed before the training started: no progress, no run.
        expect(result.stderr).not.toMatch(/training: /);
        expect(result.stdout).not.toMatch(/Logged run/);
      }
      await rm(stores, { recursive: true, force: true });
    },
  );

  it.skipIf(!asNobody)(
    'an experiment this user cannot write fails before training, though the store can be [as nobody]',
    async () => {
      // The store is shared (world-writable) but `best` was created by another user (root, 0755).
      const stores = await mkdtemp(join(tmpdir(), 'tagger-foreign-experiment-'));
      await chmod(stores, 0o755);
      const root = join(stores, 'mlruns');
      const owned = await openTrackingStore(root);
      const experimentId = await owned.createExperiment('best');
      await owned.close();
      await chmod(root, 0o777);
      const result = await tagger(
        ['train', '--data', SAMPLE_DATA, '--args', FAST, '--tracking-uri', root],
        {},
        { uid: 65534, gid: 65534, cwd: stores },
      );
      expectCleanFailure(
        result,
        new RegExp(`tagger: tracking: cannot write to the folder of experiment 'best' .*${experimentId}`),
      );
      expect(result.stderr).not.toMatch(/training: /);
      await rm(stores, { recursive: true, force: true });
    },
  );

  it('a deleted experiment fails before training, not after it', async () => {
    const root = join(dir, 'mlruns-deleted');
    const owned = await openTrackingStore(root);
    const experimentId = await owned.createExperiment('best');
    await owned.close();
    // What MLflow's delete_experiment does: mark it deleted and move it to .trash.
    const meta = join(root, experimentId, 'meta.yaml');
    await writeFile(
      meta,
      (await readFile(meta, 'utf8')).replace('lifecycle_stage: active', 'lifecycle_stage: deleted'),
    );
    await rename(join(root, experimentId), join(root, '.trash', experimentId));
    const result = await tagger(['train', '--data', SAMPLE_DATA, '--args', FAST, '--tracking-uri', root]);
    expectCleanFailure(
      result,
      /tagger: tracking: experiment 'best' is deleted in .*; restore it or choose another name/,
    );
    expect(result.stderr).not.toMatch(/training: /);
  });

  it('requires --data', async () => {
    expectCleanFailure(await tagger(['train']), /required option '--data <csv>' not specified/);
  });
});

describe('tagger train --register and tagger alias', () => {
  it('registers each trained run as the next version, and moves, lists and deletes aliases', async () => {
    const registry = join(dir, 'registry.db');
    const uri = `sqlite:///${registry}`;
    const train = () =>
      tagger([
        'train',
        '--data',
        SAMPLE_DATA,
        '--args',
        FAST,
        '--tracking-uri',
        uri,
        '--register',
        'tagger',
        '--quiet',
      ]);
    const first = await train();
    expect(first.code, first.stderr).toBe(0);
    expect(first.stdout).toMatch(
      /Registered as version 1 of model 'tagger' \(models:\/tagger\/1\); serve it by alias: tagger alias set tagger champion 1, then tagger serve --model-uri models:\/tagger@champion/,
    );
    const second = await tagger([
      'train',
      '--data',
      SAMPLE_DATA,
      '--args',
      FAST,
      '--tracking-uri',
      uri,
      '--register',
      'tagger',
      '--json',
    ]);
    expect(second.code, second.stderr).toBe(0);
    const output = JSON.parse(second.stdout);
    expect(output.registered_model).toEqual({ name: 'tagger', version: 2 });

    const set = await tagger(['alias', 'set', 'tagger', 'champion', '1', '--tracking-uri', uri]);
    expect(set.code, set.stderr).toBe(0);
    expect(set.stdout).toMatch(
      /^models:\/tagger@champion → version 1, run [0-9a-f]{32}; servers following it swap/,
    );
    const moved = await tagger(['alias', 'set', 'tagger', 'champion', '2', '--tracking-uri', uri, '--json']);
    expect(JSON.parse(moved.stdout)).toEqual({
      name: 'tagger',
      alias: 'champion',
      version: 2,
      previous_version: 1,
      run_id: output.run_id,
    });
    const listed = await tagger(['alias', 'list', 'tagger', '--tracking-uri', uri, '--json']);
    expect(JSON.parse(listed.stdout)).toEqual({
      name: 'tagger',
      aliases: { champion: 2 },
      latest_version: 2,
    });

    const tracking = await openTrackingStore(uri);
    try {
      expect(await tracking.registry.getModelVersion('tagger', 2)).toMatchObject({
        runId: output.run_id,
        source: `runs:/${output.run_id}/model`,
      });
    } finally {
      await tracking.close();
    }

    expectCleanFailure(
      await tagger(['alias', 'set', 'tagger', 'champion', '9', '--tracking-uri', uri]),
      /^tagger: tracking: model 'tagger' has no version 9/,
    );
    expectCleanFailure(
      await tagger(['alias', 'set', 'tagger', 'latest', '1', '--tracking-uri', uri]),
      /'latest' is reserved: it always means the newest version/,
    );
    expectCleanFailure(
      await tagger(['alias', 'set', 'tagger', 'champion', 'two', '--tracking-uri', uri]),
      /<version> must be a whole number/,
    );
    expectCleanFailure(
      await tagger(['alias', 'list', 'nobody', '--tracking-uri', uri]),
      /^tagger: tracking: no registered model named 'nobody'/,
    );
    const deleted = await tagger(['alias', 'delete', 'tagger', 'champion', '--tracking-uri', uri]);
    expect(deleted.code, deleted.stderr).toBe(0);
    const after = await tagger(['alias', 'list', 'tagger', '--tracking-uri', uri]);
    expect(after.stdout).toBe('(latest: version 2)\n');
  }, 120_000);

  it('refuses a bad model name before training', async () => {
    const result = await tagger([
      'train',
      '--data',
      SAMPLE_DATA,
      '--tracking-uri',
      store,
      '--register',
      'a/b',
    ]);
    expectCleanFailure(result, /invalid registered model name 'a\/b': names cannot contain/);
    expect(result.stderr).not.toMatch(/training:/);
  });
});

describe('tagger predict', () => {
  it('predicts with the best run, in order, one prediction per text', async () => {
    const result = await tagger(
      ['predict', 'Object detection with YOLO', 'Sentiment analysis of tweets with BERT'],
      { MLFLOW_TRACKING_URI: store },
    );
    expect(result.code, result.stderr).toBe(0);
    const output = JSON.parse(result.stdout);
    expect(output.run_id).toMatch(/^[0-9a-f]{32}$/);
    expect(output.predictions.map((p: { input_text: string }) => p.input_text)).toEqual([
      'Object detection with YOLO',
      'Sentiment analysis of tweets with BERT',
    ]);
    for (const prediction of output.predictions) {
      const total = Object.values(prediction.predicted_probabilities as Record<string, number>).reduce(
        (a, b) => a + b,
        0,
      );
      expect(total).toBeCloseTo(1, 6);
      expect(Object.keys(prediction.predicted_probabilities)).toContain(prediction.predicted_tag);
    }
  });

  it('--explain prints, per text, a table whose contributions, rest and bias add up to the score', async () => {
    const texts = ['Object detection with YOLO', 'Sentiment analysis of tweets with BERT'];
    const plain = JSON.parse((await tagger(['predict', ...texts], { MLFLOW_TRACKING_URI: store })).stdout);
    const result = await tagger(['predict', '--explain', ...texts], { MLFLOW_TRACKING_URI: store });
    expect(result.code, result.stderr).toBe(0);
    const blocks = result.stdout.trim().split('\n\n');
    expect(blocks[0]).toBe(`run ${plain.run_id}`);
    expect(blocks).toHaveLength(3);
    for (const [i, block] of blocks.slice(1).entries()) {
      const lines = block.split('\n');
      const tag = plain.predictions[i].predicted_tag;
      expect(lines[0]).toBe(
        `${JSON.stringify(texts[i])} → ${tag} (probability ${plain.predictions[i].predicted_probabilities[tag].toFixed(4)})`,
      );
      expect(lines[1]).toMatch(/^feature +analyzer +contribution$/);
      const value = (line: string) => Number(line.trim().split(/\s+/).at(-1));
      const parts = lines.slice(2, -1).map(value);
      expect(lines.at(-1)).toMatch(new RegExp(`^= score of ${tag} +-?\\d+\\.\\d{4}$`));
      expect(parts.reduce((a, b) => a + b, 0)).toBeCloseTo(value(lines.at(-1)!), 3);
      expect(lines.slice(2, -3).length).toBeGreaterThan(0);
    }
  });

  it('--input tags a file into --output, reporting bad rows by line and going on', async () => {
    const input = join(dir, 'to-tag.csv');
    await writeFile(input, 'title,description\nBERT,sentiment analysis\n,\nYOLO,object detection\n');
    const output = join(dir, 'tagged.jsonl');
    const result = await tagger(['predict', '--input', input, '--output', output], {
      MLFLOW_TRACKING_URI: store,
    });
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toMatch(
      /^Tagged 2 of 3 rows of .*to-tag\.csv into .*tagged\.jsonl \(1 bad row skipped\) in \d+\.\d s with run [0-9a-f]{32}\.\n$/,
    );
    expect(result.stderr).toContain(`tagger: ${input}: line 3: no text; skipped`);
    // Not a terminal: plain progress lines with the rate, never escape codes.
    expect(result.stderr).toMatch(/^tagging: 100% 3 rows, \d+ rows\/s, ETA 0 s$/m);
    expect(result.stderr).not.toContain('\u001b[');
    const rows = (await readFile(output, 'utf8'))
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line));
    expect(rows.map((row) => [row.line, row.text])).toEqual([
      [2, 'BERT sentiment analysis'],
      [4, 'YOLO object detection'],
    ]);
    expectCleanFailure(
      await tagger(['predict', 'a text', '--input', input, '--output', output], {
        MLFLOW_TRACKING_URI: store,
      }),
      /give texts or --input <file>, not both/,
    );
    expectCleanFailure(
      await tagger(['predict', '--input', input], { MLFLOW_TRACKING_URI: store }),
      /--input needs --output/,
    );
    expectCleanFailure(
      await tagger(['predict', '--input', input, '--output', join(dir, 'x.csv'), '--text-column', 'body'], {
        MLFLOW_TRACKING_URI: store,
      }),
      /has no column 'body' \(its columns: title, description\)/,
    );
  });

  it('reports an unknown run id', async () => {
    expectCleanFailure(
      await tagger(['predict', '--run-id', 'f'.repeat(32), 'text'], { MLFLOW_TRACKING_URI: store }),
      new RegExp(`${'f'.repeat(32)}`),
    );
  });

  it('reports an empty store with what to do', async () => {
    expectCleanFailure(
      await tagger(['predict', 'text'], { MLFLOW_TRACKING_URI: join(dir, 'empty-store') }),
      /tagger train/,
    );
  });
});

describe('tagger evaluate', () => {
  it('scores the best run on new labelled data, folding tags it does not know into other', async () => {
    const data = join(dir, 'labelled.csv');
    await writeFile(
      data,
      'title,description,tag\n' +
        'BERT,sentiment analysis of reviews,natural-language-processing\n' +
        'YOLO,object detection in images,computer-vision\n' +
        'Qubits,quantum annealing for scheduling,quantum\n' +
        'Kubeflow,pipelines for model serving,mlops\n',
    );
    const json = await tagger(['evaluate', '--data', data, '--json'], { MLFLOW_TRACKING_URI: store });
    expect(json.code, json.stderr).toBe(0);
    const report = JSON.parse(json.stdout);
    expect(report.run_id).toMatch(/^[0-9a-f]{32}$/);
    expect(report).toMatchObject({ rows: 4, unknown_tags: { quantum: 1 } });
    expect(report.performance.overall.num_samples).toBe(4);
    const support = Object.values(report.performance.class as Record<string, { num_samples: number }>);
    expect(support.reduce((total, m) => total + m.num_samples, 0)).toBe(4);
    for (const key of ['precision', 'recall', 'f1']) {
      expect(report.performance.overall[key]).toBeGreaterThanOrEqual(0);
      expect(report.performance.overall[key]).toBeLessThanOrEqual(1);
    }

    const text = await tagger(['evaluate', '--data', data], { MLFLOW_TRACKING_URI: store });
    expect(text.stdout).toContain(`Run ${report.run_id} on ${data} (4 rows)`);
    expect(text.stdout).toContain("Tags the model does not know, scored as 'other': quantum (1)");
    expect(text.stdout).toMatch(/^tag +precision +recall +f1 +rows$/m);
    // The slices (nlp_cnn holds no row here) and the default behavioural tests, as training reports them.
    expect(text.stdout).toMatch(/^slice +precision +recall +f1 +rows$/m);
    expect(text.stdout).toMatch(/^nlp_cnn +- +- +- +0$/m);
    expect(text.stdout).toMatch(/^short_text +\d\.\d{4} +\d\.\d{4} +\d\.\d{4} +4$/m);
    expect(text.stdout).toMatch(/^Behavioural tests \(default \(dataset\.csv tags\)\): \d+\/36 passed/m);
    expect(report.behavioural.cases).toHaveLength(36);
    expect(Object.keys(report.performance.slices)).toEqual(['short_text']);
    expectCleanFailure(
      await tagger(['evaluate', '--data', join(dir, 'absent.csv')], { MLFLOW_TRACKING_URI: store }),
      /data: file not found/,
    );
  });
});

describe('multi-label data (a tags column)', () => {
  const MULTI = join(REPO_ROOT, 'samples', 'projects-multilabel.csv');
  const multiStore = () => join(dir, 'mlruns-multi');

  it('trains a multi-label run, predicts several tags per text and evaluates with micro and macro f1', async () => {
    const train = await tagger([
      'train',
      '--data',
      MULTI,
      '--args',
      JSON.stringify({ num_epochs: 15 }),
      '--tracking-uri',
      multiStore(),
      '--json',
    ]);
    expect(train.code, train.stderr).toBe(0);
    const output = JSON.parse(train.stdout);
    expect(output.metrics.micro_f1).toBeGreaterThan(0.5);
    expect(Object.keys(output.tag_thresholds)).toContain('pytorch');
    const tracking = await openTrackingStore(multiStore());
    try {
      const run = await tracking.getRun(output.run_id);
      expect(run?.params).toMatchObject({ multi_label: 'true', threshold: 'tuned' });
    } finally {
      await tracking.close();
    }

    const predicted = await tagger(
      ['predict', 'Fine-tuning BERT in PyTorch for sentiment analysis of product reviews'],
      { MLFLOW_TRACKING_URI: multiStore() },
    );
    expect(predicted.code, predicted.stderr).toBe(0);
    const [prediction] = JSON.parse(predicted.stdout).predictions;
    expect(prediction.predicted_tags.length).toBeGreaterThan(1);
    expect(prediction.predicted_tag).toBe(prediction.predicted_tags[0]);

    const labelled = join(dir, 'multi-labelled.csv');
    await writeFile(
      labelled,
      'title,description,tags\n' +
        'BERT,sentiment analysis of reviews with a transformer,natural-language-processing|transformers\n' +
        'YOLO,object detection in images with PyTorch,computer-vision|pytorch\n',
    );
    const evaluated = await tagger(['evaluate', '--data', labelled], { MLFLOW_TRACKING_URI: multiStore() });
    expect(evaluated.code, evaluated.stderr).toBe(0);
    expect(evaluated.stdout).toMatch(
      /^overall: precision [\d.]+, recall [\d.]+, f1 [\d.]+ \(weighted; micro f1 [\d.]+, macro f1 [\d.]+\)$/m,
    );
  });

  it('refuses multi_label false for a tags column, before training', async () => {
    expectCleanFailure(
      await tagger([
        'train',
        '--data',
        MULTI,
        '--args',
        '{"multi_label": false}',
        '--tracking-uri',
        multiStore(),
      ]),
      /several tags per text \(a tags column\), but the args set multi_label to false/,
    );
  });
});

describe('tagger optimize', () => {
  it('logs one run per trial and saves the best arguments', async () => {
    const output = join(dir, 'best-args.json');
    const result = await tagger([
      'optimize',
      '--data',
      SAMPLE_DATA,
      '--trials',
      '2',
      '--folds',
      '3',
      '--args',
      FAST,
      '--tracking-uri',
      store,
      '--output',
      output,
      '--json',
    ]);
    expect(result.code, result.stderr).toBe(0);
    const summary = JSON.parse(result.stdout) as {
      best: { run_id: string; args: unknown; val_f1: number; cv_f1_mean: number };
      parent_run_id: string;
      folds: number;
      trials: {
        trial: number;
        run_id: string;
        cv_f1_mean: number;
        cv_f1_std: number;
        cv_f1_folds: number[];
        val_f1: number;
        f1: number;
        args: unknown;
        base_args: boolean;
      }[];
    };
    expect(summary.trials.map((trial) => [trial.trial, trial.base_args])).toEqual([
      [1, true],
      [2, false],
    ]);
    expect(summary.trials.map((trial) => trial.run_id)).toContain(summary.best.run_id);
    expect(summary.folds).toBe(3);
    expect(summary.trials.every((trial) => trial.cv_f1_folds.length === 3)).toBe(true);
    expect(summary.best.cv_f1_mean).toBe(Math.max(...summary.trials.map((trial) => trial.cv_f1_mean)));
    const saved = JSON.parse(await readFile(output, 'utf8'));
    expect(saved).toEqual(summary.best.args);
    const tracking = await openTrackingStore(store);
    try {
      const experiment = await tracking.getExperimentByName('optimization');
      const runs = await tracking.searchRuns(experiment?.experimentId ?? '');
      // Two trials nested under one parent run of the search (MLflow's mlflow.parentRunId).
      const parent = runs.find((run) => run.info.runId === summary.parent_run_id)!;
      expect(parent.info.status).toBe('FINISHED');
      expect(parent.metrics.best_val_f1).toBe(summary.best.val_f1);
      expect(parent.metrics.best_cv_f1_mean).toBe(summary.best.cv_f1_mean);
      expect(parent.tags['tagger.best_run_id']).toBe(summary.best.run_id);
      const trials = runs.filter((run) => run.info.runId !== summary.parent_run_id);
      expect(trials).toHaveLength(2);
      expect(trials.every((run) => typeof run.metrics.val_f1 === 'number')).toBe(true);
      // Every trial's model went through the (default) behavioural tests.
      expect(trials.every((run) => typeof run.metrics.behavioural_pass_rate === 'number')).toBe(true);
      expect(trials.every((run) => typeof run.metrics.cv_f1_std === 'number')).toBe(true);
      expect(trials.every((run) => run.tags['mlflow.parentRunId'] === summary.parent_run_id)).toBe(true);
    } finally {
      await tracking.close();
    }
  });

  it('runs the --behaviour suite and the --slices on every trial', async () => {
    const suite = join(dir, 'optimize-suite.json');
    await writeFile(
      suite,
      JSON.stringify({
        cases: [
          { kind: 'mft', name: 'wrong on purpose', text: 'Object detection with YOLO.', expected: 'mlops' },
        ],
      }),
    );
    const slices = join(dir, 'optimize-slices.yaml');
    await writeFile(slices, 'slices:\n  - { name: mlops rows, where: { tag: mlops } }\n');
    const uri = `sqlite:///${join(dir, 'optimize-files.db')}`;
    const result = await tagger([
      'optimize',
      '--data',
      SAMPLE_DATA,
      '--trials',
      '1',
      '--args',
      FAST,
      '--tracking-uri',
      uri,
      '--output',
      join(dir, 'files-best.json'),
      '--behaviour',
      suite,
      '--slices',
      slices,
      '--json',
    ]);
    expect(result.code, result.stderr).toBe(0);
    const runId = (JSON.parse(result.stdout) as { trials: { run_id: string }[] }).trials[0]!.run_id;
    const tracking = await openTrackingStore(uri);
    try {
      const run = (await tracking.getRun(runId))!;
      expect(run.metrics.behavioural_pass_rate).toBe(0);
      const performance = JSON.parse(
        new TextDecoder().decode(await tracking.readArtifact(runId, 'performance.json')),
      ) as { slices: Record<string, unknown> };
      expect(Object.keys(performance.slices)).toEqual(['mlops rows']);
    } finally {
      await tracking.close();
    }
  });

  it('prints a table of the trials, marking the default arguments and the best', async () => {
    const result = await tagger([
      'optimize',
      '--data',
      SAMPLE_DATA,
      '--trials',
      '2',
      '--tracking-uri',
      store,
      '--output',
      join(dir, 'table-args.json'),
      '--quiet',
    ]);
    expect(result.code, result.stderr).toBe(0);
    const lines = result.stdout.split('\n');
    expect(lines[0]).toMatch(
      /^trial\s+analyzer\s+ngrams\s+min_df\s+sublinear\s+loss\s+balancing\s+learning_rate\s+power_t\s+alpha\s+cv f1\s+val f1\s+test f1$/,
    );
    expect(lines[1]).toMatch(/^1\s.*\s0\.\d{4} ± 0\.\d{4}\s.*default arguments/);
    expect(lines[2]).toMatch(/^2\s/);
    expect(lines.slice(1, 3).join('\n')).toMatch(/best/);
    expect(result.stdout).toMatch(/nested under run [0-9a-f]{32}/);
  }, 120_000);

  it('rejects a non-numeric trial count', async () => {
    expectCleanFailure(
      await tagger(['optimize', '--data', SAMPLE_DATA, '--trials', 'many']),
      /--trials must be a whole number/,
    );
  });

  it('rejects fewer than 2 folds', async () => {
    expectCleanFailure(
      await tagger(['optimize', '--data', SAMPLE_DATA, '--trials', '1', '--folds', '1']),
      /--folds must be a whole number ≥ 2/,
    );
  });
});

/** A valid value of a setting, as typed on a command line, read from its schema. */
function validText(setting: Setting, files: { config: string; keys: string }): string {
  const schema = setting.schema as { type?: string; minimum?: number; enum?: string[]; pattern?: string };
  if (setting.key === 'config') return files.config;
  if (setting.key === 'api_keys_file') return files.keys;
  if (schema.type === 'integer') return String(schema.minimum! + 1);
  if (schema.type === 'number') return '0.5';
  if (schema.type === 'boolean') return 'true';
  if (schema.enum) return schema.enum[0]!;
  if (schema.pattern?.includes('redis')) return 'redis://127.0.0.1:6399/0';
  return `${setting.key}-value`;
}

/** `--print-config` lines: key → [value, source]. */
function printed(stdout: string): Map<string, [string, string]> {
  const lines = stdout.trim().split('\n');
  return new Map(
    lines.map((line) => {
      const match = /^(\S+) += (.*) {2}# (.+)$/.exec(line);
      expect(match, line).not.toBeNull();
      return [match![1]!, [match![2]!, match![3]!]];
    }),
  );
}

describe('tagger serve configuration', () => {
  it('--help lists every setting with its variable, the config file and --print-config', async () => {
    const result = await tagger(['serve', '--help'], { COLUMNS: '200' });
    expect(result.code).toBe(0);
    const help = result.stdout.replace(/\s+/g, ' ');
    for (const setting of SERVE_SETTINGS) {
      expect(help).toContain(`${setting.flag} ${setting.arg}`);
      expect(help).toContain(`(env ${setting.env}`);
    }
    expect(help).toContain('--print-config');
    // An API key given as a flag is visible to every user of the machine.
    expect(help).toMatch(/--api-keys <keys> .*?shows in `ps`.*?--api-keys-file/);
  });

  it('blames a bad variable on the variable, not on the flag (TAGGER_PORT=abc)', async () => {
    const result = await tagger(['serve'], { TAGGER_PORT: 'abc' });
    expectCleanFailure(result, /^tagger: serve: TAGGER_PORT must be a TCP port .*; got "abc"$/m);
    expect(result.stderr).not.toContain('--port');
    const both = await tagger(['serve', '--port', '80.5'], { TAGGER_CONFIG: join(dir, 'absent.yaml') });
    expectCleanFailure(both, /cannot read the config file .*absent\.yaml: ENOENT/);
  });

  it('--print-config shows where each setting came from: flags, variables or the config file', async () => {
    const keys = join(dir, 'api-keys.txt');
    await writeFile(keys, 'file-key-secret\n');
    const config = join(dir, 'tagger.yaml');
    await writeFile(config, '# settings come from elsewhere in the first two runs\n');
    const files = { config, keys };
    // Every flag at once (--model contradicts --tracking-uri, --experiment, --run-id and --model-uri: those
    // are left out).
    const flagSettings = SERVE_SETTINGS.filter(
      (s) => !['tracking_uri', 'experiment', 'run_id', 'model_uri'].includes(s.key),
    );
    const flags = await tagger([
      'serve',
      '--print-config',
      ...flagSettings.flatMap((s) => [s.flag, validText(s, files)]),
    ]);
    expect(flags.code, flags.stderr).toBe(0);
    const fromFlags = printed(flags.stdout);
    for (const setting of flagSettings) {
      expect(fromFlags.get(setting.key)?.[1], setting.key).toBe(setting.flag);
    }
    expect(fromFlags.get('tracking_uri')?.[1]).toBe('default');

    const variables = await tagger(
      ['serve', '--print-config'],
      Object.fromEntries(SERVE_SETTINGS.map((s) => [s.env, validText(s, files)])),
    );
    expect(variables.code, variables.stderr).toBe(0);
    const fromVariables = printed(variables.stdout);
    for (const setting of SERVE_SETTINGS) expect(fromVariables.get(setting.key)?.[1]).toBe(setting.env);

    // --model-uri chooses the run itself: it contradicts run_id and experiment (src/serve/config.ts).
    const inFile = SERVE_SETTINGS.filter((s) => !['config', 'model', 'model_uri'].includes(s.key));
    await writeFile(config, inFile.map((s) => `${s.key}: ${JSON.stringify(validText(s, files))}`).join('\n'));
    const file = await tagger(['serve', '--print-config', '--config', config]);
    expect(file.code, file.stderr).toBe(0);
    const fromFile = printed(file.stdout);
    for (const setting of inFile) expect(fromFile.get(setting.key)?.[1]).toBe(`${config}: ${setting.key}`);

    for (const result of [flags, variables, file]) {
      expect(result.stdout).not.toContain('api_keys-value');
      expect(result.stdout).toMatch(/^api_keys += \*\*\* \(1 key\) /m);
    }
  });

  it('--print-config masks passwords in URLs, exits 0 and starts nothing', async () => {
    const store = join(dir, 'never-created');
    const result = await tagger(['serve', '--print-config', '--tracking-uri', store], {
      TAGGER_REDIS_URL: 'redis://default:redis-password@127.0.0.1:6399',
      TAGGER_API_KEYS: 'key-one,key-two',
      TAGGER_PORT: '1',
    });
    expect(result.code, result.stderr).toBe(0);
    const settings = printed(result.stdout);
    expect(settings.get('redis_url')).toEqual(['redis://default:***@127.0.0.1:6399', 'TAGGER_REDIS_URL']);
    expect(settings.get('api_keys')).toEqual(['*** (2 keys)', 'TAGGER_API_KEYS']);
    expect(settings.get('port')).toEqual(['1', 'TAGGER_PORT']);
    expect(result.stdout).not.toMatch(/redis-password|key-one|key-two/);
    // Serving would have opened (and so created) the file store before listening.
    await expect(stat(store)).rejects.toMatchObject({ code: 'ENOENT' });

    const tracking = await tagger(['serve', '--print-config'], {
      MLFLOW_TRACKING_URI: 'https://user:mlflow-password@mlflow.example.com/',
    });
    expect(printed(tracking.stdout).get('tracking_uri')).toEqual([
      'https://mlflow.example.com/',
      'MLFLOW_TRACKING_URI',
    ]);
    expect(tracking.stdout).not.toContain('mlflow-password');
  });
});
