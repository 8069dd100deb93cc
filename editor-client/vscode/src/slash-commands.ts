// `/NAME` at the start of a prompt (agent/listCommands). The built-ins are the client's own
// actions, run here and never sent (the server would send "/compact" to the model as typed);
// a prompt file's `/NAME arguments` is sent as typed and the server expands it. Pure: the
// chat view's page uses it too.

/** One command as the picker shows it (display strings already escaped by the extension). */
export interface CommandChoice {
  name: string;
  description: string;
  /** "builtin" | "user" | "workspace" */
  source: string;
  argumentHint?: string;
}

export type BuiltinName = "compact" | "new" | "checkpoints" | "undo";

/** What a built-in runs. */
export type BuiltinRoute =
  | { run: "compact" }
  | { run: "new" }
  | { run: "checkpoints" }
  /** No id: the last ask of the conversation. */
  | { run: "undo"; checkpointId?: string };

/** The built-ins as the server lists them, for a server without agent/listCommands. */
export const BUILTIN_COMMANDS: readonly CommandChoice[] = [
  { name: "compact", description: "Compact the conversation now (old outputs elided, older turns summarized)", source: "builtin" },
  { name: "new", description: "Start a new conversation", source: "builtin" },
  { name: "checkpoints", description: "List this conversation's checkpoints: what each ask changed", source: "builtin" },
  { name: "undo", description: "Undo the last ask's changes (or from checkpoint ID on)", source: "builtin", argumentHint: "[checkpoint id]" },
];

const BUILTINS = new Set<string>(["compact", "new", "checkpoints", "undo"]);

export function isBuiltin(name: string): name is BuiltinName {
  return BUILTINS.has(name);
}

/** The built-in a prompt runs (`/compact`, `/undo 3`), or undefined: the prompt is sent. */
export function parseBuiltin(prompt: string): { name: BuiltinName; args: string } | undefined {
  const match = /^\/([A-Za-z0-9][A-Za-z0-9_.-]*)(?:\s+([\s\S]*))?$/.exec(prompt.trim());
  const name = match?.[1];
  if (!match || name === undefined || !isBuiltin(name)) return undefined;
  return { name, args: (match[2] ?? "").trim() };
}

/** What `/name args` does; undefined for a name that is not a built-in. */
export function builtinRoute(name: string, args = ""): BuiltinRoute | undefined {
  if (!isBuiltin(name)) return undefined;
  switch (name) {
    case "compact":
      return { run: "compact" };
    case "new":
      return { run: "new" };
    case "checkpoints":
      return { run: "checkpoints" };
    case "undo": {
      const id = args.trim().split(/\s+/)[0] ?? "";
      return id ? { run: "undo", checkpointId: id } : { run: "undo" };
    }
  }
}

/**
 * The commands for what follows the `/` (case-insensitive): names starting with it first, then
 * names containing it, then descriptions containing it; each group in the given order.
 */
export function filterCommands(commands: readonly CommandChoice[], query: string): CommandChoice[] {
  const q = query.trim().toLowerCase();
  if (q === "") return [...commands];
  const starts: CommandChoice[] = [];
  const contains: CommandChoice[] = [];
  const described: CommandChoice[] = [];
  for (const command of commands) {
    const name = command.name.toLowerCase();
    if (name.startsWith(q)) starts.push(command);
    else if (name.includes(q)) contains.push(command);
    else if (command.description.toLowerCase().includes(q)) described.push(command);
  }
  return [...starts, ...contains, ...described];
}
