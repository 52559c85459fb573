/**
 * Tagger's trained model as an MLflow 3 logged model, so it appears in MLflow's model views next to
 * the run: the model's files (what `encodeModel` writes) plus an `MLmodel` file, the descriptor every
 * MLflow Model directory has (`mlflow/models/model.py`, `Model.to_yaml`). Its one flavor, `tagger`,
 * names the format and the manifest; there is no `python_function` flavor, since no Python code can
 * load Tagger's format (MLflow then lists and shows the model, but `mlflow.pyfunc.load_model` refuses
 * it, which is the truth). The run's own `model/` artifacts, which serving loads, are unchanged.
 */
import { stringify } from 'yaml';

/** The name MLflow's `log_model(name="model")` gives, so `runs:/<run>/model` resolves to it too. */
export const LOGGED_MODEL_NAME = 'model';
export const MLMODEL_FILE = 'MLmodel';
/** The flavor name in `MLmodel`. */
export const TAGGER_FLAVOR = 'tagger';

export interface MlmodelFields {
  modelId: string;
  runId: string;
  /** The logged model's artifact location, which MLflow 3 records as `artifact_path`. */
  artifactLocation: string;
  /** The model format (`tagger-model/<n>`) and the manifest file among the model's files. */
  format: string;
  manifest: string;
  created: Date;
  /**
   * An encoder model's encoder (name, source, sha256 of the ONNX model and of tokenizer.json, pooling,
   * max tokens, dim): what must be installed beside the model to run it.
   */
  encoder?: Readonly<Record<string, string | number>> | null;
}

/** `utc_time_created` as Python's `str(datetime.utcnow())` prints it: `2026-11-25 07:27:55.002750`. */
function pythonUtc(date: Date): string {
  return `${date.toISOString().slice(0, 19).replace('T', ' ')}.${String(date.getUTCMilliseconds()).padStart(3, '0')}000`;
}

/** The `MLmodel` YAML (sorted keys and block style, as PyYAML writes it). */
export function mlmodelYaml(fields: MlmodelFields): string {
  return stringify(
    {
      artifact_path: fields.artifactLocation,
      flavors: {
        [TAGGER_FLAVOR]: {
          data: fields.manifest,
          format: fields.format,
          ...(fields.encoder ? { encoder: { ...fields.encoder } } : {}),
        },
      },
      model_id: fields.modelId,
      model_uuid: fields.modelId,
      run_id: fields.runId,
      utc_time_created: pythonUtc(fields.created),
    },
    { version: '1.1', sortMapEntries: true, lineWidth: 0 },
  );
}
