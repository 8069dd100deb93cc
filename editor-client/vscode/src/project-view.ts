// What the chat view shows of the project: the instruction files in force as chips
// above the input, the skills as one chip, and the commands `/` offers. Pure: built from the
// server's answers (agent/instructions, agent/listCommands). Every name shown comes from a
// file or the server, so its control characters are spelled out (display.ts).

import { escapeControl } from "./display";
import type { FileChoice, InstructionChip } from "./chat/messages";
import type { CommandsResult, InstructionsResult } from "./protocol";
import { BUILTIN_COMMANDS, type CommandChoice } from "./slash-commands";

const SOURCES: Record<string, string> = {
  user: "your own instructions",
  workspace: "the folder's instructions",
  nested: "a subfolder's instructions, given since the agent worked there",
};

function bytes(n: number): string {
  return n < 1024 ? `${n} bytes` : `${(n / 1024).toFixed(n < 10 * 1024 ? 1 : 0)} KB`;
}

/** One chip per instruction file, in the order the model reads them. */
export function instructionChips(result: InstructionsResult): InstructionChip[] {
  return result.instructions.map((file) => {
    const name = escapeControl(file.name);
    const lines = [
      escapeControl(file.path),
      `${SOURCES[file.source] ?? escapeControl(file.source)}, ${bytes(file.bytes)}`,
    ];
    if (file.cut) lines.push("Cut: only its first part reaches the model (agentLsp.instructionsMaxBytes).");
    lines.push("Click to open it.");
    return { name, uri: file.uri, cut: file.cut, title: lines.join("\n") };
  });
}

/** The skills as one chip ("2 skills"), each in its tooltip; none: no chip. */
export function skillsChip(result: InstructionsResult): { label: string; title: string } | undefined {
  const skills = result.skills;
  if (skills.length === 0) return undefined;
  const label = `${skills.length} skill${skills.length === 1 ? "" : "s"}`;
  const lines = skills.map((s) => `${escapeControl(s.name)}: ${escapeControl(s.description)}`);
  return { label, title: `Skills the agent may use (it reads one when it applies):\n${lines.join("\n")}\nClick to open one.` };
}

/** The skills as a quick pick offers them (the chip's click): each opens its SKILL.md. */
export function skillItems(result: InstructionsResult): { label: string; description: string; detail: string; path: string }[] {
  return result.skills.map((s) => ({
    label: escapeControl(s.name),
    description: s.source === "user" ? "your own" : "this folder's",
    detail: escapeControl(s.description),
    path: s.path,
  }));
}

/** The commands `/` offers, shown as the server lists them (built-ins first). */
export function commandChoices(result: CommandsResult | undefined): CommandChoice[] {
  if (!result) return [...BUILTIN_COMMANDS];
  return result.commands.map((c) => {
    const choice: CommandChoice = {
      name: escapeControl(c.name),
      description: escapeControl(c.description),
      source: c.source,
    };
    if (c.argumentHint) choice.argumentHint = escapeControl(c.argumentHint);
    return choice;
  });
}

/** The `@` choices: paths relative to the folder, escaped; the URI as it is. */
export function fileChoices(files: readonly { path: string; uri: string }[]): FileChoice[] {
  return files.map((f) => ({ path: escapeControl(f.path), uri: f.uri }));
}

/** The server's default `instructionFiles` (package.json declares the same). */
export const DEFAULT_INSTRUCTION_FILES: readonly string[] = ["AGENTS.md", "CLAUDE.md", ".github/copilot-instructions.md"];

/**
 * Whether a saved, created or deleted file may change what agent/instructions answers: an
 * instruction file of the setting (at any depth: a subfolder's counts too) or a skill's
 * SKILL.md. `path` is `/`-separated.
 */
export function isInstructionPath(path: string, instructionFiles: readonly string[] = DEFAULT_INSTRUCTION_FILES): boolean {
  const normalized = path.replace(/\\/g, "/");
  if (normalized.endsWith("/SKILL.md") || normalized === "SKILL.md") return true;
  return instructionFiles.some((file) => {
    const name = file.replace(/\\/g, "/").replace(/^\.?\//, "");
    return name !== "" && (normalized === name || normalized.endsWith(`/${name}`));
  });
}
