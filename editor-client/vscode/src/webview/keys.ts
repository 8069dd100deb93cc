// What a key press in the chat input means. Pure, so the rules are unit-tested.

export interface KeyPress {
  key: string;
  shiftKey: boolean;
  ctrlKey: boolean;
  altKey: boolean;
  metaKey: boolean;
  /** An IME composition is in progress: Enter picks the candidate, it does not send. */
  isComposing: boolean;
}

export interface Caret {
  /** The caret (no selection) is on the input's first line. */
  onFirstLine: boolean;
  onLastLine: boolean;
}

export type InputAction = "send" | "recallUp" | "recallDown" | "stop" | "default";

export function inputAction(press: KeyPress, caret: Caret, busy: boolean): InputAction {
  if (press.isComposing) return "default";
  const modified = press.ctrlKey || press.altKey || press.metaKey;
  switch (press.key) {
    case "Enter":
      // Shift+Enter breaks the line (the textarea does it); Ctrl/Cmd+Enter sends too.
      return press.shiftKey ? "default" : "send";
    case "ArrowUp":
      return !press.shiftKey && !modified && caret.onFirstLine ? "recallUp" : "default";
    case "ArrowDown":
      return !press.shiftKey && !modified && caret.onLastLine ? "recallDown" : "default";
    case "Escape":
      return busy ? "stop" : "default";
    default:
      return "default";
  }
}

/** Which line of `text` the caret at `offset` is on. */
export function caretLines(text: string, start: number, end: number): Caret {
  if (start !== end) return { onFirstLine: false, onLastLine: false };
  return {
    onFirstLine: !text.slice(0, start).includes("\n"),
    onLastLine: !text.slice(end).includes("\n"),
  };
}

/**
 * What the input says to Enter while an ask runs (the message is not sent, and stays in the
 * input): a permission card waiting for an answer is the usual reason the ask does not end.
 */
export function busyNote(cardWaits: boolean): string {
  return cardWaits
    ? "Not sent: the agent waits for your answer on the permission card above (your message stays here)."
    : "Not sent: an ask is running; send when it ends, or Stop it (your message stays here).";
}
