/**
 * Multi-label benchmark: Tagger's multi-label training (`multi_label: true`, per-tag thresholds) against
 * scikit-learn's equivalent (python/sklearn_multilabel.py) on the same split and arguments — training time
 * and micro / macro / weighted f1 on the test split — plus the in-process prediction cost of the
 * multi-label model next to a single-label model trained on the same texts. Data: Made With ML's
 * multi-label projects.json (mlops-course_146d00b), split 70/15/15 by `splitData` (seed 42), as
 * `tagger train --data projects.json` splits it.
 */
import { resolve } from 'node:path';
import { MemberTagModel } from '../src/model/classifiers/members/member-model.js';
import { SgdTagModel } from '../src/model/classifiers/sgd/sgd-model.js';
import {
  DEFAULT_TRAINING_ARGS,
  evaluate,
  familyOf,
  type LabelledText,
  STOPWORDS,
  type TagModel,
  type TrainingArgs,
  tagsOf,
  trainTagger,
} from '../src/model/index.js';
import type { TrainedTagger } from '../src/model/tagger.js';
import { readDataset } from '../src/train/data.js';
import { splitData } from '../src/train/pipeline.js';
import { DATA_DIR as DATA, PYTHON } from './paths.js';
import { pythonAvailable, runPythonScript } from './python.js';
import { type BenchOptions, rowsOf, type SectionResult } from './section.js';

/** scikit-learn's reference for a classifier is chosen by its family: SGDClassifier for the SGD family. */
const usesSgd = (classifier: string): boolean => familyOf(classifier).name === 'sgd';

const PROJECTS = resolve(DATA, 'mlops-course_146d00b', 'projects.json');
const SEED = 42;
const SECTION = 'multilabel';

/** The arguments under test: the defaults with these three changed. */
const CHANGES = { multi_label: true, threshold: 'tuned', min_freq: 50 } as const;
const ARGS: TrainingArgs = { ...DEFAULT_TRAINING_ARGS, ...CHANGES };
const ARGS_TEXT = `default args (${ARGS.classifier}) + multi_label: true, threshold: tuned, min_freq: 50 (refit: ${ARGS.refit})`;
/** Below this test micro f1 the model is broken, not merely worse (it measures ~0.65 here). */
const MIN_MICRO_F1 = 0.3;

interface SklearnResult {
  train_seconds: number;
  micro_f1: number;
  macro_f1: number;
  weighted_f1: number;
  tags: string[];
  thresholds: Record<string, number>;
  oversampled_rows: number;
  n_features: number;
  sklearn: string;
}

/** python/sklearn_multilabel.py on the same splits, or why it gave nothing (missing venv, crash). */
function sklearn(
  train: readonly LabelledText[],
  validation: readonly LabelledText[],
  test: readonly LabelledText[],
): { result: SklearnResult } | { error: string } {
  if (!pythonAvailable()) {
    return { error: `${PYTHON} not found; no scikit-learn column (set TAGGER_PYTHON or create .venv)` };
  }
  const rows = (split: readonly LabelledText[]) => split.map((r) => ({ text: r.text, tags: tagsOf(r) }));
  try {
    const result = runPythonScript<SklearnResult>('sklearn_multilabel.py', {
      train: rows(train),
      validation: rows(validation),
      test: rows(test),
      args: ARGS,
      stopwords: STOPWORDS,
      seed: SEED,
    });
    return { result };
  } catch (error) {
    const reason = (error as Error).message.split('\n')[0];
    return { error: `python/sklearn_multilabel.py failed (${reason}); no scikit-learn column` };
  }
}

/**
 * CPU µs per text (process user + system) of `predict([text])`, one text per call, for each model, in
 * interleaved passes over the texts (the order reversed every other round), so all see the same machine
 * load; wall µs per text beside it.
 */
function predictCpu(
  models: readonly TagModel[],
  texts: readonly string[],
  rounds: number,
): { cpu: number[]; wall: number[] } {
  let sink = 0;
  // Warm-up: three passes per model, so the JIT has settled before anything is measured.
  for (let i = 0; i < 3; i++) {
    for (const model of models) for (const text of texts) sink += model.predict([text]).length;
  }
  const cpu = models.map(() => 0);
  const wall = models.map(() => 0);
  const forward = models.map((_, m) => m);
  const backward = [...forward].reverse();
  for (let round = 0; round < rounds; round++) {
    for (const m of round % 2 === 0 ? forward : backward) {
      const model = models[m]!;
      const t0 = process.hrtime.bigint();
      const c0 = process.cpuUsage();
      for (const text of texts) sink += model.predict([text])[0]!.predicted_tags.length;
      const c = process.cpuUsage(c0);
      wall[m]! += Number(process.hrtime.bigint() - t0) / 1000;
      cpu[m]! += c.user + c.system;
    }
  }
  if (sink < 0) console.error(sink); // keeps the predictions observable
  const n = rounds * texts.length;
  return { cpu: cpu.map((c) => c / n), wall: wall.map((w) => w / n) };
}

export async function run(opts: BenchOptions): Promise<SectionResult> {
  const data = await readDataset(PROJECTS);
  const { train, validation, test } = splitData(data, false, SEED);

  // Training: best of N (the machine is shared, so the minimum is the least noisy estimate). One training
  // is two fits (validated + refit), ~10 s of CPU here, so there is no separate warm-up run.
  const trainRuns = opts.quick ? 1 : 3;
  const seconds: number[] = [];
  let trained: TrainedTagger | undefined;
  for (let i = 0; i < trainRuns; i++) {
    const t0 = performance.now();
    trained = trainTagger(train, validation, ARGS, { seed: SEED });
    seconds.push((performance.now() - t0) / 1000);
  }
  const { model, tagThresholds } = trained!;
  const averages = evaluate(model, test).averages!;

  const sk = sklearn(train, validation, test);
  const ref = 'result' in sk ? sk.result : null;

  // A single-label model on the same texts (each text's first tag as its label), default arguments.
  const firstTag = (rows: readonly LabelledText[]): LabelledText[] =>
    rows.map((r) => ({ text: r.text, tag: tagsOf(r)[0]! }));
  const single = trainTagger(firstTag(train), firstTag(validation), DEFAULT_TRAINING_ARGS, {
    seed: SEED,
  }).model;
  // The multi-label model's own weights read as a single-label model (argmax, no thresholds): the same
  // vectorizer and number of tags, so the difference is only the multi-label answer (thresholds, tag list;
  // a vote's members' probabilities are then normalised over the tags, a few more operations).
  const singleLabel = { ...model.args, multi_label: false };
  const argmaxView =
    model instanceof SgdTagModel
      ? new SgdTagModel(model.tags, singleLabel, null, model.vectorizer, model.linear)
      : model instanceof MemberTagModel
        ? new MemberTagModel(model.tags, singleLabel, null, model.vectorizer, model.members, model.classes)
        : null;
  if (argmaxView === null) throw new Error('bench/multi-label: expected an SGD model or a vote');
  const rounds = opts.quick ? 5 : 40;
  const texts = test.map((r) => r.text);
  const speed = predictCpu([model, single, argmaxView], texts, rounds);

  const breakage: string[] = [];
  const notes: string[] = [];
  if (averages.micro.f1 < MIN_MICRO_F1) {
    breakage.push(
      `Tagger's multi-label test micro f1 ${averages.micro.f1.toFixed(4)} is below ${MIN_MICRO_F1} (measures ~0.65): the model is broken`,
    );
  }
  if ('error' in sk) notes.push(sk.error);
  else {
    if (sk.result.micro_f1 < MIN_MICRO_F1) {
      notes.push(`scikit-learn's micro f1 ${sk.result.micro_f1.toFixed(4)} is below ${MIN_MICRO_F1}`);
    }
    if (sk.result.tags.join('|') !== model.tags.join('|')) {
      notes.push(
        `the two models know different tags (Tagger ${model.tags.length}, scikit-learn ${sk.result.tags.length}): python/sklearn_multilabel.py no longer follows Tagger's tag rule`,
      );
    }
  }

  const row = rowsOf(SECTION);
  const skName = ref === null ? 'scikit-learn' : `scikit-learn ${ref.sklearn}`;
  const tagCount = `${model.tags.length} tags incl. other`;
  return {
    rows: [
      row(
        'train seconds (projects.json train split, multi-label)',
        's',
        Math.min(...seconds),
        ref?.train_seconds ?? null,
        `best of ${trainRuns}, validated fit + refit; ${ARGS_TEXT}; reference = ${skName}, ${usesSgd(ARGS.classifier) ? 'one SGDClassifier per tag' : `the same ${ARGS.classifier} (python/sklearn_linear.py's members, one problem per tag)`}`,
      ),
      row('test micro f1', 'f1', averages.micro.f1, ref?.micro_f1 ?? null, `${ARGS_TEXT}; ${tagCount}`),
      row('test macro f1', 'f1', averages.macro.f1, ref?.macro_f1 ?? null, `${test.length} test rows`),
      row('test weighted f1', 'f1', averages.weighted.f1, ref?.weighted_f1 ?? null),
      row(
        'predict µs/text: multi-label vs single-label (CPU)',
        'µs/text',
        speed.cpu[0]!,
        speed.cpu[1]!,
        `reference = single-label model (default args, first tag as label, ${single.tags.length} classes); ` +
          `1 text per call, ${texts.length} test texts x ${rounds} rounds, interleaved, user + system CPU`,
      ),
      row(
        'predict µs/text: multi-label vs the same weights as argmax (CPU)',
        'µs/text',
        speed.cpu[0]!,
        speed.cpu[2]!,
        `reference = the multi-label model's weights read single-label (${model.tags.length} tags, argmax, no thresholds), same loop: the cost of the multi-label answer alone`,
      ),
    ],
    breakage,
    notes,
    details: {
      args: ARGS,
      split: { train: train.length, validation: validation.length, test: test.length },
      tagger: {
        train_seconds: seconds,
        averages,
        tags: model.tags,
        thresholds: Object.fromEntries(model.tags.map((t, k) => [t, tagThresholds![k]!])),
      },
      sklearn: 'error' in sk ? sk : sk.result,
      predict: {
        models: ['multi-label', 'single-label (first tag)', 'multi-label weights as argmax'],
        ...speed,
        single_label_tags: single.tags,
      },
    },
  };
}
