/**
 * `tagger predict --explain`'s text: one block per text. A linear model's block is one table whose
 * contributions, the other features, the bias (and an encoder model's sentence embedding) add up to the
 * tag's score. A soft vote's block says how the
 * vote combined its members' probabilities of the tag (a table of weight and probability per member), then
 * each member's own table of its score; there is no table for the vote itself, which has no per-feature
 * split.
 */
import type { Explanation, LinearTagExplanation, MemberExplanation } from '../model/index.js';
import { textTable } from './output.js';

const number = (value: number): string => (value >= 0 ? ` ${value.toFixed(4)}` : value.toFixed(4));

/** A score's split: each listed feature's contribution, then the rest, the bias and the score. */
function scoreTable(explanation: Omit<LinearTagExplanation, 'tag'>, tag: string): string[] {
  const rows: [string, string, string][] = explanation.contributions.map((c) => [
    JSON.stringify(c.feature),
    c.analyzer,
    number(c.contribution),
  ]);
  const others = explanation.features - explanation.contributions.length;
  rows.push([`(${others} other feature${others === 1 ? '' : 's'})`, '', number(explanation.rest)]);
  // An encoder run: the sentence embedding's whole contribution, one term (its dimensions mean nothing alone).
  if (explanation.encoder !== undefined)
    rows.push(['(sentence embedding)', 'encoder', number(explanation.encoder)]);
  rows.push(['(bias)', '', number(explanation.bias)]);
  rows.push([`= score of ${tag}`, '', number(explanation.score)]);
  return textTable(['feature', 'analyzer', 'contribution'], rows, [2]);
}

const signed = (value: number): string => (value < 0 ? `− ${(-value).toFixed(4)}` : `+ ${value.toFixed(4)}`);

/** How a member's score became its probability of the tag. */
function linkOf(member: MemberExplanation): string {
  const p = member.probability.toFixed(4);
  switch (member.link) {
    case 'platt':
      return `Platt's sigmoid 1 / (1 + exp(${member.platt!.a.toFixed(4)} × score ${signed(member.platt!.b)})) (normalised over the tags for a single-label model) → ${p}`;
    case 'ovr':
      return `sigmoid of each tag's score, normalised over the tags → ${p}`;
    case 'sigmoid':
      return `sigmoid (the tag's own, multi-label) → ${p}`;
    case 'softmax':
      return `softmax over the tags' scores${member.classifier.endsWith('_nb') ? ' (log-likelihoods: only their differences between tags matter)' : ''} → ${p}`;
  }
}

/** One text's explanation as a block of lines (no blank line inside, so blocks are split by one). */
export function explanationBlock(
  text: string,
  tag: string,
  probability: number,
  explanation: Explanation,
): string {
  const heading = `${JSON.stringify(text)} → ${tag} (probability ${probability.toFixed(4)})`;
  if (explanation.vote === undefined)
    return [heading, ...scoreTable(explanation, explanation.tag)].join('\n');
  const { vote } = explanation;
  const total = vote.members.reduce((sum, m) => sum + m.weight, 0);
  const rows = vote.members.map((m) => [m.classifier, String(m.weight), m.link, m.probability.toFixed(4)]);
  rows.push(['= vote', String(total), '', vote.probability.toFixed(4)]);
  const lines = [
    heading,
    `soft vote of ${vote.members.length} members: p(${explanation.tag}) = Σ weight × member's p / Σ weight; no per-feature split of the vote exists, each member's score is split below`,
    ...textTable(['member', 'weight', 'link', `p(${explanation.tag})`], rows, [1, 3]),
  ];
  for (const member of vote.members) {
    lines.push(
      `${member.classifier} (${member.inputs} features): its score of ${explanation.tag}, then ${linkOf(member)}`,
    );
    lines.push(...scoreTable(member, explanation.tag).map((line) => `  ${line}`));
  }
  return lines.join('\n');
}
