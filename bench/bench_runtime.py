"""Tool runtime dispatch overhead, next to calling the handler directly.

``ToolRuntime.execute`` looks the tool up, parses the JSON arguments, validates them
against the tool's schema (jsonschema, validator compiled once) and awaits the
handler. The baseline awaits the same no-op handler with an already parsed dict.
Both run the same number of calls in the same process; medians of several rounds.

Run: ``uv run python bench/bench_runtime.py`` (writes ``bench/results/runtime.md``).
"""

from __future__ import annotations

import asyncio
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_ROOT))

from tooling.context import ToolContext  # noqa: E402
from tooling.contract import ToolDefinition  # noqa: E402
from tooling.registry import ToolRegistry  # noqa: E402
from tooling.runtime import ToolRuntime  # noqa: E402

CALLS = 20_000
ROUNDS = 7
TARGET_US = 50.0


async def noop(arguments: dict[str, Any], context: ToolContext) -> str:
    return "ok"


# A schema the size of a real tool's (edit_file has four fields).
PARAMETERS = {
    "type": "object",
    "properties": {
        "path": {"type": "string", "minLength": 1},
        "old_text": {"type": "string", "minLength": 1},
        "new_text": {"type": "string"},
        "replace_all": {"type": "boolean"},
    },
    "required": ["path", "old_text", "new_text"],
    "additionalProperties": False,
}
ARGUMENTS = {"path": "src/app.py", "old_text": "return 1", "new_text": "return 2"}


async def per_call_us(call: Any) -> float:
    started = time.perf_counter()
    for _ in range(CALLS):
        await call()
    return (time.perf_counter() - started) / CALLS * 1e6


async def main() -> str:
    tool = ToolDefinition("noop", "does nothing", PARAMETERS, noop)
    runtime = ToolRuntime(ToolRegistry([tool]))
    raw = json.dumps(ARGUMENTS)
    assert await runtime.execute("noop", raw) == "ok"

    direct, dispatched = [], []
    for _ in range(ROUNDS):  # interleaved so machine noise hits both alike
        direct.append(await per_call_us(lambda: noop(dict(ARGUMENTS), ToolContext())))
        dispatched.append(await per_call_us(lambda: runtime.execute("noop", raw)))
    base, ours = statistics.median(direct), statistics.median(dispatched)
    overhead = ours - base
    met = "met" if ours < TARGET_US else "NOT met"
    return "\n".join(
        [
            "## Tool runtime dispatch",
            "",
            f"{CALLS:,} calls × {ROUNDS} rounds, medians; no-op handler, 4-field schema.",
            "",
            "| variant | µs per call | ratio |",
            "|---|---:|---:|",
            f"| handler awaited directly (baseline) | {base:.2f} | 1.00 |",
            f"| `runtime.execute` (lookup + JSON parse + schema validation) | {ours:.2f} | "
            f"{ours / base:.1f}x |",
            "",
            f"Dispatch overhead: {overhead:.1f} µs per call; target < {TARGET_US:.0f} µs: {met}.",
            "",
        ]
    )


if __name__ == "__main__":
    table = asyncio.run(main())
    print(table)
    out = REPO_ROOT / "bench" / "results" / "runtime.md"
    out.parent.mkdir(exist_ok=True)
    out.write_text(table)
