/**
 * The page: a hash router over the views (runs, one run, two runs compared, try it, live, review), the run list kept
 * fresh by polling (so a hot reload of the served run shows up), and the API-key prompt.
 */
import { useCallback, useEffect, useState } from 'preact/hooks';
import type { RunRecord } from '../../src/http/api-types.js';
import { ApiError, AuthError, api, apiKey } from './api';
import { CompareView } from './compare';
import { shortId } from './format';
import { LiveView } from './live';
import { Failure, useLoad } from './load';
import { isMultiLabel } from './multi-label';
import { ReviewView } from './review';
import { ArgsTable, MetricCards, MetricsTable, MultiLabelBadge, PerTag, RunView } from './run';
import { RunsTable } from './runs';
import { TryIt } from './try';

/** How often the run list is read again: a hot reload shows within this. */
const POLL_MS = 3000;

type Route =
  | { view: 'runs' }
  | { view: 'run'; runId: string }
  | { view: 'compare'; left: string; right: string }
  | { view: 'try'; runId?: string }
  | { view: 'live' }
  | { view: 'review' };

function parseRoute(hash: string): Route {
  const parts = hash.replace(/^#\/?/, '').split('/').map(decodeURIComponent);
  if (parts[0] === 'run' && parts[1]) return { view: 'run', runId: parts[1] };
  if (parts[0] === 'compare' && parts[1] && parts[2])
    return { view: 'compare', left: parts[1], right: parts[2] };
  if (parts[0] === 'try') return parts[1] ? { view: 'try', runId: parts[1] } : { view: 'try' };
  if (parts[0] === 'live') return { view: 'live' };
  if (parts[0] === 'review') return { view: 'review' };
  return { view: 'runs' };
}

const go = (...parts: string[]) => {
  window.location.hash = `#/${parts.map(encodeURIComponent).join('/')}`;
};

function KeyPrompt({ error, onKey }: { error: AuthError; onKey: () => void }) {
  const [key, setKey] = useState('');
  return (
    <section class="key-prompt" aria-labelledby="key-title">
      <h2 id="key-title">API key needed</h2>
      <p>
        {error.status === 403 ? 'The server did not accept that key.' : 'This server asks for an API key.'} It
        is kept in this browser tab only and sent in a header, never in a URL.
      </p>
      <form
        onSubmit={(event) => {
          event.preventDefault();
          if (key.trim() === '') return;
          apiKey.set(key.trim());
          onKey();
        }}
      >
        <label for="api-key">API key</label>
        <input
          id="api-key"
          type="password"
          autocomplete="off"
          value={key}
          onInput={(event) => setKey(event.currentTarget.value)}
        />
        <button type="submit">Use key</button>
      </form>
    </section>
  );
}

/**
 * A run the server's list does not have: logged since its last reload (the store has it: shown with its
 * report from the store and when the next poll is due; the list picks it up then) or no run at all.
 */
function NotListedRun({ runId }: { runId: string }) {
  const answer = useLoad(() => api.run(runId), [runId]);
  if (answer.error) {
    return answer.error instanceof ApiError && answer.error.status === 404 ? (
      <p class="error">No run {runId} in this experiment.</p>
    ) : (
      <Failure error={answer.error} />
    );
  }
  if (!answer.value) return <p class="loading">Loading run {shortId(runId)}…</p>;
  const { performance, next_poll_in_s: next, loaded } = answer.value;
  return (
    <article aria-labelledby="unloaded-title">
      <h2 id="unloaded-title">
        Run <code>{shortId(runId)}</code>
      </h2>
      {loaded === false && (
        <p class="reload-note" role="status">
          Logged, not yet loaded by this server (
          {next === null || next === undefined
            ? 'it does not poll: a reload (SIGHUP) picks it up'
            : `next poll in ${next} s`}
          ). Its report below is the tracking store's; the run list, its inspection and its predictions come
          once the server has loaded it.
        </p>
      )}
      <MetricCards performance={performance} />
      <PerTag performance={performance} />
    </article>
  );
}

/** Single-model mode: no runs, only the served model's report and arguments. */
function ServedModel() {
  const performance = useLoad(() => api.servedPerformance(), []);
  const args = useLoad(() => api.servedArgs(), []);
  return (
    <article aria-labelledby="model-title">
      <h2 id="model-title">
        Served model {args.value && isMultiLabel(args.value.args) && <MultiLabelBadge />}
      </h2>
      <p class="muted">This server serves one saved model (single-model mode): there are no runs to list.</p>
      {performance.error && <Failure error={performance.error} />}
      {performance.value && (
        <>
          <MetricCards performance={performance.value} />
          <PerTag performance={performance.value} />
          <h3>Slices</h3>
          <MetricsTable rows={performance.value.slices} first="Slice" />
        </>
      )}
      <h3>Arguments</h3>
      {args.error && <Failure error={args.error} />}
      {args.value && <ArgsTable args={args.value.args} unused={args.value.unused_args} />}
    </article>
  );
}

export function App() {
  const [route, setRoute] = useState(() => parseRoute(window.location.hash));
  const [runs, setRuns] = useState<RunRecord[] | null | undefined>(undefined);
  const [failure, setFailure] = useState<Error | null>(null);
  const [auth, setAuth] = useState<AuthError | null>(null);
  const [reloaded, setReloaded] = useState('');
  const [attempt, setAttempt] = useState(0);

  useEffect(() => {
    const onHash = () => setRoute(parseRoute(window.location.hash));
    const onAuth = (event: Event) => setAuth((event as CustomEvent<AuthError>).detail);
    window.addEventListener('hashchange', onHash);
    window.addEventListener('tagger:auth', onAuth);
    return () => {
      window.removeEventListener('hashchange', onHash);
      window.removeEventListener('tagger:auth', onAuth);
    };
  }, []);

  const refresh = useCallback(async () => {
    try {
      const next = await api.runs();
      setFailure(null);
      setAuth(null);
      setRuns((before) => {
        const was = before?.find((run) => run.served)?.run_id;
        const now = next?.find((run) => run.served);
        if (was && now && was !== now.run_id) {
          setReloaded(
            `Hot reload: now serving ${now.run_name || shortId(now.run_id)} (${shortId(now.run_id)}), was ${shortId(was)}.`,
          );
        }
        return next;
      });
    } catch (error) {
      if (error instanceof AuthError) setAuth(error);
      else setFailure(error instanceof Error ? error : new Error(String(error)));
    }
  }, []);

  useEffect(() => {
    void refresh();
    const timer = setInterval(() => {
      if (document.visibilityState === 'visible') void refresh();
    }, POLL_MS);
    return () => clearInterval(timer);
  }, [refresh, attempt]);

  const served = runs?.find((run) => run.served) ?? null;
  const byId = (runId: string) => runs?.find((run) => run.run_id === runId);

  let body: preact.ComponentChildren;
  if (auth) {
    body = (
      <KeyPrompt
        error={auth}
        onKey={() => {
          setAuth(null);
          setAttempt((n) => n + 1);
        }}
      />
    );
  } else if (runs === undefined) {
    body = failure ? <Failure error={failure} /> : <p class="loading">Loading runs…</p>;
  } else if (route.view === 'live') {
    body = <LiveView />;
  } else if (route.view === 'review') {
    body = <ReviewView hasRuns={runs !== null} />;
  } else if (route.view === 'try') {
    // A run's own model (`#/try/<run id>`); single-model mode has no runs, only the served model.
    const run = route.runId !== undefined && runs !== null ? byId(route.runId) : undefined;
    const model = run ?? served;
    body =
      route.runId !== undefined && runs !== null && run === undefined ? (
        <p class="error">No run {route.runId} in this experiment.</p>
      ) : (
        <TryIt
          key={run?.run_id ?? 'served'}
          servedRunId={served?.run_id ?? null}
          run={run}
          multiLabel={model ? isMultiLabel(model.params) : undefined}
        />
      );
  } else if (runs === null) {
    body = (
      <>
        <ServedModel />
        <TryIt servedRunId={null} />
      </>
    );
  } else if (route.view === 'run') {
    const run = byId(route.runId);
    body = run ? <RunView run={run} /> : <NotListedRun key={route.runId} runId={route.runId} />;
  } else if (route.view === 'compare') {
    const left = byId(route.left);
    const right = byId(route.right);
    body =
      left && right ? (
        <CompareView left={left} right={right} />
      ) : (
        <p class="error">Both runs must be runs of this experiment.</p>
      );
  } else {
    body = (
      <>
        {served && (
          <p class="served-summary">
            Serving{' '}
            <a href={`#/run/${encodeURIComponent(served.run_id)}`}>
              {served.run_name || shortId(served.run_id)}
            </a>{' '}
            <code>{shortId(served.run_id)}</code>
            {served.model_version && (
              <>
                {' '}
                as <code>{served.model_version.model_uri}</code> (version {served.model_version.version})
              </>
            )}
          </p>
        )}
        <RunsTable
          runs={runs}
          onOpen={(runId) => go('run', runId)}
          onCompare={(a, b) => go('compare', a, b)}
        />
      </>
    );
  }

  const link = (view: Route['view'], label: string, href: string) => (
    <a href={href} aria-current={route.view === view ? 'page' : undefined}>
      {label}
    </a>
  );
  return (
    <>
      <header>
        <h1>Tagger</h1>
        <nav aria-label="Views">
          {link('runs', 'Runs', '#/')}
          {link('try', 'Try it', '#/try')}
          {link('live', 'Live', '#/live')}
          {link('review', 'Review', '#/review')}
          <a href="../docs">API docs</a>
        </nav>
        {failure && runs !== undefined && <p class="warn">Run list not refreshed: {failure.message}</p>}
      </header>
      <p class="reload-note" role="status">
        {reloaded}
      </p>
      <main>{body}</main>
    </>
  );
}
