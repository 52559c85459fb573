/**
 * The page's client of Tagger's HTTP API. Every call goes to the server that served the page (relative
 * URLs, so a path prefix added by a proxy keeps working). An API key, when the server wants one, is kept
 * in sessionStorage for this tab and sent as `Authorization: Bearer …` — never in a URL.
 */

export interface Metrics {
  precision: number | null;
  recall: number | null;
  f1: number | null;
  num_samples: number | null;
}

/** The three usual averages over tags (weighted is the same as `overall`). */
export interface Averages {
  micro: Metrics;
  macro: Metrics;
  weighted: Metrics;
}

export interface Performance {
  overall: Metrics;
  class: Record<string, Metrics>;
  slices: Record<string, Metrics>;
  /** Absent from reports written before the averages were added. */
  averages?: Averages;
}

export interface RunRecord {
  run_id: string;
  run_name: string;
  status: string;
  start_time: string | null;
  end_time: string | null;
  metrics: Record<string, number | string>;
  params: Record<string, string>;
  served: boolean;
  mlflow_url?: string;
  not_served_because?: string;
  model_version?: { name: string; version: number; model_uri: string };
}

export interface HistoryPoint {
  step: number;
  value: number;
}

export interface History {
  train_loss: HistoryPoint[];
  val_loss: HistoryPoint[];
}

export interface Mistake {
  text: string;
  /** Multi-label runs: the tags joined by `|`. */
  true_tag: string;
  predicted_tag: string;
  confidence: number;
  /** Multi-label runs only: the true tags and the predicted ones (most probable first, maybe none). */
  true_tags?: string[];
  predicted_tags?: string[];
}

export interface RunErrors {
  /** Both null for a multi-label run: it has no confusion matrix. */
  labels: string[] | null;
  matrix: number[][] | null;
  total: number;
  mistakes: Mistake[];
}

export interface Contribution {
  feature: string;
  analyzer: 'word' | 'char' | 'char_wb';
  value: number;
  contribution: number;
}

export interface Explanation {
  tag: string;
  score: number;
  bias: number;
  contributions: Contribution[];
  rest: number;
  features: number;
}

export interface Prediction {
  input_text: string;
  /** Multi-label: the most probable predicted tag, or `other` when no tag passed its threshold. */
  predicted_tag: string;
  /** Most probable first: `[predicted_tag]` for a single-label model, maybe empty for a multi-label one. */
  predicted_tags: string[];
  /** Each tag's own probability for a multi-label model (they need not sum to 1). */
  predicted_probabilities: Record<string, number>;
  explanation?: Explanation;
}

export interface PredictAnswer {
  run_id?: string;
  predictions: Prediction[];
}

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

function detailOf(body: unknown, status: number): string {
  if (typeof body === 'object' && body !== null) {
    const { detail } = body as { detail?: unknown };
    if (typeof detail === 'string') return detail;
    // 422: FastAPI's list of validation errors.
    if (Array.isArray(detail)) {
      return detail.map((item) => (item as { msg?: string }).msg ?? JSON.stringify(item)).join('; ');
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
  return (body as { data: T }).data;
}

export const api = {
  /** null in single-model mode (the server has no /runs). */
  runs: () =>
    call<{ runs: RunRecord[] }>('/runs').then(
      (data) => data.runs,
      (error: unknown) => {
        if (error instanceof ApiError && error.status === 404) return null;
        throw error;
      },
    ),
  servedPerformance: () =>
    call<{ performance: Performance }>('/performance').then((data) => data.performance),
  servedArgs: () => call<{ args: Record<string, unknown> }>('/args').then((data) => data.args),
  performance: (runId: string) =>
    call<{ performance: Performance }>(`/runs/${encodeURIComponent(runId)}`).then((data) => data.performance),
  history: (runId: string) =>
    call<{ history: History }>(`/runs/${encodeURIComponent(runId)}/history`).then((data) => data.history),
  errors: (runId: string) => call<RunErrors>(`/runs/${encodeURIComponent(runId)}/errors`),
  /** With the served model, or with one run's model when `runId` is given. */
  predict: (texts: string[], runId?: string) =>
    call<PredictAnswer>(runId === undefined ? '/predict' : `/runs/${encodeURIComponent(runId)}/predict`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ texts: texts.map((text) => ({ text })), explain: true }),
    }),
};
