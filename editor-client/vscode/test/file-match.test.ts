import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { excludeGlob, expandBraces, fuzzyScore, MAX_FILE_RESULTS, rankFiles } from "../src/file-match";

const files = [
  "README.md",
  "src/app.py",
  "src/greet.py",
  "src/program.rs",
  "apps/web/index.ts",
  "docs/architecture.md",
  "src/chat/controller.ts",
  "src/chatController.ts",
  "tests/test_app.py",
];
const ranked = (query: string) => rankFiles(query, files).map((m) => m.path);

describe("@ fuzzy matching on the path", () => {
  it("a file's name beats its folders, a name's start beats its middle", () => {
    const app = ranked("app");
    assert.equal(app[0], "src/app.py");
    assert.ok(app.indexOf("tests/test_app.py") < app.indexOf("apps/web/index.ts"), app.join(", "));
  });

  it("matches scattered letters in order, case-insensitively, and nothing else", () => {
    assert.deepEqual(ranked("sgp"), ["src/greet.py"]);
    assert.ok(ranked("GREET").includes("src/greet.py"));
    assert.deepEqual(ranked("xyz"), []);
    assert.equal(fuzzyScore("pg", "src/greet.py"), undefined); // order matters
  });

  it("matches across folders and word starts (camel humps, separators)", () => {
    const cc = ranked("chatcon");
    assert.deepEqual(cc.slice(0, 2).sort(), ["src/chat/controller.ts", "src/chatController.ts"]);
    assert.ok(ranked("src/app").includes("src/app.py"));
    assert.ok(ranked("arch md").includes("docs/architecture.md"));
  });

  it("an empty query lists files, shortest paths first", () => {
    assert.equal(ranked("")[0], "README.md");
    assert.equal(ranked("").length, files.length);
  });

  it("caps the results", () => {
    const many = Array.from({ length: 200 }, (_, i) => `src/file${i}.ts`);
    assert.equal(rankFiles("file", many).length, MAX_FILE_RESULTS);
    assert.equal(rankFiles("file", many, 5).length, 5);
  });
});

describe("the files @ never offers", () => {
  it("expands one level of braces", () => {
    assert.deepEqual(expandBraces("**/*.{js,map}"), ["**/*.js", "**/*.map"]);
    assert.deepEqual(expandBraces("{a,b}/{c,d}"), ["a/c", "a/d", "b/c", "b/d"]);
    assert.deepEqual(expandBraces("plain/**"), ["plain/**"]);
  });

  it("joins files.exclude and search.exclude (true only) with node_modules and .git", () => {
    const glob = excludeGlob({ "**/.DS_Store": true, "**/*.{pyc,pyo}": true, "off/**": false, "**/*.js": { when: "$(basename).ts" } }, { "dist": true });
    const parts = glob.slice(1, -1).split(",");
    for (const expected of ["**/node_modules/**", "**/.git/**", "**/.DS_Store", "**/*.pyc", "**/*.pyo", "**/dist", "**/dist/**"]) {
      assert.ok(parts.includes(expected), `${expected} in ${glob}`);
    }
    assert.ok(!glob.includes("off/**") && !glob.includes("*.js"), glob);
    assert.equal(excludeGlob(undefined, undefined), "{**/node_modules/**,**/.git/**}");
  });
});
