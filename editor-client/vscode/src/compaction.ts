// What a compaction did, in the wording every client uses (server/terminal_client.py's
// compaction_summary): "compacted: 30,512 → 9,880 tokens of 32,000 (12 outputs elided)".

import type { CompactionNotice, CompactResult } from "./protocol";

const count = (n: number | undefined) => (n ?? 0).toLocaleString("en-US");
const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? "" : "s"}`;

export function compactionSummary(params: CompactResult & Partial<Pick<CompactionNotice, "trigger">>): string {
  const line = `compacted: ${count(params.tokensBefore)} → ${count(params.tokensAfter)} tokens of ${count(params.contextWindow)}`;
  const details: string[] = [];
  if (params.elidedOutputs) details.push(`${plural(params.elidedOutputs, "output")} elided`);
  if (params.summarizedMessages) details.push(`${plural(params.summarizedMessages, "message")} summarized`);
  if (params.trigger === "overflow") details.push("the model said the conversation was too long");
  return details.length ? `${line} (${details.join(", ")})` : line;
}
