/**
 * An encoder's work for a text, estimated on the event loop without its tokenizer (which lives in the
 * encoder's thread, src/encoder): the dynamic batcher bounds its queue and its batches by it, since a
 * transformer's cost grows with the tokens of a text — a 256-token text costs ~10 times a 30-token one
 * (measured, docs/serving.md#encoder-runs) — not with the number of texts. Written by hand: the rule is
 * WordPiece's shape, cheaply — a CJK character is a token of its own, a word is a token and long words a
 * few more, punctuation a token each — plus the two special tokens, capped at the encoder's token limit.
 * On dataset.csv's texts (and CJK ones) it comes within ~7 % of the tokenizer's total (measured: 30,768
 * estimated against 33,060 real tokens over 818 texts).
 */

/** A CJK ideograph, kana or Hangul syllable (one token each), a run of letters or digits, or a symbol. */
const PIECES = /[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af\uf900-\ufaff]|[\p{L}\p{N}]+|[^\s\p{L}\p{N}]/gu;

/**
 * Estimated tokens of `text` for an encoder whose limit is `maxTokens` (special tokens included).
 * @example estimateTokens('Transformers for text classification', 256) // 9
 */
export function estimateTokens(text: string, maxTokens: number): number {
  let tokens = 2;
  for (const match of text.matchAll(PIECES)) {
    const piece = match[0];
    tokens += piece.length === 1 ? 1 : 1 + Math.floor(Math.max(0, piece.length - 6) / 4);
    if (tokens >= maxTokens) return maxTokens;
  }
  return Math.min(maxTokens, tokens);
}
