// Agent: List Tools -> quick pick items with read-only / destructive marks, the built-in tools
// first, then each MCP server's under a separator naming it ("NAME (MCP)"), as the server's
// `source` says (nothing is derived from the tool's name). No vscode import: a separator is
// `{ separator: label }`, which the command turns into a QuickPickItemKind.Separator.

import { escapeControl } from "./display";
import type { ToolInfo } from "./protocol";

export interface ToolPickItem {
  label: string;
  description: string;
  detail: string;
}

export type ToolPickEntry = ToolPickItem | { separator: string };

export function toolMarks(tool: ToolInfo): string {
  const marks: string[] = [];
  if (tool.annotations?.readOnlyHint) marks.push("read-only");
  if (tool.annotations?.destructiveHint) marks.push("destructive");
  if (marks.length === 0 && tool.annotations?.readOnlyHint === false) marks.push("writes");
  return marks.join(", ");
}

/** The MCP server a tool comes from, or undefined for a built-in one. */
export function toolServer(tool: ToolInfo): string | undefined {
  return tool.source?.kind === "mcp" ? tool.source.server : undefined;
}

function toolItem(tool: ToolInfo): ToolPickItem {
  const icon = tool.annotations?.destructiveHint
    ? "$(warning)"
    : tool.annotations?.readOnlyHint
      ? "$(eye)"
      : "$(edit)";
  // An MCP server's names, titles and descriptions are its own text: escaped.
  const title = tool.title && tool.title !== tool.name ? escapeControl(tool.title) : "";
  const server = toolServer(tool);
  return {
    label: `${icon} ${escapeControl(tool.name)}`,
    description: [toolMarks(tool), title, server === undefined ? "" : `${escapeControl(server)} (MCP)`]
      .filter((p) => p !== "")
      .join(" · "),
    detail: escapeControl(tool.description.replace(/\s+/g, " ").trim()),
  };
}

/**
 * The built-in tools as they were (no separator when there is nothing else), then one group
 * per MCP server, in the order the server lists them.
 */
export function toolPickItems(tools: readonly ToolInfo[]): ToolPickEntry[] {
  return grouped(tools, toolItem);
}

function grouped<T>(tools: readonly ToolInfo[], item: (tool: ToolInfo) => T): (T | { separator: string })[] {
  const builtin = tools.filter((tool) => toolServer(tool) === undefined);
  const byServer = new Map<string, ToolInfo[]>();
  for (const tool of tools) {
    const server = toolServer(tool);
    if (server !== undefined) byServer.set(server, [...(byServer.get(server) ?? []), tool]);
  }
  if (byServer.size === 0) return builtin.map(item);
  const entries: (T | { separator: string })[] = [{ separator: "built-in" }, ...builtin.map(item)];
  for (const [server, own] of byServer) {
    entries.push({ separator: `${escapeControl(server)} (MCP)` }, ...own.map(item));
  }
  return entries;
}

/** The quick pick's title: how many tools, and how many of them are MCP servers'. */
export function toolsTitle(tools: readonly ToolInfo[]): string {
  const mcp = tools.filter((tool) => toolServer(tool) !== undefined).length;
  return mcp === 0
    ? `Agent tools (${tools.length})`
    : `Agent tools (${tools.length}: ${tools.length - mcp} built-in, ${mcp} from MCP servers)`;
}

// -- Agent: Configure Tools… (the tools of this conversation, on or off) -------------------------

/** Whether `name` is one of `disabled` (agent/ask's disabledTools): a name, or `PREFIX*`. */
export function isTurnedOff(name: string, disabled: readonly string[]): boolean {
  return disabled.some((d) => (d.endsWith("*") ? name.startsWith(d.slice(0, -1)) : d === name));
}

export interface ToolToggleItem extends ToolPickItem {
  /** The tool's name (agent/listTools'). */
  name: string;
  /** On for this conversation. */
  picked: boolean;
}

export type ToolToggleEntry = ToolToggleItem | { separator: string };

/** Agent: List Tools' items, grouped the same way, each checked unless turned off. */
export function toolToggleItems(tools: readonly ToolInfo[], disabled: readonly string[]): ToolToggleEntry[] {
  return grouped(tools, (tool) => ({ ...toolItem(tool), name: tool.name, picked: !isTurnedOff(tool.name, disabled) }));
}

/**
 * The conversation's disabledTools after the pick: the tools left unchecked, an MCP server
 * whose every tool is unchecked as `mcp__SERVER__*` (its tools stay off when it lists new ones).
 */
export function disabledAfterPick(tools: readonly ToolInfo[], picked: ReadonlySet<string>): string[] {
  const off = tools.filter((tool) => !picked.has(tool.name));
  const disabled: string[] = [];
  const servers = new Set<string>();
  for (const tool of off) {
    const server = toolServer(tool);
    if (server === undefined || servers.has(server)) continue;
    const prefix = `mcp__${server}__`;
    const own = tools.filter((t) => toolServer(t) === server);
    if (own.every((t) => !picked.has(t.name) && t.name.startsWith(prefix))) servers.add(server);
  }
  for (const server of servers) disabled.push(`mcp__${server}__*`);
  for (const tool of off) {
    const server = toolServer(tool);
    if (server === undefined || !servers.has(server)) disabled.push(tool.name);
  }
  return disabled;
}
