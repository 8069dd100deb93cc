// Agent: List Tools -> quick pick items with read-only / destructive marks.

import type { ToolInfo } from "./protocol";

export interface ToolPickItem {
  label: string;
  description: string;
  detail: string;
}

export function toolMarks(tool: ToolInfo): string {
  const marks: string[] = [];
  if (tool.annotations?.readOnlyHint) marks.push("read-only");
  if (tool.annotations?.destructiveHint) marks.push("destructive");
  if (marks.length === 0 && tool.annotations?.readOnlyHint === false) marks.push("writes");
  return marks.join(", ");
}

export function toolPickItems(tools: readonly ToolInfo[]): ToolPickItem[] {
  return tools.map((tool) => {
    const icon = tool.annotations?.destructiveHint
      ? "$(warning)"
      : tool.annotations?.readOnlyHint
        ? "$(eye)"
        : "$(edit)";
    const title = tool.title && tool.title !== tool.name ? ` ${tool.title}` : "";
    return {
      label: `${icon} ${tool.name}`,
      description: [toolMarks(tool), title.trim()].filter((p) => p !== "").join(" · "),
      detail: tool.description.replace(/\s+/g, " ").trim(),
    };
  });
}
