// The project around the chat input: the instruction-file chips (agent/instructions,
// asked again when the conversation changes, after each ask and when such a file is saved,
// created or deleted), the commands `/` offers (agent/listCommands, asked each time `/` is
// typed) and the workspace files `@` offers (vscode.workspace.findFiles, kept until a file is
// created or deleted). What it shows is built by ../project-view.ts.

import { homedir } from "node:os";
import { join, posix } from "node:path";
import * as vscode from "vscode";
import { excludeGlob, MAX_FILE_CANDIDATES, rankFiles } from "../file-match";
import { commandChoices, DEFAULT_INSTRUCTION_FILES, fileChoices, instructionChips, isInstructionPath, skillItems, skillsChip } from "../project-view";
import { type CommandsResult, type InstructionsResult, Methods, type ProjectParams } from "../protocol";
import { SECTION, userValue } from "../settings";
import { BUILTIN_COMMANDS, type CommandChoice } from "../slash-commands";
import type { ToView } from "./messages";
import type { Connection } from "./session";

export interface ProjectHost {
  connection: Connection;
  /** The conversation's session, once it has one. */
  sessionId(): string | undefined;
  /** The folder the conversation acts in (its own, else the current one). */
  folder(): vscode.Uri | undefined;
  /** The server takes editor context: `@` may attach files. */
  acceptsContext(): boolean;
  post(message: ToView): void;
  registerAction(name: string, handler: (args: Record<string, string>) => unknown): vscode.Disposable;
}

interface FileList {
  folder: string;
  files: Promise<{ path: string; uri: vscode.Uri }[]>;
}

export class ProjectContext implements vscode.Disposable {
  private chips: ToView = { type: "project", instructions: [] };
  private commands: CommandChoice[] = [...BUILTIN_COMMANDS];
  /** The URIs of the chips shown: the only ones "openInstruction" opens. */
  private openable = new Set<string>();
  /** The skills the chip lists (its click offers them). */
  private skills: ReturnType<typeof skillItems> = [];
  private generation = 0;
  private timer: ReturnType<typeof setTimeout> | undefined;
  private fileList: FileList | undefined;
  private readonly disposables: vscode.Disposable[] = [];

  constructor(private readonly host: ProjectHost) {
    const files = vscode.workspace.createFileSystemWatcher("**/*", false, true, false);
    const forgetFiles = () => {
      this.fileList = undefined;
    };
    const markdown = vscode.workspace.createFileSystemWatcher("**/*.md");
    const onMarkdown = (uri: vscode.Uri) => {
      if (isInstructionPath(uri.path, instructionFiles())) this.refresh();
    };
    // The user's own AGENTS.md and skills (outside the workspace).
    const own = vscode.workspace.createFileSystemWatcher(new vscode.RelativePattern(vscode.Uri.file(userConfigDir()), "**/*.md"));
    this.disposables.push(
      files,
      files.onDidCreate(forgetFiles),
      files.onDidDelete(forgetFiles),
      markdown,
      markdown.onDidCreate(onMarkdown),
      markdown.onDidChange(onMarkdown),
      markdown.onDidDelete(onMarkdown),
      own,
      own.onDidCreate(() => this.refresh()),
      own.onDidChange(() => this.refresh()),
      own.onDidDelete(() => this.refresh()),
      vscode.workspace.onDidChangeWorkspaceFolders(forgetFiles),
      host.registerAction("openInstruction", (args) => this.open(args.uri ?? "")),
      host.registerAction("showSkills", () => this.showSkills()),
    );
  }

  /** What the page needs when it (re)loads. */
  pageState(): ToView[] {
    return [this.chips, { type: "commands", commands: this.commands }, { type: "fileMentions", enabled: this.host.acceptsContext() }];
  }

  /** Ask for the instruction files again, soon (several reasons in a row ask once). */
  refresh(delayMs = 150): void {
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.timer = undefined;
      void this.loadInstructions();
    }, delayMs);
    this.host.post({ type: "fileMentions", enabled: this.host.acceptsContext() });
  }

  private params(withSession: boolean): ProjectParams {
    const sessionId = withSession ? this.host.sessionId() : undefined;
    if (sessionId) return { sessionId };
    const folder = this.host.folder();
    return folder ? { workspaceFolder: folder.toString() } : {};
  }

  /** A project request with the conversation, else (unknown to this server) with its folder. */
  private async request<R>(method: string): Promise<R> {
    try {
      return await this.host.connection.request<R>(method, this.params(true));
    } catch (error) {
      const e = error as { code?: unknown; data?: { field?: unknown } } | undefined;
      if (e?.code === -32602 && this.host.sessionId()) return this.host.connection.request<R>(method, this.params(false));
      throw error;
    }
  }

  private async loadInstructions(): Promise<void> {
    const generation = ++this.generation;
    let result: InstructionsResult | undefined;
    if (this.host.connection.supports(Methods.instructions)) {
      result = await this.request<InstructionsResult>(Methods.instructions).catch(() => undefined);
    }
    if (generation !== this.generation) return; // a later refresh answers
    const instructions = result ? instructionChips(result) : [];
    const skills = result ? skillsChip(result) : undefined;
    this.skills = result ? skillItems(result) : [];
    this.openable = new Set(instructions.map((c) => c.uri));
    this.chips = skills ? { type: "project", instructions, skills } : { type: "project", instructions };
    this.host.post(this.chips);
  }

  /** `/` typed: the commands, asked again (a prompt file may have been added). */
  async listCommands(): Promise<void> {
    if (this.host.connection.supports(Methods.listCommands)) {
      const result = await this.request<CommandsResult>(Methods.listCommands).catch(() => undefined);
      if (result) this.commands = commandChoices(result);
    } else {
      this.commands = commandChoices(undefined);
    }
    this.host.post({ type: "commands", commands: this.commands });
  }

  /** `@query` typed: the conversation folder's files that match, best first. */
  async findFiles(id: number, query: string): Promise<void> {
    const folder = this.host.folder();
    const files = folder ? await this.files(folder).catch(() => []) : [];
    const uris = new Map(files.map((f) => [f.path, f.uri.toString()]));
    const ranked = rankFiles(query, files.map((f) => f.path));
    this.host.post({ type: "files", id, files: fileChoices(ranked.map((m) => ({ path: m.path, uri: uris.get(m.path) ?? "" }))) });
  }

  private files(folder: vscode.Uri): Promise<{ path: string; uri: vscode.Uri }[]> {
    const key = folder.toString();
    if (this.fileList?.folder === key) return this.fileList.files;
    const exclude = excludeGlob(
      vscode.workspace.getConfiguration("files", folder).get<Record<string, unknown>>("exclude"),
      vscode.workspace.getConfiguration("search", folder).get<Record<string, unknown>>("exclude"),
    );
    const files = Promise.resolve(
      vscode.workspace.findFiles(new vscode.RelativePattern(folder, "**/*"), exclude, MAX_FILE_CANDIDATES),
    ).then((uris) =>
      uris
        .filter((uri) => uri.scheme === folder.scheme)
        .map((uri) => ({ path: posix.relative(folder.path, uri.path), uri }))
        .filter((f) => f.path !== "" && !f.path.startsWith("..")),
    );
    const list = { folder: key, files };
    this.fileList = list;
    files.catch(() => {
      if (this.fileList === list) this.fileList = undefined;
    });
    return files;
  }

  private async showSkills(): Promise<void> {
    if (this.skills.length === 0) return;
    const picked = await vscode.window.showQuickPick(this.skills, {
      title: "Agent: skills the agent may use",
      placeHolder: "Open a skill's SKILL.md",
      matchOnDescription: true,
      matchOnDetail: true,
    });
    if (picked) await this.openFile(vscode.Uri.file(picked.path));
  }

  private async openFile(uri: vscode.Uri): Promise<void> {
    try {
      await vscode.window.showTextDocument(uri, { preview: true });
    } catch {
      void vscode.window.showWarningMessage(`Agent: cannot open ${uri.fsPath}.`);
    }
  }

  private async open(uri: string): Promise<void> {
    if (!this.openable.has(uri)) return;
    try {
      await vscode.window.showTextDocument(vscode.Uri.parse(uri), { preview: true });
    } catch {
      void vscode.window.showWarningMessage(`Agent: cannot open ${vscode.Uri.parse(uri).fsPath}.`);
    }
  }

  dispose(): void {
    if (this.timer !== undefined) clearTimeout(this.timer);
    for (const d of this.disposables) d.dispose();
  }
}

/** `agentLsp.instructionFiles` as the user set it (machine scope), else the server's default. */
function instructionFiles(): readonly string[] {
  const value = userValue(vscode.workspace.getConfiguration(SECTION), "instructionFiles");
  return Array.isArray(value) && value.every((v) => typeof v === "string") ? value : DEFAULT_INSTRUCTION_FILES;
}

/** Where the user's own AGENTS.md, skills and commands live ($XDG_CONFIG_HOME/agent-lsp). */
function userConfigDir(): string {
  const base = process.env.XDG_CONFIG_HOME || join(homedir(), ".config");
  return join(base, "agent-lsp");
}
