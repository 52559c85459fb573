/**
 * `tagger predict`: texts, explanations and whole files, with the best run of a store. Commands run in-
 * process (test/support/cli.ts); real files, a real local store.
 */
import { readdir, readFile, truncate, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { cliFolder, expectCleanFailure, FAST_ARGS, trainArgv } from '../support/cli.js';

const cli = cliFolder({ trained: true });
const tagger = cli.tagger;

describe('tagger predict', () => {
  it('predicts with the best run, in order, one prediction per text', async () => {
    const result = await tagger(
      ['predict', 'Object detection with YOLO', 'Sentiment analysis of tweets with BERT'],
      { MLFLOW_TRACKING_URI: cli.store },
    );
    expect(result.code, result.stderr).toBe(0);
    const output = JSON.parse(result.stdout);
    expect(output.run_id).toMatch(/^[0-9a-f]{32}$/);
    expect(output.predictions.map((p: { input_text: string }) => p.input_text)).toEqual([
      'Object detection with YOLO',
      'Sentiment analysis of tweets with BERT',
    ]);
    for (const prediction of output.predictions) {
      const total = Object.values(prediction.predicted_probabilities as Record<string, number>).reduce(
        (a, b) => a + b,
        0,
      );
      expect(total).toBeCloseTo(1, 6);
      expect(Object.keys(prediction.predicted_probabilities)).toContain(prediction.predicted_tag);
    }
  });

  it('--explain prints, per text, how the vote combined its members and each member’s table adding up to its score', async () => {
    const texts = ['Object detection with YOLO', 'Sentiment analysis of tweets with BERT'];
    const plain = JSON.parse(
      (await tagger(['predict', ...texts], { MLFLOW_TRACKING_URI: cli.store })).stdout,
    );
    const result = await tagger(['predict', '--explain', ...texts], { MLFLOW_TRACKING_URI: cli.store });
    expect(result.code, result.stderr).toBe(0);
    const blocks = result.stdout.trim().split('\n\n');
    expect(blocks[0]).toBe(`run ${plain.run_id}`);
    expect(blocks).toHaveLength(3);
    const value = (line: string) => Number(line.trim().split(/\s+/).at(-1));
    for (const [i, block] of blocks.slice(1).entries()) {
      const lines = block.split('\n');
      const tag = plain.predictions[i].predicted_tag;
      const probability = plain.predictions[i].predicted_probabilities[tag];
      expect(lines[0]).toBe(`${JSON.stringify(texts[i])} → ${tag} (probability ${probability.toFixed(4)})`);
      expect(lines[1]).toMatch(
        /^soft vote of 3 members: p\(.+\) = Σ weight × member's p \/ Σ weight; no per-feature split/,
      );
      // The vote: each member's weight and probability of the tag, and their weighted mean.
      expect(lines[2]).toMatch(new RegExp(`^member +weight +link +p\\(${tag}\\)$`));
      const members = lines.slice(3, 6).map((line) => line.split(/\s+/));
      expect(members.map((m) => [m[0], m[2]])).toEqual([
        ['linear_svm', 'platt'],
        ['nb_lr', 'ovr'],
        ['multinomial_nb', 'softmax'],
      ]);
      const weights = members.map((m) => Number(m[1]));
      const mean =
        members.reduce((sum, m) => sum + Number(m[1]) * Number(m[3]), 0) /
        (weights[0]! + weights[1]! + weights[2]!);
      expect(lines[6]).toMatch(
        new RegExp(`^= vote +${weights[0]! + weights[1]! + weights[2]!} +${probability.toFixed(4)}$`),
      );
      expect(mean).toBeCloseTo(probability, 3);
      // Each member: a line saying how its score became its probability, then its table adding up to the score.
      const tables = lines
        .slice(7)
        .join('\n')
        .split(/^(?=\S)/m);
      expect(tables).toHaveLength(3);
      for (const [m, table] of tables.entries()) {
        const [title, header, ...rows] = table.trimEnd().split('\n');
        expect(title).toMatch(
          new RegExp(
            `^${members[m]![0]} \\((tfidf|binary) features\\): its score of ${tag}, then .* → ${members[m]![3]}$`,
          ),
        );
        expect(header).toMatch(/^ {2}feature +analyzer +contribution$/);
        expect(rows.at(-1)).toMatch(new RegExp(`^ {2}= score of ${tag} +-?\\d+\\.\\d{4}$`));
        const parts = rows.slice(0, -1).map(value);
        expect(parts.reduce((a, b) => a + b, 0)).toBeCloseTo(value(rows.at(-1)!), 3);
        expect(rows.length).toBeGreaterThan(3);
      }
    }
  });

  it('--explain prints an SGD model’s table whose contributions, rest and bias add up to the score', async () => {
    const store = join(cli.dir, 'sgd-mlruns');
    const trained = await tagger(
      trainArgv(store, ['--quiet'], {
        args: JSON.stringify({ ...JSON.parse(FAST_ARGS), classifier: 'ovr', oversample: true }),
      }),
    );
    expect(trained.code, trained.stderr).toBe(0);
    const texts = ['Object detection with YOLO', 'Sentiment analysis of tweets with BERT'];
    const plain = JSON.parse((await tagger(['predict', ...texts], { MLFLOW_TRACKING_URI: store })).stdout);
    const result = await tagger(['predict', '--explain', ...texts], { MLFLOW_TRACKING_URI: store });
    expect(result.code, result.stderr).toBe(0);
    const blocks = result.stdout.trim().split('\n\n');
    expect(blocks[0]).toBe(`run ${plain.run_id}`);
    expect(blocks).toHaveLength(3);
    for (const [i, block] of blocks.slice(1).entries()) {
      const lines = block.split('\n');
      const tag = plain.predictions[i].predicted_tag;
      expect(lines[0]).toBe(
        `${JSON.stringify(texts[i])} → ${tag} (probability ${plain.predictions[i].predicted_probabilities[tag].toFixed(4)})`,
      );
      expect(lines[1]).toMatch(/^feature +analyzer +contribution$/);
      const value = (line: string) => Number(line.trim().split(/\s+/).at(-1));
      const parts = lines.slice(2, -1).map(value);
      expect(lines.at(-1)).toMatch(new RegExp(`^= score of ${tag} +-?\\d+\\.\\d{4}$`));
      expect(parts.reduce((a, b) => a + b, 0)).toBeCloseTo(value(lines.at(-1)!), 3);
      expect(lines.slice(2, -3).length).toBeGreaterThan(0);
    }
  });

  it('--input tags a file into --output, reporting bad rows by line and going on', async () => {
    const input = join(cli.dir, 'to-tag.csv');
    await writeFile(input, 'title,description\nBERT,sentiment analysis\n,\nYOLO,object detection\n');
    const output = join(cli.dir, 'tagged.jsonl');
    const result = await tagger(['predict', '--input', input, '--output', output], {
      MLFLOW_TRACKING_URI: cli.store,
    });
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toMatch(
      /^Tagged 2 of 3 rows of .*to-tag\.csv into .*tagged\.jsonl \(1 bad row skipped\) in \d+\.\d s with run [0-9a-f]{32}\.\n$/,
    );
    expect(result.stderr).toContain(`tagger: ${input}: line 3: no text; skipped`);
    // Not a terminal: plain progress lines with the rate, never escape codes.
    expect(result.stderr).toMatch(/^tagging: 100% 3 rows, \d+ rows\/s, ETA 0 s$/m);
    expect(result.stderr).not.toContain('\u001b[');
    const rows = (await readFile(output, 'utf8'))
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line));
    expect(rows.map((row) => [row.line, row.text])).toEqual([
      [2, 'BERT sentiment analysis'],
      [4, 'YOLO object detection'],
    ]);
    expectCleanFailure(
      await tagger(['predict', 'a text', '--input', input, '--output', output], {
        MLFLOW_TRACKING_URI: cli.store,
      }),
      /give texts or --input <file>, not both/,
    );
    expectCleanFailure(
      await tagger(['predict', '--input', input], { MLFLOW_TRACKING_URI: cli.store }),
      /--input needs --output/,
    );
    expectCleanFailure(
      await tagger(
        ['predict', '--input', input, '--output', join(cli.dir, 'x.csv'), '--text-column', 'body'],
        {
          MLFLOW_TRACKING_URI: cli.store,
        },
      ),
      /has no column 'body' \(its columns: title, description\)/,
    );
  });

  it('reports an unknown run id', async () => {
    expectCleanFailure(
      await tagger(['predict', '--run-id', 'f'.repeat(32), 'text'], { MLFLOW_TRACKING_URI: cli.store }),
      new RegExp(`${'f'.repeat(32)}`),
    );
  });

  it('refuses a run whose weights.bin is not the size its manifest states, before reading it (issue 42)', async () => {
    const store = join(cli.dir, 'mlruns-sparse');
    const trained = await tagger([...trainArgv(store), '--no-label-issues', '--json']);
    expect(trained.code, trained.stderr).toBe(0);
    const runId = JSON.parse(trained.stdout).run_id as string;
    const experiment = (await readdir(store)).find((name) => /^\d+$/.test(name) && name !== '0')!;
    const weights = join(store, experiment, runId, 'artifacts', 'model', 'weights.bin');
    const stated = (await readFile(weights)).length;
    await truncate(weights, 1024 ** 3); // sparse: no disk, but 1 GiB to read
    expectCleanFailure(
      await tagger(['predict', '--run-id', runId, '--tracking-uri', store, 'text']),
      new RegExp(
        `run ${runId} cannot be used for predictions: model/: weights\\.bin is 1073741824 bytes, but tagger-model\\.json says ${stated}`,
      ),
    );
  });

  it('reports an empty store with what to do', async () => {
    expectCleanFailure(
      await tagger(['predict', 'text'], { MLFLOW_TRACKING_URI: join(cli.dir, 'empty-store') }),
      /tagger train/,
    );
  });
});
