/**
 * Where the benchmarks find things: the repository, the shared data (`TAGGER_DATA_DIR`, else
 * `../shared/data`) and the Python of the scikit-learn and MLflow references (`TAGGER_PYTHON`, else
 * `.venv/bin/python`). One module, so every section reads the same settings the same way.
 */
import { resolve } from 'node:path';

export const REPO = resolve(import.meta.dirname, '..');
export const DATA_DIR = process.env.TAGGER_DATA_DIR ?? resolve(REPO, '..', 'shared', 'data');
export const PYTHON = process.env.TAGGER_PYTHON ?? resolve(REPO, '.venv', 'bin', 'python');
