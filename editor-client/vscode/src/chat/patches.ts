// What the page must be told for a set of changes: the parts they touched, each rendered once.
// A text of the running ask is kept in streaming form (MarkdownStream): a delta sends only the
// block being written and the blocks done since the last delta. No vscode import: unit-tested.

import { MarkdownStream } from "./markdown";
import type { ToView } from "./messages";
import type { Change, Entry, TextItem } from "./model";
import { entryClass, partId, type RenderOptions, renderEntry, renderItem, renderStreamingTextItem, renderTail } from "./render";

export class PagePatcher {
  /** The texts of running asks the page shows in streaming form, by part id. */
  private readonly streams = new Map<string, { entry: Entry; item: TextItem; markdown: MarkdownStream }>();

  /** The page was drawn anew (renderConversation): nothing on it is in streaming form. */
  reset(): void {
    this.streams.clear();
  }

  messages(changes: readonly Change[], options: RenderOptions): ToView[] {
    const out: ToView[] = [];
    const sent = new Set<string>();
    const once = (id: string, make: () => ToView) => {
      if (sent.has(id)) return;
      sent.add(id);
      out.push(make());
    };
    for (const change of changes) {
      const { entry } = change;
      if (change.part === "entry") {
        this.dropStreams(entry);
        once(partId.entry(entry), () => ({ type: "upsert", id: partId.entry(entry), html: renderEntry(entry, options) }));
      } else if (change.part === "tail") {
        if (entry.state !== "working") this.endStreams(entry, options, once);
        once(partId.tail(entry), () => ({ type: "upsert", id: partId.tail(entry), html: renderTail(entry) }));
        once(`${partId.entry(entry)}#class`, () => ({ type: "setClass", id: partId.entry(entry), className: entryClass(entry) }));
      } else if (change.part === "removed") {
        this.streams.delete(partId.item(entry, change.item));
        out.push({ type: "remove", id: partId.item(entry, change.item) });
      } else if (change.item.kind === "text" && entry.state === "working") {
        const { item, before, appended } = change;
        once(partId.item(entry, item), () => this.streamed(entry, item, options, before && partId.item(entry, before), appended));
      } else {
        const id = partId.item(entry, change.item);
        this.streams.delete(id);
        once(id, () => {
          const message: ToView = { type: "upsert", id, html: renderItem(entry, change.item, options), parent: partId.items(entry) };
          if (change.before) message.before = partId.item(entry, change.before);
          return message;
        });
      }
    }
    return out;
  }

  /**
   * A text of the running ask changed (a delta): only the block being written is rendered and
   * sent, with the blocks done since the last delta, so a delta costs the same at any length.
   */
  private streamed(entry: Entry, item: TextItem, options: RenderOptions, before: string | undefined, appended: string | undefined): ToView {
    const id = partId.item(entry, item);
    const known = this.streams.get(id);
    const markdown = known?.markdown ?? new MarkdownStream();
    if (!known) this.streams.set(id, { entry, item, markdown });
    const rendered =
      known && appended !== undefined ? markdown.append(item.text, appended, options.exists) : markdown.update(item.text, options.exists);
    if (known && !rendered.restarted) return { type: "stream", id: partId.open(entry, item), append: rendered.appended, html: rendered.open };
    const message: ToView = { type: "upsert", id, html: renderStreamingTextItem(entry, item, rendered), parent: partId.items(entry) };
    if (before) message.before = before;
    return message;
  }

  /** The ask ended: its streamed texts get their full render once (references resolved). */
  private endStreams(entry: Entry, options: RenderOptions, once: (id: string, make: () => ToView) => void): void {
    for (const [id, stream] of this.streams) {
      if (stream.entry !== entry) continue;
      this.streams.delete(id);
      if (entry.items.includes(stream.item)) once(id, () => ({ type: "upsert", id, html: renderItem(entry, stream.item, options) }));
    }
  }

  /** The entry is drawn whole again: its texts are in full form on the page. */
  private dropStreams(entry: Entry): void {
    for (const [id, stream] of this.streams) if (stream.entry === entry) this.streams.delete(id);
  }
}
