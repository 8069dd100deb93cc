// Agent: Sandbox Status: what confines the agent's bash commands in this folder
// (agent/sandboxStatus), in one dialog, and the status bar's mark when that is less than the
// full sandbox. It renders the server's fields and derives nothing the server decides; the
// Neovim and Emacs clients show the same lines (tests/support/sandbox_cases.json).
// No vscode import: the extension passes its dialog as `SandboxUi`.

import { Methods, type SandboxStatus, type SandboxStatusParams } from "./protocol";

/** full: every layer in force; weakened: a fallback form; off: the user's `sandbox: "off"`;
 * none: the settings ask for a sandbox this system cannot give. */
export type SandboxKind = "full" | "weakened" | "off" | "none";

export interface SandboxView {
  kind: SandboxKind;
  /** One line: the dialog's message and the status bar tooltip's. */
  summary: string;
  /** The report, line by line (the dialog's detail). */
  lines: string[];
}

export function sandboxKind(status: SandboxStatus): SandboxKind {
  if (status.mode === "off") return "off";
  if (!status.enforced) return "none";
  return status.fallback || (status.weakened ?? []).length > 0 ? "weakened" : "full";
}

const thousands = (n: number): string => n.toLocaleString("en-US");

function layersLine(status: SandboxStatus): string {
  const { layers } = status;
  const mark = (on: boolean, text: string) => `${on ? "✓" : "✗"} ${text}`;
  return (
    "layers: " +
    [
      mark(layers.namespaces, layers.namespaces && status.bwrap ? `namespaces (${status.bwrap})` : "namespaces"),
      mark(layers.networkNamespace, "network namespace"),
      mark(layers.landlock, layers.landlock ? `Landlock ABI ${status.landlockAbi}` : "Landlock"),
      mark(layers.seccomp, "seccomp"),
      mark(Boolean(layers.processLimit), layers.processLimit ? `process limit (${layers.processLimit})` : "process limit"),
    ].join(" · ")
  );
}

function networkLine(status: SandboxStatus): string {
  const domains = (status.allowedDomains ?? []).join(", ");
  switch (status.networkAccess) {
    case "none":
      // The hosts were asked for, but this system cannot give the proxy its own network.
      return domains
        ? `network: none; allowedDomains (${domains}) need a network namespace`
        : "network: none (a command asks you first)";
    case "allowedDomains":
      return `network: only ${domains}, through the proxy`;
    default:
      return `network: ${status.networkAccess}`;
  }
}

function writableLine(status: SandboxStatus): string {
  const roots = status.writableRoots ?? [];
  return roots.length
    ? `writable: ${roots.join(", ")} and each call's private $TMPDIR`
    : "writable: only each call's private $TMPDIR";
}

function limitsLine({ limits }: SandboxStatus): string {
  return (
    `limits: ${thousands(limits.processes)} processes · files up to ${thousands(limits.fileSizeMB)} MB · ` +
    `${thousands(limits.memoryMB)} MB of memory per process`
  );
}

/** The conversation's "always" answers that let bash leave the sandbox, after the rest. */
function withGrants(view: SandboxView, status: SandboxStatus): SandboxView {
  const grants = status.grants ?? [];
  if (!grants.length) return view;
  return { ...view, lines: [...view.lines, "", "always allowed in this conversation:", ...grants.map((g) => `- ${g.title}`)] };
}

export function describeSandbox(status: SandboxStatus): SandboxView {
  const kind = sandboxKind(status);
  return kind === "off" ? describeKind(status, kind) : withGrants(describeKind(status, kind), status);
}

function describeKind(status: SandboxStatus, kind: SandboxKind): SandboxView {
  if (kind === "off") {
    return {
      kind,
      summary: "sandbox off: bash commands run with your full rights",
      lines: ["mode: off", "bash commands run with your full rights: nothing is hidden or limited"],
    };
  }
  if (kind === "none") {
    const reason = status.reason ?? "this system offers no sandbox";
    return {
      kind,
      summary: `no sandbox: ${reason}; every bash call asks first`,
      lines: [
        `mode: ${status.mode}, not enforced: ${reason}`,
        "every bash call asks for your permission first, and runs with your rights",
      ],
    };
  }
  const weakened = status.weakened ?? [];
  const lines = [`mode: ${status.mode}`, layersLine(status), networkLine(status), writableLine(status), limitsLine(status)];
  const hidden = status.hiddenPaths ?? [];
  if (hidden.length) lines.push(`hidden from commands: ${hidden.join(", ")}`);
  if (kind === "weakened") {
    lines.push("", `weaker than the full sandbox:${status.fallback ? ` ${status.fallback}` : ""}`);
    lines.push(...weakened.map((promise) => `- ${promise}`));
  }
  const summary =
    kind === "full"
      ? `sandbox: ${status.mode}, every layer in force`
      : `sandbox: ${status.mode}, weaker here: ${status.fallback || weakened[0] || ""}`;
  return { kind, summary, lines };
}

export interface SandboxUi {
  /** The report: a warning unless `kind` is "full". */
  show(view: SandboxView): PromiseLike<void> | void;
  error(message: string): void;
}

/** The slice of the connection this needs. */
export interface SandboxConnection {
  request<R>(method: string, params: unknown): Promise<R>;
}

function reason(error: unknown): string {
  const message = (error as { message?: unknown })?.message;
  return typeof message === "string" ? message : String(error);
}

/** Ask the server for the folder's sandbox and show it; returns what was shown. */
export async function showSandboxStatus(
  connection: SandboxConnection,
  params: SandboxStatusParams,
  ui: SandboxUi,
): Promise<SandboxView | undefined> {
  let status: SandboxStatus;
  try {
    status = await connection.request<SandboxStatus>(Methods.sandboxStatus, params);
  } catch (error) {
    ui.error(`Agent: could not get the sandbox status: ${reason(error)}`);
    return undefined;
  }
  const view = describeSandbox(status);
  await ui.show(view);
  return view;
}
