"""The VS Code chat view with a 10 MB tool output (issue 25; a Node script, see its header).

Runs ``editor-client/vscode/bench/tool-output-render.mjs``: a tool row whose output is
200,000 lines (10 MB) in a 200-entry conversation — the row's first paint, opening it,
"Show all" and "Show more", scrolling the conversation top to bottom, and the longest
main-thread block in each — in this tree's view next to the view before the tool-output
work (``dd63989``, main before it, built in the same run), alternating. Writes
``bench/results/vscode_tool_output.md``. Needs the extension's ``node_modules`` (``npm ci``
there), git, and the Chromium and playwright-core that ``tests/e2e_vscode/run.sh`` installs.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

EXTENSION = Path(__file__).resolve().parent.parent / "editor-client" / "vscode"


def main() -> int:
    npm = shutil.which("npm")
    node = shutil.which("node")
    if npm is None or node is None or not (EXTENSION / "node_modules").is_dir():
        print(
            "bench_vscode_tool_output: needs node, npm and `npm ci` in editor-client/vscode",
            file=sys.stderr,
        )
        return 1
    subprocess.run([npm, "run", "--silent", "build"], cwd=EXTENSION, check=True)
    script = EXTENSION / "bench" / "tool-output-render.mjs"
    return subprocess.run([node, str(script)], cwd=EXTENSION).returncode


if __name__ == "__main__":
    sys.exit(main())
