.PHONY: setup demo test lint extension e2e

setup:
	./scripts/setup.sh

demo: setup
	./scripts/demo.sh

test: setup
	.venv/bin/python -m pytest -q

# Static checks (docs/decisions.md, "Checks in CI"): ruff and mypy from the venv, eslint and
# tsc --noEmit from node_modules (npm ci when it is missing or package-lock.json changed).
lint: setup node_modules/.prism-lint-stamp
	.venv/bin/ruff check prism_code prism_bench tests scripts
	.venv/bin/mypy
	npx --no-install eslint extension/src tests/e2e
	npx --no-install tsc -p ./ --noEmit

node_modules/.prism-lint-stamp: package-lock.json
	npm ci --no-audit --no-fund
	touch $@

# The VS Code extension: out/extension.js and out/prism-code.vsix (package compiles first).
extension:
	npm ci --no-audit --no-fund
	npm run package

# The extension in a real VS Code UI (code-server + Chromium); see scripts/e2e.sh.
e2e: setup
	./scripts/e2e.sh
