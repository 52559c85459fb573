/**
 * The machine-wide lock of the image build (test/support/machine-lock.ts) is released however the build
 * ends. Before, a build whose test worker was torn down (its beforeAll had timed out) kept the lock until
 * it went stale after 20 minutes, so the next run's build waited that long and timed out in turn.
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT, TSX_LOADER } from './components.js';
import { LockTimeoutError, withMachineLock } from './machine-lock.js';
import { useTempDir } from './temp-dir.js';

const scratch = useTempDir('tagger-lock-test-');
const LOCK_MODULE = pathToFileURL(resolve(REPO_ROOT, 'test', 'support', 'machine-lock.ts')).href;

describe('withMachineLock', () => {
  it('takes over at once a lock whose holder was killed without releasing it', async () => {
    // A holder that never finishes, killed the way a torn-down test worker is.
    const holder = spawn(
      process.execPath,
      [
        '--import',
        TSX_LOADER,
        '--input-type=module',
        '-e',
        `const { withMachineLock } = await import(${JSON.stringify(LOCK_MODULE)});
         await withMachineLock('killed', () => { console.log('held'); return new Promise(() => setInterval(() => {}, 1000)); }, { dir: ${JSON.stringify(scratch.path)} });`,
      ],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    await new Promise<void>((done) =>
      holder.stdout!.on('data', (chunk: Buffer) => chunk.includes('held') && done()),
    );
    const exited = new Promise((done) => holder.once('exit', done));
    holder.kill('SIGKILL');
    await exited;
    expect(existsSync(join(scratch.path, 'killed.lock')), 'the killed holder left its lock behind').toBe(
      true,
    );

    const told: string[] = [];
    const started = performance.now();
    const result = await withMachineLock('killed', async () => 'mine', {
      dir: scratch.path,
      onWait: (m) => told.push(m),
    });
    expect(result).toBe('mine');
    expect(performance.now() - started).toBeLessThan(5_000);
    expect(told.join('\n')).toMatch(/taking over .*its holder is gone/);
    expect(existsSync(join(scratch.path, 'killed.lock'))).toBe(false);
  }, 60_000);

  it('stops a work that runs past its time limit and releases the lock right then', async () => {
    let aborted = false;
    const never = (signal: AbortSignal) =>
      new Promise<string>(() => {
        signal.addEventListener('abort', () => {
          aborted = true;
        });
      });
    await expect(withMachineLock('slow', never, { dir: scratch.path, timeoutMs: 300 })).rejects.toThrow(
      LockTimeoutError,
    );
    expect(aborted).toBe(true);
    expect(existsSync(join(scratch.path, 'slow.lock'))).toBe(false);
    const started = performance.now();
    await withMachineLock('slow', async () => undefined, { dir: scratch.path });
    expect(performance.now() - started).toBeLessThan(1_000);
  });

  it('waits while a live holder works, and says so', async () => {
    const told: string[] = [];
    let release!: () => void;
    const first = withMachineLock('busy', () => new Promise<void>((done) => (release = done)), {
      dir: scratch.path,
    });
    await new Promise((done) => setTimeout(done, 50));
    const second = withMachineLock('busy', async () => 'second', {
      dir: scratch.path,
      onWait: (m) => told.push(m),
    });
    await new Promise((done) => setTimeout(done, 700));
    expect(told.join('\n')).toMatch(/waiting for the lock .* held by pid \d+/);
    release();
    await first;
    expect(await second).toBe('second');
  });
});
