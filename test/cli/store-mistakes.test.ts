/**
 * A newcomer's store mistakes. The read-only commands (`predict`, `evaluate`, `serve`) given a store that
 * is not there — MLflow's default `sqlite:///mlflow.db` in the wrong folder, a mistyped folder or
 * database path — create nothing (no empty 950 KB database, no folder) and say which absolute path they
 * looked at and what to do. A SQLite file given without its scheme (`--tracking-uri mlflow.db`) is named
 * as one, with the URI meant, instead of being taken for an mlruns folder to create folders in.
 * Commands run in-process (test/support/cli.ts) in a folder of their own.
 */
import { mkdir, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { cliFolder, expectCleanFailure, FAST_ARGS, trainArgv } from '../support/cli.js';
import { SAMPLE_DATA } from '../support/components.js';

const cli = cliFolder({ prefix: 'tagger-store-mistakes-' });
const tagger = cli.tagger;

/** An empty folder to run a command in; what it holds afterwards is what the command wrote. */
async function emptyFolder(name: string): Promise<string> {
  const folder = join(cli.dir, name);
  await mkdir(folder);
  return folder;
}

const READ_ONLY_COMMANDS: [string, string[]][] = [
  ['predict', ['predict', 'Object detection with YOLO']],
  ['evaluate', ['evaluate', '--data', SAMPLE_DATA]],
  ['serve', ['serve', '--workers', '1', '--port', '0']],
];

describe('read-only commands on a store that is not there', () => {
  it.each(READ_ONLY_COMMANDS)(
    '%s with the default store in a folder without one: creates nothing, names the absolute path',
    async (_name, args) => {
      const folder = await emptyFolder(`default-${_name}`);
      const result = await tagger(args, { MLFLOW_TRACKING_URI: '' }, { cwd: folder });
      expectCleanFailure(
        result,
        new RegExp(
          `tagger: .*there is no SQLite database at ${join(folder, 'mlflow.db')} \\(sqlite:///mlflow\\.db\\); nothing was created`,
        ),
      );
      expect(result.stderr).toMatch(/--tracking-uri|MLFLOW_TRACKING_URI/);
      expect(result.stderr).toMatch(/tagger train --data/);
      expect(await readdir(folder)).toEqual([]);
    },
  );

  it.each(READ_ONLY_COMMANDS)(
    '%s with a mistyped folder or database path: creates nothing, names the absolute path',
    async (_name, args) => {
      const folder = await emptyFolder(`typo-${_name}`);
      const folderStore = await tagger([...args, '--tracking-uri', 'mlrun'], {}, { cwd: folder });
      expectCleanFailure(
        folderStore,
        new RegExp(`tagger: .*there is no mlruns folder at ${join(folder, 'mlrun')}; nothing was created`),
      );
      const database = await tagger(
        [...args, '--tracking-uri', 'sqlite:///store/mlflow.db'],
        {},
        { cwd: folder },
      );
      expectCleanFailure(
        database,
        new RegExp(`tagger: .*there is no SQLite database at ${join(folder, 'store', 'mlflow.db')}`),
      );
      expect(await readdir(folder)).toEqual([]);
    },
  );
});

describe('a SQLite file given without its scheme', () => {
  let folder: string;
  beforeAll(async () => {
    folder = await emptyFolder('scheme');
    const trained = await tagger(trainArgv('sqlite:///mlflow.db', ['--quiet']), {}, { cwd: folder });
    expect(trained.code, trained.stderr).toBe(0);
  });

  it.each([
    ['predict', ['predict', 'Object detection with YOLO']],
    ['train', ['train', '--data', SAMPLE_DATA, '--args', FAST_ARGS]],
  ])(
    '%s --tracking-uri mlflow.db: "this is a SQLite file: did you mean sqlite:///mlflow.db?"',
    async (_name, args) => {
      const before = (await readdir(folder)).sort();
      const result = await tagger([...args, '--tracking-uri', 'mlflow.db'], {}, { cwd: folder });
      expectCleanFailure(
        result,
        new RegExp(
          `tagger: tracking: mlflow\\.db \\(${join(folder, 'mlflow.db')}\\) is a SQLite file, not an mlruns folder: did you mean \`sqlite:///mlflow\\.db\`\\?`,
        ),
      );
      expect(result.stderr).not.toMatch(/ENOTDIR|mkdir/);
      expect((await readdir(folder)).sort()).toEqual(before);
    },
  );

  it('an absolute path gets the absolute URI', async () => {
    const path = join(folder, 'mlflow.db');
    const result = await tagger(['predict', 'a text', '--tracking-uri', path]);
    expectCleanFailure(result, new RegExp(`did you mean \`sqlite:///${path}\`\\?`));
  });

  it('a new path named like a database is not made into an mlruns folder', async () => {
    const result = await tagger(trainArgv('runs.db'), {}, { cwd: folder });
    expectCleanFailure(result, /tagger: tracking: runs\.db .* did you mean `sqlite:\/\/\/runs\.db`\?/);
    expect(await readdir(folder)).not.toContain('runs.db');
  });
});
