/** Model URIs: what Tagger serves, and what it refuses with the form to use instead. */
import { describe, expect, it } from 'vitest';
import { parseModelUri } from '../../src/tracking/model-uri.js';

describe('parseModelUri', () => {
  it.each([
    ['models:/tagger@champion', { kind: 'alias', name: 'tagger', alias: 'champion' }],
    ['models:/my model@prod-2', { kind: 'alias', name: 'my model', alias: 'prod-2' }],
    ['models:/tagger@latest', { kind: 'alias', name: 'tagger', alias: 'latest' }],
    ['models:/tagger/latest', { kind: 'alias', name: 'tagger', alias: 'latest' }],
    ['models:/tagger/12', { kind: 'version', name: 'tagger', version: 12 }],
    ['runs:/0123abcd/model', { kind: 'run', runId: '0123abcd' }],
    ['runs:/0123abcd/model/', { kind: 'run', runId: '0123abcd' }],
    ['runs:/0123abcd', { kind: 'run', runId: '0123abcd' }],
  ])('%s', (uri, expected) => {
    expect(parseModelUri(uri)).toEqual({ ...expected, uri });
  });

  it.each([
    [
      'models:/tagger/Production',
      /stages are deprecated: point an alias at the version \(tagger alias set tagger <alias> <version>\)/,
    ],
    ['models:/tagger/0', /invalid version number/],
    ['models:/tagger', /does not name a model version or alias/],
    ['models:/a/b/1', /does not name a model version or alias/],
    ['models:/tagger@', /invalid \(an alias cannot be empty\)/],
    ['models:/tagger@a.b', /aliases may only contain letters, digits/],
    ['models:/@champion', /a registered model name cannot be empty/],
    ['models://host/tagger/1', /is not a models:\/ or runs:\/ URI/],
    ['models:/m-0123456789abcdef0123456789abcdef', /names a logged model, which has no registered version/],
    ['runs:/0123abcd/weights', /points at 'weights', but Tagger's model is the run's 'model' folder/],
    ['runs:/../model', /invalid run id/],
    ['s3://bucket/model', /is not a models:\/ or runs:\/ URI/],
    ['', /is not a models:\/ or runs:\/ URI/],
  ])('refuses %s', (uri, message) => {
    expect(() => parseModelUri(uri)).toThrow(message);
  });
});
