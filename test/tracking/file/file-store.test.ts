import { cp, mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { FileTrackingStore } from '../../../src/tracking/file/file-store.js';
import {
  formatMetricValue,
  latestMetricValue,
  parseMeta,
  parseMetaWithYaml,
  parseMetricLine,
  parseMetricValue,
} from '../../../src/tracking/file/formats.js';
import {
  defaultTrackingUri,
  openTrackingStore,
  redactUri,
  resolveTrackingUri,
} from '../../../src/tracking/index.js';
import { latestMetric } from '../../../src/tracking/mlflow-rules.js';
import { RestTrackingStore } from '../../../src/tracking/rest/rest-store.js';
import { useTempDir } from '../../support/temp-dir.js';
import { expectTrackingError, runTrackingStoreContract } from '../contract.js';

runTrackingStoreContract('file store', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'tagger-contract-'));
  return {
    store: new FileTrackingStore(join(dir, 'mlruns')),
    cleanup: () => rm(dir, { recursive: true, force: true }),
  };
});

describe('FileTrackingStore: MLflow layout', () => {
  const scratch = useTempDir('tagger-file-store-', { each: true });
  let root: string;
  let warnings: string[];
  let store: FileTrackingStore;

  beforeEach(async () => {
    root = join(scratch.path, 'mlruns');
    warnings = [];
    store = await FileTrackingStore.open(root, { onWarning: (message) => warnings.push(message) });
  });
  afterEach(async () => {
    await store.close();
  });

  const yamlOf = async (...parts: string[]) =>
    parse(await readFile(join(root, ...parts), 'utf8'), { version: '1.1' });

  it('creates the root with the Default experiment 0 and .trash, like FileStore.__init__', async () => {
    expect((await readdir(root)).sort()).toEqual(['.trash', '0']);
    const meta = await yamlOf('0', 'meta.yaml');
    expect(meta).toMatchObject({
      experiment_id: '0',
      name: 'Default',
      lifecycle_stage: 'active',
      artifact_location: pathToFileURL(join(root, '0')).href,
    });
    expect(typeof meta.creation_time).toBe('number');
    expect((await store.getExperimentByName('Default'))?.experimentId).toBe('0');
  });

  it('writes experiment and run meta.yaml, metrics, params and tags like MLflow', async () => {
    const experimentId = await store.createExperiment('best');
    expect(experimentId).toMatch(/^[1-9]\d{17}$/);
    const experimentMeta = await readFile(join(root, experimentId, 'meta.yaml'), 'utf8');
    // The id is quoted so YAML readers keep it a string (it exceeds 2^53).
    expect(experimentMeta).toContain(`experiment_id: '${experimentId}'`);
    expect(parse(experimentMeta, { version: '1.1' })).toMatchObject({
      name: 'best',
      lifecycle_stage: 'active',
      artifact_location: pathToFileURL(join(root, experimentId)).href,
    });

    const run = await store.createRun(experimentId, { runName: 'r1', startTime: 1_234, userId: 'alice' });
    const runId = run.info.runId;
    expect(runId).toMatch(/^[0-9a-f]{32}$/);
    const runMeta = await yamlOf(experimentId, runId, 'meta.yaml');
    expect(runMeta).toEqual({
      artifact_uri: pathToFileURL(join(root, experimentId, runId, 'artifacts')).href,
      deleted_time: null,
      end_time: null,
      entry_point_name: '',
      experiment_id: experimentId,
      lifecycle_stage: 'active',
      run_id: runId,
      run_uuid: runId,
      run_name: 'r1',
      source_name: '',
      source_type: 4,
      source_version: '',
      start_time: 1_234,
      status: 1,
      tags: [],
      user_id: 'alice',
    });
    expect((await readdir(join(root, experimentId, runId))).sort()).toEqual([
      'artifacts',
      'meta.yaml',
      'metrics',
      'params',
      'tags',
    ]);

    await store.logBatch(runId, {
      metrics: [
        { key: 'val/f1', value: 0.5, timestamp: 10, step: 0 },
        { key: 'val/f1', value: Number.NaN, timestamp: 11, step: 1 },
        { key: 'loss', value: Number.POSITIVE_INFINITY, timestamp: 12, step: 2 },
        { key: 'loss', value: Number.NEGATIVE_INFINITY, timestamp: 13, step: 3 },
        { key: 'big', value: 1e21, timestamp: 14, step: 0 },
      ],
      params: { 'model/lr': '0.01' },
      tags: { note: 'multi\nline' },
    });
    const runDir = join(root, experimentId, runId);
    expect(await readFile(join(runDir, 'metrics', 'val', 'f1'), 'utf8')).toBe('10 0.5 0\n11 nan 1\n');
    expect(await readFile(join(runDir, 'metrics', 'loss'), 'utf8')).toBe('12 inf 2\n13 -inf 3\n');
    expect(await readFile(join(runDir, 'metrics', 'big'), 'utf8')).toBe('14 1e+21 0\n');
    expect(await readFile(join(runDir, 'params', 'model', 'lr'), 'utf8')).toBe('0.01');
    expect(await readFile(join(runDir, 'tags', 'note'), 'utf8')).toBe('multi\nline');
    expect(await readFile(join(runDir, 'tags', 'mlflow.runName'), 'utf8')).toBe('r1');

    await store.updateRun(runId, { status: 'FINISHED', endTime: 5_678 });
    const finished = await yamlOf(experimentId, runId, 'meta.yaml');
    expect(finished).toMatchObject({ status: 3, end_time: 5_678, run_id: runId, run_uuid: runId });
    // Like MLflow's _overwrite_run_info: deleted_time is only written at creation and deletion.
    expect(finished).not.toHaveProperty('deleted_time');

    // Renaming through the tag keeps meta.yaml in sync, as MLflow does.
    await store.logBatch(runId, { tags: { 'mlflow.runName': 'renamed' } });
    expect((await yamlOf(experimentId, runId, 'meta.yaml')).run_name).toBe('renamed');
    expect((await store.getRun(runId))?.info.runName).toBe('renamed');

    // No temp files are left anywhere.
    const everything = await readdir(root, { recursive: true });
    expect(everything.filter((path) => path.includes('.tagger-tmp-'))).toEqual([]);
  });

  /** Writes a run folder by hand, the way another MLflow (version) might have. */
  const handWrittenRun = async (experimentId: string, runId: string, meta: string) => {
    const runDir = join(root, experimentId, runId);
    for (const folder of ['metrics', 'params', 'tags', 'artifacts'])
      await mkdir(join(runDir, folder), { recursive: true });
    await writeFile(join(runDir, 'meta.yaml'), meta);
    return runDir;
  };

  const runMeta = (experimentId: string, runId: string, extra = '') =>
    `artifact_uri: file:///nonexistent/elsewhere/${runId}/artifacts\nend_time: null\nexperiment_id: '${experimentId}'\n` +
    `lifecycle_stage: active\nrun_id: ${runId}\nrun_name: 1e5\nstart_time: 1000\nstatus: 3\nuser_id: bob\n${extra}`;

  it('reads MLflow-written values: nan/inf spellings, 2/3/5-field lines, latest rule, YAML 1.1 scalars', async () => {
    const experimentId = await store.createExperiment('hand');
    const runId = '12345678901234567890e1234567890a';
    const runDir = await handWrittenRun(experimentId, runId, runMeta(experimentId, runId));
    await writeFile(
      join(runDir, 'metrics', 'f1'),
      '100 0.3\n50 0.9 2\n60 0.7 2 train abc123\n70 -Infinity 1\n',
    );
    await writeFile(join(runDir, 'metrics', 'odd'), '1 NaN 0\n2 +inf 1\n3 INFINITY 2\n');
    await writeFile(join(runDir, 'params', 'p'), '');

    const run = await store.getRun(runId);
    // A plain `1e5` is a string to PyYAML (YAML 1.1 floats need a dot); it must stay one here.
    expect(run?.info.runName).toBe('1e5');
    expect(run?.info.status).toBe('FINISHED');
    expect(run?.info.userId).toBe('bob');
    // Latest of f1: step 2 wins; 5-field line keeps step 0 (as MLflow reads it), so 0.9 at (2, 50).
    expect(run?.metrics['f1']).toBe(0.9);
    expect(run?.metrics['odd']).toBe(Number.POSITIVE_INFINITY);
    expect(run?.params).toEqual({ p: '' });
    const history = await store.getMetricHistory(runId, 'f1');
    expect(history).toEqual([
      { key: 'f1', value: 0.3, timestamp: 100, step: 0 },
      { key: 'f1', value: 0.9, timestamp: 50, step: 2 },
      { key: 'f1', value: 0.7, timestamp: 60, step: 0 },
      { key: 'f1', value: Number.NEGATIVE_INFINITY, timestamp: 70, step: 1 },
    ]);
    const odd = await store.getMetricHistory(runId, 'odd');
    expect(odd.map((p) => p.value)).toEqual([Number.NaN, Number.POSITIVE_INFINITY, Number.POSITIVE_INFINITY]);
  });

  it('parses and formats metric values like Python float()', () => {
    expect(parseMetricValue('nan')).toBeNaN();
    expect(parseMetricValue('-NaN')).toBeNaN();
    expect(parseMetricValue('inf')).toBe(Number.POSITIVE_INFINITY);
    expect(parseMetricValue('-inf')).toBe(Number.NEGATIVE_INFINITY);
    expect(parseMetricValue('Infinity')).toBe(Number.POSITIVE_INFINITY);
    expect(parseMetricValue('-Infinity')).toBe(Number.NEGATIVE_INFINITY);
    expect(parseMetricValue('1e-05')).toBe(1e-5);
    expect(parseMetricValue('1.')).toBe(1);
    expect(parseMetricValue('.5')).toBe(0.5);
    expect(parseMetricValue('0x10')).toBeNull();
    expect(parseMetricValue('')).toBeNull();
    expect(parseMetricValue('1.2.3')).toBeNull();
    for (const value of [
      0.1,
      1,
      -2.5e-7,
      1e21,
      Number.NaN,
      Number.POSITIVE_INFINITY,
      Number.NEGATIVE_INFINITY,
    ]) {
      expect(parseMetricValue(formatMetricValue(value))).toBe(value);
    }
    expect(() => parseMetricLine('k', '1 2 3 4', '/x/metrics/k')).toThrow(
      /\/x\/metrics\/k is malformed.*4 fields/,
    );
    // A double space is an empty field, as in Python's split(' ').
    expect(() => parseMetricLine('k', '1  2', '/x/metrics/k')).toThrow(/value '' is not a number/);
    expect(() => parseMetricLine('k', 'a 2', '/x/metrics/k')).toThrow(/timestamp/);
    expect(() => parseMetricLine('k', '1 2 x', '/x/metrics/k')).toThrow(/step/);
    expect(parseMetricLine('k', '1 2 3\r', 'f')).toEqual({ key: 'k', value: 2, timestamp: 1, step: 3 });
    // First maximum wins for equal keys, NaN never beats an equal (step, timestamp).
    const nanFirst = latestMetric([
      { key: 'k', value: Number.NaN, timestamp: 1, step: 1 },
      { key: 'k', value: 0.5, timestamp: 1, step: 1 },
    ]);
    expect(nanFirst?.value).toBeNaN();
    expect(latestMetric([])).toBeUndefined();
  });

  it('reports a malformed run as MALFORMED naming the file, and searchRuns skips it with a warning', async () => {
    const experimentId = await store.createExperiment('broken');
    const good = await store.createRun(experimentId, { runName: 'good', startTime: 1 });
    const badYaml = 'a'.repeat(32);
    const badYamlDir = await handWrittenRun(experimentId, badYaml, 'run_id: [unclosed\n');
    const badMetric = 'b'.repeat(32);
    const badMetricDir = await handWrittenRun(experimentId, badMetric, runMeta(experimentId, badMetric));
    await writeFile(join(badMetricDir, 'metrics', 'f1'), '1 0.5 0\nnot a metric line at all\n');
    const badStatus = 'c'.repeat(32);
    await handWrittenRun(
      experimentId,
      badStatus,
      runMeta(experimentId, badStatus).replace('status: 3', 'status: 9'),
    );
    const wrongExperiment = 'd'.repeat(32);
    await handWrittenRun(experimentId, wrongExperiment, runMeta('0', wrongExperiment));

    const yamlError = await expectTrackingError(() => store.getRun(badYaml), 'MALFORMED');
    expect(yamlError.message).toContain(join(badYamlDir, 'meta.yaml'));
    const metricError = await expectTrackingError(() => store.getRun(badMetric), 'MALFORMED');
    expect(metricError.message).toContain(join(badMetricDir, 'metrics', 'f1'));
    await expectTrackingError(() => store.getMetricHistory(badMetric, 'f1'), 'MALFORMED');
    await expectTrackingError(() => store.getRun(badStatus), 'MALFORMED');
    await expectTrackingError(() => store.getRun(wrongExperiment), 'MALFORMED');

    const runs = await store.searchRuns(experimentId);
    expect(runs.map((run) => run.info.runId)).toEqual([good.info.runId]);
    expect(warnings).toHaveLength(4);
    expect(warnings.join('\n')).toContain(join(badYamlDir, 'meta.yaml'));
    expect(warnings.join('\n')).toContain(join(badMetricDir, 'metrics', 'f1'));
  });

  it('skips half-created runs and stray temp files, as a crash would leave them', async () => {
    const experimentId = await store.createExperiment('crash');
    const good = await store.createRun(experimentId, { runName: 'good' });
    const experimentDir = join(root, experimentId);
    // A run whose creation died before meta.yaml was written.
    await mkdir(join(experimentDir, 'e'.repeat(32), 'metrics'), { recursive: true });
    await writeFile(join(experimentDir, 'e'.repeat(32), 'metrics', 'f1'), '1 0.5 0\n');
    // A temp file from an interrupted atomic write.
    await writeFile(join(experimentDir, '.tagger-tmp-1-abc'), 'artifact_uri: half');
    await writeFile(join(root, '.tagger-tmp-1-def'), 'half');

    expect((await store.searchRuns(experimentId)).map((run) => run.info.runId)).toEqual([good.info.runId]);
    expect(await store.getRun('e'.repeat(32))).toBeNull();
    expect(warnings).toEqual([]);
    expect((await store.getExperimentByName('crash'))?.experimentId).toBe(experimentId);
  });

  it('falls back to <root>/<exp>/<run>/artifacts when the store was moved', async () => {
    const experimentId = await store.createExperiment('moved');
    const run = await store.createRun(experimentId, { runName: 'r' });
    await store.logArtifact(run.info.runId, 'model/weights.bin', Uint8Array.of(1, 2, 3));
    const movedRoot = join(scratch.path, 'moved-mlruns');
    await cp(root, movedRoot, { recursive: true });
    await rm(root, { recursive: true });

    const moved = new FileTrackingStore(pathToFileURL(movedRoot).href);
    const reread = await moved.getRun(run.info.runId);
    expect(reread?.info.artifactUri).toBe(
      pathToFileURL(join(movedRoot, experimentId, run.info.runId, 'artifacts')).href,
    );
    expect([...(await moved.readArtifact(run.info.runId, 'model/weights.bin'))]).toEqual([1, 2, 3]);
    expect((await moved.listArtifacts(run.info.runId)).map((entry) => entry.path)).toEqual(['model']);
    // New runs in the moved store record a location that exists.
    const fresh = await moved.createRun(experimentId, { runName: 'fresh' });
    expect(fresh.info.artifactUri.startsWith(pathToFileURL(movedRoot).href)).toBe(true);
    await moved.logArtifact(fresh.info.runId, 'a.txt', Uint8Array.of(9));
    expect([...(await moved.readArtifact(fresh.info.runId, 'a.txt'))]).toEqual([9]);
  });

  it('names the artifact URI when an artifact is missing', async () => {
    const experimentId = await store.createExperiment('missing');
    const run = await store.createRun(experimentId, { runName: 'r' });
    const error = await expectTrackingError(
      () => store.readArtifact(run.info.runId, 'model/x.bin'),
      'NOT_FOUND',
    );
    expect(error.message).toContain(`${run.info.artifactUri}/model/x.bin`);
    await store.logArtifact(run.info.runId, 'model/y.bin', Uint8Array.of(1));
    // A directory is not a readable artifact either.
    await expectTrackingError(() => store.readArtifact(run.info.runId, 'model'), 'NOT_FOUND');
  });

  it('finds runs and experiments deleted into .trash, and refuses to log to deleted runs', async () => {
    const experimentId = await store.createExperiment('trashy');
    const run = await store.createRun(experimentId, { runName: 'r' });
    // What MLflow's delete_experiment does: mark deleted and move the folder to .trash.
    const experimentDir = join(root, experimentId);
    const meta = await readFile(join(experimentDir, 'meta.yaml'), 'utf8');
    await writeFile(
      join(experimentDir, 'meta.yaml'),
      meta.replace('lifecycle_stage: active', 'lifecycle_stage: deleted'),
    );
    const runMetaPath = join(experimentDir, run.info.runId, 'meta.yaml');
    const runMetaText = await readFile(runMetaPath, 'utf8');
    await writeFile(runMetaPath, runMetaText.replace('lifecycle_stage: active', 'lifecycle_stage: deleted'));
    await cp(experimentDir, join(root, '.trash', experimentId), { recursive: true });
    await rm(experimentDir, { recursive: true });

    expect((await store.getExperimentByName('trashy'))?.lifecycleStage).toBe('deleted');
    await expectTrackingError(() => store.createExperiment('trashy'), 'ALREADY_EXISTS');
    const deleted = await store.getRun(run.info.runId);
    expect(deleted?.info.lifecycleStage).toBe('deleted');
    expect(await store.searchRuns(experimentId)).toEqual([]);
    await expectTrackingError(() => store.logBatch(run.info.runId, { tags: { a: 'b' } }), 'INVALID_ARGUMENT');
    await expectTrackingError(() => store.createRun(experimentId, { runName: 'x' }), 'INVALID_ARGUMENT');
  });

  it('rejects ids that could escape the store and unknown experiments', async () => {
    await expectTrackingError(() => store.getRun('../0'), 'INVALID_ARGUMENT');
    await expectTrackingError(() => store.searchRuns('../x'), 'INVALID_ARGUMENT');
    await expectTrackingError(() => store.createRun('123', { runName: 'x' }), 'NOT_FOUND');
    expect(await store.searchRuns('123')).toEqual([]);
    await expectTrackingError(() => store.logBatch('f'.repeat(32), { tags: { a: 'b' } }), 'NOT_FOUND');
    await expectTrackingError(() => store.createExperiment(''), 'INVALID_ARGUMENT');
  });
});

describe('openTrackingStore / resolveTrackingUri', () => {
  it('redacts credentials from URIs for messages', () => {
    expect(redactUri('http://admin:s3cr3t@127.0.0.1:5000/prefix?x=1')).toBe(
      'http://127.0.0.1:5000/prefix?x=1',
    );
    expect(redactUri('https://token@host')).toBe('https://host');
    expect(redactUri('http://127.0.0.1:5000')).toBe('http://127.0.0.1:5000');
    expect(redactUri('./mlruns')).toBe('./mlruns');
  });

  it("resolves flag, then MLFLOW_TRACKING_URI, then MLflow's default", () => {
    expect(resolveTrackingUri('http://x:5000', { MLFLOW_TRACKING_URI: '/y' })).toBe('http://x:5000');
    expect(resolveTrackingUri(undefined, { MLFLOW_TRACKING_URI: '/y' })).toBe('/y');
    expect(resolveTrackingUri(undefined, { MLFLOW_TRACKING_URI: '' })).toBe(defaultTrackingUri());
    expect(resolveTrackingUri(undefined, {})).toBe(defaultTrackingUri());
  });

  it("MLflow's default: sqlite:///mlflow.db, unless ./mlruns already holds an experiment", async () => {
    const dir = await mkdtemp(join(tmpdir(), 'tagger-default-'));
    try {
      expect(defaultTrackingUri(dir)).toBe('sqlite:///mlflow.db');
      // Folders that are not experiments (MLflow looks for a numbered folder with meta.yaml).
      await mkdir(join(dir, 'mlruns', '.trash'), { recursive: true });
      await mkdir(join(dir, 'mlruns', '123'), { recursive: true });
      await mkdir(join(dir, 'mlruns', 'models', 'meta.yaml'), { recursive: true });
      expect(defaultTrackingUri(dir)).toBe('sqlite:///mlflow.db');
      await writeFile(join(dir, 'mlruns', '123', 'meta.yaml'), 'name: best\n');
      expect(defaultTrackingUri(dir)).toBe('./mlruns');
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('opens file URIs and paths as file stores, http(s) as REST, refuses other schemes', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'tagger-open-'));
    try {
      const byPath = await openTrackingStore(join(dir, 'a'));
      expect(byPath).toBeInstanceOf(FileTrackingStore);
      expect(byPath.displayUri).toBe(pathToFileURL(join(dir, 'a')).href);
      // Opening creates the store right away.
      expect((await readdir(join(dir, 'a'))).sort()).toEqual(['.trash', '0']);
      const byUri = await openTrackingStore(pathToFileURL(join(dir, 'b')).href);
      expect(byUri).toBeInstanceOf(FileTrackingStore);
      expect((await readdir(join(dir, 'b'))).sort()).toEqual(['.trash', '0']);
      const rest = await openTrackingStore('http://127.0.0.1:1');
      expect(rest).toBeInstanceOf(RestTrackingStore);
      await rest.close();
      await expectTrackingError(() => openTrackingStore('mysql://db/mlflow'), 'UNSUPPORTED');
      await expect(openTrackingStore('mysql://user:s3cr3t@db/mlflow')).rejects.not.toThrow(/s3cr3t/);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe('FileTrackingStore: hand-written fast paths match the general ones', () => {
  /** The outcome of a parse: its result, or the error message it threw. */
  const outcome = <T>(parse: () => T): { ok: T } | { error: string } => {
    try {
      return { ok: parse() };
    } catch (error) {
      return { error: (error as Error).message };
    }
  };

  it('parses meta.yaml like the yaml package, for the flat shape and everything it hands over', () => {
    const mlflowRun = [
      'artifact_uri: file:///tmp/mlruns/1/abc/artifacts',
      'end_time: 1700000000123',
      "entry_point_name: ''",
      "experiment_id: '396423987761200461'",
      'lifecycle_stage: active',
      'run_id: 0047d3ce170442b799dffb7bbf91bc64',
      'run_name: 1e5',
      'source_type: 4',
      'status: 3',
      'tags: []',
      'user_id: null',
      'deleted_time:',
      '',
    ].join('\n');
    const texts = [
      mlflowRun,
      mlflowRun.replace('\n', '\r\n'),
      "run_name: 'it''s ''quoted'''\n",
      "run_name: 'unclosed\n",
      "run_name: 'a'b'\n",
      'run_name: "double quoted"\n',
      'run_name: "with \\t escape"\n',
      'run_name: my  run (2), v=3\n',
      'run_name: a: b\n',
      'run_name: ends with colon:\n',
      'run_name: has # comment\n',
      'run_name: -1\n',
      'run_name: - item\n',
      'run_name: ~\n',
      'run_name: NULL\n',
      'run_name: %x\n',
      'run_name: @x\n',
      'run_name: trailing   \n',
      'run_name: naïve\n',
      'run_name: a\n  continued\n',
      'tags:\n- a\n- b\n',
      'tags: [a, b]\n',
      'tags: {}\n',
      'a: 1\na: 2\n',
      '# comment\na: 1\n',
      '---\na: 1\n',
      'a: 1\n\nb: 2\n',
      'a:\tx\n',
      '',
      'just text\n',
      '- a\n',
      'run_id: [unclosed\n',
    ];
    for (const text of texts) {
      expect(
        outcome(() => parseMeta(text, '/m/meta.yaml')),
        JSON.stringify(text),
      ).toEqual(outcome(() => parseMetaWithYaml(text, '/m/meta.yaml')));
    }
    // What metaString then makes of it: the flat run above keeps its quoting information.
    const meta = parseMeta(mlflowRun, 'f');
    expect(meta.get('experiment_id')).toEqual({ text: '396423987761200461', plain: false });
    expect(meta.get('run_name')).toEqual({ text: '1e5', plain: true });
    expect(meta.get('tags')).toBe('collection');
    expect(meta.get('deleted_time')).toEqual({ text: '', plain: true });
  });

  it('takes the latest metric value like parseMetricLine + latestMetric, errors included', () => {
    const texts = [
      '100 0.3\n50 0.9 2\n60 0.7 2 train abc123\n70 -Infinity 1\n',
      '1 NaN 0\n2 +inf 1\n3 INFINITY 2\n',
      '1 nan 5\n1 0.5 5\n',
      '1 0.5 5\n1 nan 5\n',
      '5 1e-05 -3\n5 2. 3\n6 .5 3',
      ' 1 0.5 0 \n2 0.25 0\r\n',
      '1 0.5 0\n\n',
      '1 0.5 0\nnot a metric line at all\n',
      '1  2\n',
      'a 2\n',
      '1 2 x\n',
      '1 2 3 4\n',
      '+1 2 -0\n',
      '1 0x10 0\n',
      '\n',
      '',
    ];
    const general = (text: string): number | undefined => {
      const lines = text.split('\n');
      if (lines.at(-1) === '') lines.pop();
      if (lines.length === 0) throw new Error('tracking: /r/metrics/k is malformed: no data');
      return latestMetric(lines.map((line) => parseMetricLine('k', line, '/r/metrics/k')))?.value;
    };
    for (const text of texts) {
      const fast = outcome(() => latestMetricValue('k', text, '/r/metrics/k'));
      const slow = outcome(() => general(text));
      if ('error' in slow)
        expect(fast, JSON.stringify(text)).toEqual({ error: expect.stringContaining(slow.error) });
      else expect(fast, JSON.stringify(text)).toEqual(slow);
    }
    expect(latestMetricValue('k', '1 0.5 0\n2 0.25 0\n', 'f')).toBe(0.25);
  });
});
