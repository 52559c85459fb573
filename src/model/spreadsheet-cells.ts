/**
 * Cells a spreadsheet would run as formulas (CSV injection), for every CSV Tagger writes from texts it
 * was sent — the batch output (`predict --input`) and the feedback export — and for the data reader,
 * which takes a neutralised cell back as the text it was. Pure string rules (OWASP's), no I/O.
 */

/** What a spreadsheet takes for the start of a formula (OWASP's CSV injection list). */
const FORMULA_START = /^[=+\-@\t\r]/;

/**
 * OWASP's defence against CSV (formula) injection: a value starting with `=`, `+`, `-`, `@`, tab or CR
 * gets a leading `'`, so Excel, LibreOffice and Google Sheets show it as text instead of running it.
 * The original is the value without its first character.
 * @example neutraliseFormula('=HYPERLINK("http://x")') // "'=HYPERLINK(\"http://x\")"
 */
export const neutraliseFormula = (value: string): string => (FORMULA_START.test(value) ? `'${value}` : value);

/** The value `neutraliseFormula` was given: a `'` before a formula start taken away; anything else as is. */
export const restoreFormula = (value: string): string =>
  value.startsWith("'") && FORMULA_START.test(value.slice(1)) ? value.slice(1) : value;
