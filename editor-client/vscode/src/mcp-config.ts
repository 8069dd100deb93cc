// Agent: Open MCP Configuration: the places MCP servers are defined (docs/mcp.md,
// "Configuration"), in the order the server reads them: the user file, the
// `agentLsp.mcpServers` setting, each folder's own `.vscode/mcp.json` (and `.mcp.json` where
// one exists). Pure: the extension says which files exist and opens the one chosen.

import { join } from "node:path";
import { escapeControl } from "./display";

/**
 * The user configuration file, as the server finds it (server/config/user_config.py):
 * `$XDG_CONFIG_HOME/agent-lsp/config.toml` (an absolute XDG_CONFIG_HOME only, as the XDG spec
 * says), else `~/.config/agent-lsp/config.toml`; undefined without either.
 */
export function userConfigFile(env: Readonly<Record<string, string | undefined>>): string | undefined {
  const xdg = env["XDG_CONFIG_HOME"]?.trim();
  if (xdg && xdg.startsWith("/")) return join(xdg, "agent-lsp", "config.toml");
  const home = env["HOME"]?.trim();
  return home ? join(home, ".config", "agent-lsp", "config.toml") : undefined;
}

/** What a new user file starts with: comments only, so it changes nothing until edited. */
export const USER_FILE_TEMPLATE = `# agent-lsp's configuration (docs/mcp.md lists every key of an MCP server).
#
# [mcp_servers.time]                  # a stdio server: a command, no shell
# command = "uvx"
# args = ["mcp-server-time"]
#
# [mcp_servers.tracker]               # a Streamable HTTP server
# url = "https://tracker.example.com/mcp"
# headers = { Authorization = "Bearer \${TRACKER_TOKEN}" }
`;

/** What an absent `.vscode/mcp.json` is opened with (an unsaved buffer: nothing is written). */
export const WORKSPACE_FILE_TEMPLATE = `{
  // This folder's own MCP servers: agent-lsp starts each only once you approve it
  // (Agent: MCP Servers), and asks again when its definition changes.
  "servers": {
    // "tools": {"type": "stdio", "command": "node", "args": ["tools/mcp.js"]}
  }
}
`;

export type ConfigLocation =
  | { where: "userFile"; label: string; description: string; detail: string; path: string; exists: boolean }
  | { where: "setting"; label: string; description: string; detail: string }
  | { where: "workspaceFile"; label: string; description: string; detail: string; path: string; exists: boolean };

export interface FolderFiles {
  /** The folder's name, as the window shows it. */
  name: string;
  path: string;
  /** Whether `.vscode/mcp.json` and `.mcp.json` exist there. */
  vscodeMcpJson: boolean;
  mcpJson: boolean;
}

export function configLocations(
  userFile: { path: string; exists: boolean } | undefined,
  folders: readonly FolderFiles[],
): ConfigLocation[] {
  const locations: ConfigLocation[] = [];
  if (userFile) {
    locations.push({
      where: "userFile",
      label: "$(file) User configuration file",
      description: userFile.exists ? "[mcp_servers.NAME] tables" : "not created yet: created, with an example",
      detail: escapeControl(userFile.path),
      ...userFile,
    });
  }
  locations.push({
    where: "setting",
    label: "$(settings-gear) Setting agentLsp.mcpServers",
    description: "user or remote settings, in the shape of mcp.json's servers",
    detail: "Machine-scoped: a workspace's .vscode/settings.json cannot add servers",
  });
  for (const folder of folders) {
    const files: Array<[string, boolean]> = [[".vscode/mcp.json", folder.vscodeMcpJson]];
    if (folder.mcpJson) files.push([".mcp.json", true]);
    for (const [relative, exists] of files) {
      locations.push({
        where: "workspaceFile",
        label: `$(folder) ${escapeControl(folder.name)}: ${relative}`,
        description: exists ? "this folder's own servers (each approved before it starts)" : "none yet: opens a new, unsaved file",
        detail: escapeControl(join(folder.path, relative)),
        path: join(folder.path, relative),
        exists,
      });
    }
  }
  return locations;
}
