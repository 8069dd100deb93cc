// What the view benchmark drives: the real model and renderers, bundled for node.
export { applyActivity, applyDelta, newEntry, type Conversation, type Entry } from "../src/chat/model";
export { partId, renderConversation, renderItem } from "../src/chat/render";
export { renderPage } from "../src/chat/page";
