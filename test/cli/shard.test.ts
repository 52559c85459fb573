/**
 * `tagger predict --input … --shard <i>/<n>`: n real processes over one file, each writing its part; the
 * union of the parts, merged by line, is a single process's output row for row, every row tagged once,
 * and the bad rows are reported once, by the shard they fall to. CSV (with rows without text) and JSON
 * Lines (with lines that are not JSON).
 */
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parse } from 'csv-parse/sync';
import { describe, expect, it } from 'vitest';
import { cliFolder, expectCleanFailure, spawnCli } from '../support/cli.js';
import { SAMPLE_DATA } from '../support/components.js';

const cli = cliFolder({ prefix: 'tagger-cli-shard-', trained: true });

const SHARDS = 3;

/** The bad rows a run reported on stderr, as `line: reason`. */
const badLines = (stderr: string): string[] =>
  [...stderr.matchAll(/: line (\d+): (.*); skipped/g)].map((m) => `${m[1]}: ${m[2]}`);

/** Rows of an output file (CSV or JSON Lines), each as its text. */
async function outputRows(path: string): Promise<Record<string, unknown>[]> {
  const text = await readFile(path, 'utf8');
  if (path.endsWith('.csv')) return parse(text, { columns: true }) as Record<string, unknown>[];
  return text
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}

async function shardedEqualsSingle(input: string, extension: 'csv' | 'jsonl'): Promise<void> {
  const common = ['predict', '--tracking-uri', cli.store, '--input', input, '--quiet'];
  const single = join(cli.dir, `single.${extension}`);
  const parts = Array.from({ length: SHARDS }, (_, i) => join(cli.dir, `part-${i}.${extension}`));
  // The single run and the n shards as separate processes, all at once.
  const [whole, ...shards] = await Promise.all([
    spawnCli([...common, '--output', single], { cwd: cli.dir }),
    ...parts.map((part, i) =>
      spawnCli([...common, '--output', part, '--shard', `${i}/${SHARDS}`], { cwd: cli.dir }),
    ),
  ]);
  expect(whole!.code, whole!.stderr).toBe(0);
  for (const shard of shards) expect(shard.code, shard.stderr).toBe(0);

  const expected = await outputRows(single);
  const byPart = await Promise.all(parts.map(outputRows));
  for (const rows of byPart) {
    // Every part has rows, in the input's order.
    expect(rows.length).toBeGreaterThan(0);
    const lines = rows.map((row) => Number(row.line));
    expect(lines).toEqual([...lines].sort((a, b) => a - b));
  }
  const union = byPart.flat().sort((a, b) => Number(a.line) - Number(b.line));
  expect(union).toHaveLength(expected.length);
  expect(union).toEqual(expected);
  // Bad rows: each reported once, by one shard, and all of them.
  const badBySingle = badLines(whole!.stderr);
  expect(badBySingle.length).toBeGreaterThan(0);
  const badByShards = shards.flatMap((shard) => badLines(shard.stderr));
  expect(badByShards.sort()).toEqual([...badBySingle].sort());
  expect(shards[0]!.stdout).toMatch(new RegExp(`\\(shard 0/${SHARDS}\\) into `));
}

describe('tagger predict --shard', () => {
  it('n processes over one CSV file: the union of their parts is the single run, row for row', async () => {
    const rows = (await readFile(SAMPLE_DATA, 'utf8')).trimEnd().split('\n');
    // Rows without text among the sample's rows (the sample's own rows may span lines: put them at its end).
    const input = join(cli.dir, 'with-bad-rows.csv');
    await writeFile(
      input,
      [...rows, '9001,2020-01-01,,,mlops', ...rows.slice(1, 40), '9002,2020-01-01,,,other', ''].join('\n'),
    );
    await shardedEqualsSingle(input, 'csv');
  }, 300_000);

  it('n processes over one JSON Lines file, lines that are not JSON included', async () => {
    const records = (
      parse(await readFile(SAMPLE_DATA, 'utf8'), { columns: true }) as Record<string, string>[]
    )
      .slice(0, 120)
      .map((row) => JSON.stringify({ id: row.id, text: `${row.title} ${row.description}` }));
    const input = join(cli.dir, 'with-bad-lines.jsonl');
    await writeFile(
      input,
      [
        ...records.slice(0, 50),
        '{not json',
        ...records.slice(50, 100),
        '[1, 2]',
        ...records.slice(100),
        '',
      ].join('\n'),
    );
    await shardedEqualsSingle(input, 'jsonl');
  }, 300_000);

  it('refuses a shard outside its count, and --shard without --input', async () => {
    const input = ['predict', '--tracking-uri', cli.store, '--input', SAMPLE_DATA, '--output', 'x.csv'];
    expectCleanFailure(
      await cli.tagger([...input, '--shard', '3/3']),
      /--shard must be <i>\/<n> with 0 ≤ i < n/,
    );
    expectCleanFailure(await cli.tagger([...input, '--shard', '1/0']), /--shard must be <i>\/<n>/);
    expectCleanFailure(await cli.tagger([...input, '--shard', 'a/b']), /--shard must be <i>\/<n>/);
    expectCleanFailure(
      await cli.tagger(['predict', '--tracking-uri', cli.store, '--shard', '0/2', 'some text']),
      /--shard .* go with --input/,
    );
  });
});
