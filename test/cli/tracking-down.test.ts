/**
 * One-shot commands against a tracking server that is down (issue 27, item 15): `tagger predict` waited
 * 31 s in silence (MLflow's five retries with backoff) before failing. Each retry is now announced with
 * what failed, and the one-shot commands retry twice unless MLFLOW_HTTP_REQUEST_MAX_RETRIES says
 * otherwise. In-process commands; the "server" is a port nothing listens on.
 */
import { describe, expect, it } from 'vitest';
import { fewerRetriesFor } from '../../src/cli/tracking-retries.js';
import { cliFolder, expectCleanFailure, trainArgv } from '../support/cli.js';
import { freePort } from '../support/free-port.js';

const cli = cliFolder({ prefix: 'tagger-tracking-down-' });

describe('a tracking server that is down', () => {
  it('tagger predict says what it waits for at each retry and gives up within seconds', async () => {
    const uri = `http://127.0.0.1:${await freePort()}`;
    const started = Date.now();
    const result = await cli.tagger(['predict', '--tracking-uri', uri, 'a text'], {
      MLFLOW_HTTP_REQUEST_MAX_RETRIES: undefined,
    });
    const seconds = (Date.now() - started) / 1000;
    expectCleanFailure(result, /gave up after 3 attempts/);
    const retries = result.stderr.split('\n').filter((line) => line.includes('retrying in'));
    expect(retries).toHaveLength(2);
    expect(retries[0]).toMatch(
      new RegExp(
        `^tagger: tracking: cannot reach ${uri.replaceAll('.', '\\.')} for .*\\(ECONNREFUSED\\); .*; retrying in \\d+\\.\\d s \\(retry 1 of 2; MLFLOW_HTTP_REQUEST_MAX_RETRIES sets how many\\)$`,
      ),
    );
    expect(retries[1]).toMatch(/\(retry 2 of 2;/);
    // Two retries: 0.5–1 s, then 1–2 s; not the 31 s of five.
    expect(seconds).toBeLessThan(8);
  }, 60_000);

  it('MLFLOW_HTTP_REQUEST_MAX_RETRIES still decides: 0 fails at once, for alias too', async () => {
    const uri = `http://127.0.0.1:${await freePort()}`;
    const result = await cli.tagger(['alias', 'list', 'tagger', '--tracking-uri', uri], {
      MLFLOW_HTTP_REQUEST_MAX_RETRIES: '0',
    });
    expectCleanFailure(result, /cannot reach/);
    expect(result.stderr).not.toContain('retrying in');
  }, 60_000);

  it("tagger train says what it waits for too (its retries stay MLflow's: the variable, else 5)", async () => {
    const uri = `http://127.0.0.1:${await freePort()}`;
    const result = await cli.tagger(trainArgv(uri), {
      MLFLOW_HTTP_REQUEST_MAX_RETRIES: '1',
    });
    expectCleanFailure(result, /gave up after 2 attempts/);
    expect(result.stderr).toMatch(/retrying in \d+\.\d s \(retry 1 of 1;/);
  }, 60_000);

  it('the one-shot default applies to predict, evaluate and alias while they run, never over a setting', () => {
    const env: NodeJS.ProcessEnv = {};
    const undo = fewerRetriesFor('predict', env);
    expect(env.MLFLOW_HTTP_REQUEST_MAX_RETRIES).toBe('2');
    undo();
    expect(env).toEqual({});
    fewerRetriesFor('train', env)();
    expect(env).toEqual({});
    const set: NodeJS.ProcessEnv = { MLFLOW_HTTP_REQUEST_MAX_RETRIES: '7' };
    fewerRetriesFor('evaluate', set)();
    expect(set).toEqual({ MLFLOW_HTTP_REQUEST_MAX_RETRIES: '7' });
  });
});
