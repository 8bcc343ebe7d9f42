#!/usr/bin/env bash
# Regenerate requirements.lock: every Python package the project installs (pyproject.toml's
# dependencies, its `test` extra and its build backend), with exact versions and the sha256 hashes of
# every file PyPI has for them.  setup.sh and test.sh install from it (`pip install --require-hashes`),
# then the project itself with --no-deps.  Run this after changing a dependency in pyproject.toml:
#   ./lock.sh                  keep the pins already locked, add or drop what pyproject.toml changed
#   ./lock.sh --upgrade        every package to its newest version the ranges allow
#   ./lock.sh -P kubernetes    upgrade one package (--upgrade-package)
# The resolver is pip-tools, pinned here and installed once into $TAU_DEMO_CACHE (default ~/.cache/tau-demo).
# The lock is resolved for the Python that runs this (python3, or $PYTHON; the project needs >= 3.11).
set -euo pipefail
cd "$(dirname "$0")"
PIP_TOOLS=7.6.2
python=${PYTHON:-python3}
tool="${TAU_DEMO_CACHE:-$HOME/.cache/tau-demo}/pip-tools-$PIP_TOOLS-$("$python" -c 'import sys; print("py%d.%d" % sys.version_info[:2])')"
if [ ! -x "$tool/bin/pip-compile" ]; then
  echo "[lock] installing pip-tools $PIP_TOOLS into $tool"
  rm -rf "$tool" && "$python" -m venv "$tool"
  "$tool/bin/python" -m pip install -q "pip-tools==$PIP_TOOLS"
fi
echo "[lock] resolving pyproject.toml (dependencies, the test extra, the build backend) into requirements.lock"
CUSTOM_COMPILE_COMMAND=./lock.sh exec "$tool/bin/pip-compile" --quiet --no-config --generate-hashes --allow-unsafe --strip-extras \
  --extra test --build-deps-for editable --no-emit-index-url --no-emit-find-links --no-emit-trusted-host \
  --output-file requirements.lock "$@" pyproject.toml
