/**
 * `linear_svm`: an L2-regularised linear SVM per tag (one-vs-rest), hinge or squared hinge, solved exactly
 * in the dual by coordinate descent — scikit-learn's LinearSVC(dual=True). Its margins are not
 * probabilities: normalised sigmoids order the tags, and `calibration: sigmoid` makes them calibrated.
 */
import { defineMember, oneVsRestLink } from './member.js';
import { fitOneVsRestDual } from './member-fitting.js';

export const LINEAR_SVM = defineMember({
  name: 'linear_svm',
  kind: 'linear SVM',
  summary: "linear SVM per tag, solved exactly in the dual (scikit-learn's LinearSVC)",
  params: ['C', 'svm_loss', 'calibration'],
  inputs: 'tfidf',
  readsEmbeddings: true,
  link: oneVsRestLink,
  searchCalibration: { alone: 'draw', inVote: 'sigmoid' },
  needsRowsOfEveryTag: false,
  fit: (data, params, options) =>
    fitOneVsRestDual(data, params.C, options, {
      solver: 'svm',
      svmLoss: params.svm_loss,
    }),
});
