/**
 * The protocols beside the contract's API through the clients people already run (issue 41), against
 * the real server process on loopback: tritonclient[http]'s InferenceServerClient (the Open Inference
 * Protocol, binary tensor data as it sends by default, and JSON) and huggingface_hub's
 * InferenceClient.text_classification, both from the project's venv (python/protocol_clients.py). What
 * they get must be what POST /predict answers for the same texts.
 */
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REPO_ROOT, venvPython } from '../support/components.js';
import { killServers, type ServerProcess, spawnServer } from '../support/serve-process.js';
import { useServingFixture } from '../support/serving-fixture.js';

const run = promisify(execFile);
const python = venvPython();
const fx = useServingFixture();
let server: ServerProcess;

const TEXTS = ['Object detection with YOLO on drone images', 'Question answering with transformers, ünïcode'];

beforeAll(async () => {
  if (python === null) return;
  server = await spawnServer({ MLFLOW_TRACKING_URI: fx.dir });
}, 90_000);

afterAll(() => {
  killServers();
});

interface Prediction {
  predicted_tag: string;
  predicted_tags: string[];
  predicted_probabilities: Record<string, number>;
}

async function predictions(body: Record<string, unknown>): Promise<Prediction[]> {
  const response = await fetch(`${server.url}/predict`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ texts: TEXTS.map((text) => ({ text })), ...body }),
  });
  expect(response.status).toBe(200);
  return ((await response.json()) as { data: { predictions: Prediction[] } }).data.predictions;
}

describe.skipIf(python === null)('real clients of the protocols', () => {
  it('tritonclient and huggingface_hub get what POST /predict answers', async () => {
    const { stdout } = await run(
      python!,
      [join(REPO_ROOT, 'python', 'protocol_clients.py'), server.url, ...TEXTS],
      {
        timeout: 120_000,
        maxBuffer: 4 << 20,
      },
    );
    const got = JSON.parse(stdout);
    const expected = await predictions({ probabilities: 'all' });
    const top2 = await predictions({ top_k: 2 });
    const tags = fx.modelA.model.tags;
    const f32 = (x: number) => Math.fround(x);

    const { triton, hf } = got;
    expect([triton.live, triton.ready, triton.model_ready, triton.versioned_ready]).toEqual([
      true,
      true,
      true,
      true,
    ]);
    expect(triton.server).toMatchObject({ name: 'tagger', extensions: ['binary_tensor_data'] });
    expect(triton.metadata).toMatchObject({ name: 'tagger', versions: [fx.runs.alpha], tags: [...tags] });
    expect(triton.binary.predicted_tag).toEqual(expected.map((p) => p.predicted_tag));
    expect(triton.binary.probability).toEqual(
      expected.map((p) => f32(p.predicted_probabilities[p.predicted_tag]!)),
    );
    expect(triton.binary.prediction_id).toHaveLength(2);
    expect(triton.json.id).toBe('r-1');
    expect(triton.json.probabilities_shape).toEqual([2, tags.length]);
    expect(triton.json.probabilities).toEqual(
      expected.map((p) => tags.map((tag) => f32(p.predicted_probabilities[tag]!))),
    );
    expect(triton.json.predicted_tags).toEqual(top2.map((p) => p.predicted_tags));
    expect(triton.errors.unknown_model).toMatchObject({
      status: '404',
      message: expect.stringMatching(/no model/),
    });
    expect(triton.errors.too_long).toMatchObject({
      status: '400',
      message: expect.stringMatching(/truncate/),
    });
    expect(triton.errors.truncated).toEqual({ truncated_texts: 1 });

    const sorted = Object.entries(expected[0]!.predicted_probabilities)
      .sort((a, b) => b[1] - a[1])
      .map(([label, score]) => ({ label, score }));
    expect(hf.one).toEqual(sorted);
    expect(hf.top2).toEqual(sorted.slice(0, 2));
    expect(hf.softmax).toEqual(sorted.slice(0, 1));
    expect(hf.none).toMatchObject({ status: 400, message: expect.stringMatching(/raw scores/) });
  }, 150_000);
});
