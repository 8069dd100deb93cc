// The list that pops up above the chat input for `/` and `@`: rows with a name, a hint and a
// description, one highlighted (↑/↓ move it, the caller picks it on Enter/Tab); a click picks
// a row without taking the focus from the input. Text only (textContent): names from files and
// the server are never parsed as HTML.

import { moveSelection } from "./completion";

export interface PickerRow {
  label: string;
  hint?: string;
  detail?: string;
  /** A short mark on the right ("built-in", "workspace"). */
  badge?: string;
}

export class Picker {
  private rows: PickerRow[] = [];
  private index = 0;
  private shown = false;

  constructor(
    private readonly element: HTMLElement,
    private readonly input: HTMLTextAreaElement,
    private readonly onPick: (index: number) => void,
  ) {
    element.setAttribute("role", "listbox");
    // mousedown, not click: the input keeps the focus (and the caret its place).
    element.addEventListener("mousedown", (event) => {
      event.preventDefault();
      const row = event.target instanceof Element ? event.target.closest<HTMLElement>(".pick[data-index]") : null;
      if (row) this.onPick(Number(row.dataset.index));
    });
  }

  get isOpen(): boolean {
    return this.shown;
  }

  get hasRows(): boolean {
    return this.shown && this.rows.length > 0;
  }

  get selected(): number {
    return this.index;
  }

  /** Show `rows` (the first highlighted), or `empty` when there are none. */
  show(rows: PickerRow[], empty: string, label: string): void {
    this.rows = rows;
    this.index = 0;
    this.shown = true;
    this.element.setAttribute("aria-label", label);
    this.element.replaceChildren();
    if (rows.length === 0) {
      const none = document.createElement("div");
      none.className = "pick-empty";
      none.textContent = empty;
      this.element.append(none);
    }
    rows.forEach((row, i) => this.element.append(this.rowElement(row, i)));
    this.element.hidden = false;
    this.input.setAttribute("aria-expanded", "true");
    this.highlight();
  }

  hide(): void {
    if (!this.shown) return;
    this.shown = false;
    this.rows = [];
    this.element.hidden = true;
    this.element.replaceChildren();
    this.input.setAttribute("aria-expanded", "false");
    this.input.removeAttribute("aria-activedescendant");
  }

  move(delta: number): void {
    this.index = moveSelection(this.index, this.rows.length, delta);
    this.highlight();
  }

  private rowElement(row: PickerRow, i: number): HTMLElement {
    const element = document.createElement("div");
    element.className = "pick";
    element.id = `pick-${i}`;
    element.dataset.index = String(i);
    element.setAttribute("role", "option");
    const name = document.createElement("span");
    name.className = "pick-name";
    name.textContent = row.label;
    element.append(name);
    if (row.hint) {
      const hint = document.createElement("span");
      hint.className = "pick-hint";
      hint.textContent = row.hint;
      element.append(hint);
    }
    if (row.badge) {
      const badge = document.createElement("span");
      badge.className = "pick-badge";
      badge.textContent = row.badge;
      element.append(badge);
    }
    if (row.detail) {
      const detail = document.createElement("div");
      detail.className = "pick-detail";
      detail.textContent = row.detail;
      element.append(detail);
    }
    return element;
  }

  private highlight(): void {
    const rows = this.element.querySelectorAll<HTMLElement>(".pick");
    rows.forEach((row, i) => {
      const on = i === this.index;
      row.classList.toggle("active", on);
      row.setAttribute("aria-selected", String(on));
      if (on) {
        row.scrollIntoView({ block: "nearest" });
        this.input.setAttribute("aria-activedescendant", row.id);
      }
    });
  }
}
