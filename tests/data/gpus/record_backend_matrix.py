"""Record, with vLLM itself, what each GPU of ``gpus.toml`` gets at attention-backend selection.

    # one release, every GPU, both FlashInfer-cubin assumptions (about a minute):
    python3 tests/data/gpus/record_backend_matrix.py /work/venvs/vllm-0.28.0/bin/python \
        > tests/data/gpus/backend-matrix/vllm-0.28.0.json
    # a markdown summary of one recorded release (any python):
    python3 tests/data/gpus/record_backend_matrix.py --summary tests/data/gpus/backend-matrix/vllm-0.28.0.json

Runs inside the given fidelity venv (``scripts/fidelity-env.sh``),
with the e2e oracle's stand-ins (``src/dryboot/boot/engine_start.py`` ``_install``) answering as that
GPU: compute capability, NVML name, NVML total memory and SM count on the platform, and the
same figures from ``torch.cuda.get_device_properties``/``get_device_capability``. Then it asks
vLLM's own functions, under a ``VllmConfig`` whose model config is a small stand-in carrying the
MLA dimensions and head counts the selectors read:

* ``CudaPlatform.get_valid_backends`` for standard attention (KV dtype x head size x sinks /
  mm-prefix / non-causal), dense MLA (KV dtype x MLA dimensions) and sparse MLA (KV dtype x
  heads): the valid backends in priority order, the selected one (the first), the reasons of
  every backend ranked above it, and the selected backend's ``get_preferred_block_size(16)``
  and ``get_supported_kernel_block_sizes()``;
* ``fa_utils.get_flash_attn_version`` per head size;
* ``EngineArgs.get_batch_defaults`` (the batch defaults from device memory and name).

Three FlashInfer arms (``ARMS``): ``cubin`` answers ``has_flashinfer_cubin()`` (hence
``has_nvidia_artifactory()``) True, as on vLLM's images (TRT-LLM attention usable without a
download); ``nvcc-offline`` answers both False with nvcc/ninja on PATH (``has_flashinfer()`` True);
``bare`` also hides nvcc and ninja (``has_flashinfer()`` False). No network request is made.
One process serves every GPU: the stand-in platform's class methods are re-pointed per GPU and
every functools cache of vLLM's modules is cleared (the oracle's own reset).

Output: one JSON document ``{"vllm_version", "rows": [...]}``, one GPU x arm per line; an arm that
answers exactly as that GPU's ``cubin`` arm is stored as ``{"gpu", "arm", "same_as": "cubin"}``.
Nothing in it comes from dryboot.
This script is data tooling (not collected by pytest); it never imports dryboot.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tomllib
import types
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
_REAL_WHICH = shutil.which
ORACLE_DIR = HERE.parents[2] / "src" / "dryboot" / "boot"

STANDARD_KV = ["auto", "fp8", "fp8_e4m3", "fp8_e5m2", "nvfp4", "int8_per_token_head", "fp8_per_token_head"]
STANDARD_HEADS = [64, 80, 96, 128, 192, 256, 512]
MLA_KV = ["auto", "fp8", "fp8_e4m3"]
#: (qk_nope_head_dim, qk_rope_head_dim, v_head_dim): DeepSeek-V3/R1, a 192/256 model, a 64/128 model.
MLA_DIMS = [(128, 64, 128), (192, 64, 256), (64, 64, 128)]
SPARSE_KV = ["auto", "fp8", "fp8_ds_mla"]
#: What the box has for FlashInfer: "cubin" = the flashinfer-cubin package (vLLM's images);
#: "nvcc-offline" = no cubin package, nvcc and ninja on PATH (FlashInfer JIT), NVIDIA's cubin
#: repository unreachable; "bare" = neither cubin nor nvcc (``has_flashinfer()`` is False).
ARMS = ["cubin", "nvcc-offline", "bare"]


def _gpus() -> list[dict[str, Any]]:
    rows = tomllib.loads((HERE / "gpus.toml").read_text(encoding="utf-8"))["gpu"]
    assert isinstance(rows, list)
    return rows


# --------------------------------------------------------------------------- inside the venv


class _StandInModelConfig:
    """The few model-config reads the selectors make (head counts, MLA dims, flags)."""

    def __init__(self, q_heads: int, kv_heads: int, head_size: int, dims: tuple[int, int, int] | None) -> None:
        import torch

        self.dtype = torch.bfloat16
        self._q, self._kv, self._hs = q_heads, kv_heads, head_size
        text = types.SimpleNamespace(attn_logit_softcapping=None, model_type="deepseek_v32", sliding_window=None)
        if dims is not None:
            # A DeepSeek-V3.2-like MLA text config (the attributes the sparse backends read).
            text.qk_nope_head_dim, text.qk_rope_head_dim, text.v_head_dim = dims
            text.kv_lora_rank = 512
            text.index_topk = 2048
            text.index_n_heads = 64
            text.index_head_dim = 128
        self.hf_text_config = text
        self.hf_config = text
        self.is_mm_prefix_lm = False
        self.is_diffusion = False
        self.rswa_window = None
        self.use_mla = dims is not None

    def get_num_attention_heads(self, parallel_config: Any = None) -> int:
        return self._q

    def get_num_kv_heads(self, parallel_config: Any = None) -> int:
        return self._kv

    def get_head_size(self) -> int:
        return self._hs


def _install() -> Any:
    """The e2e oracle's stand-ins (kernels, torch device queries, the platform), once per process."""
    sys.path.insert(0, str(ORACLE_DIR))
    import engine_start as oracle

    oracle._install()
    import vllm.platforms as platforms

    _import_cutlass_mla()
    return type(platforms._current_platform)


def _import_cutlass_mla() -> None:
    """``mla/cutlass_mla.py`` allocates a 128 MiB workspace on "cuda" when imported (every
    release); selection on SM 10.x imports it. Import it once with that allocation on the meta
    device (its size never reaches the KV cache)."""
    import torch

    real_empty = torch.empty

    def empty(*args: Any, **kwargs: Any) -> Any:
        if str(kwargs.get("device", "")) == "cuda":
            kwargs["device"] = "meta"
        return real_empty(*args, **kwargs)

    torch.empty = empty  # type: ignore[assignment]
    try:
        import vllm.v1.attention.backends.mla.cutlass_mla  # noqa: F401
    except ImportError:
        pass
    finally:
        torch.empty = real_empty


def _as_gpu(standin: Any, gpu: dict[str, Any], arm: str) -> None:
    """Make the stand-in platform (one instance every vLLM module holds) answer as ``gpu``."""
    import torch
    import vllm.utils.flashinfer as fi_utils
    from vllm.platforms.interface import DeviceCapability

    sys.path.insert(0, str(ORACLE_DIR))
    import engine_start as oracle

    cap = tuple(gpu["compute_capability"])
    sms = gpu.get("sm_count", 132)
    standin.get_device_capability = classmethod(lambda cls, device_id=0: DeviceCapability(*cap))
    standin.get_device_name = classmethod(lambda cls, device_id=0: gpu["device_name"])
    standin.get_device_total_memory = classmethod(lambda cls, device_id=0: _nvml_total(gpu))
    standin.num_compute_units = classmethod(lambda cls, device_id=0: sms)
    torch.cuda.get_device_capability = lambda device=None: cap  # type: ignore[assignment]
    torch.cuda.get_device_properties = lambda device=None: types.SimpleNamespace(  # type: ignore[assignment]
        name=gpu["device_name"],
        major=cap[0],
        minor=cap[1],
        total_memory=gpu["cuda_total_bytes"],
        multi_processor_count=sms,
    )
    # What the box has for FlashInfer (see ARMS); answered without any network request.
    cubin = arm == "cubin"
    nvcc = arm != "bare"
    real_which = _REAL_WHICH

    def which(cmd: str, *args: Any, **kwargs: Any) -> str | None:
        if not nvcc and os.path.basename(str(cmd)) in ("nvcc", "ninja"):
            return None
        return real_which(cmd, *args, **kwargs)

    fi_utils.shutil.which = which  # type: ignore[attr-defined]
    fi_utils.has_flashinfer_cubin = lambda: cubin  # type: ignore[assignment]
    fi_utils.has_nvidia_artifactory = lambda: cubin  # type: ignore[assignment]
    oracle._reset_per_process_caches()


def _inside(standin: Any, gpu: dict[str, Any], arm: str) -> dict[str, Any]:
    _as_gpu(standin, gpu, arm)
    import torch
    import vllm
    from vllm.config import VllmConfig, set_current_vllm_config
    from vllm.engine.arg_utils import EngineArgs
    from vllm.platforms import current_platform as platform
    from vllm.usage.usage_lib import UsageContext
    from vllm.v1.attention.backends import fa_utils
    from vllm.v1.attention.selector import AttentionSelectorConfig

    fields = AttentionSelectorConfig._fields
    capability = platform.get_device_capability()
    cap = tuple(gpu["compute_capability"])

    def ask(model: _StandInModelConfig, **kw: Any) -> dict[str, Any]:
        cfg = VllmConfig()
        object.__setattr__(cfg, "model_config", model)
        # What vLLM reads from the config rather than from the selector's arguments (FA4's head-256
        # kernel checks the cache dtype and the model's mm-prefix flag) follows the case.
        object.__setattr__(cfg.cache_config, "cache_dtype", kw.get("kv_cache_dtype", "auto"))
        model.is_mm_prefix_lm = bool(kw.get("use_mm_prefix", False))
        args = {f: False for f in fields}
        args.update(block_size=None, attn_type="decoder", dtype=torch.bfloat16)
        args.update({k: v for k, v in kw.items() if k in fields})
        sel = AttentionSelectorConfig(**args)
        with set_current_vllm_config(cfg):
            try:
                valid, invalid = platform.get_valid_backends(
                    device_capability=capability, attn_selector_config=sel, num_heads=model._q
                )
            except Exception as e:  # a backend's check itself raised: recorded, not hidden
                return {"error": f"{type(e).__name__}: {e}"}
            out: dict[str, Any] = {"valid": [c.backend.name for c in valid]}
            if valid:
                top = min(valid, key=lambda c: c.priority)
                out["selected"] = top.backend.name
                out["preferred_block_size"] = top.backend_class.get_preferred_block_size(16)
                out["kernel_block_sizes"] = [
                    f"x{s.base}" if hasattr(s, "base") else s
                    for s in top.backend_class.get_supported_kernel_block_sizes()
                ]
                out["rejected_above"] = {b.name: r for b, (p, r) in invalid.items() if p < top.priority}
            else:
                out["selected"] = None
                out["rejected_above"] = {b.name: r for b, (_, r) in invalid.items()}
            return out

    cases: list[dict[str, Any]] = []
    for kv in STANDARD_KV:
        for hs in STANDARD_HEADS:
            variants: list[dict[str, Any]] = [{}]
            if kv in ("auto", "fp8"):
                variants += [{"has_sink": True}, {"use_non_causal": True}]
                if hs in (128, 256):
                    variants.append({"use_mm_prefix": True})
            for extra in variants:
                model = _StandInModelConfig(32, 8, hs, None)
                ans = ask(model, head_size=hs, kv_cache_dtype=kv, **extra)
                cases.append({"kind": "standard", "kv_cache_dtype": kv, "head_size": hs, **extra, **ans})
    for kv in MLA_KV:
        for dims in MLA_DIMS:
            model = _StandInModelConfig(128, 1, 576, dims)
            ans = ask(model, head_size=576, kv_cache_dtype=kv, use_mla=True)
            cases.append({"kind": "mla", "kv_cache_dtype": kv, "mla_dims": list(dims), **ans})
    for kv in SPARSE_KV:
        for heads in (16, 128):
            model = _StandInModelConfig(heads, 1, 576, (128, 64, 128))
            ans = ask(model, head_size=576, kv_cache_dtype=kv, use_mla=True, use_sparse=True)
            cases.append({"kind": "sparse_mla", "kv_cache_dtype": kv, "num_heads": heads, **ans})

    fa: dict[str, Any] = {}
    with set_current_vllm_config(VllmConfig()):
        for hs in (64, 128, 192, 256, 512):
            fa[str(hs)] = fa_utils.get_flash_attn_version(head_size=hs)
    tokens, seqs = EngineArgs.get_batch_defaults(1)
    defaults = {
        ctx.name: {"max_num_batched_tokens": tokens.get(ctx), "max_num_seqs": seqs.get(ctx)}
        for ctx in (UsageContext.OPENAI_API_SERVER, UsageContext.LLM_CLASS)
    }
    return {
        "gpu": gpu["name"],
        "arm": arm,
        "vllm_version": vllm.__version__,
        "compute_capability": list(cap),
        "device_name": gpu["device_name"],
        "nvml_total_bytes": gpu["nvml_total_bytes"],
        "flash_attn_version_by_head_size": fa,
        "batch_defaults": defaults,
        "cases": cases,
    }


# --------------------------------------------------------------------------- driver


_FLAGS = ("has_sink", "use_mm_prefix", "use_non_causal")


def _pick(cases: list[dict[str, Any]], **want: Any) -> str:
    """The selected backend and preferred block of the first case matching ``want`` (absent flags are False)."""
    for c in cases:
        if all(c.get(k, False if k in _FLAGS else None) == v for k, v in want.items()):
            if c.get("selected") is None:
                return "error" if "error" in c else "refused"
            return f"{c['selected']} {c['preferred_block_size']}"
    return "?"


#: The summary's columns: (header, what the case must match). Standard cases are plain causal
#: attention unless a flag is named.
_COLUMNS: list[tuple[str, dict[str, Any]]] = [
    ("bf16 h128", {"kind": "standard", "kv_cache_dtype": "auto", "head_size": 128}),
    ("fp8 h128", {"kind": "standard", "kv_cache_dtype": "fp8", "head_size": 128}),
    ("fp8 h256", {"kind": "standard", "kv_cache_dtype": "fp8", "head_size": 256}),
    ("fp8 h96", {"kind": "standard", "kv_cache_dtype": "fp8", "head_size": 96}),
    ("fp8 h64+sinks", {"kind": "standard", "kv_cache_dtype": "fp8", "head_size": 64, "has_sink": True}),
    ("nvfp4 h128", {"kind": "standard", "kv_cache_dtype": "nvfp4", "head_size": 128}),
    ("MLA bf16", {"kind": "mla", "kv_cache_dtype": "auto", "mla_dims": [128, 64, 128]}),
    ("MLA fp8", {"kind": "mla", "kv_cache_dtype": "fp8", "mla_dims": [128, 64, 128]}),
    ("DSA bf16 128h", {"kind": "sparse_mla", "kv_cache_dtype": "auto", "num_heads": 128}),
    ("DSA fp8", {"kind": "sparse_mla", "kv_cache_dtype": "fp8", "num_heads": 128}),
]


def summary(doc: dict[str, Any]) -> str:
    """A markdown table of what each GPU gets, one line per GPU and arm (arms equal to "cubin" left out)."""
    head = ["GPU", "arm", "FA by head 64/128/256/512", *(name for name, _ in _COLUMNS), "serve defaults"]
    lines = [
        f"vLLM {doc['vllm_version']}: selected backend and its preferred block (`get_preferred_block_size(16)`).",
        "",
        "| " + " | ".join(head) + " |",
        "|" + "---|" * len(head),
    ]
    for row in doc["rows"]:
        if "same_as" in row:
            continue
        fa = row["flash_attn_version_by_head_size"]
        d = row["batch_defaults"]["OPENAI_API_SERVER"]
        cells = [
            row["gpu"],
            row["arm"],
            "/".join(str(fa.get(h)) for h in ("64", "128", "256", "512")),
            *(_pick(row["cases"], **want) for _, want in _COLUMNS),
            f"{d['max_num_batched_tokens']} / {d['max_num_seqs']}",
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def _nvml_total(gpu: dict) -> int:
    """NVML's total; on GB10 (quality "unsupported") NVML reports none and pynvml raises."""
    if gpu["nvml_total_quality"] == "unsupported":
        raise RuntimeError("NVML: Not Supported (unified memory)")
    return int(gpu["nvml_total_bytes"])


def main() -> int:
    if len(sys.argv) == 3 and sys.argv[1] == "--summary":
        sys.stdout.write(summary(json.loads(Path(sys.argv[2]).read_text(encoding="utf-8"))))
        return 0
    if len(sys.argv) >= 2 and sys.argv[1] == "--inside":
        standin = _install()
        wanted = sys.argv[2:] or [g["name"] for g in _gpus()]
        for gpu in _gpus():
            if gpu["name"] in wanted:
                for arm in ARMS:
                    print(json.dumps(_inside(standin, gpu, arm)), flush=True)
        return 0
    python = sys.argv[1]
    env = {**os.environ, "VLLM_CONFIGURE_LOGGING": "0", "VLLM_NO_USAGE_STATS": "1", "HF_HUB_OFFLINE": "1"}
    env.pop("VLLM_HAS_FLASHINFER_CUBIN", None)
    done = subprocess.run(
        [python, __file__, "--inside", *sys.argv[2:]], capture_output=True, text=True, env=env, check=False
    )
    rows = [json.loads(ln) for ln in done.stdout.splitlines() if ln.startswith("{")]
    if done.returncode != 0 or not rows:
        print(done.stderr[-3000:], file=sys.stderr)
        return 1
    versions = {row.pop("vllm_version") for row in rows}
    # An arm that answers exactly as the same GPU's "cubin" arm is stored as a reference to it.
    first = {row["gpu"]: row for row in rows if row["arm"] == ARMS[0]}
    for i, row in enumerate(rows):
        base = first.get(row["gpu"])
        if base is not None and row is not base and {**row, "arm": base["arm"]} == base:
            rows[i] = {"gpu": row["gpu"], "arm": row["arm"], "same_as": base["arm"]}
    # One GPU x arm per line (compact), so that a diff between releases reads per row.
    sys.stdout.write('{"vllm_version": ' + json.dumps(versions.pop()) + ', "rows": [\n')
    sys.stdout.write(",\n".join(json.dumps(row, sort_keys=True, separators=(",", ":")) for row in rows))
    sys.stdout.write("\n]}\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
