/**
 * A new user's first hour (issue 34, item 8), as they met it: an older Node running `tagger`, npm's
 * warnings on every command, no `tagger --version`, no way to train on other column names, a mistyped
 * `--tracking-uri` silently creating a new database, and a `Logged run` line that did not say where.
 * (The drift reason of /monitoring is in test/http/monitoring.test.ts.)
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { copyFile, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parse } from 'csv-parse/sync';
import { describe, expect, it } from 'vitest';
import { openTrackingStore } from '../../src/tracking/index.js';
import { cliFolder, expectCleanFailure, FAST_ARGS, trainArgv } from '../support/cli.js';
import { REPO_ROOT, SAMPLE_DATA } from '../support/components.js';

const cli = cliFolder({ prefix: 'tagger-first-hour-', trained: true });

/** A Node.js older than 24 on this machine (Debian's /usr/bin/node, say), or null. */
function olderNode(): { path: string; version: string } | null {
  const candidates = (process.env.PATH ?? '').split(':').map((dir) => join(dir, 'node'));
  for (const path of ['/usr/bin/node', '/usr/local/bin/node', ...candidates]) {
    if (!existsSync(path)) continue;
    try {
      const version = execFileSync(path, ['--version'], { encoding: 'utf8' }).trim();
      if (Number(/^v(\d+)/.exec(version)?.[1]) < 24) return { path, version };
    } catch {
      // Not runnable: look further.
    }
  }
  return null;
}

const older = olderNode();
if (older === null) console.log('skipped: no Node.js older than 24 on this machine to start tagger with');

describe('tagger on an older Node', () => {
  it.skipIf(older === null)(
    'says that Node 24 is needed and how, instead of "No such built-in module"',
    () => {
      const run = spawnSync(
        older!.path,
        [join(REPO_ROOT, 'bin', 'tagger.js'), 'predict', 'YOLO on drone images'],
        {
          encoding: 'utf8',
          cwd: cli.dir,
        },
      );
      expect(run.status, run.stderr).toBe(1);
      expect(run.stderr).not.toMatch(/node:sqlite|No such built-in module|^\s+at /m);
      expect(run.stderr).toMatch(
        new RegExp(
          `^tagger: needs Node\\.js 24\\.11 or newer; this is ${older!.version.replaceAll('.', '\\.')} `,
          'm',
        ),
      );
      expect(run.stderr).toMatch(/npx tagger|node_modules\/\.bin/);
    },
  );
});

describe('npm commands in the repository', () => {
  it('print no warning: .npmrc holds only settings npm knows, and onnxruntime-node stays without CUDA downloads', async () => {
    const run = spawnSync('npm', ['pkg', 'get', 'name'], { cwd: REPO_ROOT, encoding: 'utf8' });
    expect(run.status, run.stderr).toBe(0);
    // Before: `npm warn Unknown project config "onnxruntime-node-install"` on every command.
    expect(run.stderr).not.toMatch(/npm warn/i);
    const pkg = JSON.parse(await readFile(join(REPO_ROOT, 'package.json'), 'utf8')) as {
      scripts: Record<string, string>;
      allowScripts: Record<string, boolean>;
    };
    // Its install script downloads CUDA libraries from outside the npm registry: denied (npm's
    // allowScripts), and skipped by the variable it reads for an npm that does not know allowScripts.
    expect(pkg.allowScripts['onnxruntime-node']).toBe(false);
    expect(pkg.scripts.setup).toMatch(/^ONNXRUNTIME_NODE_INSTALL=skip /);
  });
});

describe('tagger --version', () => {
  it("prints tagger's version and the Node.js it runs on", async () => {
    const { version } = JSON.parse(await readFile(join(REPO_ROOT, 'package.json'), 'utf8')) as {
      version: string;
    };
    for (const flag of ['--version', '-V']) {
      const result = await cli.tagger([flag]);
      expect(result.code).toBe(0);
      expect(result.stdout).toBe(`tagger ${version} (Node.js ${process.version})\n`);
    }
  });
});

describe('train on other column names', () => {
  it('maps the text and the tag columns, records them, and names a missing one', async () => {
    const rows = parse(await readFile(SAMPLE_DATA, 'utf8'), { columns: true }) as Record<string, string>[];
    const file = join(cli.dir, 'renamed.csv');
    await writeFile(
      file,
      `id,Body,label\n${rows.map((r, i) => `${i},"${`${r.title} ${r.description}`.replaceAll('"', '""')}",${r.tag}`).join('\n')}\n`,
    );
    const store = join(cli.dir, 'mlruns-columns');
    const trained = await cli.tagger([
      'train',
      ...['--data', file, '--text-column', 'Body', '--tag-column', 'label'],
      ...['--args', FAST_ARGS, '--tracking-uri', store, '--json', '--quiet', '--no-label-issues'],
    ]);
    expect(trained.code, trained.stderr).toBe(0);
    const { run_id: runId, metrics } = JSON.parse(trained.stdout) as {
      run_id: string;
      metrics: { f1: number };
    };
    expect(metrics.f1).toBeGreaterThan(0.5);
    const tracking = await openTrackingStore(store);
    try {
      const run = (await tracking.getRun(runId))!;
      expect(run.params).toMatchObject({ text_column: 'Body', tag_column: 'label' });
      expect(run.inputs?.[0]?.dataset.schema).toBe(
        '{"mlflow_colspec": [{"type": "string", "name": "Body", "required": true}, {"type": "string", "name": "label", "required": true}]}',
      );
    } finally {
      await tracking.close();
    }
    // evaluate reads the same file the same way.
    const evaluated = await cli.tagger([
      'evaluate',
      ...[
        '--data',
        file,
        '--text-column',
        'Body',
        '--tag-column',
        'label',
        '--tracking-uri',
        store,
        '--json',
      ],
    ]);
    expect(evaluated.code, evaluated.stderr).toBe(0);
    expectCleanFailure(
      await cli.tagger([
        'train',
        '--data',
        file,
        '--text-column',
        'text',
        '--tracking-uri',
        store,
        '--quiet',
      ]),
      /lacks column\(s\) text, tag; found id, body, label\. Name the columns that hold the text and the tag with --text-column and --tag-column/,
    );
    expectCleanFailure(
      await cli.tagger([
        'train',
        '--data',
        file,
        '--tag-column',
        'label',
        '--tags-column',
        'label',
        '--tracking-uri',
        store,
      ]),
      /give --tag-column \(one tag per row\) or --tags-column \(several\), not both/,
    );
  }, 120_000);
});

describe('a mistyped --tracking-uri on train', () => {
  /** `tagger train` on the sample data (`data`, relative to `cwd`) into `uri`, quickly. */
  const trainInto = (uri: string, data = SAMPLE_DATA, cwd?: string) =>
    cli.tagger(
      trainArgv(uri, ['--quiet', '--no-label-issues'], { data }),
      {},
      cwd === undefined ? {} : { cwd },
    );

  it('says before training that it creates a new store, with the stores beside it; Logged run names the store', async () => {
    // A database where the user keeps their runs, and a typo of its name (the folder also holds the file
    // stores of this file's other tests).
    const existing = join(cli.dir, 'mlflow.db');
    expect((await trainInto(`sqlite:///${existing}`)).code).toBe(0);
    const typo = join(cli.dir, 'mlfow.db');
    const result = await trainInto(`sqlite:///${typo}`);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stderr).toContain(
      `tagger: created a new tracking store, sqlite:///${typo}: nothing was there. If you meant an existing store, stop and check --tracking-uri (or MLFLOW_TRACKING_URI); beside it: `,
    );
    // The stores beside it: the database meant, and the file stores of this file's other tests.
    expect(/; beside it: (.*)\.$/m.exec(result.stderr)?.[1]?.split(', ')).toContain('mlflow.db');
    expect(result.stdout).toMatch(
      new RegExp(
        `^Logged run [0-9a-f]{32} \\(train-[\\d-]+\\) to experiment 'best' in sqlite:///${typo.replaceAll('.', '\\.')}\\.$`,
        'm',
      ),
    );
    // The second time the store is there: nothing to say.
    expect((await trainInto(`sqlite:///${typo}`)).stderr).not.toContain('created a new tracking store');
    // A relative URI is named with its absolute path.
    await copyFile(SAMPLE_DATA, join(cli.dir, 'data.csv'));
    const relative = await trainInto('sqlite:///mlflow.db', 'data.csv', cli.dir);
    expect(relative.stdout).toContain(`in sqlite:///mlflow.db (${existing}).`);
    expect(
      readdirSync(cli.dir)
        .filter((name) => name.endsWith('.db'))
        .sort(),
    ).toEqual(['mlflow.db', 'mlfow.db']);
  }, 120_000);
});
