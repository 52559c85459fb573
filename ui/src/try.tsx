/**
 * The try-it box: texts in, tags with probabilities out, and the n-grams that pushed the top tag
 * highlighted in each text. A multi-label model's answer is all its predicted tags (maybe none). With the
 * served model by default, or with one run's model (`#/try/<run id>`). When a hot reload changes the
 * served run, the last texts are tagged again.
 */
import { useEffect, useRef, useState } from 'preact/hooks';
import type {
  Contribution,
  LinearExplanation,
  MemberExplanation,
  Prediction,
  RunRecord,
  VoteExplanation,
} from '../../src/http/api-types.js';
import { AuthError, api, type PredictAnswer } from './api';
import { shortId } from './format';
import { highlight } from './highlight';
import { Failure } from './load';
import { isMultiLabel } from './multi-label';
import { MultiLabelBadge } from './run';
import { TableScroll } from './table-scroll';

const MAX_TEXTS = 20;

/** The contributions a text's highlights show, and to what (a linear model's tag, or one member's score). */
export interface Highlights {
  contributions: readonly Contribution[];
  /** What the contributions moved, e.g. `computer-vision` or `nb_lr's score of computer-vision`. */
  target: string;
}

export function Highlighted({ text, highlights }: { text: string; highlights: Highlights | null }) {
  if (!highlights) return <p class="text">{text}</p>;
  const segments = highlight(text, highlights.contributions);
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
            title={`${segment.weight > 0 ? '+' : ''}${segment.weight.toFixed(3)} toward ${highlights.target}`}
          >
            {segment.text}
          </mark>
        );
      })}
    </p>
  );
}

/** One linear score's split: the listed n-grams, then how they, the others and the bias make the score. */
export function ScoreSplit({
  split,
  label,
}: {
  split: Pick<LinearExplanation, 'score' | 'bias' | 'contributions' | 'rest' | 'features' | 'encoder'>;
  label: string;
}) {
  return (
    <>
      <TableScroll label={label}>
        <table class="contributions">
          <thead>
            <tr>
              <th scope="col">n-gram</th>
              <th scope="col">kind</th>
              <th scope="col">contribution</th>
            </tr>
          </thead>
          <tbody>
            {split.contributions.map((c) => (
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
        score {split.score.toFixed(3)} = bias {split.bias.toFixed(3)} + these + the other{' '}
        {Math.max(0, split.features - split.contributions.length)} n-grams ({split.rest.toFixed(3)})
        {split.encoder !== undefined && (
          <>
            {' '}
            + the sentence embedding ({split.encoder >= 0 ? '+' : ''}
            {split.encoder.toFixed(3)}, the encoder's whole contribution: its dimensions mean nothing one by
            one)
          </>
        )}
      </p>
    </>
  );
}

const LINKS: Record<MemberExplanation['link'], string> = {
  ovr: 'sigmoid, normalised over the tags',
  sigmoid: 'sigmoid',
  softmax: 'softmax',
  platt: 'calibrated (Platt)',
};

/**
 * A soft vote's explanation: the members' probabilities of the tag and how the vote combines them (its
 * probability has no per-n-gram split, so none is shown), then each member's own exact split.
 */
export function VoteSplit({ explanation }: { explanation: VoteExplanation }) {
  const { vote, tag } = explanation;
  const total = vote.members.reduce((sum, m) => sum + m.weight, 0);
  return (
    <>
      <TableScroll label="How the vote combined its members">
        <table class="vote">
          <thead>
            <tr>
              <th scope="col">member</th>
              <th scope="col">weight</th>
              <th scope="col">probability of {tag}</th>
              <th scope="col">from its score by</th>
            </tr>
          </thead>
          <tbody>
            {vote.members.map((m, index) => (
              <tr key={index}>
                <th scope="row">{m.classifier}</th>
                <td class="num">{m.weight}</td>
                <td class="num">{m.probability.toFixed(3)}</td>
                <td>{LINKS[m.link]}</td>
              </tr>
            ))}
          </tbody>
          <tfoot>
            <tr>
              <th scope="row">the vote</th>
              <td class="num">{total}</td>
              <td class="num" data-testid="vote-probability">
                {vote.probability.toFixed(3)}
              </td>
              <td>Σ weight × probability / Σ weight</td>
            </tr>
          </tfoot>
        </table>
      </TableScroll>
      <p class="hint">
        A vote’s probability is not a sum over n-grams, so it has no per-n-gram split; each member’s score has
        one:
      </p>
      {vote.members.map((m, index) => (
        <details key={index} class="member">
          <summary>
            {m.classifier}: the n-grams that moved its score of {tag}
          </summary>
          <ScoreSplit split={m} label={`Contributions to ${m.classifier}'s score`} />
        </details>
      ))}
    </>
  );
}

/** A cascade run's answer: which of its models answered (the prediction's `stage`). */
const CASCADE_STAGES: Record<NonNullable<Prediction['stage']>, string> = {
  fast: 'Answered by the cascade’s fast model: it was sure enough of this text.',
  encoder: 'Answered by the cascade’s encoder model: the fast model was unsure of this text.',
  fast_degraded:
    'Answered by the cascade’s fast model although it was unsure of this text: the encoder could not take it just then.',
};

/**
 * Whether an answer came from a multi-label model, for when the page does not know the model: only a
 * multi-label model gives other than one tag, or probabilities that do not sum to 1.
 */
function looksMultiLabel(prediction: Prediction): boolean {
  if (prediction.predicted_tags.length !== 1) return true;
  // Some tags' probabilities only (a model of many tags): their sum says nothing.
  if (prediction.probabilities_listed !== undefined) return false;
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

/**
 * "wrong tag?": the person says what the right tag is, sent as feedback on this prediction (a correction:
 * it feeds retraining, not the live figures, since only wrong answers get it).
 */
function WrongTag({ prediction }: { prediction: Prediction }) {
  const [open, setOpen] = useState(false);
  const [other, setOther] = useState('');
  const [said, setSaid] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const tags = Object.keys(prediction.predicted_probabilities).sort();
  const send = async (tag: string) => {
    setBusy(true);
    try {
      const answer = await api.feedback([
        { prediction_id: prediction.prediction_id, tag, selection: 'correction' },
      ]);
      const outcome = answer.feedback[0]!;
      setSaid(
        outcome.status === 200
          ? `Thanks: ${tag} is stored for retraining${outcome.detail === 'stored' ? '' : ` (${outcome.detail.replace(/^stored; /, '')})`}.`
          : `Not stored: ${outcome.detail}`,
      );
      if (outcome.status === 200) setOpen(false);
    } catch (failure) {
      if (failure instanceof AuthError)
        window.dispatchEvent(new CustomEvent('tagger:auth', { detail: failure }));
      setSaid(`Not stored: ${failure instanceof Error ? failure.message : String(failure)}`);
    } finally {
      setBusy(false);
    }
  };
  return (
    <div class="wrong-tag">
      {!open && (
        <button type="button" class="link" onClick={() => setOpen(true)} data-testid="wrong-tag">
          wrong tag?
        </button>
      )}
      {open && (
        <fieldset>
          <legend>The right tag:</legend>
          {tags.map((tag) => (
            <button key={tag} type="button" disabled={busy} data-tag={tag} onClick={() => void send(tag)}>
              {tag}
            </button>
          ))}{' '}
          <form
            class="other-tag"
            onSubmit={(event) => {
              event.preventDefault();
              if (other.trim() !== '') void send(other.trim());
            }}
          >
            <label for={`other-${prediction.prediction_id}`}>another tag…</label>
            <input
              id={`other-${prediction.prediction_id}`}
              value={other}
              onInput={(event) => setOther(event.currentTarget.value)}
            />
            <button type="submit" disabled={busy || other.trim() === ''}>
              Send
            </button>
          </form>{' '}
          <button type="button" class="link" onClick={() => setOpen(false)}>
            cancel
          </button>
        </fieldset>
      )}
      {said !== null && (
        <p class="note" aria-live="polite" data-testid="wrong-tag-note">
          {said}
        </p>
      )}
    </div>
  );
}

function Result({ prediction, multiLabel }: { prediction: Prediction; multiLabel: boolean | undefined }) {
  const probabilities = Object.entries(prediction.predicted_probabilities).sort((a, b) => b[1] - a[1]);
  const explanation = prediction.explanation;
  const multi = multiLabel ?? looksMultiLabel(prediction);
  const predicted = new Set(prediction.predicted_tags);
  // A vote's text is highlighted with one member's n-grams at a time (the vote has none of its own).
  const [memberIndex, setMemberIndex] = useState(0);
  const members = explanation && 'vote' in explanation ? explanation.vote.members : null;
  const member = members?.[Math.min(memberIndex, members.length - 1)];
  const highlights: Highlights | null = !explanation
    ? null
    : 'vote' in explanation
      ? member
        ? {
            contributions: member.contributions,
            target: `${member.classifier}'s score of ${explanation.tag}`,
          }
        : null
      : { contributions: explanation.contributions, target: explanation.tag };
  return (
    <li class="result">
      {multi ? (
        <PredictedTags prediction={prediction} />
      ) : (
        <p class="tag">
          <span class="badge big">{prediction.predicted_tag}</span>
        </p>
      )}
      <Highlighted text={prediction.input_text} highlights={highlights} />
      {!multi && <WrongTag prediction={prediction} />}
      {members && members.length > 0 && (
        <p class="hint member-pick">
          Highlights: the n-grams behind the score of {explanation!.tag} of the member{' '}
          <select
            aria-label="Member whose n-grams are highlighted"
            value={String(memberIndex)}
            onChange={(event) => setMemberIndex(Number(event.currentTarget.value))}
          >
            {members.map((m, index) => (
              <option key={index} value={String(index)}>
                {m.classifier}
              </option>
            ))}
          </select>{' '}
          (the vote itself has no per-n-gram split)
        </p>
      )}
      {multi && (
        <p class="hint">
          Each tag’s own probability (they need not sum to 1); the predicted tags in bold.
          {explanation &&
            !('vote' in explanation) &&
            ` The highlights are the n-grams behind ${explanation.tag}, the most probable tag.`}
        </p>
      )}
      {prediction.stage !== undefined && (
        <p class="hint" data-testid="cascade-stage">
          {CASCADE_STAGES[prediction.stage]}
        </p>
      )}
      {prediction.probabilities_listed && (
        <p class="hint" data-testid="probabilities-listed">
          The {prediction.probabilities_listed.listed} most probable of the model’s{' '}
          {prediction.probabilities_listed.of} tags.
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
        <details class="why">
          <summary>
            {multi && !predicted.has(explanation.tag) ? 'The most probable tag, ' : 'Why '}
            {explanation.tag}
            {'vote' in explanation
              ? `: how the vote of ${explanation.vote.members.length} members reached it`
              : ': the n-grams that moved its score'}
          </summary>
          {'vote' in explanation ? (
            <VoteSplit explanation={explanation} />
          ) : (
            <ScoreSplit split={explanation} label="Contributions" />
          )}
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
