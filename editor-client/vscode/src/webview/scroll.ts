// Follow new output only while the reader is at the bottom; never pull them back otherwise.

/** Slack in pixels: a reader a few pixels short of the end is still "at the bottom". */
export const BOTTOM_SLACK = 32;

export interface ScrollBox {
  scrollTop: number;
  clientHeight: number;
  scrollHeight: number;
}

export function isAtBottom(box: ScrollBox, slack = BOTTOM_SLACK): boolean {
  return box.scrollHeight - box.clientHeight - box.scrollTop <= slack;
}

/**
 * After content changed: where to scroll (undefined: leave it) and whether to offer
 * "jump to latest". `wasAtBottom` is measured before the change.
 */
export function afterChange(wasAtBottom: boolean, box: ScrollBox): { scrollTo?: number; offerJump: boolean } {
  if (wasAtBottom) return { scrollTo: box.scrollHeight, offerJump: false };
  return { offerJump: !isAtBottom(box) };
}

/**
 * Where a reader left a conversation: the entry at the top of the view (its index) and how
 * far into it they were. Not a scroll offset: entries out of sight are laid out with a
 * placeholder height, so the same offset in a freshly drawn page shows other entries.
 */
export interface Place {
  entry: number;
  offset: number;
}

/** Where readers left conversations they had scrolled up in (by key), newest last. */
export type SavedPlaces = Record<string, Place>;

/** At most this many conversations' places are kept in the page's state. */
export const MAX_PLACES = 20;

/** The places after the reader left conversation `key` at `place` (undefined: at its end, where it opens anyway). */
export function rememberPlace(places: SavedPlaces, key: string, place: Place | undefined): SavedPlaces {
  const next: SavedPlaces = {};
  for (const [k, v] of Object.entries(places)) if (k !== key) next[k] = v;
  if (place) next[key] = { entry: place.entry, offset: Math.max(0, Math.round(place.offset)) };
  const keys = Object.keys(next);
  for (const k of keys.slice(0, Math.max(0, keys.length - MAX_PLACES))) delete next[k];
  return next;
}
