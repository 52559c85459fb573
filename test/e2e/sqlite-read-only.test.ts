/**
 * A SQLite store served from a read-only volume (a Kubernetes readOnly PVC, a container with the store
 * mounted `ro`). SQLite in WAL mode wants to create `<db>-shm` and `<db>-wal` beside the database even to
 * read it; on a read-only folder that fails ("attempt to write a readonly database"). Tests run as root,
 * whom file permissions do not stop, so the folder and its files are made read-only (0555 / 0444) and
 * the commands run as user `nobody`, for whom the kernel refuses every write there — the same refusal a
 * read-only mount gives (EACCES instead of EROFS; SQLite treats both as "cannot create"). Opening SQLite
 * with `mode=ro` as root would not do: root could still create the -shm file, and the bug would hide.
 *
 * Read-only use works: `tagger serve` (a real process) serves and answers, `tagger predict` predicts,
 * and a run that a writer (root, with a writable view of the same folder) logs meanwhile is picked up
 * by the next reload.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { chmod, readdir, stat } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { runCli, spawnCli, trainArgv } from '../support/cli.js';
import { nobodyCanRunHere, REPO_ROOT, TSX_LOADER } from '../support/components.js';
import { freePort } from '../support/free-port.js';
import { useTempDir } from '../support/temp-dir.js';

const NOBODY = { uid: 65534, gid: 65534 };
const asNobody = nobodyCanRunHere();

const scratch = useTempDir('tagger-sqlite-ro-');
let folder: string;
let uri: string;
let firstRun: string;

/** Every folder 0555 and file 0444 under `path` (what a read-only mount looks like to its readers). */
async function makeReadOnly(path: string): Promise<void> {
  const info = await stat(path);
  if (info.isDirectory()) {
    for (const entry of await readdir(path)) await makeReadOnly(join(path, entry));
    await chmod(path, 0o555);
  } else {
    await chmod(path, 0o444);
  }
}

async function train(runName: string): Promise<string> {
  const result = await runCli(trainArgv(uri, ['--run-name', runName, '--json']), { cwd: scratch.path });
  expect(result.code, result.stderr).toBe(0);
  return (JSON.parse(result.stdout) as { run_id: string }).run_id;
}

beforeAll(async () => {
  if (!asNobody) return;
  // Traversable by nobody (mkdtemp makes 0700 folders).
  await chmod(scratch.path, 0o755);
  folder = join(scratch.path, 'store');
  uri = `sqlite:///${join(folder, 'mlflow.db')}`;
  firstRun = await train('first');
  // A clean close checkpointed the WAL and removed -wal/-shm: only the database file is left.
  expect((await readdir(folder)).sort()).toEqual(['mlflow.db', 'mlruns']);
  await makeReadOnly(folder);
}, 120_000);

/** `tagger serve` as nobody on a free port; resolves once it answers, or rejects with its output. */
async function serveAsNobody(
  env: Record<string, string> = {},
): Promise<{ child: ChildProcess; url: string; output: () => string }> {
  const port = await freePort();
  const child = spawn(
    process.execPath,
    [
      '--import',
      TSX_LOADER,
      resolve(REPO_ROOT, 'src', 'cli', 'main.ts'),
      'serve',
      '--tracking-uri',
      uri,
      '--host',
      '127.0.0.1',
      '--port',
      String(port),
      '--workers',
      '1',
    ],
    {
      cwd: scratch.path,
      ...NOBODY,
      env: {
        PATH: process.env.PATH ?? '',
        MLFLOW_TRACKING_URI: '',
        TAGGER_RELOAD_INTERVAL_MS: '0',
        TAGGER_SHUTDOWN_DELAY_MS: '0',
        TAGGER_RECORD_FLUSH_MS: '100',
        ...env,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let output = '';
  child.stdout!.on('data', (chunk: Buffer) => {
    output += chunk.toString();
  });
  child.stderr!.on('data', (chunk: Buffer) => {
    output += chunk.toString();
  });
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`tagger serve exited ${child.exitCode}: ${output}`);
    const ok = await fetch(`${url}/health/ready`).then(
      (response) => response.status === 200,
      () => false,
    );
    if (ok) return { child, url, output: () => output };
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`tagger serve did not answer within 60 s: ${output}`);
    }
    await new Promise((done) => setTimeout(done, 100));
  }
}

describe.skipIf(!asNobody)('a SQLite store on a read-only volume [as nobody]', () => {
  it('tagger predict predicts with the best run, and writes nothing there', async () => {
    const result = await spawnCli(['predict', 'Object detection with YOLO', '--tracking-uri', uri], {
      cwd: scratch.path,
      ...NOBODY,
    });
    expect(result.code, result.stderr).toBe(0);
    expect(JSON.parse(result.stdout)).toMatchObject({ run_id: firstRun });
    expect((await readdir(folder)).sort()).toEqual(['mlflow.db', 'mlruns']);
  });

  it('tagger serve serves it, and a run a writer logs meanwhile is picked up at the next reload', async () => {
    // Prediction records go elsewhere, as docs/monitoring.md says to do for a read-only store.
    const server = await serveAsNobody({ TAGGER_RECORD_STORE: 'memory:' });
    try {
      const predicted = await fetch(`${server.url}/predict`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ texts: [{ text: 'Transfer learning with transformers' }] }),
      });
      expect(predicted.status, server.output()).toBe(200);
      expect(((await predicted.json()) as { data: { run_id: string } }).data.run_id).toBe(firstRun);

      // A writer with a writable view of the folder (root here) logs another run.
      const second = await train('second');
      const runIds = async (): Promise<string[]> => {
        const response = await fetch(`${server.url}/runs?top=10`);
        const body = (await response.json()) as { data: { runs: { run_id: string }[] } };
        return body.data.runs.map((run) => run.run_id);
      };
      server.child.kill('SIGHUP');
      const deadline = Date.now() + 30_000;
      while (!(await runIds()).includes(second)) {
        if (Date.now() > deadline)
          throw new Error(`the new run was not listed after SIGHUP: ${server.output()}`);
        await new Promise((done) => setTimeout(done, 200));
      }
      expect(await runIds()).toEqual(expect.arrayContaining([firstRun, second]));
      expect(server.output()).not.toMatch(/readonly database|cannot open/);
    } finally {
      server.child.kill('SIGKILL');
    }
  }, 120_000);

  it('records nowhere by default then: says so once, and serves every prediction', async () => {
    const server = await serveAsNobody();
    try {
      const warning = /prediction record store cannot be opened/g;
      for (let round = 0; round < 3; round++) {
        const predicted = await fetch(`${server.url}/predict`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ texts: [{ text: 'Transfer learning with transformers' }] }),
        });
        expect(predicted.status, server.output()).toBe(200);
        // A flush (every 100 ms here) tries the store and fails.
        await new Promise((done) => setTimeout(done, 400));
      }
      const deadline = Date.now() + 30_000;
      while (!server.output().match(warning)) {
        if (Date.now() > deadline) throw new Error(`no warning about the record store: ${server.output()}`);
        await new Promise((done) => setTimeout(done, 200));
      }
      expect(server.output().match(warning)).toHaveLength(1);
      expect((await readdir(folder)).sort()).toEqual(['mlflow.db', 'mlruns']);
    } finally {
      server.child.kill('SIGKILL');
    }
  }, 120_000);
});
