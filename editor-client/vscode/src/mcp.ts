// The folder's MCP servers as the server reports them (agent/mcpServers): the status bar item's
// text, Agent: MCP Servers (a quick pick; an awaiting-approval server is approved through
// agent/approveMcpServer, whose question arrives as the usual permission dialog), and when to
// ask the server again. Every field shown is the server's or a definition's text (a name, a
// command line, a server's stderr): escaped first. No vscode import: the extension passes
// its quick pick and dialogs as `McpServersUi`, its timers as `Timers`.

import { escapeControl } from "./display";
import {
  type ApproveMcpServerResult,
  type McpServerInfo,
  type McpServersParams,
  type McpServerLogResult,
  type McpServersResult,
  Methods,
} from "./protocol";

const shown = (text: string): string => escapeControl(text);
/** A multi-line text (a stderr tail) for a dialog's detail: its lines kept, nothing hidden. */
const shownLines = (text: string): string => escapeControl(text, { keepNewlines: true });

function firstLine(text: string | null | undefined): string {
  return shown((text ?? "").split("\n").find((line) => line.trim() !== "")?.trim() ?? "");
}

const plural = (n: number, word: string): string => `${n} ${word}${n === 1 ? "" : "s"}`;

const ORIGINS: Record<string, string> = {
  user: "user file",
  editor: "agentLsp.mcpServers",
  workspace: "this folder's own",
};
const origin = (server: McpServerInfo): string => ORIGINS[server.origin] ?? shown(server.origin);

const ICONS: Record<string, string> = {
  ready: "$(check)",
  starting: "$(loading~spin)",
  failed: "$(error)",
  disabled: "$(circle-slash)",
  "awaiting-approval": "$(shield)",
  rejected: "$(circle-slash)",
  stopped: "$(debug-stop)",
};

/** A folder's own server the user may approve: waiting, or declined for good (after all). */
const approvable = (server: McpServerInfo): boolean => server.state === "awaiting-approval" || server.state === "rejected";

/** The state in words, with what the user can do about it. */
function stateText(server: McpServerInfo): string {
  switch (server.state) {
    case "ready":
      return `ready, ${plural(server.tools.length, "tool")}`;
    case "awaiting-approval":
      return "awaiting your approval";
    case "rejected":
      return "rejected by you (not asked again)";
    case "stopped":
      return "stopped by you";
    case "failed":
      return "failed";
    default:
      return shown(server.state);
  }
}

// -- the status bar item ---------------------------------------------------------------------

export interface McpStatusView {
  text: string;
  tooltip: string;
  /** error: a server failed; warning: one awaits approval. */
  attention: "none" | "warning" | "error";
}

/** The item for the folder's servers; undefined (hidden) when it has none. */
export function describeMcpStatus(servers: readonly McpServerInfo[]): McpStatusView | undefined {
  if (servers.length === 0) return undefined;
  const count = (state: string) => servers.filter((s) => s.state === state).length;
  const failed = count("failed");
  const awaiting = count("awaiting-approval");
  const active = servers.length - count("disabled") - count("rejected") - count("stopped");
  const icon = failed
    ? "$(error)"
    : awaiting
      ? "$(shield)"
      : count("starting")
        ? "$(loading~spin)"
        : "$(plug)";
  const lines = servers.map((server) => {
    const error = server.state === "failed" && server.error ? `: ${firstLine(server.error)}` : "";
    return `${shown(server.name)}: ${stateText(server)}${error}`;
  });
  return {
    text: `${icon} MCP ${count("ready")}/${active}`,
    tooltip: ["MCP servers of this folder (click: Agent: MCP Servers)", ...lines].join("\n"),
    attention: failed ? "error" : awaiting ? "warning" : "none",
  };
}

// -- Agent: MCP Servers --------------------------------------------------------------------

export interface McpServerItem {
  label: string;
  description: string;
  detail: string;
  server: McpServerInfo;
}

export function mcpServerItems(servers: readonly McpServerInfo[]): McpServerItem[] {
  return servers.map((server) => {
    const warnings = server.warnings?.length ? ` · ${plural(server.warnings.length, "warning")}` : "";
    const trusted = server.trusted ? " · trusted" : "";
    const detail =
      server.state === "failed" && server.error
        ? firstLine(server.error)
        : server.state === "awaiting-approval"
          ? `choose to approve: ${shown(server.target)}`
          : server.state === "rejected"
            ? `choose to approve after all: ${shown(server.target)}`
            : shown(server.target);
    return {
      label: `${ICONS[server.state] ?? "$(question)"} ${shown(server.name)}`,
      description: `${stateText(server)} · ${origin(server)}${trusted}${warnings}`,
      detail,
      server,
    };
  });
}

/** Everything about one server, line by line, for its dialog. */
export function serverDetail(server: McpServerInfo): string {
  const lines = [
    `${server.transport === "http" ? "URL" : "Command"}: ${shown(server.target)}`,
    `Defined in: ${origin(server)}${server.trusted ? " (trusted: its tools run without asking)" : ""}`,
  ];
  if (server.state === "failed" && server.error) lines.push("", shownLines(server.error));
  if (server.tools.length) lines.push("", `Tools: ${server.tools.map(shown).join(", ")}`);
  for (const warning of server.warnings ?? []) lines.push(`Warning: ${shown(warning)}`);
  return lines.join("\n");
}

export interface McpServersUi {
  pick(items: McpServerItem[], title: string, placeHolder: string): PromiseLike<McpServerItem | undefined>;
  /** A server's details (a modal with its detail and `actions` as buttons): the one picked. */
  details(message: string, detail: string, actions: string[]): PromiseLike<string | undefined> | string | undefined | void;
  /** A failed server's error (a modal with `actions`, and Show Log): the action picked. */
  failed(message: string, detail: string, actions: string[]): PromiseLike<string | undefined> | string | undefined | void;
  /** One server's own output (agent/mcpServerLog), in a place of its own. */
  output(name: string, text: string): PromiseLike<void> | void;
  /** No server is defined: say where they are defined (Open MCP Configuration). */
  none(message: string): PromiseLike<void> | void;
  info(message: string): void;
  error(message: string): void;
}

/** The slice of the connection this needs. */
export interface McpConnection {
  request<R>(method: string, params: unknown): Promise<R>;
}

function reason(error: unknown): string {
  const message = (error as { message?: unknown })?.message;
  return typeof message === "string" ? message : String(error);
}

/**
 * Agent: MCP Servers: list the folder's servers (`listed` gets each fresh list, for the status
 * bar); choosing an awaiting-approval one approves it, a failed one shows its error, another
 * its details.
 */
export async function showMcpServers(
  connection: McpConnection,
  folder: McpServersParams,
  ui: McpServersUi,
  listed: (servers: McpServerInfo[]) => void,
): Promise<void> {
  const list = async (): Promise<McpServerInfo[] | undefined> => {
    try {
      const { servers } = await connection.request<McpServersResult>(Methods.mcpServers, folder);
      listed(servers);
      return servers;
    } catch (error) {
      ui.error(`Agent: could not list the MCP servers: ${reason(error)}`);
      return undefined;
    }
  };
  const servers = await list();
  if (!servers) return;
  if (servers.length === 0) {
    await ui.none("Agent: no MCP server is defined for this folder.");
    return;
  }
  const awaiting = servers.filter(approvable).length;
  const picked = await ui.pick(
    mcpServerItems(servers),
    `Agent: MCP servers (${servers.length})`,
    awaiting ? "Choose a server awaiting approval to approve it, another for its details" : "Choose a server for its details",
  );
  if (!picked) return;
  const { server } = picked;
  const name = shown(server.name);
  if (approvable(server)) {
    await approveMcpServer(connection, folder, server, ui);
    await list();
    return;
  }
  const actions = serverActions(server);
  const chosen =
    server.state === "failed"
      ? await ui.failed(`Agent: MCP server ${name} failed: ${firstLine(server.error) || "no reason given"}`, serverDetail(server), actions)
      : await ui.details(`Agent: MCP server ${name} is ${stateText(server)}`, serverDetail(server), actions);
  const action = typeof chosen === "string" ? CONTROL[chosen] : undefined;
  try {
    if (action) {
      const after = await connection.request<McpServerInfo>(Methods.controlMcpServer, { ...folder, name: server.name, action });
      ui.info(`Agent: MCP server ${name} ${action === "stop" ? "stopped" : `${action}ed`}: ${stateText(after)}.`);
      await list();
    } else if (chosen === SHOW_OUTPUT) {
      const { text } = await connection.request<McpServerLogResult>(Methods.mcpServerLog, { ...folder, name: server.name });
      await ui.output(server.name, shownLines(text));
    }
  } catch (error) {
    ui.error(`Agent: MCP server ${name}: ${reason(error)}`);
  }
}

const SHOW_OUTPUT = "Show Output";
const CONTROL: Record<string, "start" | "stop" | "restart"> = { Start: "start", Stop: "stop", Restart: "restart" };

/** What the user can do with a server (agent/controlMcpServer, agent/mcpServerLog), as buttons. */
export function serverActions(server: McpServerInfo): string[] {
  switch (server.state) {
    case "ready":
    case "starting":
      return ["Restart", "Stop", SHOW_OUTPUT];
    case "stopped":
    case "failed":
      return ["Start", SHOW_OUTPUT];
    default:
      return [SHOW_OUTPUT];
  }
}

/**
 * Approve one of the folder's own servers: the server asks the user itself
 * (agent/requestPermission, the approval dialog); says what came of it.
 */
export async function approveMcpServer(
  connection: McpConnection,
  folder: McpServersParams,
  server: McpServerInfo,
  ui: Pick<McpServersUi, "info" | "error">,
): Promise<void> {
  const name = shown(server.name);
  let result: ApproveMcpServerResult;
  try {
    result = await connection.request<ApproveMcpServerResult>(Methods.approveMcpServer, { ...folder, name: server.name });
  } catch (error) {
    ui.error(`Agent: could not approve the MCP server ${name}: ${reason(error)}`);
    return;
  }
  ui.info(
    result.approved
      ? `Agent: MCP server ${name} approved: ${shown(result.state)}.`
      : result.state === "rejected"
        ? `Agent: MCP server ${name} rejected; you will not be asked again until its definition changes (Agent: MCP Servers approves it after all).`
        : `Agent: MCP server ${name} not approved; it is not started.`,
  );
}

/**
 * The servers that now wait for approval and were not waiting, as defined now, in the lists
 * seen before (`seen` remembers them: each definition is announced once a window). A changed
 * definition of an approved server waits again: without this only the status bar said so.
 */
export function newlyAwaiting(seen: Set<string>, servers: readonly McpServerInfo[]): McpServerInfo[] {
  const fresh: McpServerInfo[] = [];
  for (const server of servers) {
    if (server.state !== "awaiting-approval") continue;
    const key = `${server.name}\0${server.target}`;
    if (seen.has(key)) continue;
    seen.add(key);
    fresh.push(server);
  }
  return fresh;
}

/** The notice of a server that waits for approval (newlyAwaiting). */
export function awaitingNotice(server: McpServerInfo): string {
  return `Agent: this folder's MCP server ${shown(server.name)} is new or changed and waits for your approval (${shown(server.target)}); until then its tools are not available.`;
}

// -- when to ask again ---------------------------------------------------------------------

export interface Timers {
  set(callback: () => void, ms: number): unknown;
  clear(handle: unknown): void;
}

const realTimers: Timers = {
  set: (callback, ms) => setTimeout(callback, ms),
  clear: (handle) => clearTimeout(handle as ReturnType<typeof setTimeout>),
};

/**
 * While a server is starting, how long until the next look (then the last, again): a start
 * ends within its `startup_timeout` (30 s by default), so a dozen looks at most, and the item
 * is at most 5 s behind.
 */
export const STARTING_RECHECKS_MS = [500, 1000, 2000, 3000, 5000] as const;

/**
 * Keeps the status bar's list current without polling: a refresh is asked for at the events
 * that change it (the server's start, a settings change, an ask's end, a definition file
 * changed, an approval); refreshes asked for while one runs share one more after it. Only
 * while a server is `starting` does it look again by itself, less and less often, until none
 * is (a start ends within its `startup_timeout`).
 */
export class McpRefresher {
  private running: Promise<void> | undefined;
  private again = false;
  private timer: unknown;
  private recheck = 0;
  private disposed = false;

  constructor(
    private readonly load: () => Promise<McpServerInfo[] | undefined>,
    private readonly show: (servers: McpServerInfo[] | undefined) => void,
    private readonly timers: Timers = realTimers,
  ) {}

  /** Ask the server now (an event: the re-checks start over from the shortest wait). */
  refresh(): Promise<void> {
    this.recheck = 0;
    return this.run();
  }

  /** A list got some other way (Agent: MCP Servers): shown as if refreshed. */
  listed(servers: McpServerInfo[]): void {
    this.recheck = 0;
    this.apply(servers);
  }

  /** The server is gone: nothing to show, nothing to look at. */
  clear(): void {
    this.cancelTimer();
    this.show(undefined);
  }

  dispose(): void {
    this.disposed = true;
    this.cancelTimer();
  }

  private run(): Promise<void> {
    if (this.running) {
      this.again = true;
      return this.running;
    }
    this.running = (async () => {
      do {
        this.again = false;
        const servers = await this.load().catch(() => undefined);
        if (this.disposed) return;
        this.apply(servers);
      } while (this.again);
    })().finally(() => {
      this.running = undefined;
    });
    return this.running;
  }

  private apply(servers: McpServerInfo[] | undefined): void {
    this.cancelTimer();
    this.show(servers);
    if (this.disposed || !servers?.some((s) => s.state === "starting")) return;
    const wait = STARTING_RECHECKS_MS[Math.min(this.recheck, STARTING_RECHECKS_MS.length - 1)] ?? 5000;
    this.recheck++;
    this.timer = this.timers.set(() => {
      this.timer = undefined;
      void this.run();
    }, wait);
  }

  private cancelTimer(): void {
    if (this.timer !== undefined) this.timers.clear(this.timer);
    this.timer = undefined;
  }
}
