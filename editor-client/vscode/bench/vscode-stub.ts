// The little of the `vscode` API that ToolOutputs touches (messages, the clipboard), for the
// tool-output benchmark, which runs ToolOutputs in node.
export const window = {
  showErrorMessage: (message: string): Promise<undefined> => {
    console.error(`bench: ${message}`);
    return Promise.resolve(undefined);
  },
  setStatusBarMessage: (): { dispose(): void } => ({ dispose() {} }),
};
export const env = { clipboard: { writeText: (): Promise<void> => Promise.resolve() } };
