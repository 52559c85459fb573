/**
 * `tagger train`'s behavioural summary on someone else's data (issue 27, item 13): the default suite is
 * written for dataset.csv's tags, and on other data it printed one "skipped" line per case (23) and
 * failures with a meaningless pass rate; `--quiet` printed all of it too. Now a suite that fits none of
 * the model's tags is not run (one line says why and what to do), skipped cases are one line, and
 * `--quiet` prints only the run and its scores. Commands run in-process (test/support/cli.ts).
 */
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { cliFolder, trainArgv } from '../support/cli.js';
import { SAMPLE_DATA } from '../support/components.js';

const cli = cliFolder({ prefix: 'tagger-behaviour-summary-' });
const tagger = cli.tagger;

/** A small data set of other tags than dataset.csv's: sports and cooking. */
function foreignData(): string {
  const topics: Record<string, [string[], string[]]> = {
    football: [
      ['striker', 'goalkeeper', 'penalty', 'midfield', 'league', 'offside', 'corner kick', 'derby'],
      ['scores in the derby', 'saves a late penalty', 'wins the league title', 'misses an open goal'],
    ],
    tennis: [
      ['serve', 'backhand', 'tiebreak', 'grand slam', 'clay court', 'baseline rally', 'volley', 'ace'],
      ['wins in straight sets', 'saves three match points', 'loses the final set', 'breaks serve twice'],
    ],
    cooking: [
      ['risotto', 'sourdough', 'braised lamb', 'pesto', 'curry', 'omelette', 'ramen broth', 'pastry'],
      ['with fresh herbs', 'slowly simmered for hours', 'baked until golden', 'seasoned with garlic'],
    ],
  };
  const rows = ['title,description,tag'];
  for (const [tag, [subjects, endings]] of Object.entries(topics)) {
    for (const [i, subject] of subjects.entries()) {
      for (const [j, ending] of endings.entries())
        rows.push(`${subject} story ${i}-${j},The ${subject} ${ending},${tag}`);
    }
  }
  return `${rows.join('\n')}\n`;
}

let foreign: string;
let partial: string;
beforeAll(async () => {
  foreign = join(cli.dir, 'sports.csv');
  await writeFile(foreign, foreignData());
  // The sample data with two of dataset.csv's tags renamed: the suite fits the model in part.
  partial = join(cli.dir, 'renamed.csv');
  const sample = await readFile(SAMPLE_DATA, 'utf8');
  await writeFile(partial, sample.replace(/,mlops$/gm, ',devops').replace(/,computer-vision$/gm, ',vision'));
});

const train = (data: string, ...more: string[]) => tagger(trainArgv(cli.store, more, { data }));

describe('the behavioural summary of tagger train', () => {
  it('on a model of other tags: the default suite is not run, in one line that says what it is for', async () => {
    const result = await train(foreign);
    expect(result.code, result.stderr).toBe(0);
    const lines = result.stdout.trim().split('\n');
    const behaviour = lines.filter((line) => /behavioural|skipped|FAILED/i.test(line));
    expect(behaviour).toEqual([
      "Behavioural tests (default (dataset.csv tags)): not run: its cases expect the tags computer-vision, mlops, natural-language-processing, and this model has none of them (its tags: cooking, football, other, tennis); the suite is written for a model of Made With ML's dataset.csv: its cases expect that file's tags (computer-vision, mlops, natural-language-processing, other); for your own tags, write cases and pass them with --behaviour <file> (a commented example: samples/behaviour.yaml)",
    ]);
    const json = JSON.parse((await train(foreign, '--json')).stdout) as {
      behavioural: { pass_rate: number | null; skipped: number };
    };
    // No pass rate, so no behavioural_pass_rate metric on the run and nothing for the promotion gate to read.
    expect(json.behavioural).toMatchObject({ pass_rate: null, skipped: 36 });
  });

  it('on a model that shares some of its tags: the skipped cases are one line naming the missing tags', async () => {
    const result = await train(partial);
    expect(result.code, result.stderr).toBe(0);
    const skipped = result.stdout.split('\n').filter((line) => /skipped/.test(line));
    expect(skipped).toHaveLength(2);
    expect(skipped[0]).toMatch(
      /^Behavioural tests \(default \(dataset\.csv tags\)\): \d+\/\d+ passed .*, 14 skipped$/,
    );
    expect(skipped[1]).toMatch(
      /^ {2}14 of 36 cases skipped: they name tags this model does not have \(computer-vision, mlops\); the suite is written for a model of Made With ML's dataset\.csv: .*--behaviour <file>/,
    );
  });

  it('--quiet prints the run and its scores only', async () => {
    for (const data of [foreign, partial, SAMPLE_DATA]) {
      const result = await train(data, '--quiet');
      expect(result.code, result.stderr).toBe(0);
      const lines = result.stdout.trim().split('\n');
      expect(lines).toHaveLength(2);
      expect(lines[0]).toMatch(
        /^Logged run [0-9a-f]{32} \(train-[\d-]+\) to experiment 'best' in \S+( \(.+\))?\.$/,
      );
      expect(lines[1]).toMatch(
        /^Test split \(\d+ rows\): precision \d\.\d{4}, recall \d\.\d{4}, f1 \d\.\d{4}$/,
      );
    }
  });
});
