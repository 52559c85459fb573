/**
 * How `tagger train` chose a run's model (GET /runs/{id}'s `model_choice`): every candidate it tried on
 * the validation split with its validation f1 (and balanced score, where `other` was scarce), training time, predict µs per text and model size, the
 * skipped ones with why, the budget and the clean-up kept.
 */
import type { RunPerformanceData } from '../../src/http/api-types.js';
import { TableScroll } from './table-scroll';

type ModelChoice = NonNullable<RunPerformanceData['model_choice']>;

const seconds = (s: number | undefined): string =>
  s === undefined ? '' : s < 10 ? `${s.toFixed(1)} s` : `${Math.round(s)} s`;
const megabytes = (bytes: number | undefined): string =>
  bytes === undefined
    ? ''
    : bytes >= 2 ** 20
      ? `${(bytes / 2 ** 20).toFixed(1)} MB`
      : `${Math.round(bytes / 1024)} KB`;

export function ModelChoiceTable({ choice }: { choice: ModelChoice }) {
  const balanced = choice.objective === 'balanced_other';
  return (
    <section aria-labelledby="choice-title" data-testid="model-choice">
      <h3 id="choice-title">How the model was chosen</h3>
      <p class="hint">
        {choice.candidates.filter((c) => c.status === 'chosen' || c.status === 'trained').length} of{' '}
        {choice.candidates.length} candidates trained on {choice.training_rows.toLocaleString('en-US')} rows
        and compared on {choice.validation_rows.toLocaleString('en-US')} validation rows, cheapest first,
        within a budget of {seconds(choice.budget_seconds)} of CPU (
        {choice.budget_source === 'default' ? 'the default for the data’s size' : '--time-budget'}
        ). Kept: <strong>{choice.chosen}</strong>, by {choice.rule}.
        {balanced &&
          ` Only ${choice.other_rows} validation rows are other (texts that fit no tag): each candidate's fallback threshold was placed for the balanced score (the tags' accuracy and other's recall, half each), so the chosen model answers other where it is unsure.`}{' '}
        Clean-up: {choice.cleanup.chosen}
        {choice.cleanup.reason !== undefined && ` (${choice.cleanup.reason})`}
        {choice.cleanup.tried.length > 1 &&
          ` (${choice.cleanup.tried.map((t) => `${t.name} ${t.validation_f1.toFixed(4)}`).join(', ')})`}
        .
      </p>
      <TableScroll label="The candidates of the model choice">
        <table>
          <thead>
            <tr>
              <th scope="col">Candidate</th>
              <th scope="col">Validation f1</th>
              {balanced && <th scope="col">Balanced</th>}
              <th scope="col">Training</th>
              <th scope="col">Predict µs / text</th>
              <th scope="col">Model</th>
              <th scope="col">Note</th>
            </tr>
          </thead>
          <tbody>
            {choice.candidates.map((c) => (
              <tr key={c.name} class={c.status === 'chosen' ? 'chosen' : undefined}>
                <th scope="row" title={c.summary}>
                  {c.name}
                  {c.status === 'chosen' && <span class="badge">chosen</span>}
                </th>
                <td class="num">{c.validation_f1 === undefined ? '' : c.validation_f1.toFixed(4)}</td>
                {balanced && (
                  <td class="num">
                    {c.validation_balanced === undefined ? '' : c.validation_balanced.toFixed(4)}
                  </td>
                )}
                <td class="num">{seconds(c.training_seconds)}</td>
                <td class="num">
                  {c.predict_us === undefined ? '' : Math.round(c.predict_us)}
                  {c.encoder_predict_us !== undefined && ` + ~${Math.round(c.encoder_predict_us)} encoder`}
                </td>
                <td class="num">{megabytes(c.model_bytes)}</td>
                <td>
                  {c.status === 'skipped' || c.status === 'failed'
                    ? `${c.status}: ${c.reason ?? ''}`
                    : c.threshold !== undefined && c.threshold !== null
                      ? `threshold ${c.threshold.toFixed(3)}`
                      : ''}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </TableScroll>
    </section>
  );
}
