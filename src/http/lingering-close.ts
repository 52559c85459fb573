/**
 * Lingering close: a response sent before its request's body arrived (a 413 for a body over the limit,
 * answered from the Content-Length alone or part-way through the body) closes its connection, and Node
 * closes the socket as soon as the response is written. The body the client is still sending then lands
 * on a closed socket, the kernel answers it with a reset, and a client that writes its whole body before
 * it reads (Python's urllib and http.client, many SDKs) gets a broken pipe instead of the answer. Like
 * nginx's `lingering_close`, the server here ends its side after the response (FIN), keeps reading and
 * discarding what the client still sends, and closes once the client has ended its side, has sent
 * nothing for `LINGER_IDLE_MS`, or after `LINGER_MAX_MS` in all — so a client gets the 413 whichever way
 * it writes, and a client that never stops sending holds a socket no longer than that.
 */
import type { IncomingMessage } from 'node:http';
import { Socket } from 'node:net';

/** The longest a socket lingers after its response, however much the client still sends. */
export const LINGER_MAX_MS = 30_000;
/** A lingering socket the client has sent nothing on for this long is closed. */
export const LINGER_IDLE_MS = 5_000;

/** How often a lingering socket is checked for what it read. */
const LINGER_TICK_MS = 250;

const LINGERING = Symbol('tagger.lingering');

/**
 * Makes the connection of `request` linger when Node closes it after the response (see above). Call it
 * before the response is finished; a request whose body has been read completely needs nothing, and a
 * request without a real socket (app.inject) is left alone.
 */
export function lingerOnClose(request: IncomingMessage): void {
  const socket = request.socket as (Socket & { [LINGERING]?: true }) | null;
  if (request.complete || !(socket instanceof Socket) || socket[LINGERING]) return;
  socket[LINGERING] = true;
  // Node's HTTP server calls destroySoon() once a `Connection: close` response is written: end our side,
  // then destroy when the write is finished. Here, destroying waits for the client instead.
  socket.destroySoon = function lingeringClose(this: Socket): void {
    if (this.writable) this.end();
    const started = Date.now();
    let read = this.bytesRead;
    let lastRead = started;
    // What arrives still goes to the HTTP parser (which reads the socket's handle directly, so there are
    // no 'data' events to watch, and the socket's own idle timeout does not see it): the parser discards
    // the rest of the body, and bytesRead says whether anything came.
    const watch = setInterval(() => {
      const now = Date.now();
      if (this.bytesRead !== read) {
        read = this.bytesRead;
        lastRead = now;
      }
      if (now - lastRead >= LINGER_IDLE_MS || now - started >= LINGER_MAX_MS) this.destroy();
    }, LINGER_TICK_MS);
    watch.unref();
    this.once('close', () => clearInterval(watch));
    // 'end' is the client's FIN: it has sent everything and read the answer.
    this.once('end', () => this.destroy());
    this.resume();
  };
}
