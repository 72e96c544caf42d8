.PHONY: setup demo test

setup:
	./scripts/setup.sh

demo: setup
	./scripts/demo.sh

test: setup
	.venv/bin/python -m pytest -q
