/**
 * `tagger train --register` and `tagger alias`: Model Registry versions and aliases. Commands run in-
 * process (test/support/cli.ts); real files, a real local store.
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { openTrackingStore } from '../../src/tracking/index.js';
import { cliFolder, expectCleanFailure, trainArgv } from '../support/cli.js';
import { SAMPLE_DATA } from '../support/components.js';

const cli = cliFolder();
const tagger = cli.tagger;

describe('tagger train --register and tagger alias', () => {
  it('registers each trained run as the next version, and moves, lists and deletes aliases', async () => {
    const registry = join(cli.dir, 'registry.db');
    const uri = `sqlite:///${registry}`;
    const train = () => tagger(trainArgv(uri, ['--register', 'tagger', '--quiet']));
    const first = await train();
    expect(first.code, first.stderr).toBe(0);
    expect(first.stdout).toMatch(
      /Registered as version 1 of model 'tagger' \(models:\/tagger\/1\); serve it by alias: tagger alias set tagger champion 1, then tagger serve --model-uri models:\/tagger@champion/,
    );
    const second = await tagger(trainArgv(uri, ['--register', 'tagger', '--json']));
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
      cli.store,
      '--register',
      'a/b',
    ]);
    expectCleanFailure(result, /invalid registered model name 'a\/b': names cannot contain/);
    expect(result.stderr).not.toMatch(/training:/);
  });
});
