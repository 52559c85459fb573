/**
 * `nb_lr`: NB-LR (Wang & Manning 2012) — logistic regression per tag on binary features scaled by the
 * tag's naive-Bayes log-count ratios, the ratios then folded into the weights.
 */
import { defineMember, oneVsRestLink } from './member.js';
import { fitOneVsRestDual } from './member-fitting.js';

export const NB_LR = defineMember({
  name: 'nb_lr',
  kind: 'NB-LR',
  summary: 'logistic regression on naive-Bayes-scaled binary features (NB-LR, Wang & Manning 2012)',
  params: ['C', 'nb_ratio_alpha', 'calibration'],
  inputs: 'binary',
  readsEmbeddings: false,
  link: oneVsRestLink,
  searchCalibration: { alone: 'draw', inVote: 'none' },
  needsRowsOfEveryTag: false,
  fit: (data, params, options) =>
    fitOneVsRestDual(data, params.C, options, {
      solver: 'logistic',
      ratioAlpha: params.nb_ratio_alpha,
    }),
});
