/**
 * The longest text a request may send (`HttpLimits.textLength`, TAGGER_MAX_TEXT_LENGTH: 10,000 characters by
 * default) and the `truncate` option every protocol takes (issue 41): a longer text is a 4xx, unless the
 * request asks for it to be cut at the limit. Characters are counted as JSON Schema counts them (code
 * points, as Ajv's `maxLength` does for POST /predict), so every protocol agrees on what is too long.
 */

/** A text of more than `limit` code points, cut after its `limit`th (a surrogate pair is never split). */
export function cutToLimit(text: string, limit: number): string | null {
  // UTF-16 units ≥ code points: a text this short is within the limit without counting.
  if (text.length <= limit) return null;
  let points = 0;
  for (let i = 0; i < text.length; i++) {
    const unit = text.charCodeAt(i);
    // The low half of a pair belongs to the code point its high half started.
    if (unit >= 0xdc00 && unit <= 0xdfff && i > 0) {
      const before = text.charCodeAt(i - 1);
      if (before >= 0xd800 && before <= 0xdbff) continue;
    }
    points += 1;
    if (points > limit) return text.slice(0, i);
  }
  return null;
}

import type { FastifyRequest } from 'fastify';

const truncatedOf = new WeakMap<FastifyRequest, ReadonlySet<number>>();

/**
 * POST /predict's `truncate: true` (a preValidation hook, before the schema's length check): every
 * `texts[i].text` longer than `limit` is cut there, and which ones is kept for the answer (`truncated`).
 * Without it (or with anything but `true`) the body is left for validation as it came.
 */
export function truncatePredictTexts(limit: number) {
  return async function truncateLongTexts(request: FastifyRequest): Promise<void> {
    const body = request.body as { truncate?: unknown; texts?: unknown } | undefined;
    if (body?.truncate !== true || !Array.isArray(body.texts)) return;
    const cut = new Set<number>();
    body.texts.forEach((entry: unknown, i) => {
      const text = (entry as { text?: unknown } | null)?.text;
      if (typeof text !== 'string') return;
      const shorter = cutToLimit(text, limit);
      if (shorter === null) return;
      (entry as { text: string }).text = shorter;
      cut.add(i);
    });
    if (cut.size > 0) truncatedOf.set(request, cut);
  };
}

/** Which of a predict request's texts `truncatePredictTexts` cut (empty: none). */
export const truncatedTexts = (request: FastifyRequest): ReadonlySet<number> =>
  truncatedOf.get(request) ?? new Set();

/** What became of a request's texts under its limits: the texts to answer, and which were cut. */
export interface FittedTexts {
  texts: string[];
  /** Indices (ascending) of the texts cut at the limit. */
  truncated: number[];
}

/**
 * The texts within `limit` code points: longer ones cut when `truncate`, else `tooLong(index, limit)` is
 * thrown for the first of them (each protocol words its own error).
 */
export function fitTexts(
  texts: readonly string[],
  limit: number,
  truncate: boolean,
  tooLong: (index: number, limit: number) => Error,
): FittedTexts {
  let out: string[] | undefined;
  const truncated: number[] = [];
  for (let i = 0; i < texts.length; i++) {
    const cut = cutToLimit(texts[i]!, limit);
    if (cut === null) continue;
    if (!truncate) throw tooLong(i, limit);
    out ??= [...texts];
    out[i] = cut;
    truncated.push(i);
  }
  return { texts: out ?? [...texts], truncated };
}
