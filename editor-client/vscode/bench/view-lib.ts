// What the view benchmark drives: the real model and renderers, bundled for node.
export { applyActivity, applyDelta, newEntry, type Conversation, type Entry } from "../src/chat/model";
export { MarkdownStream } from "../src/chat/markdown";
export { PathExistsCache } from "../src/chat/path-cache";
export { PagePatcher } from "../src/chat/patches";
export { partId, renderConversation, renderItem } from "../src/chat/render";
export { renderPage } from "../src/chat/page";
