// What a compaction did, as the server words it (server/agent/activity.py compaction_summary):
// "compacted: 30,512 → 9,880 tokens of 32,000 (12 outputs elided)", the `summary` of an
// agent/compaction notification or an agent/compact result.

import { escapeControl } from "./display";
import type { CompactResult } from "./protocol";

export function compactionSummary(params: Pick<CompactResult, "summary">): string {
  return escapeControl(params.summary ?? "");
}
