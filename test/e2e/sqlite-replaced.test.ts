/**
 * The SQLite file under a running server (a real process, test/support/serve-process.ts) is deleted or
 * replaced, as an operator restoring a backup does (`mv backup.db mlflow.db`). An open SQLite connection
 * keeps reading the inode it opened, so without a check the server goes on reading the old file forever:
 * reloads say "unchanged" and /health/ready reports nothing. Here:
 * - a backup moved over the database is read at the next SIGHUP (its better run is swapped in);
 * - a database deleted makes the next reload fail, the model loaded before keeps serving, and
 *   /health/ready lists the problem; putting a database back clears it at the next reload.
 */
import { copyFile, rename, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openTrackingStore } from '../../src/tracking/index.js';
import { trainModel } from '../support/fixtures.js';
import {
  killServers,
  type LogLine,
  logServedRun,
  type ServerProcess,
  servedRunId,
  spawnServer,
} from '../support/serve-process.js';
import { useTempDir } from '../support/temp-dir.js';

const scratch = useTempDir('tagger-sqlite-replaced-');
let database: string;
let backup: string;
let first: string;
let second: string;
let server: ServerProcess;

/** Logs a run into the SQLite file `file` and closes it (a clean close leaves no -wal behind). */
async function logInto(file: string, name: string, f1: number): Promise<string> {
  const store = await openTrackingStore(`sqlite:///${file}`);
  try {
    return await logServedRun(store, 'best', { name, f1, model: trainModel({}) });
  } finally {
    await store.close();
  }
}

beforeAll(async () => {
  database = join(scratch.path, 'mlflow.db');
  backup = join(scratch.path, 'backup.db');
  first = await logInto(database, 'first', 0.8);
  // The backup: the same store with one better run more (its artifacts beside the live ones).
  await copyFile(database, backup);
  second = await logInto(backup, 'second', 0.9);
  server = await spawnServer({ MLFLOW_TRACKING_URI: `sqlite:///${database}`, TAGGER_LOG_LEVEL: 'info' });
}, 120_000);

afterAll(async () => {
  killServers();
});

async function sighup(): Promise<LogLine> {
  const from = server.lines.length;
  server.child.kill('SIGHUP');
  return server.waitForLog(
    (line) => line.msg === 'SIGHUP reload finished' && server.lines.indexOf(line) >= from,
    'SIGHUP reload finished',
  );
}

async function ready(): Promise<{ status: number; problems: string[] }> {
  const response = await fetch(`${server.url}/health/ready`);
  const body = (await response.json()) as { data?: { problems?: string[] } };
  return { status: response.status, problems: body.data?.problems ?? [] };
}

const servedRun = (): Promise<string> => servedRunId(server.url);

describe.sequential('the SQLite file under a running server', () => {
  it('a backup moved over the database is read at the next SIGHUP', async () => {
    expect(await servedRun()).toBe(first);
    await rename(backup, database);
    expect(await sighup()).toMatchObject({ outcome: 'swapped', runId: second });
    expect(await servedRun()).toBe(second);
  });

  it('a deleted database fails the next reload, keeps serving and shows in /health/ready', async () => {
    await copyFile(database, backup);
    await rm(database);
    expect(await sighup()).toMatchObject({ outcome: 'failed', runId: second });
    const failed = server.lines.findLast((line) => line.msg.startsWith('reload failed'));
    expect(String(failed?.reason)).toContain(`${database} is gone`);
    expect(await servedRun()).toBe(second);
    const { status, problems } = await ready();
    expect(status).toBe(200);
    expect(problems[0]).toMatch(
      /could not read the tracking store \(the tracking store cannot be reached\); the runs loaded before keep serving/,
    );
    expect(problems.join('\n')).not.toContain(scratch.path);
    // Nothing was created in its place.
    await expect(rm(database)).rejects.toThrow(/ENOENT/);
  });

  it('putting the database back clears the problem at the next reload', async () => {
    await rename(backup, database);
    expect((await sighup()).outcome).not.toBe('failed');
    expect((await ready()).problems).toEqual([]);
    expect(await servedRun()).toBe(second);
  });
});
