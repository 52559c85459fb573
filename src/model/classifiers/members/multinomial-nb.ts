/**
 * `multinomial_nb`: multinomial naive Bayes on the tf-idf values, in closed form — scikit-learn's
 * MultinomialNB (multi-label: each tag against the rest, OneVsRestClassifier(MultinomialNB())).
 */
import { defineMember, naiveBayesLink } from './member.js';
import { fitNaiveBayesMember } from './member-fitting.js';
import { fitMultinomialNb } from './naive-bayes.js';

export const MULTINOMIAL_NB = defineMember({
  name: 'multinomial_nb',
  kind: 'naive Bayes',
  summary: "multinomial naive Bayes, closed form (scikit-learn's MultinomialNB)",
  params: ['nb_alpha', 'calibration'],
  inputs: 'tfidf',
  readsEmbeddings: false,
  link: naiveBayesLink,
  searchCalibration: { alone: 'none', inVote: 'none' },
  needsRowsOfEveryTag: true,
  fit: (data, params) => fitNaiveBayesMember(data, params.nb_alpha, fitMultinomialNb),
});
