/** `tagger evaluate`: a run or a saved model scored on new labelled data, with training's report. */
import type { Command } from 'commander';
import {
  behaviourTexts,
  compileSlices,
  DEFAULT_BEHAVIOUR_SUITE,
  DEFAULT_SLICE_DEFINITIONS,
  evaluate,
  OTHER_TAG,
  runBehaviourSuite,
  type TagModel,
  tagsOf,
} from '../model/index.js';
import { readDataset } from '../train/data.js';
import {
  type DataColumnFlags,
  dataColumnOptions,
  dataColumns,
  loadModelOfFlags,
  readDefinitions,
  trackingOption,
} from './inputs.js';
import type { CliIo } from './io.js';
import { behaviourSummary, formatMetric, textTable } from './output.js';

interface EvaluateFlags extends DataColumnFlags {
  data: string;
  runId?: string;
  experiment: string;
  trackingUri?: string;
  model?: string;
  json?: boolean;
  behaviour?: string;
  slices?: string;
}

/** `tagger evaluate`: a saved model or run scored on new labelled data, with training's report. */
async function evaluateCommand(flags: EvaluateFlags, io: CliIo): Promise<void> {
  const definitions = await readDefinitions(flags);
  const data = await readDataset(flags.data, dataColumns(flags));
  const loaded = await loadModelOfFlags(flags, io);
  const suite = definitions.behaviour ?? DEFAULT_BEHAVIOUR_SUITE;
  // An encoder run: every text scored (the data's, the suite's) is embedded once, first.
  let model: TagModel;
  try {
    model = await loaded.predictor.prepare([...data.map((row) => row.text), ...behaviourTexts(suite)]);
  } finally {
    await loaded.close();
  }
  const classes = new Set(loaded.model.tags);
  const unknown: Record<string, number> = {};
  for (const row of data) {
    for (const tag of tagsOf(row)) if (!classes.has(tag)) unknown[tag] = (unknown[tag] ?? 0) + 1;
  }
  const sliceDefinitions = definitions.slices ?? DEFAULT_SLICE_DEFINITIONS;
  const performance = evaluate(model, data, compileSlices(sliceDefinitions));
  const behaviour = runBehaviourSuite(model, suite);
  if (flags.json) {
    io.stdout.write(
      `${JSON.stringify({ run_id: loaded.runId, data: flags.data, rows: data.length, unknown_tags: unknown, performance, behavioural: behaviour })}\n`,
    );
    return;
  }
  const folded = Object.entries(unknown).sort((a, b) => b[1] - a[1]);
  const lines = [
    `${loaded.runId === null ? `Model ${flags.model}` : `Run ${loaded.runId}`} on ${flags.data} (${data.length} rows)`,
  ];
  if (folded.length > 0) {
    lines.push(
      `Tags the model does not know, ${loaded.model.args.multi_label ? `left out (a row with no known tag counts as '${OTHER_TAG}')` : `scored as '${OTHER_TAG}'`}: ${folded.map(([tag, count]) => `${tag} (${count})`).join(', ')}`,
    );
  }
  const { overall, averages } = performance;
  lines.push(
    `overall: precision ${formatMetric(overall.precision)}, recall ${formatMetric(overall.recall)}, f1 ${formatMetric(overall.f1)}` +
      (averages
        ? ` (weighted; micro f1 ${formatMetric(averages.micro.f1)}, macro f1 ${formatMetric(averages.macro.f1)})`
        : ''),
  );
  const header = ['tag', 'precision', 'recall', 'f1', 'rows'];
  const rows = Object.entries(performance.class).map(([tag, m]) => [
    tag,
    formatMetric(m.precision),
    formatMetric(m.recall),
    formatMetric(m.f1),
    String(m.num_samples),
  ]);
  lines.push(...textTable(header, rows, [1, 2, 3, 4]));
  // Every defined slice is listed; one without rows says so instead of showing metrics of nothing.
  const sliceRows = sliceDefinitions.map(({ name }) => {
    const m = performance.slices[name];
    return m === undefined
      ? [name, '-', '-', '-', '0']
      : [name, formatMetric(m.precision), formatMetric(m.recall), formatMetric(m.f1), String(m.num_samples)];
  });
  if (sliceRows.length > 0) {
    lines.push('', ...textTable(['slice', 'precision', 'recall', 'f1', 'rows'], sliceRows, [1, 2, 3, 4]));
  }
  io.stdout.write(`${lines.join('\n')}\n`);
  io.stdout.write(behaviourSummary(behaviour));
}

export function registerEvaluate(program: Command, io: CliIo): void {
  const evaluate = program
    .command('evaluate')
    .description(
      'Score the best run, a given run or a saved model on labelled data (title, description, tag): overall, per-tag and per-slice metrics, and the behavioural tests',
    )
    .requiredOption('--data <csv>', 'labelled CSV (title, description, tag; or --text-column/--tag-column)');
  dataColumnOptions(evaluate)
    .option('--run-id <id>', 'evaluate this run instead of the best one')
    .option('--experiment <name>', 'experiment whose best run is evaluated', 'best')
    .option('--model <dir>', 'evaluate a saved model directory instead of a run')
    .addOption(trackingOption())
    .option(
      '--slices <file>',
      'slice definitions (YAML or JSON, as for train) instead of nlp_cnn and short_text',
    )
    .option(
      '--behaviour <file>',
      'behavioural test suite (YAML or JSON, as for train) instead of the default',
    )
    .option(
      '--json',
      'print one JSON object: run_id, rows, unknown_tags, the performance report and the behavioural tests',
    )
    .action((flags: EvaluateFlags) => evaluateCommand(flags, io));
}
