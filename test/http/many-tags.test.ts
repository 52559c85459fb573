/**
 * POST /predict with a model of many tags (issue 31): past DEFAULT_LISTED_PROBABILITIES tags an answer
 * lists the most probable tags' probabilities and says how many of how many; the `probabilities` option
 * asks for all or n; `top_k` and `threshold` keep their tags' probabilities listed; explanations stay
 * bounded. (A model of few tags answers as the contract's: test/http/single-model.test.ts, api.test.ts.)
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TaggerApp } from '../../src/http/index.js';
import { DEFAULT_LISTED_PROBABILITIES } from '../../src/model/index.js';
import type { ServedRuns } from '../../src/served-models/index.js';
import { openTrackingStore, type TrackingStore } from '../../src/tracking/index.js';
import { postJson, runsApp } from '../support/http.js';
import { logManyTagRun, manyTagName, manyTagRows } from '../support/many-tags.js';
import { monitoredApp } from '../support/monitoring.js';

const TAGS = 60;
/** The model's tags: the generated ones and `other`. */
const MODEL_TAGS = TAGS + 1;
let dir: string;
let store: TrackingStore;
let app: TaggerApp;
let servedRuns: ServedRuns;
let runId: string;
const TEXTS = manyTagRows(3, TAGS, 99).map((row) => row.text);

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'tagger-many-tags-'));
  runId = await logManyTagRun(dir, TAGS);
  store = await openTrackingStore(dir);
  ({ app, servedRuns } = await runsApp(store));
}, 120_000);

afterAll(async () => {
  await app?.close();
  await store?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

interface Item {
  predicted_tag: string;
  predicted_tags: string[];
  predicted_probabilities: Record<string, number>;
  probabilities_listed?: { listed: number; of: number };
  explanation?: { contributions: unknown[] };
}

async function ask(body: Record<string, unknown>, url = '/predict'): Promise<Item[]> {
  const response = await postJson(app, url, { texts: TEXTS.map((text) => ({ text })), ...body });
  expect(response.statusCode, response.body).toBe(200);
  return (JSON.parse(response.body) as { data: { predictions: Item[] } }).data.predictions;
}

/** Every tag's probability of each text, most probable first (ties in tag order), from the model itself. */
function ranked(): [string, number][][] {
  const { model } = servedRuns.current.best;
  return model
    .predict(TEXTS, undefined, { probabilities: 'all' })
    .map((p) => Object.entries(p.probabilities).sort((a, b) => b[1] - a[1]));
}

describe(`POST /predict with a model of ${TAGS} tags`, () => {
  it(`lists the ${DEFAULT_LISTED_PROBABILITIES} most probable tags by default, and says how many of how many`, async () => {
    const all = ranked();
    const items = await ask({});
    items.forEach((item, i) => {
      expect(item.probabilities_listed).toEqual({ listed: DEFAULT_LISTED_PROBABILITIES, of: MODEL_TAGS });
      expect(item.predicted_probabilities).toEqual(
        Object.fromEntries(all[i]!.slice(0, DEFAULT_LISTED_PROBABILITIES)),
      );
      expect(item.predicted_probabilities[item.predicted_tag]).toBeDefined();
    });
  });

  it('lists every tag with "probabilities": "all", and n with a number; run-based /runs/{id}/predict too', async () => {
    for (const item of await ask({ probabilities: 'all' })) {
      expect(Object.keys(item.predicted_probabilities)).toHaveLength(MODEL_TAGS);
      expect(item).not.toHaveProperty('probabilities_listed');
    }
    const all = ranked();
    const three = await ask({ probabilities: 3 }, `/runs/${runId}/predict`);
    three.forEach((item, i) => {
      expect(item.predicted_probabilities).toEqual(Object.fromEntries(all[i]!.slice(0, 3)));
      expect(item.probabilities_listed).toEqual({ listed: 3, of: MODEL_TAGS });
    });
    // A count of at least the model's tags is every tag, and nothing to say.
    for (const item of await ask({ probabilities: MODEL_TAGS }))
      expect(item).not.toHaveProperty('probabilities_listed');
  });

  it("keeps the probabilities of the tags `top_k` and `threshold` list, whatever the answer's limit", async () => {
    const all = ranked();
    const top = await ask({ top_k: 30, probabilities: 2 });
    top.forEach((item, i) => {
      expect(item.predicted_tags).toEqual(all[i]!.slice(0, 30).map(([tag]) => tag));
      expect(Object.keys(item.predicted_probabilities).sort()).toEqual([...item.predicted_tags].sort());
      expect(item.probabilities_listed).toEqual({ listed: 30, of: MODEL_TAGS });
    });
    // Threshold 0: every tag passes, so every probability is listed and nothing is left out.
    for (const item of await ask({ threshold: 0 })) {
      expect(item.predicted_tags).toHaveLength(MODEL_TAGS);
      expect(Object.keys(item.predicted_probabilities)).toHaveLength(MODEL_TAGS);
      expect(item).not.toHaveProperty('probabilities_listed');
    }
  });

  it('keeps explanations bounded: one tag, ten n-grams, whatever the tags', async () => {
    const items = await ask({ explain: true });
    for (const item of items) expect(item.explanation!.contributions.length).toBeLessThanOrEqual(10);
  });

  it.each([
    [0, ['value_error.const', 'value_error.number.not_ge']],
    ['some', ['value_error.const', 'type_error.integer']],
    [1.5, ['value_error.const', 'type_error.integer']],
  ])(
    'refuses "probabilities": %j with a 422 per alternative, as pydantic words a union',
    async (value, types) => {
      const response = await postJson(app, '/predict', { texts: [{ text: 'x' }], probabilities: value });
      expect(response.statusCode).toBe(422);
      const detail = (
        JSON.parse(response.body) as { detail: { loc: unknown[]; type: string; msg: string }[] }
      ).detail;
      expect(detail.map((d) => d.loc)).toEqual(types.map(() => ['body', 'probabilities']));
      expect(detail.map((d) => d.type)).toEqual(types);
      expect(detail[0]!.msg).toBe("unexpected value; permitted: 'all'");
    },
  );
});

describe('prediction records of a model of many tags', () => {
  it("keep every tag's probability while the answer lists 20: feedback naming an unlisted tag is a known tag", async () => {
    const monitored = await monitoredApp(store);
    try {
      const response = await postJson(monitored.app, '/predict', { texts: [{ text: TEXTS[0] }] });
      const [item] = (
        JSON.parse(response.body) as { data: { predictions: (Item & { prediction_id: string })[] } }
      ).data.predictions;
      expect(item!.probabilities_listed).toEqual({ listed: DEFAULT_LISTED_PROBABILITIES, of: MODEL_TAGS });
      const unlisted = Array.from({ length: TAGS }, (_, k) => manyTagName(k)).find(
        (tag) => !(tag in item!.predicted_probabilities),
      )!;
      await monitored.monitoring.recorder.settle();
      const feedback = await postJson(monitored.app, '/feedback', {
        feedback: [{ prediction_id: item!.prediction_id, tag: unlisted }],
      });
      const [outcome] = (
        JSON.parse(feedback.body) as { data: { feedback: { status: number; detail: string }[] } }
      ).data.feedback;
      expect(outcome).toMatchObject({ status: 200, detail: 'stored' });
    } finally {
      await monitored.close();
    }
  });
});
