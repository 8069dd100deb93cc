// The chips above the chat input: the instruction files in force (a click opens one: a
// `data-action` the extension handles), the skills (one chip, listed in its tooltip), and the
// files picked with `@` (✕ drops one). Text only: every name is set as textContent/title,
// already escaped by the extension (control characters spelled out).

import type { FileChoice, InstructionChip } from "../chat/messages";

export function renderProject(
  container: HTMLElement,
  instructions: readonly InstructionChip[],
  skills: { label: string; title: string } | undefined,
): void {
  container.replaceChildren();
  if (instructions.length === 0 && !skills) {
    container.hidden = true;
    return;
  }
  const label = document.createElement("span");
  label.className = "chips-label";
  label.textContent = "Instructions:";
  container.append(label);
  for (const file of instructions) {
    const chip = document.createElement("button");
    chip.className = file.cut ? "chip instruction cut" : "chip instruction";
    chip.dataset.action = "openInstruction";
    chip.dataset.uri = file.uri;
    chip.title = file.title;
    chip.textContent = file.cut ? `${file.name} (cut)` : file.name;
    container.append(chip);
  }
  if (skills) {
    const chip = document.createElement("button");
    chip.className = "chip skills";
    chip.dataset.action = "showSkills"; // a quick pick of them, each opening its SKILL.md
    chip.title = skills.title;
    chip.textContent = skills.label;
    container.append(chip);
  }
  container.hidden = false;
}

/** The files picked with `@` for the next ask. */
export class MentionChips {
  private files: FileChoice[];

  constructor(
    private readonly container: HTMLElement,
    initial: readonly FileChoice[],
    private readonly changed: () => void,
  ) {
    this.files = [...initial];
    container.addEventListener("click", (event) => {
      const button = event.target instanceof Element ? event.target.closest<HTMLElement>("[data-unmention]") : null;
      if (!button) return;
      event.preventDefault();
      event.stopPropagation();
      this.files.splice(Number(button.dataset.unmention), 1);
      this.render();
      this.changed();
    });
    this.render();
  }

  get all(): readonly FileChoice[] {
    return this.files;
  }

  add(file: FileChoice): void {
    if (file.uri === "" || this.files.some((f) => f.uri === file.uri)) return;
    this.files.push(file);
    this.render();
    this.changed();
  }

  clear(): void {
    if (this.files.length === 0) return;
    this.files = [];
    this.render();
    this.changed();
  }

  private render(): void {
    this.container.replaceChildren();
    this.files.forEach((file, i) => {
      const chip = document.createElement("span");
      chip.className = "chip mention";
      chip.title = `Attached to the next ask: ${file.path}`;
      const remove = document.createElement("button");
      remove.textContent = "✕";
      remove.title = "Don't attach it";
      remove.dataset.unmention = String(i);
      chip.append(`@${file.path}`, remove);
      this.container.append(chip);
    });
    this.container.hidden = this.files.length === 0;
  }
}
