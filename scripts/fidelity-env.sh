#!/usr/bin/env bash
# Build the throwaway "fidelity" venv in which tests/fidelity/e2e_oracle.py runs vLLM 0.28.0's
# engine-start path (and tests/fidelity/vllm_oracle.py its KV-cache planner) on CPU.
#
#   bash scripts/fidelity-env.sh [VENV_DIR]      # default: <repo>/.fidelity-venv
#   VLLM_VERSION=0.30.0 bash scripts/fidelity-env.sh /work/venvs/vllm-0.30.0
#
# VLLM_VERSION (default 0.28.0) picks the release: 0.27.1, 0.28.0, 0.29.0, 0.30.0, 0.31.0, 0.32.0,
# 0.33.0; the pins that differ by release (torch, transformers range, flashinfer, xgrammar,
# torchvision, a few import-time extras) are in the case table below, read from each wheel's
# Requires-Dist. 0.33.0 pins torch==2.14.0, which PyPI serves as a CUDA build (several GB):
# the oracle only needs it to import. A vLLM wheel in /work/wheels is used when present.
#   export DRYBOOT_VLLM_PYTHON="$(bash scripts/fidelity-env.sh | tail -n 1)"
#
# What goes in: CPU torch==2.13.0 (vLLM 0.28.0 pins it), vllm==0.28.0 with --no-deps, and only
# the light dependencies that importing vLLM's planner modules needs (kv_cache_utils,
# kv_cache_interface, platforms.interface, the attention backends, the mamba state calculators
# and the Qwen3-Next model class), at versions inside vllm 0.28.0's metadata ranges.
# A few packages whose own dependencies are CUDA/Triton stacks (xgrammar, flashinfer-python)
# are installed with --no-deps: vLLM only needs them to import, not to run a kernel.
#
# Idempotent: when the venv already holds this exact requirement set (stamp file) and the smoke
# test passes, it only re-runs the smoke test. The last line on stdout is the venv's python.
# Optional: DRYBOOT_VLLM_WHEEL_DIR=/dir/with/vllm-0.28.0-*.whl to install vLLM from a local
# wheel instead of downloading it (~315 MB) from PyPI.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="${1:-$repo/.fidelity-venv}"
log() { printf '[fidelity-env] %s\n' "$*" >&2; }
python_bin="${PYTHON:-python3}"
start=$(date +%s)

VLLM_VERSION="${VLLM_VERSION:-0.28.0}"
# Per-release pins, from each wheel's Requires-Dist (only those that differ from 0.28.0).
TORCH_REQ="torch==2.13.0"
TRANSFORMERS_REQ="transformers==5.24.0"      # 0.28.0: >=5.5.3
XGRAMMAR_REQ="xgrammar==0.2.9"               # >=0.2.1,<1.0.0
FLASHINFER_REQ="flashinfer-python==0.6.16.post3"
TORCHVISION_REQ="torchvision==0.28.0"
EXTRA_REQS=()
case "$VLLM_VERSION" in
  # 0.27.1 reads Gemma-4's global head_dim, which transformers >= 5.16 refuses
  # (AmbiguousGlobalPerLayerAttributeError): 5.10.4 is inside its >=5.5.3 range and works.
  0.27.1) TRANSFORMERS_REQ="transformers==5.10.4" ;;
  0.28.0) ;;
  0.29.0) FLASHINFER_REQ="flashinfer-python==0.6.18" ;;   # transformers >=5.10.4
  0.30.0) FLASHINFER_REQ="flashinfer-python==0.6.18.post1" ;;
  0.31.0) FLASHINFER_REQ="flashinfer-python==0.7.0.post1"; TRANSFORMERS_REQ="transformers==5.17.0"
          XGRAMMAR_REQ="xgrammar==0.2.7" ;;               # transformers <5.18,>=5.10.4
  0.32.0) FLASHINFER_REQ="flashinfer-python==0.7.0.post1"; TRANSFORMERS_REQ="transformers==5.19.0"
          XGRAMMAR_REQ="xgrammar==0.2.8" ;;               # transformers <5.20,>=5.16.1
  0.33.0) FLASHINFER_REQ="flashinfer-python==0.7.2.post1"; TRANSFORMERS_REQ="transformers==5.20.2"
          XGRAMMAR_REQ="xgrammar==0.2.8"; TORCH_REQ="torch==2.14.0"
          TORCHVISION_REQ="torchvision==0.29.0"            # transformers <5.21,>=5.16.1
          ;;
  *) log "no pin table for vLLM $VLLM_VERSION (known: 0.27.1 0.28.0 0.29.0 0.30.0 0.31.0 0.32.0 0.33.0)"
     exit 2 ;;
esac
case "$VLLM_VERSION" in
  # imported from 0.30.0 on by modules the model classes import (entrypoints protocol, tool
  # parsers); vllm: fastapi[standard]<0.137.0,>=0.133.0, partial-json-parser
  0.30.0|0.31.0|0.32.0|0.33.0) EXTRA_REQS=("fastapi==0.136.1" "partial-json-parser==0.2.1.1.post7") ;;
esac
VLLM_REQ="vllm==$VLLM_VERSION"
# Resolved with their dependencies (none of them pulls torch/triton/CUDA).
LIGHT_REQS=(
  "numpy==2.4.6"
  "packaging==26.4"
  "regex==2026.11.19"
  "pydantic==2.14.4"            # vllm: >=2.12.0
  "cbor2==6.3.0"
  "psutil==7.2.2"
  "pyzmq==27.3.0"               # vllm: >=25.0.0
  "$TRANSFORMERS_REQ"           # (brings tokenizers, huggingface_hub, safetensors)
  "aiohttp==3.14.5"             # vllm: >=3.13.3
  "requests==2.34.2"            # vllm: >=2.26.0
  "openai==3.57.0"              # vllm: >=2.0.0
  "openai-harmony==0.0.8"       # vllm: >=0.0.3
  "pillow==13.0.0"
  "pybase64==1.5.1"
  "cachetools==8.0.2"
  "msgspec==0.23.0"
  "cloudpickle==3.1.3"
  "uvloop==0.23.0"
  "py-cpuinfo==9.0.0"
  "prometheus_client==0.26.0"   # vllm: >=0.18.0
  "llguidance==1.7.6"           # vllm: >=1.7.0,<1.8.0
  "einops==0.8.2"
  "compressed-tensors==0.17.0"  # vllm: ==0.17.0 (needed to import vLLM's model classes)
  "loguru==0.7.3"
  "nvidia-ml-py==13.615.71"     # flashinfer imports pynvml
  "apache-tvm-ffi==0.1.11"      # vllm: ==0.1.11 (xgrammar and flashinfer import tvm_ffi)
  # mistral_common's import-time dependencies (llava.py, mistral3.py, pixtral.py, voxtral.py
  # import mistral_common; it is installed --no-deps below: its numpy cap is below vLLM's pin)
  "jsonschema==4.26.0"
  "pydantic-extra-types[pycountry]==2.11.1"
  "tiktoken==0.14.0"
  ${EXTRA_REQS[@]+"${EXTRA_REQS[@]}"}
)
# Installed with --no-deps (their dependency trees are GPU stacks vLLM never touches here).
NODEPS_REQS=(
  "$XGRAMMAR_REQ"
  "$FLASHINFER_REQ"             # pinned ==; the FLASHINFER backend class imports it
  "$TORCHVISION_REQ"            # pinned ==; (multimodal model classes import transformers'
                                # image processors; e2e_oracle.py declares the two op schemas
                                # its CUDA-built kernel library would register)
  "mistral_common==1.13.1"      # vllm: mistral_common[image]>=1.11.6; requires numpy<2.4 on
                                # Python <= 3.12, which only its audio/image helpers use
)

stamp_text="$(printf '%s\n' "v2" "$TORCH_REQ" "$VLLM_REQ" "${LIGHT_REQS[@]}" "${NODEPS_REQS[@]}")"
stamp_file="$venv/.dryboot-fidelity-stamp"
py="$venv/bin/python"

smoke() {
  if [[ -n "${DRYBOOT_SKIP_SMOKE:-}" ]]; then log "smoke test skipped"; return 0; fi
  if [[ "$VLLM_VERSION" != "0.28.0" ]]; then
    # Other releases: one end-to-end oracle case (vllm_oracle.py is written against 0.28.0).
    # 2-layer Llama, 8 KV heads x 128, bf16: 13,107,200 B / 131,072 B per block = 100 blocks.
    local out
    out="$(printf '{"id": "smoke", "model": "%s", "argv": ["--max-model-len", "1024", "--kv-cache-memory-bytes", "13107200"]}\n' \
      "$repo/tests/fidelity/data/releases/nullblk" | "$py" "$repo/tests/fidelity/e2e_oracle.py" 2>/dev/null)" || true
    if ! grep -q '"num_blocks": 100,' <<<"$out" || ! grep -q "\"vllm_version\": \"$VLLM_VERSION\"" <<<"$out"; then
      log "e2e oracle smoke test failed:"
      printf '%s\n' "${out:-<no output>}" >&2
      return 1
    fi
    log "e2e oracle smoke test ok: vllm $VLLM_VERSION"
    return 0
  fi
  # One oracle process: imports vLLM's planner, the FLASH_ATTN/TRITON_ATTN/FLASHINFER backends
  # and the real Qwen3-Next model class, and checks figures vLLM computes.
  local out
  out="$("$py" "$repo/tests/fidelity/vllm_oracle.py" 2>/dev/null <<'EOF'
{"cases": [
 {"id": "smoke-full", "config": {"max_model_len": 4096},
  "layers": {"a": {"type": "full", "backend": "FLASHINFER", "num_kv_heads": 8, "head_size": 128},
             "b": {"type": "full", "backend": "TRITON_ATTN", "num_kv_heads": 8, "head_size": 128}},
  "available_memory": 1073741824},
 {"id": "smoke-hybrid", "config": {"max_model_len": 4096, "enable_prefix_caching": true},
  "layers": {"m": {"type": "mamba"}, "a": {"type": "full", "total_num_kv_heads": 2, "head_size": 256}},
  "align": {"backend": "FLASH_ATTN", "architecture": "Qwen3NextForCausalLM",
            "hf_config": {"num_key_value_heads": 2, "head_dim": 256, "num_attention_heads": 16,
                          "torch_dtype": "bfloat16", "linear_num_key_heads": 16,
                          "linear_num_value_heads": 32, "linear_key_head_dim": 128,
                          "linear_value_head_dim": 128, "linear_conv_kernel_dim": 4}},
  "available_memory": 1073741824}
]}
EOF
)" || true
  # 1 GiB / 2 layers / (16 tokens * 8 heads * 2 * 128 * 2 B) = 8192 blocks;
  # Qwen3-Next: attention block 544 (vLLM's _align_hybrid_block_size).
  if ! grep -q '"num_blocks": 8192' <<<"$out" || ! grep -q '"block_size": 544' <<<"$out" ||
    grep -q '"error": {' <<<"$out"; then
    log "oracle smoke test failed:"
    printf '%s\n' "${out:-<no output>}" >&2
    return 1
  fi
  log "oracle smoke test ok: vllm $(grep -o '"vllm_version": "[^"]*"' <<<"$out" | cut -d'"' -f4)"
}

if [[ -x "$py" && -f "$stamp_file" && "$(cat "$stamp_file")" == "$stamp_text" ]]; then
  log "reusing $venv"
  if smoke; then
    log "done in $(($(date +%s) - start)) s"
    echo "$py"
    exit 0
  fi
  log "existing venv failed its smoke test: rebuilding"
fi

log "building $venv with $("$python_bin" --version 2>&1)"
rm -rf "$venv"
"$python_bin" -m venv "$venv"
pip=("$py" -m pip --disable-pip-version-check)
pip_quiet() {
  # pip install, failing on pip's failure, minus the notices about vllm's uninstalled deps.
  local out rc=0
  out="$("${pip[@]}" install -q "$@" 2>&1)" || rc=$?
  grep -v "^vllm $VLLM_VERSION requires\|dependency conflicts\|^WARNING: Location 'file:\|^$" <<<"$out" >&2 || true
  return "$rc"
}

log "installing $TORCH_REQ (CPU wheel)"
pip_quiet "$TORCH_REQ"

log "installing $VLLM_REQ --no-deps"
vllm_src=()
if [[ -z "${DRYBOOT_VLLM_WHEEL_DIR:-}" && -f "/work/wheels/vllm-$VLLM_VERSION-cp38-abi3-manylinux_2_28_x86_64.whl" ]]; then
  DRYBOOT_VLLM_WHEEL_DIR=/work/wheels
fi
if [[ -n "${DRYBOOT_VLLM_WHEEL_DIR:-}" ]]; then
  vllm_src=(--find-links "$DRYBOOT_VLLM_WHEEL_DIR")
fi
pip_quiet --no-deps "${vllm_src[@]}" "$VLLM_REQ"

log "installing light import-time dependencies"
# vllm itself was installed without its (GPU/server) dependency set: pip's "vllm requires X,
# which is not installed" notices are expected and filtered.
pip_quiet "$TORCH_REQ" "${LIGHT_REQS[@]}"
pip_quiet --no-deps "${NODEPS_REQS[@]}"
"${pip[@]}" show -q torch vllm "${NODEPS_REQS[@]%%==*}" >/dev/null

smoke
printf '%s\n' "$stamp_text" >"$stamp_file"
log "done in $(($(date +%s) - start)) s"
echo "$py"
