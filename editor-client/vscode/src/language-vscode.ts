// VS Code's side of ./language: its diagnostics, documents and provider commands
// (`vscode.executeDefinitionProvider` and siblings), for the server's agent/languageDiagnostics
// and agent/languageRequest. LSP positions are VS Code's (0-based, UTF-16), so they map as is.

import * as vscode from "vscode";
import type { ForwardedMethod, LanguageEditor } from "./language";

const COMMANDS: Record<Exclude<ForwardedMethod, "workspace/symbol" | "textDocument/documentSymbol">, string> = {
  "textDocument/definition": "vscode.executeDefinitionProvider",
  "textDocument/references": "vscode.executeReferenceProvider",
  "textDocument/hover": "vscode.executeHoverProvider",
  "textDocument/rename": "vscode.executeDocumentRenameProvider",
};

function position(params: Record<string, unknown>): vscode.Position {
  const at = (params.position ?? {}) as { line?: number; character?: number };
  return new vscode.Position(at.line ?? 0, at.character ?? 0);
}

function documentUri(params: Record<string, unknown>): vscode.Uri {
  const uri = (params.textDocument as { uri?: string } | undefined)?.uri ?? "";
  return vscode.Uri.parse(uri);
}


function inTab(uri: vscode.Uri): boolean {
  const wanted = uri.toString();
  return vscode.window.tabGroups.all.some((group) =>
    group.tabs.some((tab) => tab.input instanceof vscode.TabInputText && tab.input.uri.toString() === wanted),
  );
}

export function vscodeLanguageEditor(): LanguageEditor {
  return {
    canonical(uri) {
      // The server's uris (Python's as_uri) and VS Code's are compared in VS Code's spelling.
      return vscode.Uri.parse(uri).toString();
    },
    diagnostics(uri) {
      return vscode.languages.getDiagnostics(vscode.Uri.parse(uri));
    },
    onDidChangeDiagnostics(listener) {
      return vscode.languages.onDidChangeDiagnostics((event) => listener(event.uris.map((u) => u.toString())));
    },
    async open(uri, analyse) {
      try {
        const document = await vscode.workspace.openTextDocument(vscode.Uri.parse(uri));
        if (document.languageId === "plaintext") return false; // no language server checks it
        if (analyse && !inTab(document.uri)) {
          // TypeScript (and other servers) check only the files shown in tabs: a preview tab,
          // the user's focus left where it is.
          await vscode.window.showTextDocument(document, { preview: true, preserveFocus: true });
        }
        return true;
      } catch {
        return false;
      }
    },
    async execute(method, params) {
      switch (method) {
        case "workspace/symbol":
          return vscode.commands.executeCommand("vscode.executeWorkspaceSymbolProvider", String(params.query ?? ""));
        case "textDocument/documentSymbol":
          return vscode.commands.executeCommand("vscode.executeDocumentSymbolProvider", documentUri(params));
        case "textDocument/rename":
          return vscode.commands.executeCommand(COMMANDS[method], documentUri(params), position(params), String(params.newName ?? ""));
        default:
          return vscode.commands.executeCommand(COMMANDS[method], documentUri(params), position(params));
      }
    },
  };
}

