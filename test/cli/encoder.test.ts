/**
 * `tagger train --encoder` and `tagger optimize --encoder` with the real default encoder (skipped with the
 * reason when `npm run setup:encoder` has not run; a failure under CI): the run records the encoder (params,
 * tags, model manifest, MLmodel), its model loads only with a verified encoder and predicts as trained, and a
 * bad encoder is one line before anything is trained or logged. In-process (test/support/cli.ts).
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parse } from 'csv-parse/sync';
import { describe, expect, it } from 'vitest';
import { withEncoderFlag } from '../../src/cli/embeddings.js';
import { EncoderError, openEncoderFor } from '../../src/encoder/index.js';
import {
  DEFAULT_TRAINING_ARGS,
  decodeModel,
  isCascade,
  MODEL_FILES,
  MODEL_FORMAT,
  parseTrainingArgs,
  RUN_ARTIFACTS,
} from '../../src/model/index.js';
import { openTrackingStore, type TrackingStore } from '../../src/tracking/index.js';
import { readDataset } from '../../src/train/data.js';
import { cliFolder, expectCleanFailure, FAST_ARGS, trainArgv } from '../support/cli.js';
import { minilmDir, SAMPLE_DATA } from '../support/components.js';

const dir = minilmDir();

/** `tagger predict --run-id` of an image-detection text answers computer-vision. */
async function expectComputerVision(runId: string): Promise<void> {
  const text = 'Object detection with YOLO on drone images';
  const predict = await cli.tagger(['predict', '--tracking-uri', cli.store, '--run-id', runId, text]);
  expect(predict.code, predict.stderr).toBe(0);
  expect(JSON.parse(predict.stdout).predictions[0].predicted_tag).toBe('computer-vision');
}

/** A run's model files, as a loader reads them. */
const modelFilesOf = async (store: TrackingStore, runId: string): Promise<Record<string, Uint8Array>> =>
  Object.fromEntries(
    await Promise.all(
      MODEL_FILES.map(async (name) => [name, await store.readArtifact(runId, `model/${name}`)] as const),
    ),
  );
const cli = cliFolder({ prefix: 'tagger-cli-encoder-' });
const MODEL_SHA256 = '8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6';

describe('--encoder over the args', () => {
  it('alone gives the SGD model the encoder configuration was measured on', () => {
    const flagged = withEncoderFlag({ args: DEFAULT_TRAINING_ARGS, explicit: new Set() }, 'minilm');
    expect(flagged.explicit).toEqual(new Set(['encoder']));
    expect(flagged.args).toMatchObject({
      encoder: 'minilm',
      classifier: 'ovr',
      oversample: true,
      members: null,
      encoder_weight: 0.75,
      encoder_normalize: true,
    });
  });

  it('keeps what the args set, and refuses a classifier that reads no embeddings', () => {
    const given = { args: parseTrainingArgs({ encoder_weight: 2 }), explicit: new Set(['encoder_weight']) };
    expect(withEncoderFlag(given, 'minilm').args).toMatchObject({ classifier: 'ovr', encoder_weight: 2 });
    const bayes = {
      args: parseTrainingArgs({ classifier: 'multinomial_nb' }),
      explicit: new Set(['classifier']),
    };
    expect(() => withEncoderFlag(bayes, 'minilm')).toThrow(
      /"encoder" needs a classifier that reads embeddings/,
    );
    const vote = { args: parseTrainingArgs({ classifier: 'soft_vote' }), explicit: new Set(['classifier']) };
    expect(withEncoderFlag(vote, 'minilm').args.classifier).toBe('soft_vote');
    expect(() => withEncoderFlag({ args: DEFAULT_TRAINING_ARGS, explicit: new Set() }, ' ')).toThrow(
      /"encoder" must be null or a non-empty string/,
    );
  });
});

describe.skipIf(dir === null)('tagger train --encoder', () => {
  it('trains an encoder run that records its encoder and loads only with that encoder', async () => {
    const result = await cli.tagger(trainArgv(cli.store, ['--encoder', 'minilm', '--json']));
    expect(result.code, result.stderr).toBe(0);
    expect(result.stderr).toMatch(/tagger: encoder minilm \(local:.*; model sha256 8199be6f699a…, 384 dims/);
    expect(result.stderr).toMatch(/embedding: \d+\/\d+/);
    const { run_id: runId, metrics } = JSON.parse(result.stdout);
    expect(metrics.f1).toBeGreaterThan(0.5);
    const store = await openTrackingStore(cli.store);
    try {
      const run = (await store.getRun(runId))!;
      expect(run.params).toMatchObject({
        encoder: 'minilm',
        'encoder.model_sha256': MODEL_SHA256,
        'encoder.pooling': 'mean',
        'encoder.max_tokens': '256',
        'encoder.dim': '384',
      });
      expect(run.params['encoder.source']).toBe(`local:${dir}`);
      expect(run.tags['tagger.encoder.name']).toBe('minilm');
      expect(run.tags['tagger.encoder.tokenizer_sha256']).toMatch(/^be50c362/);
      expect(run.tags['tagger.model_format']).toBe(MODEL_FORMAT);
      // The encoder's configuration was measured on the SGD model (issue 25's soft vote takes no embeddings).
      expect(run.params).toMatchObject({ classifier: 'ovr', oversample: 'true', encoder_weight: '0.75' });
      const files = await modelFilesOf(store, runId);
      // Without an encoder a reader refuses it (tagger serve holds such a run back until it can run it).
      expect(() => decodeModel(files)).toThrow(/takes sentence embeddings from the encoder minilm/);
      const model = decodeModel(files, { withEncoder: true });
      const encoder = await openEncoderFor(model.encoder!);
      try {
        const texts = [
          'Object detection with YOLO on drone images',
          'Fine-tuning BERT for sentiment analysis',
        ];
        const predictions = model.predict(texts, await encoder.embed(texts));
        expect(predictions.map((p) => p.predicted_tag)).toEqual([
          'computer-vision',
          'natural-language-processing',
        ]);
      } finally {
        await encoder.close();
      }
      const wrong = { ...model.encoder!, model_sha256: '0'.repeat(64) };
      await expect(openEncoderFor(wrong)).rejects.toThrow(
        /this model needs the encoder minilm \(model\.onnx sha256 0{64}, .*model\.onnx has sha256 8199be6f.*, but the model was trained with 0{64}/,
      );
      await expect(openEncoderFor({ ...model.encoder!, dim: 512 })).rejects.toBeInstanceOf(EncoderError);
      // predict (texts, --explain, a file) and evaluate run the encoder run with its encoder.
      await expectComputerVision(runId);
      const explained = await cli.tagger([
        'predict',
        '--tracking-uri',
        cli.store,
        '--explain',
        'Fine-tuning BERT for sentiment analysis',
      ]);
      expect(explained.code, explained.stderr).toBe(0);
      expect(explained.stdout).toContain(`run ${runId}`);
      expect(explained.stdout).toMatch(/\(sentence embedding\) +encoder +-?\d\.\d{4}/);
      const evaluated = await cli.tagger([
        'evaluate',
        '--tracking-uri',
        cli.store,
        '--data',
        SAMPLE_DATA,
        '--json',
      ]);
      expect(evaluated.code, evaluated.stderr).toBe(0);
      const report = JSON.parse(evaluated.stdout);
      expect(report.run_id).toBe(runId);
      expect(report.performance.overall.f1).toBeGreaterThan(0.8);
      expect(report.behavioural.passed).toBeGreaterThan(0);
      const tags = join(cli.dir, 'encoder-tags.csv');
      const batch = await cli.tagger([
        'predict',
        '--tracking-uri',
        cli.store,
        '--input',
        SAMPLE_DATA,
        '--output',
        tags,
        '--quiet',
      ]);
      expect(batch.code, batch.stderr).toBe(0);
      const written = parse(await readFile(tags, 'utf8'), { columns: true }) as Record<string, string>[];
      expect(Object.keys(written[0]!)).toContain('predicted_tag');
      expect(written).toHaveLength(report.rows);
      expect(written.filter((row) => row.predicted_tag === 'computer-vision').length).toBeGreaterThan(10);
      const [logged] = await store.searchLoggedModels(run.info.experimentId, { sourceRunId: runId });
      const mlmodel = new TextDecoder().decode(
        await store.readLoggedModelArtifact(logged!.modelId, 'MLmodel'),
      );
      expect(mlmodel).toMatch(/encoder:\n\s+dim: 384\n\s+max_tokens: 256\n\s+model_sha256: 8199be6f/);
      expect(logged!.params['encoder.tokenizer_sha256']).toMatch(/^be50c362/);
    } finally {
      await store.close();
    }
  }, 120_000);

  it('refuses a bad encoder with one line before training, logging nothing', async () => {
    const store = join(cli.dir, 'bad-store');
    for (const [flags, message] of [
      [['--encoder', join(cli.dir, 'no-such-encoder')], /encoder .*no-such-encoder: no such directory/],
      [['--args', '{"encoder": "no-such-org/no-such-model"}'], /encoder no-such-org\/no-such-model: /],
      [['--encoder', SAMPLE_DATA], /is a file; give the directory/],
    ] as const) {
      const result = await cli.tagger(['train', '--data', SAMPLE_DATA, ...flags, '--tracking-uri', store], {
        HF_HUB_CACHE: join(cli.dir, 'empty-hf-cache'),
      });
      expectCleanFailure(result, message);
      expect(result.stderr.trim().split('\n')).toHaveLength(1);
      expect(result.stderr).not.toMatch(/training:/);
    }
    await expect(readFile(join(store, '0', 'meta.yaml'))).rejects.toThrow();
  }, 120_000);
});

describe.skipIf(dir === null)('tagger train --encoder --cascade', () => {
  it('trains a cascade run: τ and why in its params, the curve as an artifact, served by predict and evaluate', async () => {
    const result = await cli.tagger(trainArgv(cli.store, ['--encoder', 'minilm', '--cascade', '--json']));
    expect(result.code, result.stderr).toBe(0);
    expect(result.stderr).toMatch(/cascade: 5\/5 folds/);
    const { run_id: runId, cascade } = JSON.parse(result.stdout);
    expect(cascade.rule).toBe('tolerance');
    expect(cascade.threshold).toBeGreaterThan(0);
    expect(cascade.threshold).toBeLessThanOrEqual(1);
    expect(cascade.artifact).toBe(RUN_ARTIFACTS.cascadeCurve);
    expect(cascade.test.routed).toBeGreaterThanOrEqual(0);
    const store = await openTrackingStore(cli.store);
    try {
      const run = (await store.getRun(runId))!;
      expect(run.params).toMatchObject({
        cascade: 'true',
        'cascade.rule': 'tolerance',
        'cascade.fast_classifier': 'soft_vote',
      });
      expect(run.params['cascade.reason']).toMatch(/fewest training rows routed|no threshold came within/);
      const curve = JSON.parse(
        new TextDecoder().decode(await store.readArtifact(runId, RUN_ARTIFACTS.cascadeCurve)),
      );
      expect(curve.points).toHaveLength(100);
      const files = await modelFilesOf(store, runId);
      const model = decodeModel(files, { withEncoder: true });
      expect(isCascade(model) && model.routingThreshold).toBe(cascade.threshold);
      // Batch tagging embeds only the routed texts, and answers as the model does with every embedding.
      const tags = join(cli.dir, 'cascade-tags.csv');
      const batch = await cli.tagger([
        'predict',
        '--tracking-uri',
        cli.store,
        '--run-id',
        runId,
        '--input',
        SAMPLE_DATA,
        '--output',
        tags,
        '--quiet',
      ]);
      expect(batch.code, batch.stderr).toBe(0);
      const written = parse(await readFile(tags, 'utf8'), { columns: true }) as Record<string, string>[];
      const rows = await readDataset(SAMPLE_DATA);
      const encoder = await openEncoderFor(model.encoder!);
      try {
        const texts = rows.map((row) => row.text);
        const expected = model.predict(texts, await encoder.embed(texts));
        expect(written.map((row) => row.predicted_tag)).toEqual(expected.map((p) => p.predicted_tag));
        expect(expected.some((p) => p.stage === 'encoder') && expected.some((p) => p.stage === 'fast')).toBe(
          true,
        );
      } finally {
        await encoder.close();
      }
    } finally {
      await store.close();
    }
    await expectComputerVision(runId);
    const evaluated = await cli.tagger([
      'evaluate',
      '--tracking-uri',
      cli.store,
      '--run-id',
      runId,
      '--data',
      SAMPLE_DATA,
    ]);
    expect(evaluated.code, evaluated.stderr).toBe(0);
    expect(evaluated.stdout).toMatch(/overall: precision/);
  }, 180_000);

  it('refuses a cascade without an encoder, or with two rules, in one line before reading anything', async () => {
    for (const [flags, message] of [
      [['--cascade'], /no encoder is named; pass --encoder minilm/],
      [
        [
          '--encoder',
          'minilm',
          '--cascade',
          '--args',
          '{"cascade_threshold": 0.9, "cascade_max_routed": 0.2}',
        ],
        /contradict each other/,
      ],
      [
        ['--encoder', 'minilm', '--cascade', '--args', '{"cascade_threshold": 0}'],
        /"cascade_threshold" must be a number in \(0, 1\]/,
      ],
      [
        ['--encoder', 'minilm', '--cascade', '--args', '{"cascade_max_routed": 1}'],
        /strictly between 0 and 1/,
      ],
    ] as const) {
      const result = await cli.tagger([
        'train',
        '--data',
        SAMPLE_DATA,
        ...flags,
        '--tracking-uri',
        join(cli.dir, 'cascade-bad'),
      ]);
      expectCleanFailure(result, message);
      expect(result.stderr.trim().split('\n')).toHaveLength(1);
    }
  }, 120_000);
});

describe.skipIf(dir === null)('tagger optimize --encoder', () => {
  it('searches with the encoder in every trial and encoder_weight in the space', async () => {
    const output = join(cli.dir, 'best-args.json');
    const result = await cli.tagger([
      'optimize',
      '--data',
      SAMPLE_DATA,
      '--encoder',
      'minilm',
      '--args',
      FAST_ARGS,
      '--trials',
      '2',
      '--folds',
      '3',
      '--cv-workers',
      '1',
      '--tracking-uri',
      cli.store,
      '--output',
      output,
      '--json',
    ]);
    expect(result.code, result.stderr).toBe(0);
    const summary = JSON.parse(result.stdout);
    expect(summary.trials).toHaveLength(2);
    for (const trial of summary.trials) expect(trial.args.encoder).toBe('minilm');
    expect(summary.trials[1].args.encoder_weight).not.toBe(summary.trials[0].args.encoder_weight);
    // The embeddings were computed once, before the search.
    expect(result.stderr.match(/tagger: encoder minilm/g)).toHaveLength(1);
    expect(JSON.parse(await readFile(output, 'utf8')).encoder).toBe('minilm');
  }, 180_000);
});
