/**
 * The encoder inputs of `tagger train` and `tagger optimize`: `--encoder <name|dir>` as the `encoder`
 * training arg, `--cascade` as the `cascade` one, and the embeddings of every text the command will see, computed once before any training
 * starts (a bad encoder is one line before anything is trained or logged).
 */
import {
  argsForEncoder,
  type BehaviourSuite,
  checkCascadeArgs,
  type LabelledText,
  parseTrainingArgs,
  type TrainEncoder,
  type TrainingArgs,
} from '../model/index.js';
import { embedTexts, textsToEmbed } from '../train/embeddings.js';
import { createProgress } from '../train/progress.js';
import type { CliIo } from './io.js';

/**
 * `--encoder` over the args it came with: it sets `encoder` (and counts as given by the user), and the
 * encoder run's defaults (ENCODER_DEFAULT_ARGS: an SGD classifier, …) replace those the user did not give.
 */
export function withEncoderFlag(
  given: { args: TrainingArgs; explicit: Set<string> },
  encoder: string | undefined,
): { args: TrainingArgs; explicit: Set<string> } {
  if (encoder === undefined) return given;
  const explicit = new Set([...given.explicit, 'encoder']);
  return { args: argsForEncoder({ ...given.args, encoder: checkedEncoder(encoder) }, explicit), explicit };
}

/**
 * `--cascade` over the args (after `--encoder`): a cascade run, the `cascade` arg set as if given; then the
 * cascade args' combinations are checked (one line: a cascade without an encoder, a budget with a fixed τ).
 */
export function withCascadeFlag(
  given: { args: TrainingArgs; explicit: Set<string> },
  cascade: boolean | undefined,
): { args: TrainingArgs; explicit: Set<string> } {
  const args = cascade === true ? parseTrainingArgs({ ...given.args, cascade: true }) : given.args;
  // Every source of args applied: the cascade's combinations are checked now, before the data is read.
  checkCascadeArgs(args);
  return cascade === true ? { args, explicit: new Set([...given.explicit, 'cascade']) } : given;
}

/** The `--encoder` value as the `encoder` arg checks it (a usage problem is one line, as in the args). */
const checkedEncoder = (encoder: string): string => parseTrainingArgs({ encoder }).encoder!;

/** The args of an encoder run: the CV-chosen encoder configuration for every key the user did not set. */
export const encoderArgs = argsForEncoder;

/**
 * Embeds the texts of a training (the data, `subset` applied; the test data; the behavioural suite's) with
 * the args' encoder, with a progress bar on stderr; undefined for a TF-IDF run.
 */
export async function embedForTraining(
  args: TrainingArgs,
  input: { data: readonly LabelledText[]; testData?: readonly LabelledText[]; behaviour?: BehaviourSuite },
  io: CliIo,
  quiet: boolean,
): Promise<TrainEncoder | undefined> {
  if (args.encoder === null) return undefined;
  const data = args.subset === null ? input.data : input.data.slice(0, args.subset);
  const texts = new Set(textsToEmbed({ ...input, data }));
  let progress: ReturnType<typeof createProgress> | undefined;
  try {
    return await embedTexts(args.encoder, texts, {
      onLoaded: (spec) => {
        if (!quiet) {
          io.stderr.write(
            `tagger: encoder ${spec.name} (${spec.source}; model sha256 ${spec.model_sha256.slice(0, 12)}…, ${spec.dim} dims, ${spec.max_tokens} tokens max)\n`,
          );
        }
        progress = createProgress({
          label: 'embedding',
          total: texts.size,
          silent: quiet,
          stream: io.stderr,
        });
      },
      onProgress: (done) => progress?.update(done),
    });
  } finally {
    progress?.stop();
  }
}
