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
