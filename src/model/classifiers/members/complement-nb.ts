/**
 * `complement_nb`: complement naive Bayes on the tf-idf values, in closed form — scikit-learn's
 * ComplementNB(norm=False): each tag weighted by the feature distribution of the rows without it.
 */
import { defineMember, naiveBayesLink } from './member.js';
import { fitNaiveBayesMember } from './member-fitting.js';
import { fitComplementNb } from './naive-bayes.js';

export const COMPLEMENT_NB = defineMember({
  name: 'complement_nb',
  kind: 'naive Bayes',
  summary: "complement naive Bayes, closed form (scikit-learn's ComplementNB)",
  params: ['nb_alpha', 'calibration'],
  inputs: 'tfidf',
  readsEmbeddings: false,
  link: naiveBayesLink,
  searchCalibration: { alone: 'none', inVote: 'none' },
  needsRowsOfEveryTag: true,
  fit: (data, params) => fitNaiveBayesMember(data, params.nb_alpha, fitComplementNb),
});
