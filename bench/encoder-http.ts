/**
 * Helpers of the encoder section's serving bench (bench/encoder-serving.ts): statistics and a small
 * keep-alive HTTP client (the encoder's requests take milliseconds, so the client's own cost is noise).
 */
import { Agent, request } from 'node:http';

export const median = (values: readonly number[]): number => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
};
export const quantile = (values: readonly number[], q: number): number => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? Number.NaN;
};
export const chunks = <T>(items: readonly T[], size: number): T[][] =>
  Array.from({ length: Math.ceil(items.length / size) }, (_, i) => items.slice(i * size, (i + 1) * size));
export const body = (texts: readonly string[]): string =>
  JSON.stringify({ texts: texts.map((text) => ({ text })) });

export interface Answer {
  status: number;
  ms: number;
  retryAfter?: string;
}

export function send(agent: Agent, url: string, method: 'GET' | 'POST', payload?: string): Promise<Answer> {
  const started = performance.now();
  return new Promise((done, fail) => {
    const req = request(
      url,
      {
        method,
        agent,
        headers: payload
          ? { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) }
          : {},
      },
      (response) => {
        response.resume();
        response.once('end', () =>
          done({
            status: response.statusCode ?? 0,
            ms: performance.now() - started,
            ...(response.headers['retry-after']
              ? { retryAfter: String(response.headers['retry-after']) }
              : {}),
          }),
        );
      },
    );
    req.once('error', fail);
    req.end(payload);
  });
}

/**
 * Sends every body once over `connections` keep-alive connections (each takes the next body when its
 * previous answer arrived); resolves with the answers and the seconds it all took.
 */
export async function sendAll(
  url: string,
  bodies: readonly string[],
  connections: number,
): Promise<{ answers: Answer[]; seconds: number }> {
  const agent = new Agent({ keepAlive: true, maxSockets: connections });
  const answers: Answer[] = [];
  let next = 0;
  const started = performance.now();
  try {
    await Promise.all(
      Array.from({ length: connections }, async () => {
        while (next < bodies.length) {
          const payload = bodies[next++]!;
          answers.push(await send(agent, `${url}/predict`, 'POST', payload));
        }
      }),
    );
  } finally {
    agent.destroy();
  }
  return { answers, seconds: (performance.now() - started) / 1000 };
}

/**
 * Resolves once the server's encoder queue is empty (its `tagger_encoder_queue_texts` gauge reads 0), or
 * after `timeoutMs`. A request that ends a load (wrk closing its connections) can leave texts queued behind
 * the batch at the encoder; a request larger than the queue bound sent then is refused with 503 by design,
 * so a measurement of large requests on their own starts from an idle queue.
 */
export async function waitForEmptyQueue(url: string, timeoutMs = 30_000): Promise<void> {
  const until = performance.now() + timeoutMs;
  while (performance.now() < until) {
    const response = await fetch(`${url}/metrics`);
    const match = /^tagger_encoder_queue_texts(?:\{[^}]*\})? (\S+)$/m.exec(await response.text());
    if (!match || Number(match[1]) === 0) return; // no sample: no encoder has queued anything
    await new Promise((resume) => setTimeout(resume, 50));
  }
}

/** /health/live answered once every `everyMs` until `until` resolves; the latencies in ms. */
export async function probeLive(url: string, until: Promise<unknown>, everyMs = 10): Promise<number[]> {
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  let done = false;
  void until.finally(() => {
    done = true;
  });
  const latencies: number[] = [];
  try {
    while (!done) {
      latencies.push((await send(agent, `${url}/health/live`, 'GET')).ms);
      await new Promise((resume) => setTimeout(resume, everyMs));
    }
  } finally {
    agent.destroy();
  }
  return latencies;
}

/** Cosine similarity of two vectors of the same length. */
export const cosine = (a: ArrayLike<number>, b: ArrayLike<number>): number => {
  let dot = 0;
  let na = 0;
  let nb = 0;
  for (let i = 0; i < a.length; i++) {
    dot += a[i]! * b[i]!;
    na += a[i]! * a[i]!;
    nb += b[i]! * b[i]!;
  }
  return dot / Math.sqrt(na * nb);
};
