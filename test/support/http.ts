/**
 * Shared setup of the HTTP tests: a run-based app over a fixture store (no port; requests go through
 * app.inject), a service log captured in memory, and checks of the spec's response envelope.
 */
import { expect } from 'vitest';
import { type AppDeps, createApp } from '../../src/app.js';
import type { TaggerApp } from '../../src/http/index.js';
import { ServedRuns, type ServiceLog } from '../../src/served-models/index.js';
import type { TrackingStore } from '../../src/tracking/index.js';

export interface CapturedLog extends ServiceLog {
  lines: { level: 'info' | 'warn'; msg: string; obj: object }[];
}

export function captureLog(): CapturedLog {
  const lines: CapturedLog['lines'] = [];
  return {
    lines,
    info: (obj, msg) => lines.push({ level: 'info', msg, obj }),
    warn: (obj, msg) => lines.push({ level: 'warn', msg, obj }),
  };
}

export async function runsApp(
  store: TrackingStore,
  options: { modelCacheSize?: number; log?: ServiceLog; deps?: Omit<AppDeps, 'serving'> } = {},
): Promise<{ app: TaggerApp; servedRuns: ServedRuns }> {
  const servedRuns = await ServedRuns.load(store, {
    experiment: 'best',
    modelCacheSize: options.modelCacheSize ?? 4,
    log: options.log ?? captureLog(),
  });
  const app = createApp({ ...options.deps, serving: { mode: 'runs', servedRuns } });
  await app.ready();
  return { app, servedRuns };
}

const TIMESTAMP = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}$/;

/** Checks the spec's envelope fields against the request and the HTTP status; returns the body. */
export function expectEnvelope(
  response: { statusCode: number; body: string; headers: Record<string, unknown> },
  request: { method: string; url: string },
): Record<string, unknown> {
  expect(String(response.headers['content-type'])).toMatch(/^application\/json/);
  const body = JSON.parse(response.body) as Record<string, unknown>;
  expect(body['status-code']).toBe(response.statusCode);
  expect(body.method).toBe(request.method);
  expect(body.url).toBe(`http://localhost:80${request.url}`);
  expect(body.timestamp).toMatch(TIMESTAMP);
  expect(typeof body.message).toBe('string');
  return body;
}

/** A JSON POST through app.inject. */
export const postJson = (app: TaggerApp, url: string, payload: unknown) =>
  app.inject({
    method: 'POST',
    url,
    headers: { 'content-type': 'application/json', accept: 'application/json' },
    payload: typeof payload === 'string' ? payload : JSON.stringify(payload),
  });
