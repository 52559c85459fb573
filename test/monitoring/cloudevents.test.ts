/**
 * The CloudEvents sink against a real HTTP receiver on loopback: KServe's inference-logger events
 * (binary content mode, a request and a response event sharing `ce-id`), a sink that fails (retried,
 * then counted), and one that hangs (a timeout, never a wait for the predictions).
 */
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CloudEventsSink, REQUEST_EVENT, RESPONSE_EVENT } from '../../src/monitoring/cloudevents-sink.js';
import { Recorder } from '../../src/monitoring/recorder.js';

interface Received {
  headers: IncomingMessage['headers'];
  body: unknown;
}

let server: Server;
let url: string;
const received: Received[] = [];
let answer = 202;
let hang = false;

beforeAll(async () => {
  server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      if (hang) return; // never answers
      received.push({ headers: request.headers, body: JSON.parse(Buffer.concat(chunks).toString('utf8')) });
      response.writeHead(answer).end();
    });
  });
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/events`;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((done) => server.close(done));
});

const record = {
  predictionId: '0d6f0c9e-4e0b-4c55-9b7e-2b0c61e2c0a1',
  createdMs: Date.UTC(2026, 10, 25, 12, 0, 0),
  scope: '1',
  runId: 'abc123',
  modelVersion: null,
  multiLabel: false,
  predictedTag: 'mlops',
  predictedTags: ['mlops'],
  probabilities: { mlops: 0.9, other: 0.1 },
  confidence: 0.9,
  unseenShare: 0,
  textLength: 14,
  text: 'Feature stores',
  textSha256: 'f'.repeat(64),
};

describe('CloudEventsSink', () => {
  it("sends each record as KServe's two inference-logger events in binary content mode", async () => {
    received.length = 0;
    answer = 202;
    const sink = new CloudEventsSink(url, {
      serviceName: 'tagger',
      source: 'urn:tagger:test',
      namespace: 'ml',
    });
    await sink.send([record]);
    expect(received).toHaveLength(2);
    const byType = Object.fromEntries(received.map((event) => [event.headers['ce-type'], event]));
    for (const type of [REQUEST_EVENT, RESPONSE_EVENT]) {
      expect(byType[type]!.headers).toMatchObject({
        'content-type': 'application/json',
        'ce-specversion': '1.0',
        'ce-id': record.predictionId,
        'ce-source': 'urn:tagger:test',
        'ce-time': '2026-11-25T12:00:00.000Z',
        'ce-inferenceservicename': 'tagger',
        'ce-namespace': 'ml',
        'ce-component': 'predictor',
        'ce-endpoint': 'abc123',
      });
    }
    expect(byType[REQUEST_EVENT]!.body).toEqual({ texts: [{ text: 'Feature stores' }] });
    expect(byType[RESPONSE_EVENT]!.body).toEqual({
      run_id: 'abc123',
      predictions: [
        {
          prediction_id: record.predictionId,
          predicted_tag: 'mlops',
          predicted_tags: ['mlops'],
          predicted_probabilities: { mlops: 0.9, other: 0.1 },
        },
      ],
    });
  });

  it('sends only the hash of a text kept as a hash, and rejects when the receiver refuses', async () => {
    received.length = 0;
    answer = 202;
    const sink = new CloudEventsSink(url);
    await sink.send([{ ...record, text: null }]);
    expect(received.find((event) => event.headers['ce-type'] === REQUEST_EVENT)!.body).toEqual({
      texts: [{ text_sha256: record.textSha256 }],
    });
    answer = 500;
    await expect(sink.send([record])).rejects.toThrow(
      /CloudEvents to http:\/\/127\.0\.0\.1:\d+\/events: .*answered 500/,
    );
    answer = 202;
  });

  it('gives up on a receiver that does not answer, within its timeout, and counts the records as dropped', async () => {
    hang = true;
    const registry = new Registry();
    const log = { info: () => undefined, warn: () => undefined };
    const sink = new CloudEventsSink(url, { timeoutMs: 100 });
    const recorder = new Recorder([sink], {
      sampleRate: 1,
      keepText: true,
      bufferSize: 100,
      flushMs: 10,
      batchSize: 10,
      log,
      registry,
    });
    try {
      recorder.capture(
        { scope: '1', runId: 'r', modelVersion: null, multiLabel: false, tags: ['mlops'], vocabulary: null },
        ['a'],
        ['text'],
        [{ predicted_tag: 'mlops', predicted_tags: ['mlops'], probabilities: { mlops: 1 } }],
      );
      await recorder.close(300);
      // A write still in flight at the deadline is counted when its own timeout ends it.
      const dropped = /tagger_prediction_records_dropped_total\{sink="cloudevents",reason="write_failed"\} 1/;
      for (let i = 0; i < 50 && !dropped.test(await registry.metrics()); i++) {
        await new Promise((done) => setTimeout(done, 20));
      }
      expect(await registry.metrics()).toMatch(dropped);
    } finally {
      hang = false;
    }
  });
});
