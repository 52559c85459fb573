/**
 * One configuration for `tagger serve`: every setting from a flag, a variable or a config file (in
 * that order of precedence), validated by one schema, blamed on its real source when bad, listed in
 * docs/configuration.md (and its JSON Schema), printed with secrets masked by --print-config.
 * The real CLI (`--help`, `--print-config`, exit codes) is tested in test/cli/serve.test.ts.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { Ajv } from 'ajv';
import { describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { configurationDoc, configurationSchema } from '../../scripts/config-table.js';
import {
  CONFIG_FILE_SCHEMA,
  flagAttribute,
  printableConfig,
  resolveServeConfig,
  resolveSettings,
  SERVE_SETTINGS,
  type ServeFlags,
  type SettingKey,
  StartupError,
} from '../../src/server/config.js';
import { REPO_ROOT } from '../support/components.js';
import { useTempDir } from '../support/temp-dir.js';

const scratch = useTempDir('tagger-config-');
const file = (name: string, text: string): string => {
  const path = join(scratch.path, name);
  writeFileSync(path, text);
  return path;
};

/** A valid value of every setting but `config`, as text, and what it resolves to. */
const SAMPLES: Record<Exclude<SettingKey, 'config'>, [text: string, value: unknown]> = {
  tracking_uri: ['http://mlflow.internal:5000', 'http://mlflow.internal:5000'],
  experiment: ['nightly', 'nightly'],
  run_id: ['0123456789abcdef0123456789abcdef', '0123456789abcdef0123456789abcdef'],
  model: ['/models/m1', '/models/m1'],
  model_uri: ['models:/tagger@champion', 'models:/tagger@champion'],
  host: ['0.0.0.0', '0.0.0.0'],
  port: ['8123', 8123],
  workers: ['3', 3],
  log_level: ['DEBUG', 'debug'],
  reload_interval_ms: ['0', 0],
  model_cache_size: ['7', 7],
  encoder_threads: ['3', 3],
  encoder_max_batch: ['16', 16],
  encoder_max_wait_ms: ['0', 0],
  encoder_max_queue: ['256', 256],
  encoder_max_queue_tokens: ['4096', 4096],
  encoder_max_request_tokens: ['20000', 20_000],
  encoder_nice: ['5', 5],
  cascade_overload: ['SHED', 'shed'],
  allow_degraded: ['yes', true],
  min_test_size: ['100', 100],
  min_tags: ['3', 3],
  allow_incomparable: ['on', true],
  allow_test_leak: ['true', true],
  min_behavioural_pass_rate: ['0.85', 0.85],
  store_wait_ms: ['1500', 1500],
  shutdown_delay_ms: ['0', 0],
  shutdown_grace_ms: ['2500', 2500],
  max_body_bytes: ['4096', 4096],
  max_texts: ['50', 50],
  max_text_length: ['500', 500],
  max_json_depth: ['8', 8],
  request_timeout_ms: ['1234', 1234],
  api_keys: ['k-one,k-two', 'k-one,k-two'],
  api_keys_file: ['/run/secrets/keys', '/run/secrets/keys'],
  protect_docs: ['yes', true],
  rate_limit_max: ['600', 600],
  rate_limit_window_ms: ['1000', 1000],
  redis_url: ['redis://cache:6379/1', 'redis://cache:6379/1'],
  max_in_flight: ['32', 32],
  max_event_loop_delay_ms: ['250', 250],
  retry_after_s: ['9', 9],
  record_store: ['postgresql://records.internal/tagger', 'postgresql://records.internal/tagger'],
  record_sample_rate: ['0.25', 0.25],
  record_text: ['HASH', 'hash'],
  record_retention_days: ['7', 7],
  record_retention_rows: ['100000', 100_000],
  record_buffer: ['5000', 5000],
  record_flush_ms: ['250', 250],
  record_sink_url: ['http://sink.internal/events', 'http://sink.internal/events'],
  monitoring_window: ['1000', 1000],
  monitoring_window_s: ['600', 600],
  feedback_window_s: ['86400', 86400],
  monitoring_min_predictions: ['100', 100],
  drift_threshold: ['0.25', 0.25],
  monitoring_interval_ms: ['5000', 5000],
};
const SAMPLE_KEYS = Object.keys(SAMPLES) as (keyof typeof SAMPLES)[];

const allFlags = (): ServeFlags =>
  Object.fromEntries(
    SAMPLE_KEYS.map((key) => [
      flagAttribute(SERVE_SETTINGS.find((s) => s.key === key)!.flag),
      SAMPLES[key][0],
    ]),
  );
const allVariables = (): NodeJS.ProcessEnv =>
  Object.fromEntries(
    SAMPLE_KEYS.map((key) => [SERVE_SETTINGS.find((s) => s.key === key)!.env, SAMPLES[key][0]]),
  );
const allInFile = (): string =>
  SAMPLE_KEYS.map((key) => `${key}: ${JSON.stringify(SAMPLES[key][0])}`).join('\n');

describe('the settings table', () => {
  it('has one row per setting, each with its own flag, variable and key', () => {
    expect(SERVE_SETTINGS.map((s) => s.key).sort()).toEqual(['config', ...SAMPLE_KEYS].sort());
    for (const field of ['key', 'flag', 'env'] as const) {
      expect(new Set(SERVE_SETTINGS.map((s) => s[field])).size).toBe(SERVE_SETTINGS.length);
    }
    for (const setting of SERVE_SETTINGS) {
      expect(setting.help.length, setting.key).toBeGreaterThan(10);
      expect(setting.flag).toMatch(/^--[a-z]+(-[a-z]+)*$/);
    }
  });
});

describe('where a setting comes from', () => {
  it('reads every setting from a flag, from its variable and from the config file alike', () => {
    const fromFlags = resolveSettings(allFlags(), {});
    const fromEnv = resolveSettings({}, allVariables());
    const path = file('every.yaml', allInFile());
    const fromFile = resolveSettings({}, { TAGGER_CONFIG: path });
    for (const key of SAMPLE_KEYS) {
      const setting = SERVE_SETTINGS.find((s) => s.key === key)!;
      const value = SAMPLES[key][1];
      expect(fromFlags.get(key)).toMatchObject({ value, origin: 'flag', source: setting.flag });
      expect(fromEnv.get(key)).toMatchObject({ value, origin: 'env', source: setting.env });
      expect(fromFile.get(key)).toMatchObject({ value, origin: 'file', source: `${path}: ${key}` });
    }
    expect(fromFile.get('config')).toMatchObject({ value: path, origin: 'env', source: 'TAGGER_CONFIG' });
  });

  it('takes a flag over its variable, the variable over the file, the file over the default', () => {
    const config = file('tagger.yaml', 'port: 7001\nexperiment: from-file\nhost: 0.0.0.0\nworkers: 3\n');
    const settings = resolveSettings(
      { port: '7003' },
      { TAGGER_CONFIG: config, TAGGER_PORT: '7002', TAGGER_EXPERIMENT: 'from-env' },
    );
    expect(settings.get('port')).toMatchObject({ value: 7003, source: '--port' });
    expect(settings.get('experiment')).toMatchObject({ value: 'from-env', source: 'TAGGER_EXPERIMENT' });
    expect(settings.get('host')).toMatchObject({ value: '0.0.0.0', source: `${config}: host` });
    expect(settings.get('reload_interval_ms')).toMatchObject({ value: 60_000, source: 'default' });
    expect(resolveServeConfig({}, { TAGGER_CONFIG: config })).toMatchObject({ port: 7001, workers: 3 });
    // --config wins over TAGGER_CONFIG, as every flag over its variable; JSON is read too.
    const other = file('other.json', '{"port": 7004}');
    expect(resolveServeConfig({ config: other }, { TAGGER_CONFIG: config }).port).toBe(7004);
  });

  it('gives encoder runs the encoder settings, threads shared out between the workers by default', () => {
    const config = resolveServeConfig(
      { workers: '1', encoderMaxWait: '3' },
      { TAGGER_ENCODER_MAX_QUEUE: '64' },
    );
    expect(config.encoders).toMatchObject({ maxBatch: 32, maxWaitMs: 3, maxQueue: 64, nice: 0 });
    expect(config.encoders.threads).toBeGreaterThanOrEqual(1);
    const many = resolveServeConfig({ workers: '256' }, {});
    expect(many.encoders.threads).toBe(1);
    expect(resolveServeConfig({ encoderThreads: '5' }, {}).encoders.threads).toBe(5);
    expect(printableConfig({ workers: '256' }, {})).toMatch(
      /encoder_threads +=.*\(unset: 1, the CPUs allowed shared by 256 workers\) {2}# default/,
    );
  });

  it('gives cascade runs their overload choice and --allow-degraded, a bad value named with the choices', () => {
    expect(resolveServeConfig({}, {}).http?.cascadeOverload ?? 'degrade').toBe('degrade');
    expect(resolveServeConfig({}, {}).allowDegraded).toBe(false);
    expect(resolveServeConfig({}, { TAGGER_CASCADE_OVERLOAD: 'Shed' }).http?.cascadeOverload).toBe('shed');
    // A switch: the flag alone (commander gives `true`) turns it on.
    expect(resolveServeConfig({ allowDegraded: true }, {}).allowDegraded).toBe(true);
    expect(resolveServeConfig({}, { TAGGER_ALLOW_DEGRADED: 'on' }).allowDegraded).toBe(true);
    expect(() => resolveServeConfig({}, { TAGGER_CASCADE_OVERLOAD: 'drop' })).toThrow(
      'TAGGER_CASCADE_OVERLOAD must be one of degrade, shed; got "drop"',
    );
    expect(() => resolveServeConfig({ allowDegraded: 'maybe' }, {})).toThrow(
      '--allow-degraded must be true or false; got "maybe"',
    );
  });

  it('counts an empty value as unset, wherever it comes from', () => {
    const config = file('empty.yaml', 'port: ""\nexperiment:\nhost: 10.0.0.1\n');
    const settings = resolveSettings(
      { host: '' },
      { TAGGER_CONFIG: config, TAGGER_HOST: '  ', TAGGER_PORT: '' },
    );
    expect(settings.get('port')).toMatchObject({ value: 8000, source: 'default' });
    expect(settings.get('experiment')).toMatchObject({ value: 'best', source: 'default' });
    expect(settings.get('host')).toMatchObject({ value: '10.0.0.1', source: `${config}: host` });
    expect(resolveServeConfig({}, { TAGGER_CONFIG: '' }).port).toBe(8000);
  });

  it('reads text the same way from every source, and lets the schema refuse the rest', () => {
    const typed = file('typed.yaml', 'port: "8080"\nprotect_docs: on\nexperiment: 2024\nlog_level: WARN\n');
    expect(resolveSettings({}, { TAGGER_CONFIG: typed }).get('protect_docs')?.value).toBe(true);
    expect(resolveServeConfig({}, { TAGGER_CONFIG: typed })).toMatchObject({
      port: 8080,
      experiment: '2024',
      logLevel: 'warn',
    });
    for (const port of ['1e3', '0x10', '80.5', '+80', '-1', '65536', ' 8 0 ']) {
      expect(() => resolveServeConfig({}, { TAGGER_PORT: port }), port).toThrow(
        'TAGGER_PORT must be a TCP port',
      );
    }
    expect(resolveServeConfig({}, { TAGGER_PORT: ' 8081 ' }).port).toBe(8081);
  });
});

describe('a bad value', () => {
  it('is blamed on the flag, the variable or the file key it came from', () => {
    const bad = file('bad.yaml', 'port: eighty\n');
    const cases: [ServeFlags, NodeJS.ProcessEnv, string][] = [
      [
        {},
        { TAGGER_PORT: 'abc' },
        'serve: TAGGER_PORT must be a TCP port (0 picks a free one), an integer from 0 to 65535; got "abc"',
      ],
      [{ port: 'abc' }, {}, 'serve: --port must be a TCP port'],
      [{}, { TAGGER_CONFIG: bad }, `serve: ${bad}: port must be a TCP port`],
      // A lower source is not consulted once a higher one gives a good value...
      [
        { port: '1' },
        { TAGGER_PORT: 'abc', TAGGER_WORKERS: 'x' },
        'serve: TAGGER_WORKERS must be the number of worker',
      ],
      [{}, { TAGGER_SHUTDOWN_DELAY_MS: '-1' }, 'serve: TAGGER_SHUTDOWN_DELAY_MS must be a delay'],
      [
        { logLevel: 'loud' },
        {},
        'serve: --log-level must be one of fatal, error, warn, info, debug, trace, silent',
      ],
      [
        { workers: '0' },
        {},
        'serve: --workers must be the number of worker processes, an integer from 1 to 256',
      ],
      [{}, { TAGGER_PROTECT_DOCS: 'maybe' }, 'serve: TAGGER_PROTECT_DOCS must be true or false; got "maybe"'],
      [{ host: 'a b' }, {}, 'serve: --host must be a host name or IP address'],
      [
        {},
        { TAGGER_MIN_BEHAVIOURAL_PASS_RATE: '90%' },
        'serve: TAGGER_MIN_BEHAVIOURAL_PASS_RATE must be a share of the behavioural tests, a number from 0 to 1; got "90%"',
      ],
      [
        { minBehaviouralPassRate: '1.5' },
        {},
        'serve: --min-behavioural-pass-rate must be a share of the behavioural tests, a number from 0 to 1',
      ],
    ];
    for (const [flags, env, message] of cases) {
      expect(() => resolveServeConfig(flags, env)).toThrow(StartupError);
      expect(() => resolveServeConfig(flags, env)).toThrow(message);
    }
    // ...but the config file is one document and is checked whole, even under a flag.
    expect(() => resolveServeConfig({ port: '1' }, { TAGGER_CONFIG: bad })).toThrow(`${bad}: port`);
  });

  it('is blamed on its source for every integer setting', () => {
    const integers = SERVE_SETTINGS.filter((s) => (s.schema as { type?: string }).type === 'integer');
    expect(integers.length).toBeGreaterThan(15);
    const path = file('integers.yaml', integers.map((s) => `${s.key}: many`).join('\n'));
    for (const setting of integers) {
      expect(() => resolveSettings({}, { [setting.env]: 'many' })).toThrow(`serve: ${setting.env} must be`);
      expect(() => resolveSettings({ [flagAttribute(setting.flag)]: 'many' }, {})).toThrow(
        `serve: ${setting.flag} must be`,
      );
    }
    // Every bad value at once, one line each.
    let error: Error | undefined;
    try {
      resolveSettings({}, { TAGGER_CONFIG: path });
    } catch (caught) {
      error = caught as Error;
    }
    expect(error).toBeInstanceOf(StartupError);
    expect(error?.message).toContain(`serve: ${integers.length} settings are invalid:`);
    for (const setting of integers) expect(error?.message).toContain(`\n  ${path}: ${setting.key} must be`);
  });

  it('never shows a secret in the message', () => {
    const cases: [ServeFlags, NodeJS.ProcessEnv, string, string][] = [
      [
        {},
        { TAGGER_REDIS_URL: 'http://user:redis-secret@cache:6379' },
        'TAGGER_REDIS_URL must be a redis://',
        'redis-secret',
      ],
      [{ redisUrl: 'redis://:pw-secret@ cache' }, {}, '--redis-url must be', 'pw-secret'],
    ];
    for (const [flags, env, message, secret] of cases) {
      expect(() => resolveServeConfig(flags, env)).toThrow(message);
      expect(() => resolveServeConfig(flags, env)).not.toThrow(secret);
    }
    const keys = file('bad-keys.yaml', 'api_keys:\n  - key-secret\n  - 42\n  - [nested]\n');
    expect(() => resolveServeConfig({}, { TAGGER_CONFIG: keys })).toThrow(
      `${keys}: api_keys must be API keys`,
    );
    expect(() => resolveServeConfig({}, { TAGGER_CONFIG: keys })).not.toThrow('key-secret');
  });

  it('stops at a config file that cannot be used, saying why', () => {
    const unknown = file('unknown.yaml', 'port: 1\nprot: 2\nconfig: other.yaml\nwrkers: 3\n');
    expect(() => resolveServeConfig({}, { TAGGER_CONFIG: unknown })).toThrow(
      `serve: ${unknown}: unknown settings "prot", "config", "wrkers"; the settings are tracking_uri, experiment,`,
    );
    const list = file('list.yaml', '- port\n');
    expect(() => resolveServeConfig({}, { TAGGER_CONFIG: list })).toThrow('must hold a mapping');
    const broken = file('broken.yaml', 'port: [1\n');
    expect(() => resolveServeConfig({}, { TAGGER_CONFIG: broken })).toThrow('is not valid YAML or JSON');
    const nested = file('nested.yaml', 'port:\n  value: 1\n');
    expect(() => resolveServeConfig({}, { TAGGER_CONFIG: nested })).toThrow(
      `${nested}: port must be a TCP port (0 picks a free one), an integer from 0 to 65535; got {"value":1}`,
    );
    expect(() => resolveServeConfig({ config: join(scratch.path, 'missing.yaml') }, {})).toThrow(
      `serve: cannot read the config file ${join(scratch.path, 'missing.yaml')}: ENOENT`,
    );
    expect(
      resolveSettings({}, { TAGGER_CONFIG: file('blank.yaml', '# nothing yet\n') }).get('port')?.source,
    ).toBe('default');
  });

  it('names the setting of a key file that cannot be used, and where it came from', () => {
    const empty = file('empty-keys.txt', '# none yet\n');
    const config = file('keys-file.yaml', `api_keys_file: ${empty}\n`);
    expect(() => resolveServeConfig({}, { TAGGER_CONFIG: config })).toThrow(
      `serve: ${config}: api_keys_file: ${empty} holds no keys`,
    );
    expect(() => resolveServeConfig({ apiKeysFile: join(scratch.path, 'nope') }, {})).toThrow(
      `serve: --api-keys-file: cannot read ${join(scratch.path, 'nope')}: ENOENT`,
    );
  });

  it('names what contradicts --model, from a flag or the file (a variable is ignored)', () => {
    const config = file('model-conflict.yaml', 'experiment: e1\n');
    expect(() => resolveServeConfig({ model: 'm' }, { TAGGER_CONFIG: config })).toThrow(
      `serve: --model serves one saved model without a tracking store, so ${config}: experiment cannot be used with it`,
    );
    expect(resolveServeConfig({}, { TAGGER_MODEL: 'm', TAGGER_EXPERIMENT: 'e' })).toMatchObject({
      mode: 'model',
    });
  });
});

describe('the HTTP settings', () => {
  it('reads API keys from the variable, a list in the config file and the key file', () => {
    const keys = file('keys.txt', 'k-file\n');
    const config = file('keys.yaml', `api_keys: [k-one, k-two]\napi_keys_file: ${keys}\nrate_limit_max: 5\n`);
    const http = resolveServeConfig({}, { TAGGER_CONFIG: config }).http!;
    expect(http.apiKeys).toEqual(['k-one', 'k-two', 'k-file']);
    expect(http.rateLimit).toEqual({ max: 5, windowMs: 60_000 });
    expect(resolveServeConfig({ redisUrl: 'redis://cache:6379' }, {}).http?.redisUrl).toBe(
      'redis://cache:6379',
    );
    expect(resolveServeConfig({ rateLimitMax: '0', rateLimitWindow: '5' }, {}).http?.rateLimit).toBeNull();
  });
});

describe('--print-config', () => {
  it('prints every setting with its value and source, secrets masked', () => {
    const config = file('print.yaml', 'max_texts: 12\nredis_url: redis://user:redis-pass@cache:6379/0\n');
    const text = printableConfig(
      { apiKeys: 'secret-one,secret-two', config },
      {
        MLFLOW_TRACKING_URI: 'https://admin:mlflow-pass@mlflow.example.com',
        TAGGER_PORT: '9000',
      },
    );
    expect(text.trim().split('\n')).toHaveLength(SERVE_SETTINGS.length);
    for (const setting of SERVE_SETTINGS)
      expect(text).toMatch(new RegExp(`^${setting.key} += .+  # .+$`, 'm'));
    expect(text).toMatch(/^port += 9000 {2}# TAGGER_PORT$/m);
    expect(text).toMatch(/^api_keys += \*\*\* \(2 keys\) {2}# --api-keys$/m);
    expect(text).toMatch(/^experiment += best {2}# default$/m);
    expect(text).toContain(`= 12  # ${config}: max_texts`);
    expect(text).toMatch(/^redis_url += redis:\/\/user:\*\*\*@cache:6379\/0 {2}# .*print\.yaml: redis_url$/m);
    expect(text).toMatch(/^tracking_uri += https:\/\/mlflow\.example\.com {2}# MLFLOW_TRACKING_URI$/m);
    for (const secret of ['secret-one', 'redis-pass', 'mlflow-pass', 'admin'])
      expect(text).not.toContain(secret);
  });

  it('fails like serve would on a bad value', () => {
    expect(() => printableConfig({}, { TAGGER_MAX_TEXTS: 'lots' })).toThrow('TAGGER_MAX_TEXTS must be');
  });
});

describe('the documentation of the settings', () => {
  it('docs/configuration.md and its JSON Schema are generated from the table (`npx tsx scripts/config-table.ts`)', () => {
    expect(readFileSync(resolve(REPO_ROOT, 'docs', 'configuration.md'), 'utf8')).toBe(configurationDoc());
    expect(JSON.parse(readFileSync(resolve(REPO_ROOT, 'docs', 'configuration.schema.json'), 'utf8'))).toEqual(
      JSON.parse(configurationSchema()),
    );
    for (const setting of SERVE_SETTINGS) {
      expect(configurationDoc()).toContain(
        `| \`${setting.key}\` | \`${setting.flag}\` | \`${setting.env}\` |`,
      );
    }
  });

  it('the documented example file is valid, by the published schema and by serve', () => {
    const example = /```yaml\n([\s\S]*?)```/.exec(configurationDoc())?.[1];
    expect(example).toBeDefined();
    const validate = new Ajv({ strict: false }).compile(JSON.parse(configurationSchema()));
    expect(validate(parseYaml(example!)), JSON.stringify(validate.errors)).toBe(true);
    const path = file('example.yaml', example!.replace(/api_keys_file: .*/, ''));
    expect(resolveServeConfig({}, { TAGGER_CONFIG: path })).toMatchObject({ workers: 2 });
    // The published schema refuses what serve refuses.
    expect(validate({ port: 70_000, prot: 1 })).toBe(false);
    expect(Object.keys(CONFIG_FILE_SCHEMA.properties).sort()).toEqual([...SAMPLE_KEYS].sort());
  });
});
