/**
 * A real Redis server on a free loopback port, in memory only, stopped by its PID. `stop()` and
 * `start()` again (same port) let tests take Redis away mid-test and bring it back.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { connect } from 'node:net';
import { freePort } from './free-port.js';

export interface RedisServer {
  url: string;
  port: number;
  /** Starts (or restarts) the server; resolves once it accepts connections. */
  start(): Promise<void>;
  /** Stops it by PID (SIGKILL: as abrupt as a crash); resolves once it has exited. */
  stop(): Promise<void>;
}

const accepts = (port: number): Promise<boolean> =>
  new Promise((done) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      done(true);
    });
    socket.once('error', () => done(false));
  });

export async function redisServer(binary: string): Promise<RedisServer> {
  const port = await freePort();
  let child: ChildProcess | undefined;
  const server: RedisServer = {
    url: `redis://127.0.0.1:${port}`,
    port,
    async start() {
      const args = ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'];
      const started = spawn(binary, args, { stdio: 'ignore' });
      child = started;
      const deadline = Date.now() + 15_000;
      while (!(await accepts(port))) {
        if (started.exitCode !== null) throw new Error(`redis-server exited with ${started.exitCode}`);
        if (Date.now() > deadline) throw new Error('redis-server did not accept connections in 15 s');
        await new Promise((done) => setTimeout(done, 50));
      }
    },
    async stop() {
      const running = child;
      child = undefined;
      if (running === undefined || running.exitCode !== null || running.signalCode !== null) return;
      const exited = new Promise((done) => running.once('exit', done));
      running.kill('SIGKILL');
      await exited;
    },
  };
  await server.start();
  return server;
}
