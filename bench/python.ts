/**
 * The benchmarks' Python references (scikit-learn's twins of Tagger's models, in `python/`): each script
 * reads its task from a JSON file and writes its answer to another, so one runner serves them all.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { PYTHON, REPO } from './paths.js';

/** Whether the reference Python (`.venv`, or TAGGER_PYTHON) is there. */
export const pythonAvailable = (): boolean => existsSync(PYTHON);

/**
 * Runs `python/<script> in.json out.json` with `input` as in.json, in a temporary folder removed after,
 * and returns out.json parsed; the script's output goes to this process's. Throws when the script fails.
 */
export function runPythonScript<T>(script: string, input: unknown): T {
  const dir = mkdtempSync(join(tmpdir(), 'tagger-bench-'));
  try {
    writeFileSync(join(dir, 'in.json'), JSON.stringify(input));
    execFileSync(PYTHON, [resolve(REPO, 'python', script), join(dir, 'in.json'), join(dir, 'out.json')], {
      stdio: ['ignore', 'inherit', 'inherit'],
      cwd: resolve(REPO, 'python'),
    });
    return JSON.parse(readFileSync(join(dir, 'out.json'), 'utf8')) as T;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
