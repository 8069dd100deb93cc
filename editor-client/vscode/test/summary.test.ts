import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { formatDuration, truncate } from "../src/summary";

describe("helpers", () => {
  it("truncate never splits a surrogate pair", () => {
    assert.equal(truncate("😀😀😀😀", 3), "😀😀…");
    assert.equal(truncate("short", 10), "short");
  });

  it("formatDuration picks a readable unit", () => {
    assert.equal(formatDuration(12.4), "12ms");
    assert.equal(formatDuration(1234), "1.23s");
    assert.equal(formatDuration(12_345), "12.3s");
    assert.equal(formatDuration(119_600), "2m00s");
    assert.equal(formatDuration(61_000), "1m01s");
    assert.equal(formatDuration(undefined), "");
    assert.equal(formatDuration(-1), "");
  });
});
