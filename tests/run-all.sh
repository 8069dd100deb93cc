#!/usr/bin/env bash
# Every test of the project: Python (ruff, the import contracts, mypy, pytest with the Neovim
# and Emacs clients included), the VS Code client's unit tests and its end-to-end run in
# code-server (AGENT_LSP_SKIP_E2E=1 skips it).
set -euo pipefail
cd "$(dirname "$0")/.."
uv sync --locked
uv run ruff check .
uv run ruff format --check .
uv run lint-imports --no-cache  # the layer rules (docs/architecture.md)
uv run mypy                     # the types ([tool.mypy] in pyproject.toml)
uv run pytest "$@"
# The VS Code client: typecheck + unit tests (node --test), then end to end in code-server.
(cd editor-client/vscode && npm ci --no-audit --no-fund --loglevel=error && npm test)
if [ "${AGENT_LSP_SKIP_E2E:-0}" != 1 ]; then
    bash tests/e2e_vscode/run.sh
fi
