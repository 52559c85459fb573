/**
 * The API's answers as static types, for the inspection page (`ui/`): derived from the TypeBox schemas of
 * `schemas.ts` and the `*-schemas.ts` beside it (the ones that validate and serialise the responses and
 * write openapi.json), so renaming or retyping a field there breaks the page's typecheck, not a user.
 * Types only: this module imports nothing at run time, and the page may import it (with `import type`) and
 * nothing else of `src/`, as the dependency rules in `.dependency-cruiser.cjs` check, so no server code
 * reaches the browser bundle.
 *
 * TypeBox has one gap: an object schema whose entries are all `additionalProperties` (a map, such as the
 * metrics of each tag) has the static type `object`, because schema options are not part of a TypeBox
 * type. `Refine` gives such fields the type of their entries, read off the schema's `additionalProperties`
 * (the one thing written here by hand; `Metrics` entries are the schema's own type). It accepts only
 * fields the schema has, with types assignable to the schema's, so it narrows the schema's type and never
 * contradicts it, and a renamed field is still an error.
 */
import type { Static } from 'typebox';
import type { DriftSignal } from '../model/index.js';
import type * as CascadeSchemas from './cascade-schemas.js';
import type * as ExplanationSchemas from './explanation-schemas.js';
import type * as LabelIssueSchemas from './label-issue-schemas.js';
import type * as MonitoringSchemas from './monitoring-schemas.js';
import type * as ReviewSchemas from './review-schemas.js';
import type * as Schemas from './schemas.js';

/**
 * `T` with the fields of `M` narrowed to `M`'s types. Each must be a field of `T` and assignable to its
 * type there (a rename in the schema is an error here, and so in the page).
 */
type Refine<T, M extends { [K in keyof M]: K extends keyof T ? T[K] : never }> = Flat<Omit<T, keyof M> & M>;

/** One object type instead of an intersection (readable in editors' hovers and error messages). */
type Flat<T> = { [K in keyof T]: T[K] } & {};

/** A map of the entries of `additionalProperties` (`Type.Object({}, { additionalProperties: … })`). */
type MapOf<Entry> = Record<string, Entry>;

/** Precision, recall, f1 and support; null where undefined (a NaN at training time). */
export type Metrics = Static<typeof Schemas.Metrics>;

/** The micro, macro and weighted averages over the tags. */
export type Averages = Static<typeof Schemas.Averages>;

/** A performance report: overall, per tag (`class`), per slice, and the averages when it has them. */
export type Performance = Refine<
  Static<typeof Schemas.Performance>,
  { class: MapOf<Metrics>; slices: MapOf<Metrics> }
>;

/** GET /runs/{run_id}: one run's performance report. */
export type RunPerformanceData = Refine<
  Static<typeof Schemas.RunPerformanceData>,
  { performance: Performance }
>;

/** GET /performance without `filter` (the page never sends one): the served model's whole report. */
export type WholePerformanceData = Refine<
  Static<typeof Schemas.PerformanceData>,
  { performance: Performance }
>;

/** A run's metric value: a number, or the string JSON writes for a non-finite one. */
export type RunMetric = number | (typeof Schemas.NON_FINITE_METRICS)[number];

/** A run as GET /runs lists it. */
export type RunRecord = Refine<
  Static<typeof Schemas.RunRecord>,
  { metrics: MapOf<RunMetric>; params: MapOf<string> }
>;

/** The MLflow status of a run. */
export type RunStatus = RunRecord['status'];

/** GET /runs. */
export type RunsData = Refine<Static<typeof Schemas.RunsData>, { runs: RunRecord[] }>;

/** GET /runs/{run_id}/history. */
export type RunHistoryData = Static<typeof Schemas.RunHistoryData>;

/** A run's per-epoch losses. */
export type TrainingHistory = RunHistoryData['history'];

/** One epoch's value of a loss. */
export type HistoryPoint = TrainingHistory['train_loss'][number];

/** GET /runs/{run_id}/errors: the confusion matrix (null for a multi-label run) and the mistakes. */
export type RunErrorsData = Static<typeof Schemas.RunErrorsData>;

/** One test-set mistake. */
export type Mistake = RunErrorsData['mistakes'][number];

/** GET /runs/{run_id}/label-issues: the rows of the run's training data whose tag is probably wrong. */
export type RunLabelIssuesData = Static<typeof LabelIssueSchemas.RunLabelIssuesData>;

/** One probable label error (a row, or one tag of a multi-label row). */
export type LabelIssue = RunLabelIssuesData['issues'][number];

/** GET /runs/{run_id}/cascade: a cascade run's threshold curve, the rule's choice and the test split's figures. */
export type RunCascadeData = Static<typeof CascadeSchemas.RunCascadeData>;

/** Why a model gave a text its tag: one linear score split exactly, or a soft vote and its members. */
export type Explanation = Static<typeof ExplanationSchemas.ExplanationSchema>;

/** A linear model's explanation: the features that moved the tag's score. */
export type LinearExplanation = Static<typeof ExplanationSchemas.LinearExplanationSchema>;

/** A soft vote's explanation: how it combined its members, and each member's score split. */
export type VoteExplanation = Static<typeof ExplanationSchemas.VoteExplanationSchema>;

/** One member of a vote: its weight, link and probability, and its score split like a linear model's. */
export type MemberExplanation = Static<typeof ExplanationSchemas.MemberExplanationSchema>;

/** One feature's part in a score's split. */
export type Contribution = Static<typeof ExplanationSchemas.ContributionSchema>;

/** One text's prediction. */
export type Prediction = Refine<
  Static<typeof Schemas.PredictionItem>,
  { predicted_probabilities: MapOf<number> }
>;

/** POST /predict: the served model's predictions. */
export type PredictData = Refine<Static<typeof Schemas.PredictData>, { predictions: Prediction[] }>;

/** POST /runs/{run_id}/predict: one run's model's predictions. */
export type RunPredictData = Refine<Static<typeof Schemas.RunPredictData>, { predictions: Prediction[] }>;

/** The registered model version a served run answers as. */
export type ModelVersionRef = Static<typeof Schemas.ModelVersionRef>;

/** The served model's training arguments: the spec's ten and any others it was trained with. */
export type TrainingArgs = Static<typeof Schemas.Args> & Record<string, unknown>;

/** GET /args. */
export type ArgsData = Refine<Static<typeof Schemas.ArgsData>, { args: TrainingArgs }>;

/** Every success answer: the envelope (`message`, `method`, `status-code`, …) around the endpoint's data. */
export type Envelope<Data> = Refine<Static<ReturnType<typeof Schemas.Envelope>>, { data: Data }>;

/** Every error answer but a 422: the envelope with `detail`. */
export type ErrorEnvelope = Schemas.ErrorEnvelope;

/** The 422 answer (no envelope): FastAPI's list of validation issues. */
export type ValidationErrorBody = Schemas.ValidationErrorBody;

/** One validation issue of a 422. */
export type ValidationIssue = Schemas.ValidationIssue;

/** One drift signal's figures. */
export type DriftFigures = Static<typeof MonitoringSchemas.MonitoringReport>['drift'][string];

/**
 * GET /monitoring: the served run's live figures (window, tag shares, live metrics, drift, history).
 * `drift` has one entry per signal (its schema lists them, built with Object.fromEntries, which TypeBox
 * types as a map).
 */
export type MonitoringReport = Refine<
  Static<typeof MonitoringSchemas.MonitoringReport>,
  {
    live_class: MapOf<Metrics>;
    drift: Record<DriftSignal, DriftFigures>;
    live_by_stage?: MapOf<Metrics>;
    routing?: CascadeRouting;
  }
>;

/** GET /monitoring of a cascade run: its routing against the training curve (`stages` a map). */
export type CascadeRouting = Refine<
  NonNullable<Static<typeof MonitoringSchemas.MonitoringReport>['routing']>,
  { stages: MapOf<number> }
>;

/** GET /monitoring's data. */
export type MonitoringData = { monitoring: MonitoringReport };

/** POST /feedback: one answer per item. */
export type FeedbackData = Static<typeof MonitoringSchemas.FeedbackData>;

/** POST /feedback's body. */
export type FeedbackPayload = Static<typeof MonitoringSchemas.FeedbackPayload>;

/** One feedback item (what the Review view and the try-it box send). */
export type FeedbackItem = FeedbackPayload['feedback'][number];

/** GET /review: the predictions that most need a person. */
export type ReviewData = Refine<
  Static<typeof ReviewSchemas.ReviewData>,
  {
    items: (Omit<Static<typeof ReviewSchemas.ReviewData>['items'][number], 'predicted_probabilities'> & {
      predicted_probabilities: MapOf<number>;
    })[];
  }
>;

/** One item of the review queue. */
export type ReviewItem = ReviewData['items'][number];

/** GET /review/label-issues: training rows to decide on. */
export type LabelIssuesReviewData = Static<typeof ReviewSchemas.LabelIssuesReviewData>;

/** One training row to decide on. */
export type IssueToReview = LabelIssuesReviewData['items'][number];

/** POST /review/label-issues' body and answer. */
export type LabelIssueDecisions = Static<typeof ReviewSchemas.LabelIssueDecisions>;
export type LabelIssueDecisionsData = Static<typeof ReviewSchemas.LabelIssueDecisionsData>;
