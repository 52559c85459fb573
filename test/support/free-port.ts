/**
 * A TCP port on 127.0.0.1 that nothing listens on right now: the kernel picks one for a listener that is
 * closed again at once. Another process may take it before the caller binds it; tests start their
 * servers right away, or use it as a port where nothing listens.
 */
import { createServer } from 'node:net';

export async function freePort(): Promise<number> {
  return await new Promise((done, fail) => {
    const server = createServer();
    server.once('error', fail);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() =>
        address && typeof address === 'object' ? done(address.port) : fail(new Error('no port')),
      );
    });
  });
}
