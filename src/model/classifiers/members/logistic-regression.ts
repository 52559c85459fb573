/**
 * `logistic_regression`: L2-regularised logistic regression per tag (one-vs-rest), solved exactly in the
 * dual by coordinate descent — scikit-learn's LogisticRegression(solver='liblinear', dual=True).
 */
import { defineMember, oneVsRestLink } from './member.js';
import { fitOneVsRestDual } from './member-fitting.js';

export const LOGISTIC_REGRESSION = defineMember({
  name: 'logistic_regression',
  kind: 'logistic regression',
  summary:
    "logistic regression per tag, solved exactly in the dual (scikit-learn's liblinear LogisticRegression)",
  params: ['C', 'calibration'],
  inputs: 'tfidf',
  readsEmbeddings: true,
  link: oneVsRestLink,
  searchCalibration: { alone: 'draw', inVote: 'none' },
  needsRowsOfEveryTag: false,
  fit: (data, params, options) => fitOneVsRestDual(data, params.C, options, { solver: 'logistic' }),
});
