#!/usr/bin/env bash
# Build (or reuse) the vLLM "fidelity" venv in which tests/fidelity's oracles run (the engine start,
# src/dryboot/boot/engine_start.py, and tests/fidelity/vllm_oracle.py): a thin wrapper over
# `dryboot boot-env`, which holds the pins per release (src/dryboot/boot/env.py).
#
#   bash scripts/fidelity-env.sh [VENV_DIR]      # default: ~/.cache/dryboot/boot-env/$VLLM_VERSION
#   VLLM_VERSION=0.30.0 bash scripts/fidelity-env.sh /work/venvs/vllm-0.30.0
#   export DRYBOOT_VLLM_PYTHON="$(bash scripts/fidelity-env.sh | tail -n 1)"
#
# VLLM_VERSION (default 0.28.0): 0.27.1, 0.28.0, 0.29.0 ... 0.33.0. The last line on stdout is the
# venv's python. DRYBOOT_VLLM_WHEEL_DIR=/dir/with/vllm-X-*.whl installs vLLM from a local wheel.
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
if [[ -x "$repo/.venv/bin/dryboot" ]]; then
  dryboot=("$repo/.venv/bin/dryboot")
else
  dryboot=("${PYTHON:-python3}" -m dryboot)
fi
if [[ -z "${DRYBOOT_VLLM_WHEEL_DIR:-}" && -d /work/wheels ]]; then
  export DRYBOOT_VLLM_WHEEL_DIR=/work/wheels
fi
exec "${dryboot[@]}" boot-env --vllm-version "${VLLM_VERSION:-0.28.0}" ${1:+"$1"}
