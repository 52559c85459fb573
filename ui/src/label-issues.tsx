/**
 * A run's probable label errors in its training data (GET /runs/{id}/label-issues): the rows whose given
 * tag a model trained without them finds unlikely, each with its file line and the suggested fix, so a
 * person can correct the data and train again. Filterable by the given tag (single-label) or by the tag
 * the fix is about (multi-label).
 */
import { useMemo, useState } from 'preact/hooks';
import type { LabelIssue, RunLabelIssuesData } from '../../src/http/api-types.js';
import { ApiError, api } from './api';
import { Failure, useLoad } from './load';
import { TableScroll } from './table-scroll';

/** The tag a filter matches: the given tag of a row, or the tag a multi-label fix adds or drops. */
const tagOf = (issue: LabelIssue): string => issue.given_tag ?? issue.tag ?? '';

const line = (issue: LabelIssue): string => (issue.line === null ? '–' : String(issue.line));

function SingleLabelRows({ issues }: { issues: LabelIssue[] }) {
  return (
    <table class="label-issues">
      <thead>
        <tr>
          <th scope="col">Line</th>
          <th scope="col">Text</th>
          <th scope="col">Given tag</th>
          <th scope="col">p(given)</th>
          <th scope="col">Suggested tag</th>
          <th scope="col">p(suggested)</th>
        </tr>
      </thead>
      <tbody>
        {issues.map((issue) => (
          <tr key={issue.rank}>
            <td class="num">{line(issue)}</td>
            <td class="text">{issue.text}</td>
            <td class="given">
              {issue.data_tag === undefined ? issue.given_tag : `${issue.data_tag} (as ${issue.given_tag})`}
            </td>
            <td class="num">{issue.given_probability.toFixed(3)}</td>
            <td class="suggested">
              <span aria-hidden="true">→ </span>
              {issue.suggested_tag}
              {!issue.confident && <span class="muted"> (most probable; not confident)</span>}
            </td>
            <td class="num">{issue.suggested_probability.toFixed(3)}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

function MultiLabelRows({ issues }: { issues: LabelIssue[] }) {
  return (
    <table class="label-issues">
      <thead>
        <tr>
          <th scope="col">Line</th>
          <th scope="col">Text</th>
          <th scope="col">Given tags</th>
          <th scope="col">Suggested fix</th>
          <th scope="col">p as given</th>
          <th scope="col">p as fixed</th>
        </tr>
      </thead>
      <tbody>
        {issues.map((issue) => (
          <tr key={issue.rank}>
            <td class="num">{line(issue)}</td>
            <td class="text">{issue.text}</td>
            <td class="given">{issue.given_tags?.join(', ') || '(none)'}</td>
            <td class="suggested">
              {issue.kind === 'extra_tag' ? 'drop ' : 'add '}
              {issue.tag}
              {!issue.confident && <span class="muted"> (not confident)</span>}
            </td>
            <td class="num">{issue.given_probability.toFixed(3)}</td>
            <td class="num">{issue.suggested_probability.toFixed(3)}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

function LabelIssues({ report }: { report: RunLabelIssuesData }) {
  const [tag, setTag] = useState('');
  const tags = useMemo(() => [...new Set(report.issues.map(tagOf))].sort(), [report]);
  const shown = report.issues.filter((issue) => tag === '' || tagOf(issue) === tag);
  return (
    <>
      <p class="hint">
        Rows of the training data (
        {report.sampled_from === undefined
          ? `${report.rows} rows`
          : `a seeded sample of ${report.rows} of its ${report.sampled_from} rows`}
        ) whose given {report.multi_label ? 'tags' : 'tag'} a model trained without them finds unlikely:
        confident learning on {report.folds}-fold out-of-fold probabilities, the most unlikely first. Check
        each row at its line in the data file: correct the tag and train again, or keep it if the model is the
        one that is wrong.
      </p>
      {report.found === 0 ? (
        <p class="muted" data-testid="no-label-issues">
          No row’s tag looks wrong.
        </p>
      ) : (
        <>
          <div class="filters">
            <label>
              {report.multi_label ? 'Tag' : 'Given tag'}
              <select value={tag} onChange={(event) => setTag(event.currentTarget.value)}>
                <option value="">any</option>
                {tags.map((t) => (
                  <option key={t} value={t}>
                    {t}
                  </option>
                ))}
              </select>
            </label>
          </div>
          <p class="count" aria-live="polite">
            {shown.length} shown of {report.issues.length} kept
            {report.found > report.issues.length
              ? ` (${report.found} found in all; the most unlikely kept)`
              : ''}
          </p>
          <TableScroll label="Probable label errors">
            {report.multi_label ? <MultiLabelRows issues={shown} /> : <SingleLabelRows issues={shown} />}
          </TableScroll>
        </>
      )}
    </>
  );
}

export function LabelIssuesPart({ runId }: { runId: string }) {
  const report = useLoad(() => api.labelIssues(runId), [runId]);
  return (
    <section aria-labelledby="label-issues-title">
      <h3 id="label-issues-title">Probable label errors in the training data</h3>
      {report.error instanceof ApiError && report.error.status === 404 ? (
        <p class="muted">
          This run did not log its training data’s label issues (it was trained before Tagger looked for them,
          with --no-label-issues, on data too small to cross-validate, or by another tool).
        </p>
      ) : report.error ? (
        <Failure error={report.error} />
      ) : report.value ? (
        <LabelIssues report={report.value} />
      ) : (
        <p class="loading">Loading label issues…</p>
      )}
    </section>
  );
}
