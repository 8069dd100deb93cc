"""The VS Code chat view's render time per update (a Node script; see its header).

Runs ``editor-client/vscode/bench/view-render.mjs``, which writes
``bench/results/vscode_view.md``. Needs the extension's ``node_modules`` (``npm ci``
there) and, for the page side, the Chromium and playwright-core that
``tests/e2e_vscode/run.sh`` installs.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

EXTENSION = Path(__file__).resolve().parent.parent / "editor-client" / "vscode"


def main() -> int:
    npm = shutil.which("npm")
    if npm is None or not (EXTENSION / "node_modules").is_dir():
        print("bench_vscode_view: needs npm and `npm ci` in editor-client/vscode", file=sys.stderr)
        return 1
    subprocess.run([npm, "run", "--silent", "build"], cwd=EXTENSION, check=True)
    return subprocess.run([npm, "run", "--silent", "bench"], cwd=EXTENSION).returncode


if __name__ == "__main__":
    sys.exit(main())
