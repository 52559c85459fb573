/**
 * `tagger serve`'s configuration: help, blame for bad values, --print-config. Commands run in-process
 * (test/support/cli.ts); real files, a real local store.
 */
import { stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { SERVE_SETTINGS, type Setting } from '../../src/server/config.js';
import { cliFolder, expectCleanFailure } from '../support/cli.js';

const cli = cliFolder();
const tagger = cli.tagger;

/** A valid value of a setting, as typed on a command line, read from its schema. */
function validText(setting: Setting, files: { config: string; keys: string }): string {
  const schema = setting.schema as { type?: string; minimum?: number; enum?: string[]; pattern?: string };
  if (setting.key === 'config') return files.config;
  if (setting.key === 'api_keys_file') return files.keys;
  if (setting.key === 'record_store') return 'memory:';
  if (schema.type === 'integer') return String(schema.minimum! + 1);
  if (schema.type === 'number') return '0.5';
  if (schema.type === 'boolean') return 'true';
  if (schema.enum) return schema.enum[0]!;
  if (schema.pattern?.includes('redis')) return 'redis://127.0.0.1:6399/0';
  if (schema.pattern?.includes('https?')) return 'http://127.0.0.1:6398/events';
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
    const both = await tagger(['serve', '--port', '80.5'], { TAGGER_CONFIG: join(cli.dir, 'absent.yaml') });
    expectCleanFailure(both, /cannot read the config file .*absent\.yaml: ENOENT/);
  });

  it('--print-config shows where each setting came from: flags, variables or the config file', async () => {
    const keys = join(cli.dir, 'api-keys.txt');
    await writeFile(keys, 'file-key-secret\n');
    const config = join(cli.dir, 'tagger.yaml');
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

    // --model-uri chooses the run itself: it contradicts run_id and experiment (src/server/config.ts).
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
    const store = join(cli.dir, 'never-created');
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
