/**
 * GET /runs/{run_id} with how `tagger train` chose the run's model (model_choice.json): the table as
 * logged, left out for a run that logged none, a 409 for a broken file.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TaggerApp } from '../../src/http/index.js';
import { expectEnvelope, runsApp } from '../support/http.js';
import { smallChoiceReport } from '../support/model-choice.js';
import { useServingFixture } from '../support/serving-fixture.js';

const fx = useServingFixture();
let app: TaggerApp;

beforeAll(async () => {
  ({ app } = await runsApp(fx.store));
});
afterAll(async () => {
  await app.close();
});

describe('GET /runs/{run_id} and the model choice', () => {
  it("answers the run's model choice as logged", async () => {
    const logged = smallChoiceReport();
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
