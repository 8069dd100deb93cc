// src/protocol.generated.ts from docs/protocol.schema.json (itself generated from
// server/protocol/): one interface per $defs entry; `AgentMethods`, method name to its params
// and result; `Methods` (method names by key), `ErrorCodes` and `ErrorActions` (an error's
// data.action). src/protocol.ts re-exports these under the names the extension uses.
//
//   node scripts/generate-protocol.mjs                 rewrite src/protocol.generated.ts
//   node scripts/generate-protocol.mjs --check [FILE]  exit 1 when FILE (default: it) is stale
import { readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { compile } from "json-schema-to-typescript";

const here = dirname(fileURLToPath(import.meta.url));
const SCHEMA = join(here, "..", "..", "..", "docs", "protocol.schema.json");
const OUTPUT = join(here, "..", "src", "protocol.generated.ts");

const BANNER = `// Generated from docs/protocol.schema.json by scripts/generate-protocol.mjs; do not edit.
// Regenerate: uv run python docs/protocol_schema.py && node scripts/generate-protocol.mjs`;

export async function generate() {
  const schema = JSON.parse(readFileSync(SCHEMA, "utf8"));
  // The schema's `methods` map is an annotation, not a type; as the root object each method
  // becomes a property, so the compiler names every params and result type from $defs.
  const methods = Object.fromEntries(
    Object.entries(schema.methods).map(([name, m]) => {
      const parts = m.kind === "request" ? { params: m.params, result: m.result } : { params: m.params };
      return [
        name,
        {
          description: `${m.kind}, ${m.direction}`,
          type: "object",
          properties: parts,
          required: Object.keys(parts),
        },
      ];
    }),
  );
  const root = {
    title: "AgentMethods",
    description: "Every agent/* method: its params and (for a request) its result.",
    type: "object",
    properties: methods,
    required: Object.keys(methods),
    $defs: schema.$defs,
  };
  const ts = await compile(root, "AgentMethods", {
    bannerComment: BANNER,
    additionalProperties: false, // the published schema allows additions; the types name what is known
    unreachableDefinitions: true,
    unknownAny: true,
    strictIndexSignatures: true,
    format: true,
    style: { printWidth: 100 },
  });
  // The compiler notes under every $defs type that the root referred to it: noise here.
  const types = ts
    .replace(/(\n \*)?\n \* This interface was referenced by [^\n]*\n \* via the `definition` "\w+"\./g, "")
    .replace(/\/\*\*\n \*\/\n/g, "");
  return types + tables(schema);
}

/** The method names, error codes and actions as constants (keys: agent/newSession -> newSession). */
function tables(schema) {
  const entries = (object, value) =>
    Object.entries(object)
      .map(([key, v]) => `  ${key}: ${value(v)},`)
      .join("\n");
  const methods = Object.fromEntries(Object.keys(schema.methods).map((m) => [m.replace(/^agent\//, ""), m]));
  const actions = Object.fromEntries(schema.errorActions.map((a) => [a, a]));
  return [
    "",
    "/** Every agent/* method's name. */",
    `export const Methods = {\n${entries(methods, JSON.stringify)}\n} as const satisfies Record<string, keyof AgentMethods>;`,
    "",
    "/** The JSON-RPC error codes the server answers with. */",
    `export const ErrorCodes = {\n${entries(schema.errorCodes, String)}\n} as const;`,
    "",
    "/** What an error's data.action asks the user to do (the client words it in its menus). */",
    `export const ErrorActions = {\n${entries(actions, JSON.stringify)}\n} as const;`,
    "export type ErrorActionName = (typeof ErrorActions)[keyof typeof ErrorActions];",
    "",
  ].join("\n");
}

const args = process.argv.slice(2);
if (args[0] === "--check") {
  const file = args[1] ?? OUTPUT;
  if (readFileSync(file, "utf8") !== (await generate())) {
    console.error(`${file} is stale: run node scripts/generate-protocol.mjs`);
    process.exit(1);
  }
} else if (args.length === 0) {
  writeFileSync(OUTPUT, await generate());
} else {
  console.error("usage: node scripts/generate-protocol.mjs [--check [FILE]]");
  process.exit(2);
}
