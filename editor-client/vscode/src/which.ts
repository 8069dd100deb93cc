// Find the server's program before starting it, so a missing `agent-lsp` gets one clear message
// (vscode-languageclient would add its own generic "couldn't create connection" error).

import { accessSync, constants, statSync } from "node:fs";
import { delimiter, isAbsolute, join } from "node:path";

function isExecutableFile(path: string): boolean {
  try {
    if (!statSync(path).isFile()) return false;
    accessSync(path, process.platform === "win32" ? constants.F_OK : constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** The path `command` runs, or undefined. Relative paths with a slash resolve against `cwd`. */
export function findExecutable(
  command: string,
  pathVariable: string | undefined,
  cwd: string = process.cwd(),
  extensions: readonly string[] = process.platform === "win32" ? ["", ".exe", ".cmd", ".bat"] : [""],
): string | undefined {
  if (command.includes("/") || command.includes("\\")) {
    const full = isAbsolute(command) ? command : join(cwd, command);
    return extensions.map((e) => full + e).find(isExecutableFile);
  }
  for (const dir of (pathVariable ?? "").split(delimiter)) {
    if (dir === "") continue;
    const found = extensions.map((e) => join(dir, command + e)).find(isExecutableFile);
    if (found) return found;
  }
  return undefined;
}
