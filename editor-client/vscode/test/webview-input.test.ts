import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { busyNote, caretLines, inputAction, type KeyPress } from "../src/webview/keys";
import { PromptHistory } from "../src/webview/prompt-history";
import { afterChange, isAtBottom, MAX_PLACES, rememberPlace } from "../src/webview/scroll";

const key = (k: string, extra: Partial<KeyPress> = {}): KeyPress => ({
  key: k, shiftKey: false, ctrlKey: false, altKey: false, metaKey: false, isComposing: false, ...extra,
});
const top = { onFirstLine: true, onLastLine: true };
const middle = { onFirstLine: false, onLastLine: false };

describe("the input's keys", () => {
  it("Enter sends, Shift+Enter breaks the line, Enter while composing does not send", () => {
    assert.equal(inputAction(key("Enter"), top, false), "send");
    assert.equal(inputAction(key("Enter", { shiftKey: true }), top, false), "default");
    assert.equal(inputAction(key("Enter", { isComposing: true }), top, false), "default");
  });

  it("Up/Down recall only from the first/last line", () => {
    assert.equal(inputAction(key("ArrowUp"), top, false), "recallUp");
    assert.equal(inputAction(key("ArrowUp"), middle, false), "default");
    assert.equal(inputAction(key("ArrowDown"), top, false), "recallDown");
    assert.equal(inputAction(key("ArrowUp", { shiftKey: true }), top, false), "default");
  });

  it("Escape stops a running ask only", () => {
    assert.equal(inputAction(key("Escape"), top, true), "stop");
    assert.equal(inputAction(key("Escape"), top, false), "default");
  });

  it("knows where the caret is", () => {
    assert.deepEqual(caretLines("ab\ncd", 1, 1), { onFirstLine: true, onLastLine: false });
    assert.deepEqual(caretLines("ab\ncd", 4, 4), { onFirstLine: false, onLastLine: true });
    assert.deepEqual(caretLines("ab", 0, 2), { onFirstLine: false, onLastLine: false });
  });
});

describe("prompt recall", () => {
  it("walks back and forth and gives back the draft", () => {
    const history = new PromptHistory(["one", "two"]);
    assert.equal(history.up("draft"), "two");
    assert.equal(history.up("two"), "one");
    assert.equal(history.up("one"), undefined, "nothing older");
    assert.equal(history.down(), "two");
    assert.equal(history.down(), "draft");
    assert.equal(history.down(), undefined);
  });

  it("adds sent prompts, not a repeat of the last, and restarts after typing", () => {
    const history = new PromptHistory([], 3);
    for (const p of ["a", "b", "b", "c", "d"]) history.add(p);
    assert.deepEqual(history.all, ["b", "c", "d"]);
    history.up("");
    history.edited();
    assert.equal(history.up("x"), "d");
  });
});

describe("scroll follow", () => {
  it("follows only a reader at the bottom, and offers jump to latest otherwise", () => {
    assert.equal(isAtBottom({ scrollTop: 500, clientHeight: 500, scrollHeight: 1010 }), true);
    assert.equal(isAtBottom({ scrollTop: 100, clientHeight: 500, scrollHeight: 1010 }), false);
    assert.deepEqual(afterChange(true, { scrollTop: 500, clientHeight: 500, scrollHeight: 1400 }), { scrollTo: 1400, offerJump: false });
    assert.deepEqual(afterChange(false, { scrollTop: 100, clientHeight: 500, scrollHeight: 1400 }), { offerJump: true });
  });
});

describe("where the reader left a conversation", () => {
  it("is kept only when they had scrolled away from its end, newest last, at most MAX_PLACES", () => {
    let places = rememberPlace({}, "s1", { entry: 3, offset: 120.4 });
    assert.deepEqual(places, { s1: { entry: 3, offset: 120 } });
    places = rememberPlace(places, "s2", { entry: 0, offset: 0 });
    places = rememberPlace(places, "s1", { entry: 5, offset: 10 });
    assert.deepEqual(Object.keys(places), ["s2", "s1"]);
    assert.deepEqual(rememberPlace(places, "s1", undefined), { s2: { entry: 0, offset: 0 } }, "at the end: it opens there anyway");
    for (let i = 0; i < MAX_PLACES + 5; i++) places = rememberPlace(places, `k${i}`, { entry: i, offset: 0 });
    assert.equal(Object.keys(places).length, MAX_PLACES);
    assert.ok(!("s2" in places) && `k${MAX_PLACES + 4}` in places, "the oldest go first");
  });
});

describe("Enter while an ask runs", () => {
  it("says why nothing was sent, naming a waiting permission card", () => {
    assert.match(busyNote(true), /waits for your answer on the permission card/);
    assert.match(busyNote(false), /an ask is running/);
  });
});
