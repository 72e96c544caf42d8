.PHONY: setup demo test extension e2e

setup:
	./scripts/setup.sh

demo: setup
	./scripts/demo.sh

test: setup
	.venv/bin/python -m pytest -q

# The VS Code extension: out/extension.js and out/prism-code.vsix (package compiles first).
extension:
	npm ci --no-audit --no-fund
	npm run package

# The extension in a real VS Code UI (code-server + Chromium); see scripts/e2e.sh.
e2e: setup
	./scripts/e2e.sh
