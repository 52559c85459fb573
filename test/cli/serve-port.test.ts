/**
 * `tagger serve` on a port that is taken (issue 27, item 15): the message named only `--port`, which a
 * newcomer who ran `npm start` cannot pass as such; it now says how with either command (and the
 * variable). In-process command, a real listening socket.
 */
import { createServer, type Server } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cliFolder, expectCleanFailure } from '../support/cli.js';
import { useServingFixture } from '../support/serving-fixture.js';

const fx = useServingFixture();
const cli = cliFolder({ prefix: 'tagger-serve-port-' });
let taken: Server;
let port: number;

beforeAll(async () => {
  taken = createServer();
  await new Promise<void>((listening) => taken.listen(0, '127.0.0.1', listening));
  port = (taken.address() as { port: number }).port;
});
afterAll(async () => {
  await new Promise((closed) => taken.close(closed));
});

describe('tagger serve on a port in use', () => {
  it('says how to pick another port with tagger serve, npm start and the variable', async () => {
    const result = await cli.tagger(
      ['serve', '--model', fx.modelDir, '--port', String(port), '--workers', '1'],
      {
        TAGGER_LOG_LEVEL: 'silent',
      },
    );
    expectCleanFailure(result, /already in use/);
    const next = port + 1;
    expect(result.stderr).toContain(
      `tagger: serve: 127.0.0.1:${port} is already in use; pick another port with --port (tagger serve --port ${next}, npm start -- --port ${next}, or TAGGER_PORT=${next} for either)`,
    );
  });
});
