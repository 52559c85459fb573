/**
 * Ending a server's connections without resetting a request a client has sent (the shutdown sequence of
 * server.ts, steps 2–4). Node's own tools are not enough for that: `closeIdleConnections()` destroys a
 * keep-alive connection whose next request is still in the kernel's buffer (the client sees a reset), and
 * closing the listener resets every connection the kernel completed but Node had not accepted yet. So
 * this module keeps, per connection, whether a request is under way and since when it has been idle, and
 * offers the three steps the server takes in turn:
 * - `closeAfterResponse`: responses say `Connection: close` (a kept-alive client reconnects, elsewhere
 *   behind a balancer), or do not (a client stays on the connection it has);
 * - `settle()`: waits until no new connection has arrived for a quiet period, so that the listener can be
 *   closed while nobody is connecting;
 * - `drain()`: closes the listener, answers everything with `Connection: close`, and closes a connection
 *   only after such a response (Node does) or once it has been idle for `idleCloseMs`.
 */
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { Server as NetServer, type Socket } from 'node:net';

/** A connection counts as idle (closable) after this long without a request under way. */
export const IDLE_CLOSE_MS = 1_000;
/** The listener closes once no connection has arrived for this long after the shutdown delay… */
export const SETTLE_QUIET_MS = 200;
/** …or after this long at most (clients that open a connection per request never go quiet). */
export const SETTLE_MAX_MS = 3_000;
/** How often the quiet is checked while settling; a tick much later than this does not count as quiet. */
const SETTLE_TICK_MS = 20;
/** How often idle connections are looked for while draining. */
const SWEEP_MS = 50;

interface Connection {
  /** Requests under way (0 or 1 without pipelining). */
  busy: number;
  /** When the last request ended (or the connection opened). */
  idleSince: number;
  /** Bytes read by then: more read since means a request is arriving, so it is not idle. */
  readAtIdle: number;
}

export interface DrainLog {
  info(object: object, message: string): void;
  error(object: object, message: string): void;
}

export class ConnectionDrain {
  private readonly connections = new Map<Socket, Connection>();
  private readonly responses = new Set<ServerResponse>();
  private lastConnectionAt = 0;
  /** Connections accepted so far. */
  private accepted = 0;
  /** Whether responses say `Connection: close` (set by the server as the shutdown goes on). */
  closeAfterResponse = false;

  constructor(private readonly server: Server) {
    server.on('connection', (socket: Socket) => {
      this.lastConnectionAt = Date.now();
      this.accepted++;
      this.connections.set(socket, { busy: 0, idleSince: Date.now(), readAtIdle: socket.bytesRead });
      socket.once('close', () => this.connections.delete(socket));
    });
    // Prepended, so the header is set before Fastify can write the response.
    server.prependListener('request', (request: IncomingMessage, response: ServerResponse) => {
      this.responses.add(response);
      const connection = this.connections.get(request.socket);
      if (connection) connection.busy++;
      response.once('close', () => {
        this.responses.delete(response);
        if (connection) {
          connection.busy--;
          connection.idleSince = Date.now();
          connection.readAtIdle = request.socket.bytesRead;
        }
      });
      if (this.closeAfterResponse) response.setHeader('connection', 'close');
    });
  }

  /** Requests under way. */
  get inFlight(): number {
    return this.responses.size;
  }

  /** Open connections. */
  get open(): number {
    return this.connections.size;
  }

  /**
   * Resolves once no connection has arrived for `quietMs`, or after `maxMs`: with responses keeping their
   * connections, a client that still sends here stops opening new ones within one round trip.
   *
   * Quiet is counted only while this process runs: after a tick that came late (the process was not
   * scheduled, on a busy machine), connections handed over meanwhile may still wait unread, so that time
   * does not count, and every check lets pending I/O be read first. In a cluster, `sync` (a round trip to
   * the primary) must also come back with no connection arriving before it: the primary hands connections
   * to a worker one at a time, and one still in its queue when the last worker closes is reset (with 32
   * keep-alive clients and a CPU-starved machine, 5–11 resets in 2 of 3 runs before).
   */
  async settle(quietMs = SETTLE_QUIET_MS, maxMs = SETTLE_MAX_MS, sync?: () => Promise<void>): Promise<void> {
    const deadline = Date.now() + maxMs;
    let seen = this.accepted;
    let last = Date.now();
    let quiet = Math.max(0, last - this.lastConnectionAt);
    for (;;) {
      // Timers run before I/O in an event-loop turn: read what has arrived before judging the quiet.
      await turn();
      const now = Date.now();
      if (this.accepted !== seen) {
        seen = this.accepted;
        quiet = 0;
      } else quiet += Math.min(now - last, 2 * SETTLE_TICK_MS);
      last = now;
      if (now >= deadline) return;
      if (quiet >= quietMs) {
        if (sync === undefined) return;
        // A primary that never answers (gone) waits the deadline out at most; the timer is cleared, so
        // it never keeps a process that has finished alive.
        let timer: NodeJS.Timeout | undefined;
        await Promise.race([
          sync(),
          new Promise<void>((done) => {
            timer = setTimeout(done, Math.max(0, deadline - now));
          }),
        ]);
        clearTimeout(timer);
        await turn();
        if (this.accepted === seen) return;
        seen = this.accepted;
        quiet = 0;
        last = Date.now();
        continue;
      }
      await sleep(Math.min(SETTLE_TICK_MS, quietMs - quiet) + 1);
    }
  }

  /**
   * Stops accepting connections and waits (at most `graceMs`) until every connection has ended; resolves
   * true when they all ended on their own, false when the grace period ran out and they were cut.
   */
  async drain(
    graceMs: number,
    log: DrainLog,
    /**
     * Resolves once every listener sharing the port is closed (a `--workers` cluster, whose primary
     * hands out connections while any worker listens); waited for at most SETTLE_MAX_MS.
     */
    listenersClosed?: () => Promise<void>,
    idleCloseMs = IDLE_CLOSE_MS,
  ): Promise<boolean> {
    const { server } = this;
    // net.Server's close, not http's: http's also destroys the connections it thinks idle, at once.
    const allClosed = new Promise<void>((done) => NetServer.prototype.close.call(server, () => done()));
    if (listenersClosed) {
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        listenersClosed(),
        new Promise<void>((done) => {
          timer = setTimeout(done, SETTLE_MAX_MS);
        }),
      ]);
      clearTimeout(timer);
    }
    this.closeAfterResponse = true;
    // Responses not yet started say `Connection: close`; ones already sent leave a keep-alive connection
    // whose next response will.
    for (const response of this.responses)
      if (!response.headersSent) response.setHeader('connection', 'close');
    log.info(
      { inFlight: this.responses.size, connections: this.connections.size, graceMs },
      'draining: no new connections, finishing requests',
    );
    const sweep = (): void => {
      const now = Date.now();
      for (const [socket, connection] of this.connections) {
        if (connection.busy > 0 || now - connection.idleSince < idleCloseMs) continue;
        // Bytes arrived since the last response: a request is on its way, and it will be answered.
        if (socket.bytesRead !== connection.readAtIdle) continue;
        socket.destroy();
      }
    };
    sweep();
    const sweeper = setInterval(sweep, SWEEP_MS);
    let timer: NodeJS.Timeout | undefined;
    const expired = new Promise<false>((done) => {
      timer = setTimeout(() => done(false), graceMs);
    });
    const drained = await Promise.race([allClosed.then(() => true as const), expired]);
    clearTimeout(timer);
    clearInterval(sweeper);
    if (!drained) {
      log.error(
        { graceMs, inFlight: this.responses.size },
        'graceful shutdown: grace period over, closing the remaining connections',
      );
      server.closeAllConnections();
      await allClosed;
    }
    return drained;
  }
}

const sleep = (ms: number): Promise<void> => new Promise((done) => setTimeout(done, ms));
/** Resolves after the event loop's I/O phase: connections already waiting to be read are then accepted. */
const turn = (): Promise<void> => new Promise((done) => setImmediate(done));
