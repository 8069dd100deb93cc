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
  if (args.has("--watch")) {
    const context = await esbuild.context(options);
    await context.watch();
  } else {
    await esbuild.build(options);
  }
}
