/**
 * The page's client of Tagger's HTTP API. Every call goes to the server that served the page (relative
 * URLs, so a path prefix added by a proxy keeps working). An API key, when the server wants one, is kept
 * in sessionStorage for this tab and sent as `Authorization: Bearer …` — never in a URL.
 */

import type {
  ArgsData,
  Envelope,
  FeedbackData,
  FeedbackItem,
  LabelIssueDecisions,
  LabelIssueDecisionsData,
  LabelIssuesReviewData,
  MonitoringData,
  PredictData,
  ReviewData,
  RunCascadeData,
  RunErrorsData,
  RunHistoryData,
  RunLabelIssuesData,
  RunPerformanceData,
  RunPredictData,
  RunsData,
  ValidationIssue,
  WholePerformanceData,
} from '../../src/http/api-types.js';

/** What a predict call answers: the served model's predictions, or one run's model's. */
export type PredictAnswer = PredictData | RunPredictData;

/** The server wants a key (401) or refused the one sent (403): the page asks for one. */
export class AuthError extends Error {
  constructor(
    readonly status: 401 | 403,
    message: string,
  ) {
    super(message);
  }
}

/** Any other failure, with the server's own `detail` when it sent one. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

const KEY_STORAGE = 'tagger.apiKey';

export const apiKey = {
  get(): string | null {
    return sessionStorage.getItem(KEY_STORAGE);
  },
  set(key: string): void {
    sessionStorage.setItem(KEY_STORAGE, key);
  },
  clear(): void {
    sessionStorage.removeItem(KEY_STORAGE);
  },
};

/** The API lives one level up from the page (`…/ui/` → `…/`). */
const apiUrl = (path: string): string => new URL(`..${path}`, document.baseURI).toString();

/**
 * An error answer's `detail` as a sentence: the envelope's (`ErrorEnvelope`), or a 422's list of issues
 * (`ValidationErrorBody`). Checked rather than trusted: a proxy in between may answer anything.
 */
function detailOf(body: unknown, status: number): string {
  if (typeof body === 'object' && body !== null) {
    const { detail } = body as { detail?: unknown };
    if (typeof detail === 'string') return detail;
    // 422: FastAPI's list of validation errors.
    if (Array.isArray(detail)) {
      return detail.map((item: Partial<ValidationIssue>) => item.msg ?? JSON.stringify(item)).join('; ');
    }
  }
  return `the server answered ${status}`;
}

async function call<T>(path: string, init: RequestInit = {}): Promise<T> {
  const headers = new Headers(init.headers);
  const key = apiKey.get();
  if (key !== null) headers.set('authorization', `Bearer ${key}`);
  let response: Response;
  try {
    response = await fetch(apiUrl(path), { ...init, headers });
  } catch {
    throw new ApiError(0, 'the server cannot be reached; is it running?');
  }
  const body: unknown = await response.json().catch(() => null);
  if (response.status === 401 || response.status === 403) {
    throw new AuthError(response.status, detailOf(body, response.status));
  }
  if (!response.ok) throw new ApiError(response.status, detailOf(body, response.status));
  return (body as Envelope<T>).data;
}

export const api = {
  /** null in single-model mode (the server has no /runs). */
  runs: () =>
    call<RunsData>('/runs').then(
      (data) => data.runs,
      (error: unknown) => {
        if (error instanceof ApiError && error.status === 404) return null;
        throw error;
      },
    ),
  /** The whole report: the page asks without `filter`. */
  servedPerformance: () => call<WholePerformanceData>('/performance').then((data) => data.performance),
  servedArgs: () => call<ArgsData>('/args'),
  performance: (runId: string) =>
    call<RunPerformanceData>(`/runs/${encodeURIComponent(runId)}`).then((data) => data.performance),
  /** GET /runs/{id} whole: the performance, how the model was chosen (when it was), and for a run logged since the server's last reload, `loaded: false`. */
  run: (runId: string) => call<RunPerformanceData>(`/runs/${encodeURIComponent(runId)}`),
  history: (runId: string) =>
    call<RunHistoryData>(`/runs/${encodeURIComponent(runId)}/history`).then((data) => data.history),
  errors: (runId: string) => call<RunErrorsData>(`/runs/${encodeURIComponent(runId)}/errors`),
  labelIssues: (runId: string) => call<RunLabelIssuesData>(`/runs/${encodeURIComponent(runId)}/label-issues`),
  cascade: (runId: string) => call<RunCascadeData>(`/runs/${encodeURIComponent(runId)}/cascade`),
  /** The served run's live figures (GET /monitoring). */
  monitoring: () => call<MonitoringData>('/monitoring').then((data) => data.monitoring),
  /** The review queue (GET /review). */
  review: (limit: number, order = 'margin') =>
    call<ReviewData>(`/review?limit=${limit}&order=${encodeURIComponent(order)}`),
  /** Labels for recorded predictions (POST /feedback): each item answered on its own. */
  feedback: (items: FeedbackItem[]) =>
    call<FeedbackData>('/feedback', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ feedback: items }),
    }),
  /** The served run's label issues not decided yet (GET /review/label-issues). */
  issuesToReview: (limit: number) => call<LabelIssuesReviewData>(`/review/label-issues?limit=${limit}`),
  /** Keep / fix decisions on label issues (POST /review/label-issues). */
  decide: (decisions: LabelIssueDecisions['decisions']) =>
    call<LabelIssueDecisionsData>('/review/label-issues', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ decisions }),
    }),
  /** With the served model, or with one run's model when `runId` is given. */
  predict: (texts: string[], runId?: string) =>
    call<PredictAnswer>(runId === undefined ? '/predict' : `/runs/${encodeURIComponent(runId)}/predict`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ texts: texts.map((text) => ({ text })), explain: true }),
    }),
};
