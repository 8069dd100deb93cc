// Agent: Manage Permissions: the conversation's "always" answers (agent/grants), each bound
// to one exact call, in a quick pick; the picked ones are revoked (agent/revokeGrant), so
// those calls are asked about again. Without this the only way to drop an "allow always"
// was a new conversation. No vscode import: the extension passes its quick pick as `GrantsUi`.

import { type GrantInfo, type GrantsResult, Methods, type RevokeGrantResult } from "./protocol";

export interface GrantItem {
  label: string;
  description: string;
  detail: string;
  grant: GrantInfo;
}

export interface GrantsUi {
  /** A multi-select quick pick; undefined when dismissed. */
  pick(items: GrantItem[], title: string, placeHolder: string): PromiseLike<readonly GrantItem[] | undefined>;
  info(message: string): void;
  error(message: string): void;
}

/** The slice of the chat's connection this needs. */
export interface GrantsConnection {
  request<R>(method: string, params: unknown): Promise<R>;
}

/** What the call was, in full: the command of a bash call, else the file and arguments. */
export function grantCall(grant: GrantInfo): string {
  let args: unknown;
  try {
    args = JSON.parse(grant.arguments);
  } catch {
    return grant.arguments;
  }
  if (typeof args !== "object" || args === null) return grant.arguments;
  const record = args as Record<string, unknown>;
  const command = record["command"];
  if (grant.toolName === "bash" && typeof command === "string") {
    const escalation = record["escalation"];
    return typeof escalation === "string" && escalation !== "" ? `${command}  (${escalation})` : command;
  }
  const { path, ...rest } = record;
  const more = Object.keys(rest).length ? JSON.stringify(rest) : "";
  return typeof path === "string" ? `${path}${more ? `  ${more}` : ""}` : grant.arguments;
}

export function grantItems(grants: readonly GrantInfo[]): GrantItem[] {
  return grants.map((grant) => ({
    label: `${grant.decision === "allow" ? "$(check)" : "$(circle-slash)"} ${grant.title}`,
    description: `${grant.decision === "allow" ? "always allowed" : "always rejected"} · ${grant.toolName}`,
    detail: grantCall(grant).split("\n").join(" ⏎ "),
    grant,
  }));
}

function reason(error: unknown): string {
  const message = (error as { message?: unknown })?.message;
  return typeof message === "string" ? message : String(error);
}

/** List the session's grants, revoke the picked ones; returns the ids revoked. */
export async function manageGrants(
  connection: GrantsConnection,
  sessionId: string | undefined,
  ui: GrantsUi,
): Promise<string[]> {
  if (!sessionId) {
    ui.info("Agent: no conversation yet, so no permissions were granted.");
    return [];
  }
  let grants: GrantInfo[];
  try {
    grants = (await connection.request<GrantsResult>(Methods.grants, { sessionId })).grants ?? [];
  } catch (error) {
    ui.error(`Agent: could not list the permissions: ${reason(error)}`);
    return [];
  }
  if (grants.length === 0) {
    ui.info("Agent: no “always” answers in this conversation.");
    return [];
  }
  const picked = await ui.pick(
    grantItems(grants),
    `Permissions of this conversation (${grants.length})`,
    "Pick the answers to revoke: the agent is asked again for those calls",
  );
  if (!picked || picked.length === 0) return [];
  const revoked: string[] = [];
  for (const item of picked) {
    try {
      const result = await connection.request<RevokeGrantResult>(Methods.revokeGrant, {
        sessionId,
        grantId: item.grant.grantId,
      });
      if (result.revoked) revoked.push(item.grant.grantId);
    } catch (error) {
      ui.error(`Agent: could not revoke “${item.grant.title}”: ${reason(error)}`);
    }
  }
  if (revoked.length) ui.info(`Agent: revoked ${revoked.length === 1 ? "1 answer" : `${revoked.length} answers`}; those calls will be asked about again.`);
  return revoked;
}
