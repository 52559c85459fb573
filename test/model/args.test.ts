/** parseTrainingArgs: defaults, merging, and a clear ModelInputError for every kind of bad value. */
import { describe, expect, it } from 'vitest';
import { DEFAULT_TRAINING_ARGS, parseTrainingArgs } from '../../src/model/args.js';
import { ModelInputError } from '../../src/model/errors.js';

describe('parseTrainingArgs', () => {
  it('returns the defaults for an empty object, null or undefined', () => {
    expect(parseTrainingArgs({})).toEqual(DEFAULT_TRAINING_ARGS);
    expect(parseTrainingArgs(null)).toEqual(DEFAULT_TRAINING_ARGS);
    expect(parseTrainingArgs(undefined)).toEqual(DEFAULT_TRAINING_ARGS);
  });

  it('merges a partial object over the defaults', () => {
    const args = parseTrainingArgs({ analyzer: 'char', num_epochs: 3, subset: 10, accepted_tags: ['mlops'] });
    expect(args).toEqual({
      ...DEFAULT_TRAINING_ARGS,
      analyzer: 'char',
      num_epochs: 3,
      subset: 10,
      accepted_tags: ['mlops'],
    });
  });

  it('accepts the char_wb+word analyzer and sublinear_tf', () => {
    const args = parseTrainingArgs({ analyzer: 'char_wb+word', sublinear_tf: true });
    expect(args.analyzer).toBe('char_wb+word');
    expect(args.sublinear_tf).toBe(true);
    expect(parseTrainingArgs({ sublinear_tf: false }).sublinear_tf).toBe(false);
  });

  it('keeps min_freq low enough that mlops (63 rows) stays its own class', () => {
    expect(DEFAULT_TRAINING_ARGS.min_freq).toBeLessThanOrEqual(63 * 0.7);
  });

  it.each([
    [{ nope: 1 }, /unknown training arg "nope"/],
    [{ shuffle: 'yes' }, /"shuffle" must be true or false, got "yes"/],
    [{ alpha: 'abc' }, /"alpha" must be a number in \[0, 10\], got "abc"/],
    [{ alpha: Number.NaN }, /"alpha" must be a number/],
    [{ learning_rate: 0 }, /"learning_rate" must be a number in \(0, 100\], got 0/],
    [{ num_epochs: 2.5 }, /"num_epochs" must be an integer/],
    [{ num_epochs: 0 }, /"num_epochs" must be an integer in \[1, 100000\], got 0/],
    [{ ngram_max_range: 0 }, /"ngram_max_range" must be an integer in \[1, 16\], got 0/],
    [{ ngram_max_range: 1 }, /"ngram_min_range" \(2\) must not exceed "ngram_max_range" \(1\)/],
    [{ ngram_min_range: 0 }, /"ngram_min_range" must be an integer in \[1, 16\], got 0/],
    [{ min_df: 0 }, /"min_df" must be an integer in \[1, /],
    [{ min_df: 0.5 }, /"min_df" must be an integer/],
    [{ loss: 'squared_hinge' }, /"loss" must be one of log_loss, hinge, modified_huber, got "squared_hinge"/],
    [{ class_weight: 'auto' }, /"class_weight" must be one of balanced, got "auto"/],
    [{ classifier: 'softmax', loss: 'hinge' }, /"loss" "hinge" needs "classifier": "ovr"/],
    [{ analyzer: 'chars' }, /"analyzer" must be one of word, char, char_wb, char_wb\+word, got "chars"/],
    [{ analyzer: 'word+char_wb' }, /"analyzer" must be one of word, char, char_wb, char_wb\+word/],
    [{ sublinear_tf: 1 }, /"sublinear_tf" must be true or false, got 1/],
    [{ sublinear_tf: null }, /"sublinear_tf" must be true or false, got null/],
    [{ threshold: 0.5 }, /"threshold" must be one of auto, argmax, tuned, balanced, got 0.5/],
    [{ threshold: 'balanced', multi_label: true }, /"threshold": "balanced" weighs the recall of `other`/],
    [{ subset: 0 }, /"subset" must be an integer/],
    [{ accepted_tags: [] }, /"accepted_tags" must be null or a non-empty array/],
    [{ min_freq: -1 }, /"min_freq" must be an integer in \[0, /],
    [[1, 2], /must be a JSON object, got \[1,2\]/],
    ['x', /must be a JSON object, got "x"/],
  ])('rejects %j', (raw, message) => {
    expect(() => parseTrainingArgs(raw)).toThrow(ModelInputError);
    expect(() => parseTrainingArgs(raw)).toThrow(message);
  });

  it.each(['__proto__', 'constructor', 'toString', 'hasOwnProperty'])(
    'rejects the Object.prototype member name %s as an unknown arg',
    (key) => {
      // JSON.parse makes "__proto__" an own key, as a request body or args.json would.
      const raw: unknown = JSON.parse(`{"${key}": 1}`);
      expect(Object.hasOwn(raw as object, key)).toBe(true);
      expect(() => parseTrainingArgs(raw)).toThrow(ModelInputError);
      expect(() => parseTrainingArgs(raw)).toThrow(`unknown training arg "${key}"`);
      expect(Object.getPrototypeOf(parseTrainingArgs({}))).toBe(Object.prototype);
    },
  );

  it('accepts the loss, class weights, min_df and the n-gram range', () => {
    expect(
      parseTrainingArgs({
        loss: 'modified_huber',
        class_weight: 'balanced',
        min_df: 2,
        ngram_min_range: 1,
        ngram_max_range: 1,
      }),
    ).toMatchObject({
      loss: 'modified_huber',
      class_weight: 'balanced',
      min_df: 2,
      ngram_min_range: 1,
      ngram_max_range: 1,
    });
    expect(parseTrainingArgs({ class_weight: null }).class_weight).toBeNull();
    expect(parseTrainingArgs({ classifier: 'softmax', loss: 'log_loss' }).classifier).toBe('softmax');
  });

  it('accepts and validates classifier and average', () => {
    expect(parseTrainingArgs({ classifier: 'softmax', average: true })).toMatchObject({
      classifier: 'softmax',
      average: true,
    });
    expect(() => parseTrainingArgs({ classifier: 'multinomial' })).toThrow(
      /"classifier" must be one of ovr, softmax, linear_svm, logistic_regression, nb_lr, nb_svm, multinomial_nb, complement_nb, soft_vote, fasttext, got "multinomial"/,
    );
    expect(() => parseTrainingArgs({ average: 1 })).toThrow(/"average" must be true or false, got 1/);
  });

  it('accepts ensemble sizes 1..16 (default 1) and rejects anything else', () => {
    expect(parseTrainingArgs({}).ensemble).toBe(1);
    // A seed ensemble averages SGD runs (see member-args.test.ts for the other classifiers).
    expect(parseTrainingArgs({ classifier: 'ovr', ensemble: 16 }).ensemble).toBe(16);
    expect(parseTrainingArgs({ classifier: 'softmax', ensemble: 3 }).ensemble).toBe(3);
    for (const bad of [0, 17, 2.5, -1, '3', null, true]) {
      expect(() => parseTrainingArgs({ ensemble: bad })).toThrow(
        /"ensemble" must be an integer in \[1, 16\]/,
      );
    }
  });

  it('starts messages with the module name', () => {
    expect(() => parseTrainingArgs({ power_t: -1 })).toThrow(/^model\/args: /);
  });
});
