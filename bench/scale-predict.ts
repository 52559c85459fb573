/**
 * Prediction cost of a model trained on `scale` data, without its hours of training each time:
 *   node --import tsx bench/scale-predict.ts <rows>x<tags> [cache dir] [texts] ['<args JSON>']
 * Trains the model once as bench/scale-train.ts does (the same generator, split and args) and saves it in
 * the cache dir (default $TMPDIR/tagger-scale-predict/<rows>x<tags>[-args hash]); later runs load it. Then
 * times one-text predictions of the first `texts` test rows (default 2,000; CPU µs per text, all tags'
 * probabilities and the 20 most probable), best of three passes, and prints a JSON line.
 */
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  DEFAULT_LISTED_PROBABILITIES,
  decodeModel,
  encodeModel,
  MODEL_FILES,
  parseTrainingArgs,
  type TagModel,
  trainTagger,
} from '../src/model/index.js';
import { createParallelRunner } from '../src/train/parallel.js';
import { argsForData, splitData } from '../src/train/pipeline.js';
import { scaleRows } from './scale-data.js';

const [sizeArg, dirArg, countArg, argsJson] = process.argv.slice(2);
const [rows, tags] = (sizeArg ?? '').split('x').map(Number);
if (!Number.isInteger(rows) || !Number.isInteger(tags))
  throw new Error('usage: scale-predict.ts <rows>x<tags> [cache dir] [texts] [args JSON]');
const given = JSON.parse(argsJson ?? '{}') as Record<string, unknown>;
const suffix =
  argsJson === undefined ? '' : `-${createHash('sha1').update(argsJson).digest('hex').slice(0, 8)}`;
const dir = dirArg || join(tmpdir(), 'tagger-scale-predict', `${rows}x${tags}${suffix}`);
const count = Number(countArg ?? 2000);

// As bench/scale.ts makes them: the rows for 80 % train, 20 % test.
const all = scaleRows({ rows: Math.round(rows! / 0.8), tags: tags!, seed: 31 });
const cut = Math.round(all.length * 0.8);
const asText = (r: { title: string; description: string }): string => `${r.title} ${r.description}`;
const texts = all.slice(cut, cut + count).map(asText);

const cpuUs = (): number => {
  const usage = process.cpuUsage();
  return usage.user + usage.system;
};

async function trained(): Promise<TagModel> {
  if (existsSync(join(dir, MODEL_FILES[0]!))) {
    const files = Object.fromEntries(MODEL_FILES.map((name) => [name, readFileSync(join(dir, name))]));
    return decodeModel(files);
  }
  const data = all.slice(0, cut).map((r) => ({ text: asText(r), tag: r.tag }));
  const args = argsForData(parseTrainingArgs(given), data, new Set(Object.keys(given)));
  const runner = createParallelRunner(1);
  const { train, validation } = splitData(data, true, 42);
  const t0 = cpuUs();
  const { model } = trainTagger(train, validation, args, { seed: 42, parallel: runner });
  await runner.close();
  console.error(`trained in ${((cpuUs() - t0) / 1e6).toFixed(1)} CPU s; saved to ${dir}`);
  mkdirSync(dir, { recursive: true });
  for (const [name, bytes] of Object.entries(encodeModel(model))) writeFileSync(join(dir, name), bytes);
  return model;
}

const model = await trained();
const timed = (options: Parameters<TagModel['predict']>[2]): number => {
  let best = Infinity;
  for (let pass = 0; pass < 3; pass++) {
    const t0 = cpuUs();
    for (const text of texts) model.predict([text], undefined, options);
    best = Math.min(best, (cpuUs() - t0) / texts.length);
  }
  return best;
};
for (const text of texts.slice(0, 200)) model.predict([text]);
const allUs = timed(undefined);
const topUs = timed({ probabilities: DEFAULT_LISTED_PROBABILITIES });
console.log(
  JSON.stringify({
    size: `${rows}x${tags}`,
    tags: model.tags.length,
    texts: texts.length,
    predict_us: Number(allUs.toFixed(1)),
    predict_top_us: Number(topUs.toFixed(1)),
  }),
);
