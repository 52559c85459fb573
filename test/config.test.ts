/**
 * One configuration for `tagger serve`: every setting from a flag, a variable or a config file (in
 * that order of precedence), validated by one table, blamed on its real source when bad, listed in
 * --help and docs/configuration.md, printed with secrets masked by --print-config.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { configurationDoc } from '../scripts/config-table.js';
import {
  printableConfig,
  resolveServeConfig,
  resolveSettings,
  SERVE_SETTINGS,
  StartupError,
} from '../src/config.js';
import { REPO_ROOT, TSX_LOADER } from './support/components.js';

const dir = mkdtempSync(join(tmpdir(), 'tagger-config-'));
const file = (name: string, text: string): string => {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
};

describe('where a setting comes from', () => {
  it('takes a flag over its variable, the variable over the file, the file over the default', () => {
    const config = file('tagger.yaml', 'port: 7001\nexperiment: from-file\nhost: 0.0.0.0\nworkers: 3\n');
    const settings = resolveSettings(
      { port: '7003' },
      { TAGGER_CONFIG: config, TAGGER_EXPERIMENT: 'from-env' },
    );
    expect(settings.get('port')).toMatchObject({ value: 7003, source: '--port' });
    expect(settings.get('experiment')).toMatchObject({ value: 'from-env', source: 'TAGGER_EXPERIMENT' });
    expect(settings.get('host')).toMatchObject({ value: '0.0.0.0', source: `${config}: host` });
    expect(settings.get('reload_interval_ms')).toMatchObject({ value: 60_000, source: 'default' });
    expect(resolveServeConfig({}, { TAGGER_CONFIG: config })).toMatchObject({ port: 7001, workers: 3 });
    // --config wins over TAGGER_CONFIG, as every flag over its variable.
    const other = file('other.json', '{"port": 7002}');
    expect(resolveServeConfig({ config: other }, { TAGGER_CONFIG: config }).port).toBe(7002);
  });

  it('blames a bad value on the flag, variable or file key it came from', () => {
    const bad = file('bad.yaml', 'port: eighty\n');
    const cases: [Parameters<typeof resolveServeConfig>[0], NodeJS.ProcessEnv, string][] = [
      [{}, { TAGGER_PORT: 'abc' }, 'serve: TAGGER_PORT must be a TCP port'],
      [{ port: 'abc' }, {}, 'serve: --port must be a TCP port'],
      [{}, { TAGGER_CONFIG: bad }, `serve: ${bad}: port must be a TCP port`],
      [{}, { TAGGER_SHUTDOWN_DELAY_MS: '-1' }, 'serve: TAGGER_SHUTDOWN_DELAY_MS must be a delay'],
      [{}, { TAGGER_LOG_LEVEL: 'loud' }, 'serve: TAGGER_LOG_LEVEL must be one of fatal, error'],
      [{ workers: '0' }, {}, 'serve: --workers must be the number of worker processes'],
    ];
    for (const [flags, env, message] of cases) {
      expect(() => resolveServeConfig(flags, env)).toThrow(StartupError);
      expect(() => resolveServeConfig(flags, env)).toThrow(message);
    }
  });

  it('refuses a config file it cannot use, saying why', () => {
    const unknown = file('unknown.yaml', 'port: 1\nprot: 2\n');
    expect(() => resolveServeConfig({}, { TAGGER_CONFIG: unknown })).toThrow(
      `${unknown}: unknown setting "prot"`,
    );
    const list = file('list.yaml', '- port\n');
    expect(() => resolveServeConfig({}, { TAGGER_CONFIG: list })).toThrow('must hold a mapping');
    const broken = file('broken.yaml', 'port: [1\n');
    expect(() => resolveServeConfig({}, { TAGGER_CONFIG: broken })).toThrow('is not valid YAML or JSON');
    const nested = file('nested.yaml', 'port:\n  value: 1\n');
    expect(() => resolveServeConfig({}, { TAGGER_CONFIG: nested })).toThrow('port must be a single value');
    expect(() => resolveServeConfig({ config: join(dir, 'missing.yaml') }, {})).toThrow(
      'cannot read the config file',
    );
  });

  it('reads API keys from a file setting, a list in the config file, or a variable', () => {
    const keys = file('keys.txt', 'k-file\n');
    const config = file('keys.yaml', `api_keys: [k-one, k-two]\napi_keys_file: ${keys}\nrate_limit_max: 5\n`);
    const http = resolveServeConfig({}, { TAGGER_CONFIG: config }).http!;
    expect(http.apiKeys).toEqual(['k-one', 'k-two', 'k-file']);
    expect(http.rateLimit).toEqual({ max: 5, windowMs: 60_000 });
    expect(resolveServeConfig({ redisUrl: 'redis://cache:6379' }, {}).http?.redisUrl).toBe(
      'redis://cache:6379',
    );
    expect(() => resolveServeConfig({}, { TAGGER_REDIS_URL: 'http://x' })).toThrow('redis:// or rediss://');
  });
});

describe('--print-config', () => {
  it('prints every setting with its source, secrets masked', () => {
    const text = printableConfig(
      { apiKeys: 'secret-one,secret-two' },
      {
        TAGGER_REDIS_URL: 'redis://user:redis-pass@cache:6379/0',
        MLFLOW_TRACKING_URI: 'https://admin:mlflow-pass@mlflow.example.com',
        TAGGER_PORT: '9000',
      },
    );
    for (const setting of SERVE_SETTINGS) expect(text).toMatch(new RegExp(`^${setting.key} +=`, 'm'));
    expect(text).toMatch(/^port += 9000 {2}# TAGGER_PORT$/m);
    expect(text).toMatch(/^api_keys += \*\*\* \(2 keys\) {2}# --api-keys$/m);
    expect(text).toMatch(/^experiment += best {2}# default$/m);
    for (const secret of ['secret-one', 'redis-pass', 'mlflow-pass', 'admin:'])
      expect(text).not.toContain(secret);
  });

  it('works through the real CLI, and exits non-zero on a bad value', async () => {
    const cli = resolve(REPO_ROOT, 'src', 'cli.ts');
    const run = (env: NodeJS.ProcessEnv) =>
      promisify(execFile)(process.execPath, ['--import', TSX_LOADER, cli, 'serve', '--print-config'], {
        env: { PATH: process.env.PATH ?? '', ...env },
      });
    const { stdout } = await run({ TAGGER_API_KEYS: 'hidden-key', TAGGER_WORKERS: '2' });
    expect(stdout).toMatch(/^workers += 2 {2}# TAGGER_WORKERS$/m);
    expect(stdout).not.toContain('hidden-key');
    await expect(run({ TAGGER_PORT: 'abc' })).rejects.toMatchObject({
      stderr: expect.stringContaining('TAGGER_PORT must be a TCP port'),
    });
    // `tagger serve --help` lists every setting with its variable.
    const help = (
      await promisify(execFile)(process.execPath, ['--import', TSX_LOADER, cli, 'serve', '--help'], {
        env: { PATH: process.env.PATH ?? '', COLUMNS: '200' },
      })
    ).stdout.replace(/\s+/g, ' ');
    for (const setting of SERVE_SETTINGS) {
      expect(help).toContain(`${setting.flag} <value>`);
      expect(help).toContain(`env ${setting.env}`);
    }
    expect(help).toContain('--print-config');
  }, 60_000);
});

describe('the documentation of the settings', () => {
  it('docs/configuration.md is the table generated from the settings (run `npx tsx scripts/config-table.ts`)', () => {
    expect(readFileSync(resolve(REPO_ROOT, 'docs', 'configuration.md'), 'utf8')).toBe(configurationDoc());
  });
});
