/**
 * The Review view (`#/review`): a person labels what most needs it, one item at a time, by mouse or key.
 * Predictions — the served run's review queue (GET /review: the smallest margin first, near copies left
 * out, with a random share that keeps the live figures honest) — each with its text, predicted tag, probabilities and
 * explanation; a button and a key (1–9) per tag, "another tag…" (0), skip (s); each answer goes to POST
 * /feedback with the item's `selection`. Training rows — the served run's label issues (GET
 * /review/label-issues) — each kept (k), fixed to the suggested tag (f), or to a tag of the person's
 * choosing; each decision goes to POST /review/label-issues. A kept row is not listed again.
 */
import { useEffect, useRef, useState } from 'preact/hooks';
import type { Explanation, ReviewItem } from '../../src/http/api-types.js';
import { AuthError, api } from './api';
import { Failure } from './load';
import { buttonTags, LISTED_PROBABILITIES, TAG_PAGE } from './many-tags';
import { Highlighted, type Highlights, ScoreSplit, VoteSplit } from './try';

/** Items fetched at a time. */
const BATCH = 20;

const SELECTIONS: Record<ReviewItem['selection'], string> = {
  random_share: 'random share',
  margin: 'smallest margin',
  uncertainty: 'least confident',
  drift: 'most unseen words',
  newest: 'newest',
  random: 'random order',
};

const highlightsOf = (explanation: Explanation | undefined): Highlights | null => {
  if (explanation === undefined) return null;
  if ('vote' in explanation) {
    const member = explanation.vote.members[0];
    return member
      ? { contributions: member.contributions, target: `${member.classifier}'s score of ${explanation.tag}` }
      : null;
  }
  return { contributions: explanation.contributions, target: explanation.tag };
};

/** Reports a failed call: an auth error to the page's key prompt, anything else as the view's error. */
function failed(error: unknown, setError: (error: Error) => void): void {
  if (error instanceof AuthError) window.dispatchEvent(new CustomEvent('tagger:auth', { detail: error }));
  setError(error instanceof Error ? error : new Error(String(error)));
}

/**
 * A batch of items a person goes through one at a time, as both review views do: loaded (again when the
 * last is done), the current item, moving on, and one call to the server at a time (`send`: refused while
 * one is under way; a failure is the view's error).
 */
function useBatch<Data extends { items: readonly unknown[] }>(fetchBatch: () => Promise<Data>) {
  const [data, setData] = useState<Data | null>(null);
  const [index, setIndex] = useState(0);
  const [other, setOther] = useState(false);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<Error | null>(null);
  const [note, setNote] = useState('');

  const load = async () => {
    setError(null);
    try {
      setData(await fetchBatch());
      setIndex(0);
    } catch (failure) {
      failed(failure, setError);
    }
  };
  useEffect(() => void load(), []);

  const next = () => {
    setOther(false);
    if (data && index + 1 < data.items.length) setIndex(index + 1);
    else void load();
  };
  const send = async (call: () => Promise<void>) => {
    if (busy) return;
    setBusy(true);
    try {
      await call();
    } catch (failure) {
      failed(failure, setError);
    } finally {
      setBusy(false);
    }
  };
  const item: Data['items'][number] | undefined = data?.items[index];
  return { data, item, index, other, setOther, busy, error, note, setNote, next, send };
}

/** Keys 1–9, 0, and letters, while the focus is not in a text field. */
function useKeys(onKey: (key: string) => void, deps: unknown[]): void {
  const handler = useRef(onKey);
  handler.current = onKey;
  useEffect(() => {
    const listen = (event: KeyboardEvent) => {
      const target = event.target as HTMLElement | null;
      if (target && (target.tagName === 'INPUT' || target.tagName === 'TEXTAREA' || target.isContentEditable))
        return;
      if (event.ctrlKey || event.metaKey || event.altKey) return;
      handler.current(event.key);
    };
    window.addEventListener('keydown', listen);
    return () => window.removeEventListener('keydown', listen);
  }, deps);
}

/** "another tag…": a field for a tag the buttons lack (a tag the model does not know is kept for retraining). */
function OtherTag({
  onTag,
  onCancel,
  tags = [],
}: {
  onTag: (tag: string) => void;
  onCancel: () => void;
  /** The model's tags, offered as the field's suggestions. */
  tags?: readonly string[] | undefined;
}) {
  const [tag, setTag] = useState('');
  const field = useRef<HTMLInputElement>(null);
  useEffect(() => field.current?.focus(), []);
  return (
    <form
      class="other-tag"
      onSubmit={(event) => {
        event.preventDefault();
        if (tag.trim() !== '') onTag(tag.trim());
      }}
    >
      <label for="other-tag">Another tag</label>
      <input
        id="other-tag"
        ref={field}
        value={tag}
        autocomplete="off"
        list="other-tag-suggestions"
        onInput={(event) => setTag(event.currentTarget.value)}
        onKeyDown={(event) => {
          if (event.key === 'Escape') onCancel();
        }}
      />
      <datalist id="other-tag-suggestions">
        {tags.map((name) => (
          <option key={name} value={name} />
        ))}
      </datalist>
      <button type="submit" disabled={tag.trim() === ''}>
        Use it
      </button>
      <button type="button" onClick={onCancel}>
        Cancel
      </button>
    </form>
  );
}

/** "another tag…" (key 0, opening its field) and skip (key s), under the tag buttons. */
function OtherOrSkip({
  other,
  setOther,
  onTag,
  onSkip,
  tags,
}: {
  other: boolean;
  setOther: (open: boolean) => void;
  onTag: (tag: string) => void;
  onSkip: () => void;
  /** Every tag of the model, suggested in the "another tag" field. */
  tags?: readonly string[];
}) {
  return (
    <>
      <p class="actions">
        <button type="button" aria-keyshortcuts="0" onClick={() => setOther(true)}>
          <kbd>0</kbd> another tag…
        </button>{' '}
        <button type="button" aria-keyshortcuts="s" onClick={onSkip}>
          <kbd>s</kbd> skip
        </button>
      </p>
      {other && <OtherTag onTag={onTag} onCancel={() => setOther(false)} tags={tags} />}
    </>
  );
}

/** A bar of tag buttons, numbered 1–9 for their keys. */
function TagButtons({
  tags,
  marked,
  onTag,
  label,
}: {
  tags: readonly string[];
  marked?: ReadonlySet<string>;
  onTag: (tag: string) => void;
  label: string;
}) {
  return (
    <fieldset class="tag-buttons">
      <legend class="visually-hidden">{label}</legend>
      {tags.map((tag, i) => (
        <button
          key={tag}
          type="button"
          data-tag={tag}
          aria-keyshortcuts={i < 9 ? String(i + 1) : undefined}
          class={marked?.has(tag) ? 'marked' : undefined}
          onClick={() => onTag(tag)}
        >
          {i < 9 && <kbd>{i + 1}</kbd>} {tag}
        </button>
      ))}
    </fieldset>
  );
}

function Probabilities({ probabilities }: { probabilities: Record<string, number> }) {
  const entries = Object.entries(probabilities).sort((a, b) => b[1] - a[1]);
  // A model of many tags: its most probable ones, as POST /predict lists them.
  const shown = entries.length > TAG_PAGE ? entries.slice(0, LISTED_PROBABILITIES) : entries;
  return (
    <>
      {shown.length < entries.length && (
        <p class="hint">
          The {shown.length} most probable of the model’s {entries.length} tags.
        </p>
      )}
      <ul class="probabilities">
        {shown.map(([tag, p]) => (
          <li key={tag}>
            <span class="name">{tag}</span>
            <meter min={0} max={1} value={p} aria-label={`probability of ${tag}`} />
            <span class="num">{p.toFixed(3)}</span>
          </li>
        ))}
      </ul>
    </>
  );
}

function PredictionsReview() {
  const batch = useBatch(() => api.review(BATCH));
  const { data: queue, item, index, other, setOther, busy, error, note, setNote, next } = batch;
  const [done, setDone] = useState(0);

  const answer = (tag: string) =>
    batch.send(async () => {
      if (item === undefined) return;
      const stored = await api.feedback([
        { prediction_id: item.prediction_id, tag, selection: item.selection },
      ]);
      const outcome = stored.feedback[0]!;
      if (outcome.status === 200) {
        setDone((n) => n + 1);
        setNote(
          `Labelled ${tag}${outcome.detail === 'stored' ? '' : ` (${outcome.detail.replace(/^stored; /, '')})`}.`,
        );
        next();
      } else {
        setNote(`Not stored: ${outcome.detail}`);
      }
    });
  useKeys(
    (key) => {
      if (!queue || item === undefined || other) return;
      if (/^[1-9]$/.test(key)) {
        const tag = buttonTags(queue.tags, [item.predicted_tag], item.predicted_probabilities)[
          Number(key) - 1
        ];
        if (tag !== undefined) void answer(tag);
      } else if (key === '0') setOther(true);
      else if (key === 's') {
        setNote('Skipped.');
        next();
      }
    },
    [queue, index, other, busy],
  );

  if (error) return <Failure error={error} />;
  if (queue === null) return <p class="loading">Loading the review queue…</p>;
  if (item === undefined) {
    return (
      <p class="empty" data-testid="review-empty">
        Nothing to review: every recorded prediction of the served run in the feedback window has a label (
        {queue.candidates} unlabelled).
      </p>
    );
  }
  const explanation = item.explanation;
  return (
    <section class="review-item" aria-labelledby="review-item-title" data-testid="review-item">
      <h3 id="review-item-title">
        What is the right tag?{' '}
        <span class="muted">
          ({index + 1} of {queue.items.length} · {done} labelled)
        </span>
      </h3>
      <p class="meta">
        <span
          class={`badge ${item.selection === 'random_share' ? 'random' : 'muted'}`}
          data-testid="selection"
        >
          {SELECTIONS[item.selection]}
        </span>{' '}
        predicted <span class="badge big">{item.predicted_tag}</span> with probability{' '}
        {item.confidence.toFixed(3)}
      </p>
      {item.selection === 'random_share' && (
        <p class="hint">
          Drawn at random: its label measures the live figures, so label it whatever it is (skip only for
          reasons that have nothing to do with the answer).
        </p>
      )}
      <Highlighted text={item.text} highlights={highlightsOf(explanation)} />
      <TagButtons
        tags={buttonTags(queue.tags, [item.predicted_tag], item.predicted_probabilities)}
        marked={new Set([item.predicted_tag])}
        onTag={(tag) => void answer(tag)}
        label="The right tag"
      />
      <OtherOrSkip
        other={other}
        setOther={setOther}
        tags={queue.tags}
        onTag={(tag) => void answer(tag)}
        onSkip={() => {
          setNote('Skipped.');
          next();
        }}
      />
      <p class="note" aria-live="polite" data-testid="review-note">
        {note}
      </p>
      <Probabilities probabilities={item.predicted_probabilities} />
      {explanation && (
        <details class="why">
          <summary>Why {explanation.tag}</summary>
          {'vote' in explanation ? (
            <VoteSplit explanation={explanation} />
          ) : (
            <ScoreSplit split={explanation} label="Contributions" />
          )}
        </details>
      )}
    </section>
  );
}

function IssuesReview() {
  const batch = useBatch(() => api.issuesToReview(BATCH));
  const { data, item, index, other, setOther, busy, error, note, setNote, next } = batch;

  const decide = (decision: 'keep' | 'fix', tag?: string) =>
    batch.send(async () => {
      if (data === null || item === undefined) return;
      const answer = await api.decide([
        { run_id: data.run_id, text_key: item.text_key, decision, ...(tag === undefined ? {} : { tag }) },
      ]);
      const outcome = answer.decisions[0]!;
      if (outcome.status === 200) {
        setNote(decision === 'keep' ? `Kept ${item.given_tags.join(', ')}.` : `Fixed to ${tag}.`);
        next();
      } else setNote(`Not recorded: ${outcome.detail}`);
    });
  useKeys(
    (key) => {
      if (!data || item === undefined || other) return;
      if (/^[1-9]$/.test(key)) {
        const tag = buttonTags(data.tags, [...item.given_tags, ...item.suggested_tags])[Number(key) - 1];
        if (tag !== undefined) void decide('fix', tag);
      } else if (key === 'k') void decide('keep');
      else if (key === 'f' && item.suggested_tags.length === 1) void decide('fix', item.suggested_tags[0]);
      else if (key === '0') setOther(true);
      else if (key === 's') {
        setNote('Skipped.');
        next();
      }
    },
    [data, index, other, busy],
  );

  if (error) return <Failure error={error} />;
  if (data === null) return <p class="loading">Loading the training rows to review…</p>;
  if (item === undefined) {
    return (
      <p class="empty" data-testid="issues-empty">
        No training row of run <code>{data.run_id}</code> is left to decide on ({data.found} flagged,{' '}
        {data.decided} decided).
      </p>
    );
  }
  return (
    <section class="review-item" aria-labelledby="issue-title" data-testid="issue-item">
      <h3 id="issue-title">
        Is this training row’s tag right?{' '}
        <span class="muted">
          (rank {item.rank}
          {item.line !== null && <>, line {item.line}</>} · {data.decided} decided of {data.found} flagged)
        </span>
      </h3>
      <p class="text">{item.text}</p>
      <p class="meta">
        given <span class="badge big">{item.given_tags.join(', ')}</span> (probability{' '}
        {item.given_probability.toFixed(3)}) · suggested{' '}
        <span class="badge big">{item.suggested_tags.join(', ')}</span> (probability{' '}
        {item.suggested_probability.toFixed(3)})
      </p>
      <p class="actions">
        <button type="button" aria-keyshortcuts="k" onClick={() => void decide('keep')}>
          <kbd>k</kbd> keep {item.given_tags.join(', ')}
        </button>{' '}
        {item.suggested_tags.length === 1 && (
          <button
            type="button"
            aria-keyshortcuts="f"
            onClick={() => void decide('fix', item.suggested_tags[0])}
          >
            <kbd>f</kbd> fix to {item.suggested_tags[0]}
          </button>
        )}
      </p>
      <TagButtons
        tags={buttonTags(data.tags, [...item.given_tags, ...item.suggested_tags])}
        marked={new Set(item.given_tags)}
        onTag={(tag) => void decide('fix', tag)}
        label="Fix to"
      />
      <OtherOrSkip
        other={other}
        setOther={setOther}
        tags={data.tags}
        onTag={(tag) => void decide('fix', tag)}
        onSkip={() => {
          setNote('Skipped.');
          next();
        }}
      />
      <p class="note" aria-live="polite" data-testid="issue-note">
        {note}
      </p>
    </section>
  );
}

export function ReviewView({ hasRuns }: { hasRuns: boolean }) {
  const [mode, setMode] = useState<'predictions' | 'issues'>('predictions');
  return (
    <article aria-labelledby="review-title">
      <h2 id="review-title">Review</h2>
      <p class="muted">
        Label what most needs a person: the served run’s least confident predictions, mixed with a random
        share that measures the live figures
        {hasRuns ? ', and the training rows whose tag is probably wrong' : ''}. Keys: 1–9 a tag, 0 another
        tag, s skip{hasRuns ? '; for training rows k keep, f fix' : ''}. Every label feeds the next{' '}
        <code>tagger retrain</code>.
      </p>
      {hasRuns && (
        <div class="tabs" role="tablist" aria-label="What to review">
          <button
            type="button"
            role="tab"
            aria-selected={mode === 'predictions'}
            onClick={() => setMode('predictions')}
          >
            Predictions
          </button>
          <button
            type="button"
            role="tab"
            aria-selected={mode === 'issues'}
            onClick={() => setMode('issues')}
          >
            Training rows
          </button>
        </div>
      )}
      {mode === 'predictions' ? <PredictionsReview /> : <IssuesReview />}
    </article>
  );
}
