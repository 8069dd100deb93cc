// The capabilities this client advertises under `capabilities.experimental.agent` (what it
// can answer of the server's requests): each feature adds its own keys there, merged.

/**
 * A vscode-languageclient StaticFeature that merges `keys` into the client's
 * `experimental.agent` capabilities (structurally typed: this module imports no VS Code API).
 */
export function agentCapabilityFeature(keys: Readonly<Record<string, unknown>>) {
  return {
    fillClientCapabilities(capabilities: { experimental?: unknown }): void {
      const experimental =
        typeof capabilities.experimental === "object" && capabilities.experimental !== null
          ? (capabilities.experimental as Record<string, unknown>)
          : {};
      const agent =
        typeof experimental.agent === "object" && experimental.agent !== null
          ? (experimental.agent as Record<string, unknown>)
          : {};
      capabilities.experimental = { ...experimental, agent: { ...agent, ...keys } };
    },
    initialize(): void {},
    getState(): { kind: "static" } {
      return { kind: "static" };
    },
    clear(): void {},
  };
}
