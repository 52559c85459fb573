/**
 * `tagger train`: runs logged to every kind of store, definition files, data checks, and failures before
 * training. Commands run in-process (test/support/cli.ts); real files, a real local store.
 */
import { chmod, mkdtemp, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { openTrackingStore } from '../../src/tracking/index.js';
import { cliFolder, expectCleanFailure, FAST_ARGS, trainArgv } from '../support/cli.js';
import { nobodyCanRunHere, SAMPLE_DATA } from '../support/components.js';

const cli = cliFolder();
const tagger = cli.tagger;

describe('tagger train', () => {
  it('refuses a training estimated not to fit in memory before it starts, unless told --no-memory-check', async () => {
    const store = join(cli.dir, 'memory-store');
    const args = ['train', '--data', SAMPLE_DATA, '--args', FAST_ARGS, '--tracking-uri', store, '--quiet'];
    const refused = await tagger(args, { TAGGER_TRAIN_MEMORY: '1MB' });
    expectCleanFailure(
      refused,
      /^tagger: this training would need about [\d.]+ MB \(.*\) for \d+ rows and \d+ tags, more than the 1\.0 MB this process may use .*--no-memory-check/m,
    );
    expect(refused.stdout).toBe('');
    const forced = await tagger([...args, '--no-memory-check'], { TAGGER_TRAIN_MEMORY: '1MB' });
    expect(forced.code, forced.stderr).toBe(0);
  });

  it('trains, logs a run and prints one JSON object with --json', async () => {
    const result = await tagger(trainArgv(cli.store, ['--run-name', 'cli-run', '--json']));
    expect(result.code, result.stderr).toBe(0);
    const lines = result.stdout.trim().split('\n');
    expect(lines).toHaveLength(1);
    const output = JSON.parse(lines[0] ?? '');
    expect(output.experiment).toBe('best');
    expect(output.run_id).toMatch(/^[0-9a-f]{32}$/);
    for (const key of ['precision', 'recall', 'f1']) expect(output.metrics[key]).toBeTypeOf('number');
    // Progress goes to stderr when it is not a terminal: plain lines, no escape codes. The default soft
    // vote has no epochs: a step per member (3) in the validated fit and in the refit on train + validation.
    expect(result.stderr).toMatch(
      /^training: 1\/6 validated fit: linear_svm \(member 1\/3, calibrated: 6 fits\) trained in \d+\.\d\d s( \(ETA [^)]+\))?$/m,
    );
    expect(result.stderr).toMatch(/^training: 6\/6 refit on train\+validation done, train_loss=\d+\.\d{4}$/m);
    expect(result.stderr).not.toContain('\u001b[');

    const tracking = await openTrackingStore(cli.store);
    try {
      const run = await tracking.getRun(output.run_id);
      expect(run?.info.runName).toBe('cli-run');
      expect(run?.metrics.f1).toBe(output.metrics.f1);
    } finally {
      await tracking.close();
    }
  }, 120_000);

  it('runs the behavioural tests and the slices of --behaviour and --slices files, logs them and prints a summary', async () => {
    const suite = join(cli.dir, 'suite.yaml');
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
    const slices = join(cli.dir, 'slices.json');
    await writeFile(
      slices,
      JSON.stringify({
        slices: [
          { name: 'vision', where: { tag: 'computer-vision' } },
          { name: 'never', where: { text_matches: 'no text says xyzzy' } },
        ],
      }),
    );
    const uri = `sqlite:///${join(cli.dir, 'behaviour.db')}`;
    const args = trainArgv(uri, ['--quiet']);
    // Not --quiet: that prints only the run and its scores.
    const result = await tagger([
      ...args.filter((arg) => arg !== '--quiet'),
      '--behaviour',
      suite,
      '--slices',
      slices,
    ]);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toMatch(/^Slices: vision \(\d+ rows\) f1 \d\.\d{4}, never \(no rows; left out\)$/m);
    expect(result.stdout).toMatch(
      /^Behavioural tests \(cli suite\): 2\/3 passed \(66\.7%; mft 1\/2, inv 1\/1\), 1 skipped$/m,
    );
    expect(result.stdout).toMatch(
      /^ {2}FAILED mft 'wrong on purpose': expected mlops; got computer-vision$/m,
    );
    expect(result.stdout).toMatch(
      /^ {2}1 of 4 cases skipped: it names tags this model does not have \(graph-learning\)$/m,
    );

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
  }, 120_000);

  it('refuses a bad --behaviour or --slices file before training, naming the file and the bad value', async () => {
    const bad = join(cli.dir, 'bad-suite.yaml');
    await writeFile(bad, 'cases:\n  - { kind: mft, name: a, text: hello }\n');
    const notYaml = join(cli.dir, 'broken.yaml');
    await writeFile(notYaml, 'cases: [\n');
    const badSlices = join(cli.dir, 'bad-slices.yaml');
    await writeFile(badSlices, 'slices:\n  - { name: s, where: { text_matches: "(" } }\n');
    const train = trainArgv(cli.store);
    expectCleanFailure(
      await tagger([...train, '--behaviour', bad]),
      /tagger: .*bad-suite\.yaml: cases\[0\]\.expected must be a non-empty string/,
    );
    expectCleanFailure(
      await tagger([...train, '--behaviour', notYaml]),
      /--behaviour: .* is not valid YAML or JSON/,
    );
    expectCleanFailure(
      await tagger([...train, '--behaviour', join(cli.dir, 'nope.yaml')]),
      /--behaviour: file not found/,
    );
    expectCleanFailure(
      await tagger([...train, '--slices', badSlices]),
      /bad-slices\.yaml: slices\[0\]\.where\.text_matches is not a valid regular expression/,
    );
  });

  it('reads MLFLOW_TRACKING_URI and --experiment', async () => {
    const result = await tagger(
      ['train', '--data', SAMPLE_DATA, '--args', FAST_ARGS, '--experiment', 'other-exp', '--json'],
      {
        MLFLOW_TRACKING_URI: cli.store,
      },
    );
    expect(result.code, result.stderr).toBe(0);
    const tracking = await openTrackingStore(cli.store);
    try {
      const experiment = await tracking.getExperimentByName('other-exp');
      expect(experiment).not.toBeNull();
      expect(await tracking.searchRuns(experiment?.experimentId ?? '')).toHaveLength(1);
    } finally {
      await tracking.close();
    }
  });

  it('logs to a SQLite database with artifacts under --artifact-root (or TAGGER_ARTIFACT_ROOT)', async () => {
    const uri = `sqlite:///${join(cli.dir, 'db', 'mlflow.db')}`;
    const viaFlag = join(cli.dir, 'shared-artifacts');
    const viaEnv = join(cli.dir, 'env-artifacts');
    const first = await tagger(
      trainArgv(uri, ['--json', '--experiment', 'flag-root', '--artifact-root', viaFlag]),
    );
    expect(first.code, first.stderr).toBe(0);
    const second = await tagger(trainArgv(uri, ['--json', '--experiment', 'env-root']), {
      TAGGER_ARTIFACT_ROOT: viaEnv,
    });
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
  }, 120_000);

  it('warns loudly about data whose metrics mean nothing (tiny test split, repeated rows), and records the test set', async () => {
    const rows = (await readFile(SAMPLE_DATA, 'utf8')).trim().split('\n').slice(1, 41);
    const small = join(cli.dir, 'small.csv');
    // Two tags, 40 rows (a 6-row test split), and the first row again at the end (line 42).
    await writeFile(
      small,
      [
        'id,created_on,title,description,tag',
        ...rows.map((row, i) => row.replace(/,[^,]+$/, i % 2 === 0 ? ',mlops' : ',other')),
        rows[0]!.replace(/,[^,]+$/, ',mlops'),
      ].join('\n'),
    );
    const uri = `sqlite:///${join(cli.dir, 'warned.db')}`;
    // min_freq 5: the default (20) would fold both tags of 20 rows into other, which is refused.
    const args = JSON.stringify({ ...(JSON.parse(FAST_ARGS) as object), min_freq: 5 });
    const result = await tagger(trainArgv(uri, ['--json'], { data: small, args }));
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
      expect(run?.tags['tagger.data_checks']).toBe('duplicate_rows,small_test_split');
    } finally {
      await tracking.close();
    }
  });

  it('says at the end whether tagger serve will serve the run, and the fix when a gate holds it back', async () => {
    const uri = `sqlite:///${join(cli.dir, 'gated.db')}`;
    const first = await tagger(trainArgv(uri));
    expect(first.code, first.stderr).toBe(0);
    expect(first.stdout.trim().split('\n').at(-1)).toMatch(
      /^tagger serve --experiment best serves run [0-9a-f]{32} \(the best run that passes the promotion gates\)\.$/,
    );
    // Other data (every row but the first 30): other test rows than the experiment's first run.
    const lines = (await readFile(SAMPLE_DATA, 'utf8')).trim().split('\n');
    const other = join(cli.dir, 'other.csv');
    await writeFile(other, [lines[0], ...lines.slice(31)].join('\n'));
    const second = await tagger(trainArgv(uri, [], { data: other }));
    expect(second.code, second.stderr).toBe(0);
    expect(second.stdout.trim().split('\n').at(-1)).toMatch(
      /^NOT SERVED: tagger serve --experiment best holds run [0-9a-f]{32} back: its f1 was measured on another test set than run [0-9a-f]{32}'s.*Fix: train on new data into an experiment of its own .*tagger retrain .*TAGGER_ALLOW_INCOMPARABLE=true/,
    );
    const json = await tagger(trainArgv(uri, ['--json'], { data: other }));
    expect(JSON.parse(json.stdout).serving).toMatchObject({
      served: false,
      fix: expect.stringMatching(/retrain/),
    });
    // Three trainings with label issues: 30 s was not enough beside other test files on 2 busy cores.
  }, 180_000);

  it('refuses data of one tag before training, and rows without text by line', async () => {
    const rows = (await readFile(SAMPLE_DATA, 'utf8')).trim().split('\n').slice(1, 41);
    const oneTag = join(cli.dir, 'one-tag.csv');
    await writeFile(
      oneTag,
      ['id,created_on,title,description,tag', ...rows.map((row) => row.replace(/,[^,]+$/, ',mlops'))].join(
        '\n',
      ),
    );
    const uri = `sqlite:///${join(cli.dir, 'refused.db')}`;
    const refused = await tagger(trainArgv(uri, [], { data: oneTag }));
    expectCleanFailure(refused, /tagger: data: every training row has the tag 'mlops'/);
    expect(refused.stderr).not.toMatch(/training: \d+\/\d+/);
    const noText = join(cli.dir, 'no-text.csv');
    await writeFile(noText, 'title,description,tag\nA,b,nlp\n , ,cv\n,,cv\n');
    expectCleanFailure(
      await tagger(trainArgv(uri, [], { data: noText })),
      /2 row\(s\) have neither a title nor a description \(lines 3 and 4\)/,
    );
  });

  it('reports a missing data file', async () => {
    expectCleanFailure(
      await tagger(['train', '--data', 'missing.csv', '--tracking-uri', cli.store]),
      /data: file not found: missing\.csv/,
    );
  });

  it('reports missing columns', async () => {
    const path = join(cli.dir, 'columns.csv');
    await writeFile(path, 'title,text\na,b\n');
    expectCleanFailure(
      await tagger(['train', '--data', path, '--tracking-uri', cli.store]),
      /lacks column\(s\) description, tag/,
    );
  });

  it('reports empty data', async () => {
    const path = join(cli.dir, 'empty.csv');
    await writeFile(path, 'title,description,tag\n');
    expectCleanFailure(
      await tagger(['train', '--data', path, '--tracking-uri', cli.store]),
      /has a header but no rows/,
    );
  });

  it('reports too few examples for the split', async () => {
    const path = join(cli.dir, 'few.csv');
    await writeFile(path, 'title,description,tag\na,b,x\nc,d,y\ne,f,x\n');
    expectCleanFailure(
      await tagger(['train', '--data', path, '--tracking-uri', cli.store]),
      /too few to split/,
    );
  });

  it('reports an unknown analyzer', async () => {
    expectCleanFailure(
      await tagger(trainArgv(cli.store, [], { args: '{"analyzer":"bogus"}' })),
      /analyzer.*bogus/,
    );
  });

  it('reports non-numeric arguments', async () => {
    expectCleanFailure(await tagger(trainArgv(cli.store, [], { args: '{"alpha":"big"}' })), /alpha.*big/);
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
        const result = await tagger(trainArgv(uri), {}, { uid: 65534, gid: 65534, cwd: stores });
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
      const result = await tagger(trainArgv(root), {}, { uid: 65534, gid: 65534, cwd: stores });
      expectCleanFailure(
        result,
        new RegExp(`tagger: tracking: cannot write to the folder of experiment 'best' .*${experimentId}`),
      );
      expect(result.stderr).not.toMatch(/training: /);
      await rm(stores, { recursive: true, force: true });
    },
  );

  it('a deleted experiment fails before training, not after it', async () => {
    const root = join(cli.dir, 'mlruns-deleted');
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
    const result = await tagger(trainArgv(root));
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
