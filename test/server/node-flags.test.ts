import { describe, expect, it } from 'vitest';
import { SERVE_NODE_FLAGS, serveExecArgv } from '../../src/server/node-flags.js';

describe('serveExecArgv', () => {
  it('appends the serve flags after the existing arguments', () => {
    expect(SERVE_NODE_FLAGS).toEqual(['--max-semi-space-size=8', '--heap-growing-percent=20', '--no-maglev']);
    expect(serveExecArgv(['--import', 'tsx'], '')).toEqual(['--import', 'tsx', ...SERVE_NODE_FLAGS]);
    expect(serveExecArgv([], '')).toEqual(SERVE_NODE_FLAGS);
  });

  it("keeps the user's own setting, from the command line (either spelling) or NODE_OPTIONS", () => {
    expect(serveExecArgv(['--max-semi-space-size=32'], '')).toEqual([
      '--max-semi-space-size=32',
      '--heap-growing-percent=20',
      '--no-maglev',
    ]);
    expect(serveExecArgv(['--max_semi_space_size=2', '--heap_growing_percent=50', '--maglev'], '')).toEqual([
      '--max_semi_space_size=2',
      '--heap_growing_percent=50',
      '--maglev',
    ]);
    expect(
      serveExecArgv(
        ['--enable-source-maps', '--no-maglev'],
        '--max-old-space-size=512 --max-semi-space-size=1 --heap-growing-percent=0',
      ),
    ).toEqual(['--enable-source-maps', '--no-maglev']);
  });

  it('does not take other flags or values for the serve flags', () => {
    expect(serveExecArgv(['--max-old-space-size=512', 'max-semi-space-size'], '--inspect')).toEqual([
      '--max-old-space-size=512',
      'max-semi-space-size',
      ...SERVE_NODE_FLAGS,
    ]);
  });
});
