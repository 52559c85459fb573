/**
 * `tagger predict --input … --keep-columns` (issue 27, item 15): the input's id column is kept in the
 * output by default, other columns when named, none with `--keep-columns ''`. In-process commands.
 */
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { cliFolder, expectCleanFailure } from '../support/cli.js';

const cli = cliFolder({ prefix: 'tagger-keep-cli-', trained: true });
const tagger = cli.tagger;

const header = async (path: string): Promise<string[]> =>
  (await readFile(path, 'utf8')).split('\n')[0]!.split(',');

describe('tagger predict --input --keep-columns', () => {
  it('keeps id by default, the columns named, or none', async () => {
    const input = join(cli.dir, 'in.csv');
    await writeFile(input, 'id,source,text\nA1,web,object detection\nA2,rss,sentiment analysis\n');
    const run = (output: string, ...more: string[]) =>
      tagger([
        'predict',
        '--input',
        input,
        '--output',
        join(cli.dir, output),
        '--tracking-uri',
        cli.store,
        '--quiet',
        ...more,
      ]);
    expect((await run('default.csv')).code).toBe(0);
    expect((await header(join(cli.dir, 'default.csv'))).slice(0, 3)).toEqual(['line', 'id', 'text']);
    expect((await run('named.csv', '--keep-columns', 'source, id')).code).toBe(0);
    expect((await header(join(cli.dir, 'named.csv'))).slice(0, 4)).toEqual(['line', 'source', 'id', 'text']);
    expect((await run('none.csv', '--keep-columns', '')).code).toBe(0);
    expect((await header(join(cli.dir, 'none.csv'))).slice(0, 2)).toEqual(['line', 'text']);
    expectCleanFailure(await run('bad.csv', '--keep-columns', 'lang'), /has no column 'lang' to keep/);
    expectCleanFailure(
      await tagger(['predict', '--keep-columns', 'id', 'a text'], { MLFLOW_TRACKING_URI: cli.store }),
      /--keep-columns, .*go with --input <file>/,
    );
  });
});
