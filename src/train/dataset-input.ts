/**
 * The data file of a training as an MLflow dataset input, the record MLflow's UI shows on the run
 * ("Datasets used") and `mlflow.get_run(id).inputs.dataset_inputs` returns:
 *
 * - name: the file's base name (`projects.csv`);
 * - digest: the first 16 hex digits of the SHA-256 of the file's bytes. MLflow's own digests are
 *   8 hex digits of an MD5 over a pandas frame (`mlflow/data/digest_utils.py`), which needs pandas to
 *   reproduce; a hash of the bytes is stable across machines and paths, changes with any edit, and
 *   16 digits keep accidental collisions out of reach while fitting MLflow's 36-character column;
 * - source: `{"uri": "file:///absolute/path.csv"}` with source type `local`, what MLflow's
 *   `LocalArtifactDatasetSource` writes and parses (`mlflow.data.get_source(dataset)` loads it back);
 * - schema: the columns Tagger reads, as MLflow's `{"mlflow_colspec": [...]}` (all strings);
 * - profile: `{"num_rows": <records>}`;
 * - the input tag `mlflow.data.context`: `training` for `--data`, `testing` for `--test-data`.
 */
import { createHash } from 'node:crypto';
import { basename, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { DatasetInput } from '../tracking/store.js';
import { columnsRead, type DatasetColumns, type DatasetRow, readDatasetFile } from './data.js';

export type DatasetContext = 'training' | 'testing';

/**
 * JSON as Python's `json.dumps` writes it (`", "` and `": "` separators), so the text Tagger records is
 * the text MLflow's client would have recorded for the same source, schema and profile.
 */
export function pythonJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(pythonJson).join(', ')}]`;
  if (typeof value === 'object' && value !== null) {
    return `{${Object.entries(value)
      .map(([key, entry]) => `${JSON.stringify(key)}: ${pythonJson(entry)}`)
      .join(', ')}}`;
  }
  return JSON.stringify(value);
}

/** The digest of a data file's bytes as Tagger records it (see above). */
export function fileDigest(bytes: Uint8Array): string {
  return createHash('sha256').update(bytes).digest('hex').slice(0, 16);
}

/** The dataset input of a data file Tagger read (`path` as given, made absolute). */
export function datasetInput(
  path: string,
  bytes: Uint8Array,
  rows: readonly DatasetRow[],
  context: DatasetContext,
  columns: DatasetColumns = {},
): DatasetInput {
  const absolute = resolve(path);
  return {
    dataset: {
      name: basename(absolute),
      digest: fileDigest(bytes),
      sourceType: 'local',
      source: pythonJson({ uri: pathToFileURL(absolute).href }),
      schema: pythonJson({
        mlflow_colspec: columnsRead(rows, columns).map((name) => ({
          type: 'string',
          name,
          required: true,
        })),
      }),
      profile: pythonJson({ num_rows: rows.length }),
    },
    tags: { 'mlflow.data.context': context },
  };
}

/** Reads a data file once: its rows for training and its dataset input for the run. */
export async function readDataWithInput(
  path: string,
  context: DatasetContext,
  columns: DatasetColumns = {},
): Promise<{ rows: DatasetRow[]; input: DatasetInput }> {
  const { rows, bytes } = await readDatasetFile(path, columns);
  return { rows, input: datasetInput(path, bytes, rows, context, columns) };
}
