/**
 * The Open Inference Protocol's REST shapes (KServe V2, what Triton, KServe and Seldon speak and
 * `tritonclient[http]` sends), for a text tagger: the request body (JSON, or JSON followed by binary tensor
 * data — Triton's binary tensor data extension, which tritonclient uses by default), the one input it
 * takes and the outputs it can give, and the response (JSON, or JSON followed by binary outputs).
 *
 * Tagger's model takes one input, `text`: BYTES of shape [n] or [n, 1], one UTF-8 text per element. It
 * gives `predicted_tag` (BYTES [n]), `probability` (FP32 [n], the predicted tag's), `prediction_id` (BYTES
 * [n], for POST /feedback), on request `probabilities` (FP32 [n, tags], in the tag order of the model's
 * metadata) and `predicted_tags` (BYTES [n, k]: each text's tags, most probable first, padded with empty
 * strings to the longest row or to `top_k`), and for a cascade run `stage` (BYTES [n]). Request parameters:
 * `truncate` (cut texts over the limit instead of refusing them), `top_k` and `threshold` (as POST /predict
 * takes them, for `predicted_tags`), `binary_data_output`; an output's `binary_data`.
 *
 * Written by hand: the protocol is a few JSON objects and a length-prefixed byte layout, and the Node
 * packages that speak it are clients, not servers.
 */
import { HttpError } from './http-error.js';
import { jsonDepthExceeds } from './json-body.js';

/** The name of the one input. */
export const TEXT_INPUT = 'text';

/** Every output a text model gives (`stage`: a cascade run's only). */
export const OUTPUT_NAMES = [
  'predicted_tag',
  'probability',
  'prediction_id',
  'probabilities',
  'predicted_tags',
  'stage',
] as const;
export type OutputName = (typeof OUTPUT_NAMES)[number];

/** The outputs a request without `outputs` gets. */
export const DEFAULT_OUTPUTS: readonly OutputName[] = ['predicted_tag', 'probability', 'prediction_id'];

/** The protocol's name of the extension Tagger implements beyond the required API. */
export const EXTENSIONS = ['binary_tensor_data'] as const;

type Parameters = Record<string, unknown>;

export interface InferInput {
  name: string;
  shape: number[];
  datatype: string;
  parameters?: Parameters;
  data?: unknown;
}

export interface InferRequestBody {
  id?: string;
  parameters?: Parameters;
  inputs: InferInput[];
  outputs?: { name: string; parameters?: Parameters }[];
}

const bad = (detail: string): HttpError => new HttpError(400, detail);

const utf8 = new TextDecoder('utf-8', { fatal: true });

/**
 * The elements of a BYTES tensor sent as binary data: each a 4-byte little-endian length and that many
 * bytes, here UTF-8 text.
 */
export function decodeBytesTensor(bytes: Uint8Array, where: string): string[] {
  const out: string[] = [];
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let at = 0;
  while (at < bytes.byteLength) {
    if (at + 4 > bytes.byteLength) throw bad(`${where}: the binary data ends inside an element's length`);
    const length = view.getUint32(at, true);
    at += 4;
    if (at + length > bytes.byteLength) {
      throw bad(`${where}: an element of ${length} bytes runs past the end of the binary data`);
    }
    try {
      out.push(utf8.decode(bytes.subarray(at, at + length)));
    } catch {
      throw bad(`${where}: element ${out.length} is not UTF-8 text`);
    }
    at += length;
  }
  return out;
}

/** A BYTES tensor's binary data (the layout decodeBytesTensor reads). */
export function encodeBytesTensor(values: readonly string[]): Buffer {
  const parts = values.map((value) => Buffer.from(value, 'utf8'));
  const out = Buffer.allocUnsafe(parts.reduce((sum, part) => sum + 4 + part.length, 0));
  let at = 0;
  for (const part of parts) {
    out.writeUInt32LE(part.length, at);
    part.copy(out, at + 4);
    at += 4 + part.length;
  }
  return out;
}

/** An FP32 tensor's binary data: little-endian, row-major. */
export function encodeFp32Tensor(values: readonly number[]): Buffer {
  const out = Buffer.allocUnsafe(values.length * 4);
  for (let i = 0; i < values.length; i++) out.writeFloatLE(values[i]!, i * 4);
  return out;
}

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * The body of an inference request: JSON, or (with `Inference-Header-Content-Length`) a JSON header of that
 * many bytes followed by the binary data of the inputs whose `parameters.binary_data_size` says so, in the
 * order of the inputs; a BYTES input's binary data becomes its `data`, so what follows reads one shape.
 */
export function parseInferBody(body: Buffer, headerLength: string | undefined, jsonDepth: number): unknown {
  let jsonBytes: Buffer = body;
  let rest: Buffer | undefined;
  if (headerLength !== undefined) {
    const size = /^\d{1,12}$/.test(headerLength.trim()) ? Number(headerLength) : Number.NaN;
    if (!(size > 0 && size <= body.length)) {
      throw bad(
        `Inference-Header-Content-Length ${JSON.stringify(headerLength)} is not the length of a JSON header within the ${body.length}-byte body`,
      );
    }
    jsonBytes = body.subarray(0, size);
    rest = body.subarray(size);
  }
  let text: string;
  try {
    text = utf8.decode(jsonBytes);
  } catch {
    throw bad('the request JSON is not valid UTF-8');
  }
  if (text.trim() === '') throw bad('the request has no body: send an inference request JSON object');
  if (jsonDepthExceeds(text, jsonDepth)) {
    throw new HttpError(413, `the JSON body is nested deeper than the limit of ${jsonDepth} levels`);
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    throw bad(`the request body is not valid JSON: ${(error as Error).message}`);
  }
  if (rest === undefined || !isObject(parsed) || !Array.isArray(parsed.inputs)) return parsed;
  let at = 0;
  for (const [index, input] of parsed.inputs.entries()) {
    if (!isObject(input) || !isObject(input.parameters)) continue;
    const size = input.parameters.binary_data_size;
    if (size === undefined) continue;
    if (!(typeof size === 'number' && Number.isInteger(size) && size >= 0)) {
      throw bad(`inputs[${index}].parameters.binary_data_size must be a whole number of bytes`);
    }
    if (at + size > rest.length) {
      throw bad(
        `inputs[${index}] says ${size} bytes of binary data, but only ${rest.length - at} follow the JSON header`,
      );
    }
    const bytes = rest.subarray(at, at + size);
    at += size;
    if (input.datatype !== 'BYTES') {
      throw bad(
        `inputs[${index}] '${String(input.name)}' must be BYTES (texts), not ${String(input.datatype)}`,
      );
    }
    input.data = decodeBytesTensor(bytes, `inputs[${index}]`);
  }
  if (at !== rest.length) {
    throw bad(`${rest.length - at} bytes of binary data follow the inputs that the JSON header describes`);
  }
  return parsed;
}

/** What an inference request asks, read and checked. */
export interface InferCall {
  texts: string[];
  id: string | undefined;
  outputs: { name: OutputName; binary: boolean }[];
  truncate: boolean;
  topK: number | undefined;
  threshold: number | undefined;
}

function flatten(data: unknown, out: unknown[]): void {
  if (Array.isArray(data)) for (const item of data) flatten(item, out);
  else out.push(data);
}

function booleanParameter(
  parameters: Parameters | undefined,
  name: string,
  where: string,
): boolean | undefined {
  const value = parameters?.[name];
  if (value === undefined) return undefined;
  if (typeof value !== 'boolean') throw bad(`${where}.${name} must be true or false`);
  return value;
}

/**
 * The texts and options of an inference request, checked against the protocol and the model's one input
 * (400 for what is malformed, 413 for more texts than the server takes per request).
 */
export function readInferRequest(
  body: InferRequestBody,
  limits: { texts: number },
  hasStage: boolean,
): InferCall {
  if (body.inputs.length !== 1) {
    throw bad(`this model takes one input, '${TEXT_INPUT}' (BYTES [n]); ${body.inputs.length} were given`);
  }
  const input = body.inputs[0]!;
  if (input.name !== TEXT_INPUT) {
    throw bad(`unknown input '${input.name}': this model takes one input, '${TEXT_INPUT}' (BYTES [n])`);
  }
  if (input.datatype !== 'BYTES') {
    throw bad(`input '${TEXT_INPUT}' must be BYTES (texts), not ${input.datatype}`);
  }
  const { shape } = input;
  if (!(shape.length === 1 || (shape.length === 2 && shape[1] === 1))) {
    throw bad(`input '${TEXT_INPUT}' must have shape [n] or [n, 1], not [${shape.join(', ')}]`);
  }
  const count = shape[0]!;
  if (input.data === undefined) {
    throw bad(`input '${TEXT_INPUT}' has no data (neither "data" nor parameters.binary_data_size)`);
  }
  const elements: unknown[] = [];
  flatten(input.data, elements);
  if (elements.length !== count) {
    throw bad(
      `input '${TEXT_INPUT}' has ${elements.length} elements, but its shape [${shape.join(', ')}] says ${count}`,
    );
  }
  const nonText = elements.findIndex((element) => typeof element !== 'string');
  if (nonText >= 0) throw bad(`input '${TEXT_INPUT}' element ${nonText} is not a string`);
  if (count === 0) throw bad(`input '${TEXT_INPUT}' has no texts: send at least one`);
  if (count > limits.texts) {
    throw new HttpError(
      413,
      `too many texts: ${count} given, the limit is ${limits.texts} per request (TAGGER_MAX_TEXTS); split the request`,
    );
  }
  const texts = elements as string[];
  const empty = texts.findIndex((text) => text.length === 0);
  if (empty >= 0)
    throw bad(`input '${TEXT_INPUT}' element ${empty} is empty: a text has at least 1 character`);

  const parameters = body.parameters;
  const truncate = booleanParameter(parameters, 'truncate', 'parameters') ?? false;
  const binaryOutput = booleanParameter(parameters, 'binary_data_output', 'parameters') ?? false;
  const topK = parameters?.top_k;
  if (
    topK !== undefined &&
    !(typeof topK === 'number' && Number.isInteger(topK) && topK >= 1 && topK <= 1000)
  ) {
    throw bad('parameters.top_k must be a whole number from 1 to 1000');
  }
  const threshold = parameters?.threshold;
  if (threshold !== undefined && !(typeof threshold === 'number' && threshold >= 0 && threshold <= 1)) {
    throw bad('parameters.threshold must be a number from 0 to 1');
  }
  const available = OUTPUT_NAMES.filter((name) => name !== 'stage' || hasStage);
  const requested =
    body.outputs === undefined
      ? [...DEFAULT_OUTPUTS, ...(hasStage ? (['stage'] as const) : [])].map((name) => ({
          name,
          binary: binaryOutput,
        }))
      : body.outputs.map((output, index) => {
          if (!(available as readonly string[]).includes(output.name)) {
            throw bad(`unknown output '${output.name}': this model gives ${available.join(', ')}`);
          }
          return {
            name: output.name as OutputName,
            binary:
              booleanParameter(output.parameters, 'binary_data', `outputs[${index}].parameters`) ??
              binaryOutput,
          };
        });
  return {
    texts,
    id: body.id,
    outputs: requested,
    truncate,
    topK: topK as number | undefined,
    threshold: threshold as number | undefined,
  };
}

/** One output tensor of the response, before it is written as JSON or binary. */
export interface OutputTensor {
  name: OutputName;
  datatype: 'BYTES' | 'FP32';
  shape: number[];
  /** Row-major. */
  data: string[] | number[];
  binary: boolean;
}

/**
 * The response: a JSON object, or (when an output is binary) the JSON header followed by the binary
 * outputs in their order, with the header's length for `Inference-Header-Content-Length`.
 */
export function writeInferResponse(
  head: { model_name: string; model_version?: string; id?: string; parameters?: Parameters },
  tensors: readonly OutputTensor[],
): { json: Record<string, unknown> } | { body: Buffer; headerLength: number } {
  const binaries: Buffer[] = [];
  const outputs = tensors.map((tensor) => {
    const base = { name: tensor.name, datatype: tensor.datatype, shape: tensor.shape };
    if (!tensor.binary) return { ...base, data: tensor.data };
    const bytes =
      tensor.datatype === 'BYTES'
        ? encodeBytesTensor(tensor.data as string[])
        : encodeFp32Tensor(tensor.data as number[]);
    binaries.push(bytes);
    return { ...base, parameters: { binary_data_size: bytes.length } };
  });
  const json = { ...head, outputs };
  if (binaries.length === 0) return { json };
  const header = Buffer.from(JSON.stringify(json), 'utf8');
  return { body: Buffer.concat([header, ...binaries]), headerLength: header.length };
}
