/**
 * One training of the `scale` benchmark in a process of its own, so its CPU time and peak memory are its
 * own (bench/scale.ts starts it):
 *   node --import tsx bench/scale-train.ts <train.csv> <test.csv> '<args JSON>' <out.json> [threads] [model dir]
 * Trains as `tagger train --test-data` does (an 85/15 train/validation split, seed 42: validated fit, then
 * the refit) and writes the predicted tag of every test row, the training's CPU and wall seconds (this
 * process, all threads, after the data is read), the peak RSS, the saved model's size and the CPU µs per
 * text of one-text predictions (every tag's probabilities, and the 20 most probable only: the API's answer
 * past 20 tags). bench/scale.ts scores the predictions with the same function for every
 * system. With a model directory it also saves the model there as a run's artifacts are laid out (what
 * `tagger serve --model <dir>` serves: bench/scale-serve.ts measures it served).
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  DEFAULT_LISTED_PROBABILITIES,
  encodeModel,
  evaluateWithErrors,
  parseTrainingArgs,
  RUN_ARTIFACTS,
  trainTagger,
} from '../src/model/index.js';
import { readDataset } from '../src/train/data.js';
import { createParallelRunner } from '../src/train/parallel.js';
import { argsForData, splitData } from '../src/train/pipeline.js';

const [trainPath, testPath, argsJson, outPath, threadsArg, modelDir] = process.argv.slice(2);
if (outPath === undefined)
  throw new Error('usage: scale-train.ts <train.csv> <test.csv> <args JSON> <out.json>');
const cpuSeconds = (): number => {
  const usage = process.cpuUsage();
  return (usage.user + usage.system) / 1e6;
};

const rows = await readDataset(trainPath!);
const test = await readDataset(testPath!);
// As `tagger train` takes them: the args given, then what the data decides (the large-data settings).
const given = JSON.parse(argsJson!) as Record<string, unknown>;
const args = argsForData(parseTrainingArgs(given), rows, new Set(Object.keys(given)));
const cpu0 = cpuSeconds();
const wall0 = performance.now();
const runner = createParallelRunner(Number(threadsArg ?? 1));
const { train, validation } = splitData(rows, true, 42);
const { model } = trainTagger(train, validation, args, { seed: 42, parallel: runner });
await runner.close();
const trainCpu = cpuSeconds() - cpu0;
const trainWall = (performance.now() - wall0) / 1000;
// The training's peak: predictions below build objects the training never held.
const trainPeakMb = process.resourceUsage().maxRSS / 1024;
const files = encodeModel(model);
const modelBytes = Object.values(files).reduce((n, bytes) => n + bytes.byteLength, 0);
if (modelDir !== undefined) {
  mkdirSync(join(modelDir, RUN_ARTIFACTS.modelDir), { recursive: true });
  for (const [name, bytes] of Object.entries(files))
    writeFileSync(join(modelDir, RUN_ARTIFACTS.modelDir, name), bytes);
  writeFileSync(join(modelDir, RUN_ARTIFACTS.args), JSON.stringify(args));
  const { performance } = evaluateWithErrors(model, test);
  writeFileSync(join(modelDir, RUN_ARTIFACTS.performance), JSON.stringify(performance));
}
const texts = test.map((r) => r.text);
const predicted: string[] = [];
for (let i = 0; i < texts.length; i += 500) {
  for (const p of model.predict(texts.slice(i, i + 500))) predicted.push(p.predicted_tag);
}
const sample = texts.slice(0, 2000);
for (const text of sample.slice(0, 50)) model.predict([text]);
const predictCpu0 = cpuSeconds();
for (const text of sample) model.predict([text]);
const predictUs = ((cpuSeconds() - predictCpu0) / sample.length) * 1e6;
// The answer past 20 tags (POST /predict's default): only the most probable tags' probabilities built.
const topCpu0 = cpuSeconds();
for (const text of sample) model.predict([text], undefined, { probabilities: DEFAULT_LISTED_PROBABILITIES });
const predictTopUs = ((cpuSeconds() - topCpu0) / sample.length) * 1e6;
writeFileSync(
  outPath,
  JSON.stringify({
    predicted,
    train_cpu_s: trainCpu,
    train_wall_s: trainWall,
    peak_rss_mb: trainPeakMb,
    model_bytes: modelBytes,
    predict_us: predictUs,
    predict_top_us: predictTopUs,
    tags: model.tags.length,
  }),
);
