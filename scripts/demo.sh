#!/usr/bin/env bash
# The main job on a real repository: fetch marshmallow 3.21.1 from PyPI, index it
# (graph, fragments, FragRel relations, embeddings) and find a function by description.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(.venv/bin/python -c 'from prism_bench.corpora import materialise_package; print(materialise_package("marshmallow", "3.21.1"))')
echo "repository: $repo"
.venv/bin/prism-code index "$repo"
.venv/bin/prism-code find "$repo" "validate that a value is a valid email address" --top 5
