/**
 * ConnectionDrain's settle (src/server/drain.ts), the step before the listener closes at shutdown: it must
 * not call the listener quiet while a connection waits to be accepted — neither one the kernel completed
 * while this process was not running (a CPU-starved process, simulated by blocking the event loop), nor
 * one a cluster's primary hands over before answering the worker's round trip (issue 34, item 1: 5 and 11
 * of 32 keep-alive loops reset in 2 of 3 runs of test/server/cluster.test.ts on a CPU-starved machine).
 */
import { createServer, type Server } from 'node:http';
import { connect, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { ConnectionDrain } from '../../src/server/drain.js';

let server: Server | undefined;
const sockets: Socket[] = [];

afterEach(async () => {
  for (const socket of sockets.splice(0)) socket.destroy();
  await new Promise<void>((done) => (server ? server.close(() => done()) : done()));
  server = undefined;
});

async function listening(): Promise<{ drain: ConnectionDrain; port: number }> {
  server = createServer((_request, response) => response.end('ok'));
  const drain = new ConnectionDrain(server);
  await new Promise<void>((done) => server!.listen(0, '127.0.0.1', done));
  return { drain, port: (server.address() as { port: number }).port };
}

/** Starts a connection; the kernel completes it whether or not this process is running. */
function dial(port: number): void {
  const socket = connect(port, '127.0.0.1');
  socket.on('error', () => undefined);
  sockets.push(socket);
}

const blockFor = (ms: number): void => {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    // The process is busy (or not scheduled): nothing is accepted meanwhile.
  }
};

describe('ConnectionDrain.settle', () => {
  it('does not count time the process was not running as quiet: a connection completed meanwhile is accepted first', async () => {
    const { drain, port } = await listening();
    dial(port);
    await new Promise<void>((done) => server!.once('connection', () => done()));
    const settled = drain.settle(100, 3_000);
    dial(port);
    // Longer than the quiet period: the settle's timer is due when the loop runs again, before its I/O.
    blockFor(300);
    await settled;
    expect(drain.open).toBe(2);
  });

  it('in a cluster, closes only after a round trip through the primary brought no connection', async () => {
    const { drain, port } = await listening();
    let syncs = 0;
    // The first round trip comes back after a connection the primary handed over (it arrives first).
    const sync = async (): Promise<void> => {
      syncs++;
      if (syncs === 1) {
        dial(port);
        await new Promise<void>((done) => server!.once('connection', () => done()));
      }
    };
    await drain.settle(50, 3_000, sync);
    expect(drain.open).toBe(1);
    // The connection made the quiet start again, and a second round trip confirmed it.
    expect(syncs).toBe(2);
  });

  it('ends at its longest wait, also when the primary never answers', async () => {
    const { drain, port } = await listening();
    const dialing = setInterval(() => dial(port), 10);
    try {
      await drain.settle(200, 300);
    } finally {
      clearInterval(dialing);
    }
    await drain.settle(20, 300, () => new Promise<void>(() => undefined));
  });
});
