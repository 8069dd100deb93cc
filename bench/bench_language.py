"""Language features from language servers agent-lsp starts itself (issue 38).

Two comparisons, each against the language server itself in the same run:

- **Problems after a write.** ``write_file`` with a folder's source (the real ``ruff
  server``, confined as in use) — the write, the problems of the text before (asked first),
  the wait for the server's publish of the new version, the result's words — next to
  (a) ``write_file`` without a source (the write alone) and (b) ruff's own publish time: the
  same didChange sent straight to a ruff server over our client, until its
  ``publishDiagnostics``. Each round writes a new lint error into the same file.
- **A forwarded definition.** The ``definition`` tool (``jedi-language-server``, confined)
  next to the same ``textDocument/definition`` sent straight to a jedi server.

Interleaved rounds, medians and p90. Run: ``uv run python bench/bench_language.py`` (writes
``bench/results/language.md``).
"""

from __future__ import annotations

import asyncio
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_ROOT))

from server.language.client import JsonRpcClient  # noqa: E402
from server.language.config import LanguageServerSpec  # noqa: E402
from server.language.servers import CLIENT_CAPABILITIES, HeadlessLanguages  # noqa: E402
from tooling.context import ToolContext  # noqa: E402
from tooling.ledger import FileLedger  # noqa: E402
from tooling.workspace import Workspace  # noqa: E402
from tools.navigation import definition_tool  # noqa: E402
from tools.write_file import write_file_tool  # noqa: E402

ROUNDS = 40
WARM = 3
BIN = Path(sys.executable).parent


def ms(values: list[float]) -> str:
    ordered = sorted(values)
    p90 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.9))]
    return f"{statistics.median(values) * 1000:.2f} ms (p90 {p90 * 1000:.2f})"


class Direct:
    """A language server driven straight over our client: the baseline."""

    def __init__(self) -> None:
        self.published: asyncio.Queue[Any] = asyncio.Queue()
        self.client: JsonRpcClient | None = None

    def on_notification(self, method: str, params: Any) -> None:
        if method == "textDocument/publishDiagnostics":
            self.published.put_nowait(params)

    async def start(self, argv: list[str], root: Path) -> JsonRpcClient:
        self.client = await JsonRpcClient.start(
            argv, cwd=root, env=None, on_notification=self.on_notification
        )
        await self.client.request(
            "initialize",
            {
                "processId": os.getpid(),
                "rootUri": root.as_uri(),
                "capabilities": CLIENT_CAPABILITIES,
            },
            within=30,
        )
        await self.client.notify("initialized", {})
        return self.client


async def problems(root: Path) -> list[str]:
    ruff = shutil.which("ruff", path=str(BIN))
    assert ruff is not None, "ruff is a dev dependency"
    workspace = Workspace(root)
    source = HeadlessLanguages(root, [LanguageServerSpec("ruff", ruff, ("server",), (".py",))])
    with_source = ToolContext(ledger=FileLedger(), language=source)
    without = ToolContext(ledger=FileLedger())
    tool_with = write_file_tool(workspace, diagnostics_wait=5.0)
    tool_without = write_file_tool(workspace)
    plain = root / "plain.py"
    direct = Direct()
    client = await direct.start([ruff, "server"], root)
    other = root / "direct.py"
    await client.notify(
        "textDocument/didOpen",
        {"textDocument": {"uri": other.as_uri(), "languageId": "python", "version": 1,
                          "text": "x = 1\n"}},
    )  # fmt: skip
    await direct.published.get()
    ours, bare, raw = [], [], []
    first = 0.0
    try:
        for n in range(WARM + ROUNDS):
            text = f"import os{n}\n\nprint(name_{n})\n"
            started = time.perf_counter()
            result = await tool_with.handler({"path": "app.py", "content": text}, with_source)
            took = time.perf_counter() - started
            assert "F821" in result and "F401" in result, result
            started = time.perf_counter()
            await tool_without.handler({"path": plain.name, "content": text}, without)
            took_bare = time.perf_counter() - started
            started = time.perf_counter()
            await client.notify(
                "textDocument/didChange",
                {"textDocument": {"uri": other.as_uri(), "version": n + 2},
                 "contentChanges": [{"text": text}]},
            )  # fmt: skip
            while (await direct.published.get()).get("version") != n + 2:
                pass
            took_raw = time.perf_counter() - started
            if n == 0:
                first = took
            if n >= WARM:
                ours.append(took)
                bare.append(took_bare)
                raw.append(took_raw)
    finally:
        await client.close()
        await source.aclose()
    added = statistics.median(ours) - statistics.median(bare)
    return [
        "### Problems after a write (ruff server)",
        "",
        "| measurement | time | ratio to ruff's own publish |",
        "|---|---:|---:|",
        f"| ruff's own publish: didChange → publishDiagnostics, straight (baseline) | {ms(raw)} "
        "| 1.00x |",
        f"| `write_file` without a source (the write alone) | {ms(bare)} | "
        f"{statistics.median(bare) / statistics.median(raw):.2f}x |",
        f"| `write_file` with the problems it introduced in its result | {ms(ours)} | "
        f"{statistics.median(ours) / statistics.median(raw):.2f}x |",
        "",
        f"The problems add {added * 1000:.2f} ms to a write (median): the text before is the "
        "one the server has (its problems known, no round trip), then one didChange and the "
        "wait for its publish, and the words. The first write of the run, the server's start "
        f"(confined) and initialize included: {first * 1000:.0f} ms.",
        "",
    ]


async def navigation(root: Path) -> list[str]:
    jedi = shutil.which("jedi-language-server", path=str(BIN))
    if jedi is None:
        return ["### A forwarded definition", "", "jedi-language-server is not installed.", ""]
    (root / "lib.py").write_text('def greet(name):\n    """Say hello."""\n    return name\n')
    main = root / "main.py"
    main.write_text('from lib import greet\n\nprint(greet("a"))\n')
    workspace = Workspace(root)
    source = HeadlessLanguages(root, [LanguageServerSpec("jedi", jedi, (), (".py",))])
    context = ToolContext(ledger=FileLedger(), language=source)
    tool = definition_tool(workspace)
    direct = Direct()
    client = await direct.start([jedi], root)
    await client.notify(
        "textDocument/didOpen",
        {"textDocument": {"uri": main.as_uri(), "languageId": "python", "version": 1,
                          "text": main.read_text()}},
    )  # fmt: skip
    params = {"textDocument": {"uri": main.as_uri()}, "position": {"line": 2, "character": 6}}
    ours, raw = [], []
    try:
        for n in range(WARM + ROUNDS):
            started = time.perf_counter()
            result = await tool.handler({"path": "main.py", "line": 3, "symbol": "greet"}, context)
            took = time.perf_counter() - started
            assert result == "lib.py:1:5: def greet(name):", result
            started = time.perf_counter()
            answer = await client.request("textDocument/definition", params, within=30)
            took_raw = time.perf_counter() - started
            assert answer, answer
            if n >= WARM:
                ours.append(took)
                raw.append(took_raw)
    finally:
        await client.close()
        await source.aclose()
    return [
        "### A forwarded definition (jedi-language-server)",
        "",
        "| measurement | time | ratio |",
        "|---|---:|---:|",
        f"| `textDocument/definition` sent straight to jedi (baseline) | {ms(raw)} | 1.00x |",
        f"| the `definition` tool (position from a symbol name, the answer's line read) | "
        f"{ms(ours)} | {statistics.median(ours) / statistics.median(raw):.2f}x |",
        "",
    ]


async def main() -> str:
    started = time.monotonic()
    with tempfile.TemporaryDirectory() as one, tempfile.TemporaryDirectory() as two:
        lines = await problems(Path(one).resolve())
        lines += await navigation(Path(two).resolve())
    load = os.getloadavg()[0]
    head = [
        "## Language servers agent-lsp starts itself",
        "",
        f"`uv run python bench/bench_language.py`; {time.strftime('%Y-%m-%d %H:%M')}, "
        f"{os.cpu_count()} CPUs, Python {sys.version.split()[0]}; {ROUNDS} rounds after "
        f"{WARM} warm-ups, interleaved; load average {load:.1f}; whole run "
        f"{time.monotonic() - started:.0f} s. Our servers run confined (the sandbox, "
        "read-only, no network); the baselines' servers run unconfined.",
        "",
    ]
    return "\n".join(head + lines)


if __name__ == "__main__":
    table = asyncio.run(main())
    print(table)
    out = REPO_ROOT / "bench" / "results" / "language.md"
    out.parent.mkdir(exist_ok=True)
    out.write_text(table)
