/**
 * Real external components used by tests (Python venv with mlflow/scikit-learn, Chromium).
 * On a developer machine a missing component skips the tests that need it, with a printed reason;
 * under CI (`CI` set) a missing component fails the run, so a broken install never passes as green.
 */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

export const REPO_ROOT = resolve(import.meta.dirname, '..', '..');
export const SHARED_DATA = resolve(REPO_ROOT, '..', 'shared', 'data');
export const SAMPLE_DATA = resolve(REPO_ROOT, 'samples', 'projects.csv');

/** The ten training-argument keys the API contract names (`../shared/spec/tag-prediction-api.md`). */
export const SPEC_ARG_KEYS = [
  'shuffle',
  'subset',
  'min_freq',
  'lower',
  'stem',
  'analyzer',
  'ngram_max_range',
  'alpha',
  'learning_rate',
  'power_t',
] as const;

const inCi = (): boolean => {
  const ci = process.env.CI;
  return ci !== undefined && ci !== '' && ci !== '0' && ci.toLowerCase() !== 'false';
};

/** Returns the component or null (after printing why); throws under CI. */
function locate(name: string, candidates: string[], howToInstall: string): string | null {
  const found = candidates.find((candidate) => existsSync(candidate));
  if (found) return found;
  const reason = `${name} not found (looked in ${candidates.join(', ')}); ${howToInstall}`;
  if (inCi()) throw new Error(`CI requires ${reason}`);
  process.stderr.write(`[skip] ${reason}\n`);
  return null;
}

/** Python of the project's venv (mlflow, scikit-learn, schemathesis), installed by `.ci/run`. */
export function venvPython(): string | null {
  return locate(
    'the Python venv',
    [process.env.TAGGER_PYTHON ?? resolve(REPO_ROOT, '.venv', 'bin', 'python')],
    'create it with `bash scripts/setup-python.sh`',
  );
}

/**
 * The default sentence encoder (all-MiniLM-L6-v2 int8 ONNX + tokenizer.json), installed by `npm run
 * setup:encoder` into `encoders/minilm` (or $TAGGER_ENCODERS_DIR/minilm); `.ci/run` installs it.
 */
export function minilmDir(): string | null {
  const dir = resolve(process.env.TAGGER_ENCODERS_DIR ?? resolve(REPO_ROOT, 'encoders'), 'minilm');
  const found = locate(
    'the minilm encoder',
    [resolve(dir, 'model.onnx')],
    'install it with `npm run setup:encoder`',
  );
  return found === null ? null : dir;
}

/** Debian's Chromium for browser tests (`apt-get install chromium`). */
export function chromiumPath(): string | null {
  return locate(
    'Chromium',
    [process.env.CHROMIUM_PATH ?? '/usr/bin/chromium'],
    'install it with `apt-get install chromium`',
  );
}

/** A program at a fixed path (from a Debian package); skip with a reason, or fail under CI. */
export function locateBinary(name: string, path: string, howToInstall: string): string | null {
  return locate(name, [path], howToInstall);
}

/** Debian's Redis server, for the shared rate limit (`apt-get install redis-server`). */
export function redisServerPath(): string | null {
  return locate(
    'redis-server',
    [process.env.REDIS_SERVER_PATH ?? '/usr/bin/redis-server'],
    'install it with `apt-get install redis-server`',
  );
}

/** The shared labelled dataset (../shared/data), never copied into the repository. */
export function sharedDataset(
  file: 'dataset.csv' | 'holdout.csv' | 'mlops-course_146d00b/projects.json',
): string | null {
  return locate('the shared dataset', [resolve(SHARED_DATA, file)], 'check out ../shared beside the repo');
}

/**
 * `--import` value that runs TypeScript sources in a child process from any working directory
 * (a bare `tsx` would be resolved relative to the child's cwd).
 */
export const TSX_LOADER = pathToFileURL(resolve(REPO_ROOT, 'node_modules', 'tsx', 'dist', 'loader.mjs')).href;

/**
 * Whether tests may run the CLI as user `nobody` (uid 65534): only as root, and only when `nobody` can
 * reach this checkout — a clone under a 0700 folder (what `mktemp -d` makes) cannot be. Skips with the
 * reason on a developer machine, throws under CI.
 */
export function nobodyCanRunHere(): boolean {
  if (process.getuid?.() !== 0) return false;
  const probe = spawnSync(process.execPath, ['--import', TSX_LOADER, '-e', ''], {
    uid: 65534,
    gid: 65534,
    cwd: tmpdir(),
    timeout: 60_000,
  });
  if (probe.status === 0) return true;
  const reason = `user nobody cannot run node and tsx from ${REPO_ROOT} (a parent folder is not traversable by others, e.g. a mktemp -d folder); the [as nobody] cases need a checkout others can read`;
  if (inCi()) throw new Error(`CI requires that ${reason}`);
  process.stderr.write(`[skip] ${reason}\n`);
  return false;
}
