/**
 * Run details for the inspection page (/ui) beyond the contract's report: a run's per-epoch losses, what
 * it got wrong on its test split, the rows of its training data whose tag is probably wrong, and a cascade
 * run's threshold curve. Run-based mode only; ids are checked against the loaded runs first.
 */
import type { ServedRuns } from '../../served-models/index.js';
import { RunCascadeData } from '../cascade-schemas.js';
import { envelope } from '../envelope.js';
import { RunLabelIssuesData } from '../label-issue-schemas.js';
import { errorResponses } from '../responses.js';
import { Envelope, RunErrorsData, RunHistoryData, RunIdParams } from '../schemas.js';
import type { TaggerApp } from '../types.js';

export function inspectionRoutes(app: TaggerApp, current: () => ServedRuns): void {
  app.get(
    '/runs/:run_id/history',
    {
      schema: {
        tags: ['Runs'],
        summary: 'Training curves of one run',
        description:
          "The run's per-epoch training and validation loss, from the tracking store's metric history (MLflow's step is the epoch).",
        params: RunIdParams,
        response: {
          200: Envelope(RunHistoryData, 'RunHistoryResponse'),
          ...errorResponses(404, 409, 422, 500, 503),
        },
      },
    },
    async (request) => {
      const { run_id } = request.params;
      return envelope(request, 200, { run_id, history: await current().current.history(run_id) });
    },
  );

  app.get(
    '/runs/:run_id/errors',
    {
      schema: {
        tags: ['Runs'],
        summary: 'Test-set errors of one run',
        description:
          "The confusion matrix of the run's test split and its misclassified texts, most confident first, from the run's `confusion_matrix.json` and `test_mistakes.json` artifacts. A multi-label run has no confusion matrix (`labels` and `matrix` are null) and its mistakes list the true and predicted tag sets. 404 for a run that did not log them (trained before they were logged, or by another tool).",
        params: RunIdParams,
        response: {
          200: Envelope(RunErrorsData, 'RunErrorsResponse'),
          ...errorResponses(404, 409, 422, 500, 503),
        },
      },
    },
    async (request) => {
      const { run_id } = request.params;
      const { confusion, total, mistakes } = await current().current.confusionAndMistakes(run_id);
      return envelope(request, 200, {
        run_id,
        labels: confusion?.labels ?? null,
        matrix: confusion?.matrix ?? null,
        total,
        mistakes,
      });
    },
  );

  app.get(
    '/runs/:run_id/label-issues',
    {
      schema: {
        tags: ['Runs'],
        summary: 'Probable label errors in the training data of one run',
        description:
          "The rows of the run's training data whose given tag is probably wrong, most unlikely first, each with its file line, text, given and suggested tag and both out-of-fold probabilities (confident learning; multi-label runs: one entry per row tag), from the run's `label_issues.json` artifact, so a person can correct the data and train again. 404 for a run that did not log it (trained before it was logged, with `--no-label-issues`, on data too small to cross-validate, or by another tool).",
        params: RunIdParams,
        response: {
          200: Envelope(RunLabelIssuesData, 'RunLabelIssuesResponse'),
          ...errorResponses(404, 409, 422, 500, 503),
        },
      },
    },
    async (request) => {
      const { run_id } = request.params;
      return envelope(request, 200, { run_id, ...(await current().current.labelIssues(run_id)) });
    },
  );

  app.get(
    '/runs/:run_id/cascade',
    {
      schema: {
        tags: ['Runs'],
        summary: 'The threshold curve of a cascade run',
        description:
          "How a cascade run (the fast model answers every text, the encoder model the ones it is unsure of) chose its threshold τ: the share of training rows routed to the encoder model and the out-of-fold weighted f1 at each τ, the rule and the point it chose, why, and the test split routed and scored stage by stage; from the run's `cascade_curve.json` artifact. 404 for a run that is not a cascade.",
        params: RunIdParams,
        response: {
          200: Envelope(RunCascadeData, 'RunCascadeResponse'),
          ...errorResponses(404, 409, 422, 500, 503),
        },
      },
    },
    async (request) => {
      const { run_id } = request.params;
      return envelope(request, 200, { run_id, ...(await current().current.cascadeCurve(run_id)) });
    },
  );
}
