/**
 * GET /runs/{run_id} with how `tagger train` chose the run's model (model_choice.json): the table as
 * logged, left out for a run that logged none, a 409 for a broken file.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TaggerApp } from '../../src/http/index.js';
import { createRng, type LabelledText } from '../../src/model/index.js';
import { chooseModel, threadCpuMicroseconds } from '../../src/train/model-choice/choose.js';
import { prepareChoice } from '../../src/train/model-choice/prepare.js';
import { modelTagsOf } from '../../src/train/pipeline.js';
import { splitData } from '../../src/train/splits.js';
import { expectEnvelope, runsApp } from '../support/http.js';
import { useServingFixture } from '../support/serving-fixture.js';

const fx = useServingFixture();
let app: TaggerApp;

beforeAll(async () => {
  ({ app } = await runsApp(fx.store));
});
afterAll(async () => {
  await app.close();
});

/** A real choice's report, on a small data set of three tags. */
function report() {
  const rng = createRng(9);
  const words = Array.from({ length: 3 }, (_, t) => Array.from({ length: 5 }, (_, i) => `w${t}x${i}`));
  const data: LabelledText[] = Array.from({ length: 240 }, (_, i) => ({
    text: `${words[i % 3]![Math.floor(rng() * 5)]} filler ${words[i % 3]![Math.floor(rng() * 5)]}`,
    tag: `t${i % 3}`,
  }));
  const preparation = prepareChoice({
    data,
    given: {},
    seed: 1,
    threads: 1,
    extraTexts: [],
    encoder: { installed: false, why: 'not in this test' },
    memoryBudget: 8e9,
    only: ['linear_svm_words', 'linear_svm'],
  });
  const split = splitData(data, false, 1);
  return chooseModel({
    train: split.train,
    validation: split.validation,
    plan: preparation.plan,
    budgetSeconds: preparation.budgetSeconds,
    budgetSource: preparation.budgetSource,
    startedCpu: threadCpuMicroseconds(),
    cpuClock: threadCpuMicroseconds,
    seed: 1,
    tags: modelTagsOf(data, preparation.plan[0]!.args),
    charsPerText: 20,
  }).report;
}

describe('GET /runs/{run_id} and the model choice', () => {
  it("answers the run's model choice as logged", async () => {
    const logged = report();
    await fx.store.logArtifact(
      fx.runs.alpha,
      'model_choice.json',
      new TextEncoder().encode(JSON.stringify(logged)),
    );
    const url = `/runs/${fx.runs.alpha}`;
    const response = await app.inject({ method: 'GET', url });
    expect(response.statusCode).toBe(200);
    const { data } = expectEnvelope(response, { method: 'GET', url }) as { data: Record<string, unknown> };
    expect(data.model_choice).toEqual(JSON.parse(JSON.stringify(logged)));
    const choice = data.model_choice as typeof logged;
    expect(choice.candidates.map((c) => c.name).sort()).toEqual(
      ['cascade', 'encoder', 'fasttext', 'linear_svm', 'linear_svm_words', 'soft_vote'].sort(),
    );
    expect(choice.candidates.find((c) => c.name === 'soft_vote')!.reason).toBe('not in --candidates');
  });

  it('leaves it out for a run that logged none, and is a 409 for a broken file', async () => {
    const plain = await app.inject({ method: 'GET', url: `/runs/${fx.runs.beta}` });
    expect(plain.statusCode).toBe(200);
    expect(plain.json().data).not.toHaveProperty('model_choice');
    await fx.store.logArtifact(
      fx.runs.nof1,
      'model_choice.json',
      new TextEncoder().encode('{"method": "validation_split", "training_rows": 3}'),
    );
    const broken = await app.inject({ method: 'GET', url: `/runs/${fx.runs.nof1}` });
    expect(broken.statusCode).toBe(409);
    expect(broken.json().detail).toMatch(/model_choice\.json: /);
  });
});
