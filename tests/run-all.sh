#!/usr/bin/env bash
# Every test of the project: Python (ruff + pytest) and, when present, the editor clients.
set -euo pipefail
cd "$(dirname "$0")/.."
uv sync --locked
uv run ruff check .
uv run ruff format --check .
uv run pytest "$@"
