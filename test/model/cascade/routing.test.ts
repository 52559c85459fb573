import { describe, expect, it } from 'vitest';
import { isRouted, routingConfidence, tagMargin } from '../../../src/model/cascade/routing.js';

describe("cascade routing: a prediction's confidence", () => {
  it('single-label: the top probability listed, whatever the predicted tag', () => {
    const model = { tags: ['a', 'b', 'other'], tagThresholds: null };
    const prediction = {
      predicted_tag: 'other',
      predicted_tags: ['other'],
      probabilities: { a: 0.55, b: 0.3, other: 0.15 },
    };
    expect(routingConfidence(model, prediction)).toBe(0.55);
    expect(isRouted(0.55, 0.6)).toBe(true);
    expect(isRouted(0.6, 0.6)).toBe(false);
  });

  it('a tag margin is 0 at its threshold and 1 at certainty, on either side', () => {
    expect(tagMargin(0.3, 0.3)).toBe(0);
    expect(tagMargin(1, 0.3)).toBe(1);
    expect(tagMargin(0, 0.3)).toBe(1);
    expect(tagMargin(0.65, 0.3)).toBeCloseTo(0.5, 12);
    expect(tagMargin(0.15, 0.3)).toBeCloseTo(0.5, 12);
    // A tag given whatever its probability is never in doubt.
    expect(tagMargin(0, 0)).toBe(1);
    expect(tagMargin(0.99, 1)).toBeCloseTo(0.01, 12);
  });

  it('multi-label: the least sure tag decides, so one tag near its threshold routes the text', () => {
    const model = { tags: ['a', 'b', 'other'], tagThresholds: [0.5, 0.2, 0.5] };
    const sure = {
      predicted_tag: 'a',
      predicted_tags: ['a'],
      probabilities: { a: 0.98, b: 0.01, other: 0.02 },
    };
    const unsure = { ...sure, probabilities: { a: 0.98, b: 0.18, other: 0.02 } };
    expect(routingConfidence(model, sure)).toBeCloseTo(0.95, 12);
    expect(routingConfidence(model, unsure)).toBeCloseTo(0.1, 12);
    expect(isRouted(routingConfidence(model, sure), 0.5)).toBe(false);
    expect(isRouted(routingConfidence(model, unsure), 0.5)).toBe(true);
    // A tag the prediction does not list counts as probability 0: far below its threshold.
    expect(routingConfidence(model, { ...sure, probabilities: { a: 0.98 } })).toBeCloseTo(0.96, 12);
  });
});
