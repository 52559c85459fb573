/**
 * The floor of the HTTP benchmark: a bare `node:http` server that does what any JSON endpoint must do
 * and nothing else — read the body, JSON.parse it, JSON.stringify an answer of the same size as Tagger's
 * answer to the same request (the file `FLOOR_RESPONSE_FILE`), write it. No routing, validation, logging
 * or model: whatever Tagger achieves relative to this is the cost of everything Tagger adds.
 * Usage: FLOOR_RESPONSE_FILE=<json> node --import tsx bench/floor-server.ts <port>
 */
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';

const port = Number(process.argv[2]);
const template: unknown = JSON.parse(readFileSync(process.env.FLOOR_RESPONSE_FILE!, 'utf8'));

const server = createServer((request, response) => {
  const chunks: Buffer[] = [];
  request.on('data', (chunk: Buffer) => chunks.push(chunk));
  request.on('end', () => {
    let status = 200;
    let body: string;
    try {
      const parsed = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { texts?: unknown[] };
      if (!Array.isArray(parsed.texts)) throw new Error('no texts');
      body = JSON.stringify(template);
    } catch {
      status = 400;
      body = '{"detail":"bad request"}';
    }
    response.writeHead(status, {
      'content-type': 'application/json; charset=utf-8',
      'content-length': Buffer.byteLength(body),
    });
    response.end(body);
  });
});
// Same keep-alive as Tagger's app (src/app.ts), so connection reuse is alike.
server.keepAliveTimeout = 5_000;
server.listen(port, '127.0.0.1');
for (const signal of ['SIGTERM', 'SIGINT'] as const)
  process.once(signal, () => server.close(() => process.exit(0)));
