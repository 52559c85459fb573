/**
 * The try-it box: texts in, tags with probabilities out, and the n-grams that pushed the top tag
 * highlighted in each text. A multi-label model's answer is all its predicted tags (maybe none). With the
 * served model by default, or with one run's model (`#/try/<run id>`). When a hot reload changes the
 * served run, the last texts are tagged again.
 */
import { useEffect, useRef, useState } from 'preact/hooks';
import type { Prediction, RunRecord } from '../../src/http/api-types.js';
import { AuthError, api, type PredictAnswer } from './api';
import { shortId } from './format';
import { highlight } from './highlight';
import { Failure } from './load';
import { isMultiLabel } from './multi-label';
import { MultiLabelBadge } from './run';
import { TableScroll } from './table-scroll';

const MAX_TEXTS = 20;

function Highlighted({ prediction }: { prediction: Prediction }) {
  const explanation = prediction.explanation;
  if (!explanation) return <p class="text">{prediction.input_text}</p>;
  const segments = highlight(prediction.input_text, explanation.contributions);
  const peak = Math.max(1e-9, ...segments.map((s) => Math.abs(s.weight)));
  return (
    <p class="text highlighted">
      {segments.map((segment, index) => {
        if (segment.weight === 0) return <span key={index}>{segment.text}</span>;
        const strength = 0.15 + 0.6 * (Math.abs(segment.weight) / peak);
        const colour =
          segment.weight > 0 ? `rgba(0, 114, 178, ${strength})` : `rgba(213, 94, 0, ${strength})`;
        return (
          <mark
            key={index}
            class={segment.weight > 0 ? 'pos' : 'neg'}
            style={{ backgroundColor: colour }}
            title={`${segment.weight > 0 ? '+' : ''}${segment.weight.toFixed(3)} toward ${explanation.tag}`}
          >
            {segment.text}
          </mark>
        );
      })}
    </p>
  );
}

/**
 * Whether an answer came from a multi-label model, for when the page does not know the model: only a
 * multi-label model gives other than one tag, or probabilities that do not sum to 1.
 */
function looksMultiLabel(prediction: Prediction): boolean {
  if (prediction.predicted_tags.length !== 1) return true;
  const sum = Object.values(prediction.predicted_probabilities).reduce((a, b) => a + b, 0);
  return Math.abs(sum - 1) > 1e-3;
}

/** A multi-label model's tags as chips with their probabilities, or that none passed its threshold. */
function PredictedTags({ prediction }: { prediction: Prediction }) {
  const tags = prediction.predicted_tags;
  if (tags.length === 0) {
    return (
      <p class="tag none" data-testid="no-tags">
        No tag passed its threshold.
      </p>
    );
  }
  return (
    <ul class="tag chips predicted" aria-label="Predicted tags">
      {tags.map((tag) => (
        <li key={tag} class="chip big">
          <span class="name">{tag}</span>{' '}
          <span class="num">{prediction.predicted_probabilities[tag]?.toFixed(3)}</span>
        </li>
      ))}
    </ul>
  );
}

function Result({ prediction, multiLabel }: { prediction: Prediction; multiLabel: boolean | undefined }) {
  const probabilities = Object.entries(prediction.predicted_probabilities).sort((a, b) => b[1] - a[1]);
  const explanation = prediction.explanation;
  const multi = multiLabel ?? looksMultiLabel(prediction);
  const predicted = new Set(prediction.predicted_tags);
  return (
    <li class="result">
      {multi ? (
        <PredictedTags prediction={prediction} />
      ) : (
        <p class="tag">
          <span class="badge big">{prediction.predicted_tag}</span>
        </p>
      )}
      <Highlighted prediction={prediction} />
      {multi && (
        <p class="hint">
          Each tag’s own probability (they need not sum to 1); the predicted tags in bold.
          {explanation && ` The highlights are the n-grams behind ${explanation.tag}, the most probable tag.`}
        </p>
      )}
      <ul class="probabilities">
        {probabilities.map(([tag, p]) => (
          <li key={tag} class={multi && predicted.has(tag) ? 'predicted' : undefined}>
            <span class="name">
              {tag}
              {multi && predicted.has(tag) && <span class="visually-hidden"> (predicted)</span>}
            </span>
            <meter min={0} max={1} value={p} aria-label={`probability of ${tag}`} />
            <span class="num">{p.toFixed(3)}</span>
          </li>
        ))}
      </ul>
      {explanation && (
        <details>
          <summary>
            {multi && !predicted.has(explanation.tag) ? 'The most probable tag, ' : 'Why '}
            {explanation.tag}: the n-grams that moved its score
          </summary>
          <TableScroll label="Contributions">
            <table class="contributions">
              <thead>
                <tr>
                  <th scope="col">n-gram</th>
                  <th scope="col">kind</th>
                  <th scope="col">contribution</th>
                </tr>
              </thead>
              <tbody>
                {explanation.contributions.map((c) => (
                  <tr key={`${c.analyzer}:${c.feature}`} class={c.contribution >= 0 ? 'pos' : 'neg'}>
                    <td>
                      <code>{JSON.stringify(c.feature)}</code>
                    </td>
                    <td>{c.analyzer}</td>
                    <td class="num">
                      {c.contribution >= 0 ? '+' : ''}
                      {c.contribution.toFixed(3)}
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </TableScroll>
          <p class="hint">
            score {explanation.score.toFixed(3)} = bias {explanation.bias.toFixed(3)} + these + the other{' '}
            {Math.max(0, explanation.features - explanation.contributions.length)} n-grams (
            {explanation.rest.toFixed(3)})
            {explanation.encoder !== undefined && (
              <>
                {' '}
                + the sentence embedding ({explanation.encoder >= 0 ? '+' : ''}
                {explanation.encoder.toFixed(3)}, the encoder's whole contribution: its dimensions mean
                nothing one by one)
              </>
            )}
          </p>
        </details>
      )}
    </li>
  );
}

interface TryItProps {
  servedRunId: string | null;
  /** Tag with this run's model instead of the served one. */
  run?: RunRecord | undefined;
  /** Whether the model is multi-label, when the page knows (else guessed from each answer). */
  multiLabel?: boolean | undefined;
}

export function TryIt({ servedRunId, run: fixedRun, multiLabel }: TryItProps) {
  const [input, setInput] = useState('');
  const [answer, setAnswer] = useState<PredictAnswer | null>(null);
  const [error, setError] = useState<Error | null>(null);
  const [busy, setBusy] = useState(false);
  const [note, setNote] = useState('');
  const lastTexts = useRef<string[]>([]);

  const run = async (texts: string[]) => {
    setBusy(true);
    setError(null);
    try {
      setAnswer(await api.predict(texts, fixedRun?.run_id));
      lastTexts.current = texts;
    } catch (failure) {
      if (failure instanceof AuthError)
        window.dispatchEvent(new CustomEvent('tagger:auth', { detail: failure }));
      setError(failure instanceof Error ? failure : new Error(String(failure)));
    } finally {
      setBusy(false);
    }
  };

  // Follow hot reloads: the texts shown were tagged by another run than the one serving now.
  useEffect(() => {
    if (
      fixedRun === undefined &&
      answer?.run_id &&
      servedRunId &&
      answer.run_id !== servedRunId &&
      lastTexts.current.length > 0
    ) {
      setNote(`The served run changed to ${shortId(servedRunId)}: tagged again.`);
      void run(lastTexts.current);
    }
  }, [servedRunId]);

  const texts = input
    .split('\n')
    .map((line) => line.trim())
    .filter(Boolean);
  return (
    <section aria-labelledby="try-title">
      <h2 id="try-title">Try it</h2>
      {fixedRun && (
        <p class="meta">
          With the model of run{' '}
          <a href={`#/run/${encodeURIComponent(fixedRun.run_id)}`}>
            {fixedRun.run_name || shortId(fixedRun.run_id)}
          </a>{' '}
          <code>{shortId(fixedRun.run_id)}</code>
          {isMultiLabel(fixedRun.params) && <MultiLabelBadge />}
          {fixedRun.run_id !== servedRunId && (
            <>
              {' · '}
              <a href="#/try">use the served model</a>
            </>
          )}
        </p>
      )}
      <form
        onSubmit={(event) => {
          event.preventDefault();
          setNote('');
          if (texts.length > 0) void run(texts.slice(0, MAX_TEXTS));
        }}
      >
        <label for="try-texts">Texts to tag, one per line (up to {MAX_TEXTS})</label>
        <textarea
          id="try-texts"
          rows={4}
          value={input}
          placeholder="Transformers for named entity recognition in clinical notes"
          onInput={(event) => setInput(event.currentTarget.value)}
        />
        <button type="submit" disabled={busy || texts.length === 0}>
          {busy ? 'Tagging…' : 'Tag'}
        </button>
      </form>
      {error && <Failure error={error} />}
      <p class="note" aria-live="polite">
        {note}
      </p>
      {answer && (
        <>
          {answer.run_id && (
            <p class="meta" data-testid="answered-by">
              Answered by run <code>{answer.run_id}</code>
            </p>
          )}
          <ol class="results">
            {answer.predictions.map((prediction, index) => (
              <Result key={index} prediction={prediction} multiLabel={multiLabel} />
            ))}
          </ol>
        </>
      )}
    </section>
  );
}
