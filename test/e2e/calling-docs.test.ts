/**
 * Every example of docs/calling.md ("Calling Tagger") runs against a real server on loopback: its curl
 * lines in bash (`curl -sf`, `jq -e`: a wrong answer fails them), its Python with the project's venv
 * (requests, tritonclient, huggingface_hub) and its TypeScript with Node and tsx, each with the server's
 * address in place of the page's `127.0.0.1:8000`. A failing example fails here, so the page stays true.
 */
import { execFile } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { locateBinary, REPO_ROOT, TSX_LOADER, venvPython } from '../support/components.js';
import { killServers, type ServerProcess, spawnServer } from '../support/serve-process.js';
import { useServingFixture } from '../support/serving-fixture.js';
import { useTempDir } from '../support/temp-dir.js';

const run = promisify(execFile);
const PAGE = join(REPO_ROOT, 'docs', 'calling.md');
const python = venvPython();
const jq = locateBinary('jq', '/usr/bin/jq', 'install it with `apt-get install jq`');
const curl = locateBinary('curl', '/usr/bin/curl', 'install it with `apt-get install curl`');

/** The page's fenced examples, with the heading they are under. */
function examples(): { heading: string; lang: string; code: string }[] {
  const out: { heading: string; lang: string; code: string }[] = [];
  let heading = '';
  const lines = readFileSync(PAGE, 'utf8').split('\n');
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    if (line.startsWith('## ')) heading = line.slice(3);
    const fence = /^```(sh|python|ts)$/.exec(line);
    if (!fence) continue;
    const body: string[] = [];
    for (i += 1; i < lines.length && lines[i] !== '```'; i++) body.push(lines[i]!);
    out.push({ heading, lang: fence[1]!, code: body.join('\n') });
  }
  return out;
}

const fx = useServingFixture();
const scratch = useTempDir('tagger-calling-');
let server: ServerProcess;

beforeAll(async () => {
  server = await spawnServer({ MLFLOW_TRACKING_URI: fx.dir });
}, 90_000);

afterAll(() => {
  killServers();
});

const cases = examples();

describe('docs/calling.md', () => {
  it('has curl, Python and TypeScript examples for each protocol', () => {
    const headings = new Set(cases.map((c) => c.heading));
    expect(headings.size).toBe(3);
    for (const heading of headings) {
      const langs = new Set(cases.filter((c) => c.heading === heading).map((c) => c.lang));
      expect([heading, [...langs].sort()]).toEqual([heading, ['python', 'sh', 'ts']]);
    }
  });

  it.each(cases.map((c, i) => [`${c.heading}: ${c.lang} example ${i + 1}`, c] as const))(
    '%s runs',
    async (_name, example) => {
      const host = new URL(server.url).host;
      const code = example.code.replaceAll('127.0.0.1:8000', host);
      const file = join(
        scratch.path,
        `example-${cases.indexOf(example)}.${{ python: 'py', sh: 'sh', ts: 'mts' }[example.lang]}`,
      );
      writeFileSync(file, example.lang === 'ts' ? `${code}\nexport {};\n` : code);
      if (example.lang === 'python' && python === null) return;
      if (example.lang === 'sh' && (jq === null || curl === null)) return;
      const [command, args] =
        example.lang === 'python'
          ? [python!, [file]]
          : example.lang === 'sh'
            ? ['bash', ['-euo', 'pipefail', file]]
            : [process.execPath, ['--import', TSX_LOADER, file]];
      const { stdout } = await run(command, args, { timeout: 60_000, cwd: scratch.path });
      expect(stdout.trim().length).toBeGreaterThan(0);
    },
    90_000,
  );
});
