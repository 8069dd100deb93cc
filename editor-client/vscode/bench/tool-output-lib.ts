// What the tool-output benchmark drives in the view as it is: the view benchmark's model and
// renderers, and the extension's ToolOutputs (tail once a call ends, Show all / Show more),
// bundled for node with `vscode` replaced by vscode-stub.ts (ToolOutputs only shows messages).
export * from "./view-lib";
export { ToolOutputs } from "../src/chat/tool-outputs";
