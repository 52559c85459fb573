/**
 * The SGD family: `ovr` (scikit-learn's one-vs-rest SGDClassifier) and `softmax` (multinomial
 * regression), trained by SGD on the TF-IDF features and, for an encoder run, sentence embeddings. Its
 * training reports epochs; `tagger optimize` draws its loss, learning rate, power_t and alpha.
 */
import { drawFrom } from '../../arg-checks.js';
import { csrBytes, type DataShape, formatCount, type MemoryPart } from '../../data-shape.js';
import { ModelInputError } from '../../errors.js';
import type { TrainingArgs } from '../../training-args.js';
import type { ClassifierFamily, ProgressPlan } from '../family.js';
import { decodeSgdModel, encodeSgdModel } from './sgd-artifact.js';
import { SGD_CLASSIFIERS, SGD_HYPER_PARAMS } from './sgd-params.js';
import { trainSgdTagger } from './train-sgd.js';

const REFIT = 'refit on train+validation';

/**
 * Dense weights of every feature for every tag while training (plus their running average), the
 * ensemble's members kept until they are averaged, and the rows as TF-IDF matrices.
 */
function memoryParts(shape: DataShape, args: TrainingArgs): MemoryPart[] {
  const weights = 8 * shape.features * shape.tags;
  const copies = (args.average ? 2 : 1) + args.ensemble;
  return [
    {
      what: `weights: ${formatCount(shape.features)} features x ${formatCount(shape.tags)} tags x ${copies}`,
      bytes: copies * weights,
    },
    { what: 'TF-IDF rows', bytes: 2 * csrBytes(shape.nonZeros, shape.rows) },
  ];
}

function progress(args: TrainingArgs): ProgressPlan {
  // With refit the epochs run twice: the validated fit, then the fit on train + validation.
  const total = args.num_epochs * (args.refit ? 2 : 1);
  return {
    total,
    unit: 'epochs',
    onEpoch: (report) => ({
      done: report.epoch,
      message: `train_loss=${report.trainLoss.toFixed(4)} val_loss=${report.valLoss.toFixed(4)}`,
    }),
    onRefitEpoch: (report) => ({
      done: report.epochs + report.epoch,
      message: `${REFIT}, train_loss=${report.trainLoss.toFixed(4)}`,
    }),
    onMember: () => null,
  };
}

export const SGD_FAMILY: ClassifierFamily = {
  name: 'sgd',
  classifiers: SGD_CLASSIFIERS,
  learnsSeveralTags: (classifier) => classifier !== 'softmax',
  since: 'tagger-model/1',
  takesEmbeddings: true,
  hyperParams: SGD_HYPER_PARAMS,
  resolveArgs(args) {
    if (args.classifier === 'softmax' && args.loss !== 'log_loss') {
      throw new ModelInputError(
        `model/args: "loss" ${JSON.stringify(args.loss)} needs "classifier": "ovr" (softmax regression is log loss by definition)`,
      );
    }
    if (args.multi_label && args.classifier === 'softmax') {
      throw new ModelInputError(
        'model/args: "multi_label" needs a one-vs-rest classifier, not "softmax" (softmax makes the tags compete for one probability mass)',
      );
    }
    return { ...args, members: null };
  },
  train: trainSgdTagger,
  encode: encodeSgdModel,
  decode: decodeSgdModel,
  progress,
  memoryParts,
  search: {
    choices: ['sgd'],
    draw(_choice, base, random) {
      const classifier = base.classifier === 'softmax' ? 'softmax' : 'ovr';
      // Drawn in this order (loss only for ovr: softmax keeps log loss), so a seed draws the same trials.
      const loss = classifier === 'ovr' ? drawFrom(SGD_HYPER_PARAMS.loss.search!, random) : 'log_loss';
      return {
        classifier,
        loss,
        learning_rate: drawFrom(SGD_HYPER_PARAMS.learning_rate.search!, random),
        power_t: drawFrom(SGD_HYPER_PARAMS.power_t.search!, random),
        alpha: drawFrom(SGD_HYPER_PARAMS.alpha.search!, random),
        ensemble: base.ensemble,
      };
    },
  },
};
