/**
 * `nb_svm`: NB-SVM (Wang & Manning 2012) — a linear SVM per tag on binary features scaled by the tag's
 * naive-Bayes log-count ratios, its weights interpolated towards their mean magnitude by β
 * (`nb_svm_beta`), the ratios then folded into the weights.
 */
import { defineMember, oneVsRestLink } from './member.js';
import { fitOneVsRestDual } from './member-fitting.js';

export const NB_SVM = defineMember({
  name: 'nb_svm',
  kind: 'NB-SVM',
  summary: 'linear SVM on naive-Bayes-scaled binary features, interpolated (NB-SVM, Wang & Manning 2012)',
  params: ['C', 'svm_loss', 'nb_ratio_alpha', 'nb_svm_beta', 'calibration'],
  inputs: 'binary',
  readsEmbeddings: false,
  link: oneVsRestLink,
  searchCalibration: { alone: 'draw', inVote: 'sigmoid' },
  needsRowsOfEveryTag: false,
  fit: (data, params, options) =>
    fitOneVsRestDual(data, params.C, options, {
      solver: 'svm',
      svmLoss: params.svm_loss,
      ratioAlpha: params.nb_ratio_alpha,
      interpolation: params.nb_svm_beta,
    }),
});
