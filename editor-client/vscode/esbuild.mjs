// One bundle for the extension (dist/extension.js, `vscode` external), and each unit test
// bundled on its own into out/test/ for `node --test` (tests must not import `vscode`: it is
// not external there, so such an import fails the build).
import { readdirSync, rmSync } from "node:fs";
import * as esbuild from "esbuild";

const args = new Set(process.argv.slice(2));
const production = args.has("--production");

if (args.has("--tests")) {
  rmSync("out", { recursive: true, force: true });
  const entryPoints = readdirSync("test")
    .filter((f) => f.endsWith(".test.ts"))
    .map((f) => `test/${f}`);
  await esbuild.build({
    entryPoints,
    outdir: "out/test",
    bundle: true,
    platform: "node",
    format: "cjs",
    target: "node20",
    sourcemap: "inline",
    logLevel: "warning",
  });
} else {
  const options = {
    entryPoints: ["src/extension.ts"],
    outfile: "dist/extension.js",
    bundle: true,
    platform: "node",
    format: "cjs",
    target: "node20",
    external: ["vscode"],
    minify: production,
    sourcemap: !production,
    sourcesContent: false,
    logLevel: "info",
  };
  // The chat view's page script: runs in the webview (a browser), not in the extension host.
  const webview = {
    ...options,
    entryPoints: ["src/webview/main.ts"],
    outfile: "dist/webview.js",
    platform: "browser",
    format: "iife",
    target: "es2022",
    external: [],
  };
  if (args.has("--watch")) {
    for (const o of [options, webview]) await (await esbuild.context(o)).watch();
  } else {
    await Promise.all([esbuild.build(options), esbuild.build(webview)]);
  }
}
