/**
 * The `fasttext` family: fastText's supervised model (Joulin et al. 2017) in TypeScript — the mean of a
 * text's word, word n-gram and (optionally) character n-gram embeddings, a softmax, hierarchical softmax
 * or one-vs-all output layer, trained by SGD. It is the kind for real-sized data: training costs O(rows ×
 * features × dim) (+ O(log tags) per row with `hs`), the model O(words + n-grams seen) rows, and a
 * prediction microseconds whatever the number of tags. Training reports epochs, like SGD's.
 */
import { drawFrom } from '../../arg-checks.js';
import { type DataShape, formatCount, type MemoryPart } from '../../data-shape.js';
import { ModelInputError } from '../../errors.js';
import type { TrainingArgs } from '../../training-args.js';
import type { ClassifierFamily, ProgressPlan } from '../family.js';
import { decodeFastTextModel, encodeFastTextModel } from './fasttext-artifact.js';
import { FASTTEXT_HYPER_PARAMS } from './fasttext-params.js';
import { refitEpochs, trainFastTextTagger } from './train-fasttext.js';

const REFIT = 'refit on train+validation';

/**
 * The input embeddings (a row of `ft_dim` Float32 per word and per hash bucket, one matrix the threads
 * share), the output layer (a row per tag, or per inner node of the Huffman tree), and every row's
 * feature ids (its words, their n-grams and, with `ft_maxn`, about five character n-grams per length).
 */
function memoryParts(shape: DataShape, args: TrainingArgs): MemoryPart[] {
  const inputRows = shape.words + args.ft_buckets;
  const idsPerToken = args.ft_word_ngrams + (args.ft_maxn > 0 ? 5 * (args.ft_maxn - args.ft_minn + 1) : 0);
  return [
    {
      what: `input embeddings: ${formatCount(inputRows)} rows x ${args.ft_dim}`,
      // The model saved keeps the rows seen (at most as many again while it is encoded).
      bytes: 2 * 4 * inputRows * args.ft_dim,
    },
    {
      what: `output layer: ${formatCount(shape.tags)} tags x ${args.ft_dim}`,
      bytes: 2 * 4 * shape.tags * args.ft_dim,
    },
    { what: 'feature ids of the rows', bytes: 2 * 4 * shape.tokens * idsPerToken },
  ];
}

function progress(args: TrainingArgs): ProgressPlan {
  // The refit continues the validated model for refitEpochs(args) more passes (train-fasttext.ts).
  const total = args.ft_epochs + (args.refit ? refitEpochs(args) : 0);
  return {
    total,
    unit: 'epochs',
    onEpoch: (report) => ({
      done: report.epoch,
      message: `train_loss=${report.trainLoss.toFixed(4)} val_loss=${report.valLoss.toFixed(4)}`,
    }),
    onRefitEpoch: (report) => ({
      done: args.ft_epochs + report.epoch,
      message: `${REFIT}, train_loss=${report.trainLoss.toFixed(4)}`,
    }),
    onMember: () => null,
  };
}

/** The search draws these of the family's hyper-parameters (the rest stay as the base args set them). */
const SEARCHED = ['ft_dim', 'ft_epochs', 'ft_lr', 'ft_word_ngrams', 'ft_maxn', 'ft_loss'] as const;

export const FASTTEXT_FAMILY: ClassifierFamily = {
  name: 'fasttext',
  classifiers: ['fasttext'],
  learnsSeveralTags: () => true,
  since: 'tagger-model/1.6',
  takesEmbeddings: false,
  hyperParams: FASTTEXT_HYPER_PARAMS,
  resolveArgs(args) {
    if (args.ensemble > 1) {
      throw new ModelInputError(
        `model/args: "ensemble" (${args.ensemble}) averages SGD runs of the ovr / softmax classifiers; use "ensemble": 1 with "fasttext"`,
      );
    }
    if (args.encoder !== null) {
      throw new ModelInputError(
        'model/args: "encoder" needs a classifier that reads embeddings (ovr, softmax, linear_svm, logistic_regression or a soft_vote with one of them), but the classifier is "fasttext", which learns its own embeddings of the words; drop "encoder" or "classifier"',
      );
    }
    if (args.ft_maxn > 0 && args.ft_minn > args.ft_maxn) {
      throw new ModelInputError(
        `model/args: "ft_minn" (${args.ft_minn}) must not exceed "ft_maxn" (${args.ft_maxn}); "ft_maxn": 0 takes no character n-grams`,
      );
    }
    return { ...args, members: null };
  },
  train: trainFastTextTagger,
  encode: encodeFastTextModel,
  decode: (checked, bytes) => decodeFastTextModel(checked, bytes),
  progress,
  memoryParts,
  search: {
    choices: ['fasttext'],
    draw: (_choice, _base, random) => ({
      classifier: 'fasttext',
      ...Object.fromEntries(
        SEARCHED.map((key) => [key, drawFrom(FASTTEXT_HYPER_PARAMS[key].search!, random)]),
      ),
    }),
  },
};
