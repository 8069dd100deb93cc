// `/` and `@` in the chat input: which picker is open, what it lists, and what a pick does.
// `/` at the start lists the commands (asked of the extension again each time it is typed,
// filtered here as the user types); a built-in runs at once, a prompt file is inserted as
// `/name ` to be sent with arguments. `@` lists the folder's files the extension finds for what
// follows it; a picked file leaves the prompt and becomes a chip (chips.ts).

import type { FileChoice, FromView } from "../chat/messages";
import { type CommandChoice, filterCommands } from "../slash-commands";
import { completionAt, insertCommand, removeMention, type Trigger, triggerKey } from "./completion";
import type { MentionChips } from "./chips";
import { Picker, type PickerRow } from "./picker";

const SOURCE_BADGES: Record<string, string> = { builtin: "built-in", user: "your command", workspace: "workspace" };
const FILE_DELAY_MS = 80;

export interface CompletionHost {
  post(message: FromView): void;
  /** The input's text changed here (saved, draft sent). */
  edited(): void;
  /** A built-in command picked: run it (the input is cleared). */
  runBuiltin(name: string, args: string): void;
}

export class InputCompletion {
  private readonly picker: Picker;
  private commands: CommandChoice[] = [];
  private shownCommands: CommandChoice[] = [];
  private shownFiles: FileChoice[] = [];
  private trigger: Trigger | undefined;
  /** The trigger the user closed with Escape: stays closed while they type on. */
  private dismissed: string | undefined;
  private filesEnabled = false;
  private fileRequest = 0;
  private fileTimer: ReturnType<typeof setTimeout> | undefined;

  constructor(
    private readonly input: HTMLTextAreaElement,
    element: HTMLElement,
    private readonly mentions: MentionChips,
    private readonly host: CompletionHost,
  ) {
    this.picker = new Picker(element, input, (index) => this.pick(index));
    input.setAttribute("aria-autocomplete", "list");
    input.setAttribute("aria-controls", element.id);
    input.setAttribute("aria-expanded", "false");
    input.addEventListener("blur", () => this.close());
    input.addEventListener("click", () => this.update());
    input.addEventListener("keyup", (event) => {
      if (["ArrowLeft", "ArrowRight", "Home", "End"].includes(event.key)) this.update();
    });
  }

  get isOpen(): boolean {
    return this.picker.isOpen;
  }

  setCommands(commands: CommandChoice[]): void {
    this.commands = commands;
    if (this.trigger?.kind === "command") this.showCommands(this.trigger);
  }

  setFilesEnabled(enabled: boolean): void {
    this.filesEnabled = enabled;
    if (!enabled && this.trigger?.kind === "file") this.close();
  }

  setFiles(id: number, files: FileChoice[]): void {
    if (id !== this.fileRequest || this.trigger?.kind !== "file") return;
    this.shownFiles = files;
    const rows = files.map((f): PickerRow => ({ label: f.path }));
    this.picker.show(rows, this.trigger.query ? "No file of the folder matches" : "No files in the folder", "Files");
  }

  /** The input or its caret changed: open, filter or close the picker. */
  update(): void {
    const trigger = completionAt(this.input.value, this.input.selectionStart, this.input.selectionEnd);
    if (!trigger || (trigger.kind === "file" && !this.filesEnabled)) {
      this.dismissed = undefined;
      this.close();
      return;
    }
    const key = triggerKey(trigger);
    if (this.dismissed === key) return;
    this.dismissed = undefined;
    const opening = !this.trigger || triggerKey(this.trigger) !== key || !this.picker.isOpen;
    this.trigger = trigger;
    if (trigger.kind === "command") {
      if (opening) this.host.post({ type: "listCommands" });
      this.showCommands(trigger);
      return;
    }
    if (opening) this.picker.show([], "Searching…", "Files");
    if (this.fileTimer !== undefined) clearTimeout(this.fileTimer);
    const id = ++this.fileRequest;
    this.fileTimer = setTimeout(() => this.host.post({ type: "findFiles", id, query: trigger.query }), FILE_DELAY_MS);
  }

  /** A key while the picker is open: true when it was the picker's (↑/↓, Enter/Tab, Escape). */
  handleKey(event: KeyboardEvent): boolean {
    if (!this.picker.isOpen || event.isComposing) return false;
    const plain = !event.shiftKey && !event.ctrlKey && !event.altKey && !event.metaKey;
    switch (event.key) {
      case "ArrowDown":
      case "ArrowUp":
        if (!plain || !this.picker.hasRows) return false;
        this.picker.move(event.key === "ArrowDown" ? 1 : -1);
        return true;
      case "Enter":
      case "Tab":
        if (!plain || !this.picker.hasRows) {
          if (event.key === "Enter") this.close(); // nothing to pick: Enter sends as typed
          return false;
        }
        this.pick(this.picker.selected);
        return true;
      case "Escape":
        if (this.trigger) this.dismissed = triggerKey(this.trigger);
        this.close();
        return true;
      default:
        return false;
    }
  }

  close(): void {
    this.trigger = undefined;
    this.shownCommands = [];
    this.shownFiles = [];
    if (this.fileTimer !== undefined) clearTimeout(this.fileTimer);
    this.fileTimer = undefined;
    this.fileRequest++;
    this.picker.hide();
  }

  private showCommands(trigger: Trigger): void {
    this.shownCommands = filterCommands(this.commands, trigger.query);
    const rows = this.shownCommands.map((c): PickerRow => {
      const row: PickerRow = { label: `/${c.name}`, detail: c.description };
      if (c.argumentHint) row.hint = c.argumentHint;
      const badge = SOURCE_BADGES[c.source];
      if (badge) row.badge = badge;
      return row;
    });
    this.picker.show(rows, "No such command: Enter sends it as typed", "Commands");
  }

  private pick(index: number): void {
    const trigger = this.trigger;
    if (!trigger) return;
    const caret = this.input.selectionStart;
    if (trigger.kind === "command") {
      const command = this.shownCommands[index];
      if (!command) return;
      this.close();
      if (command.source === "builtin") {
        this.host.runBuiltin(command.name, "");
        return;
      }
      this.apply(insertCommand(this.input.value, caret, command.name));
      return;
    }
    const file = this.shownFiles[index];
    if (!file) return;
    this.close();
    this.apply(removeMention(this.input.value, trigger, caret));
    this.mentions.add(file);
  }

  private apply(edited: { text: string; caret: number }): void {
    this.input.value = edited.text;
    this.input.setSelectionRange(edited.caret, edited.caret);
    this.host.edited();
  }
}
