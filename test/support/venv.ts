/** Executables of the project's Python venv (e.g. schemathesis), found next to its python. */
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { venvPython } from './components.js';

/**
 * The venv's `name` executable, or null when the venv is missing (venvPython() prints why and, under CI,
 * throws). A venv without the executable is an incomplete install: that throws everywhere.
 * @example const schemathesis = venvBin('schemathesis');
 */
export function venvBin(name: string): string | null {
  const python = venvPython();
  if (python === null) return null;
  const bin = join(dirname(python), name);
  if (!existsSync(bin)) {
    throw new Error(`${bin} is missing; run \`bash scripts/setup-python.sh\``);
  }
  return bin;
}
