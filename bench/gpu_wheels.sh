#!/usr/bin/env bash
# Download the wheels bench/gpu_check.py installs on a GPU machine that has torch and transformers but reaches no
# package registry (Python 3.12, manylinux x86-64: the lent machines'); carry bench/wheels/ along (about 4 MB).
# --no-deps: the machine has torch, numpy and transformers already; the few dependencies it lacks are named here.
set -euo pipefail
cd "$(dirname "$0")"
python -m pip download -q --no-deps --only-binary=:all: --python-version "${PYTHON_VERSION:-3.12}" \
  --platform manylinux_2_28_x86_64 --platform manylinux2014_x86_64 -d wheels \
  tyro==1.0.17 gymnasium==1.2.2 rapidfuzz==3.14.6 farama-notifications docstring-parser typeguard cloudpickle
ls -la wheels
