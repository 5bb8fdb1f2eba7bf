"""vLLM 0.28.0 KV-cache planner oracle (planner level; see ``src/dryboot/boot/engine_start.py`` for the engine start).

Scope: this oracle feeds vLLM's planner functions with layer specs *the caller describes*, so it
cannot see a mistake in reading a config.json or a flag. End-to-end fidelity (same config.json and
flags as a user, vLLM's own parser, config classes, model classes and planner) is
``src/dryboot/boot/engine_start.py`` / ``test_e2e.py``. Keep this one only for what the end-to-end oracle cannot
reach: downstream policies (``--grouping``/``--unification``, promoted blocks, custom KV cache
dtypes, hand-built specs with explicit pages or blocks, per-worker memory lists) whose inputs are
not a stock vLLM boot.

Run with the fidelity venv's python (``scripts/fidelity-env.sh`` prints it). dryboot never
imports this file, and this file never imports dryboot: every figure it reports is computed by
vLLM's own functions. It reads ONE JSON document on stdin and writes ONE on stdout:

    stdin:  {"cases": [case, ...]}
    stdout: {"results": [result, ...], "meta": {"vllm_version", "import_seconds",
                                                "total_seconds"}}

vLLM's own console logging is disabled (VLLM_CONFIGURE_LOGGING=0) and anything vLLM prints goes
to stderr, so stdout carries only the JSON. One process handles many cases; an exception in a
case is caught and reported in that case's ``error``.

Case
----
{
  "id": "any string",
  "config": {                       # engine flags; every key optional except max_model_len
    "max_model_len": 262144,
    "original_max_model_len": null,   # -1 triggers vLLM's auto-fit of max_model_len
    "max_num_batched_tokens": 2048,   # default: SchedulerConfig.DEFAULT_MAX_NUM_BATCHED_TOKENS
    "max_num_seqs": 128,              # default: SchedulerConfig.DEFAULT_MAX_NUM_SEQS
    "async_scheduling": true,         # -> VllmConfig.max_concurrent_batches (2 at PP=1)
    "use_v2_model_runner": false,     # V2 runner: max_concurrent_batches = PP + 1 when async
    "enable_prefix_caching": true,
    "enable_chunked_prefill": true,
    "mamba_cache_mode": "none",       # CacheConfig default; when the case has a mamba layer
                                      # vLLM's MambaModelConfig.verify_and_update_config
                                      # turns it into "align" with prefix caching
    "block_size": 16,                 # --block-size; default CacheConfig.DEFAULT_BLOCK_SIZE
    "user_specified_block_size": bool,# default: whether "block_size" was given
    "mamba_block_size": null,         # --mamba-block-size (user); else set by vLLM
    "kv_cache_dtype": "auto",         # --kv-cache-dtype (used by "align")
    "mamba_cache_dtype": "auto", "mamba_ssm_cache_dtype": "auto",
    "num_gpu_blocks_override": null,
    "kv_cache_memory_bytes": null,    # --kv-cache-memory: used as available memory when
                                      # the case gives no "available_memory" (as the worker's
                                      # determine_available_memory returns it verbatim)
    "prefix_match_unit": null,
    "use_replayssm": false, "replayssm_buffer_len": 16,
    "disable_hybrid_kv_cache_manager": false,
    "tensor_parallel_size": 1, "pipeline_parallel_size": 1,
    "decode_context_parallel_size": 1, "prefill_context_parallel_size": 1,
    "num_speculative_tokens": 0,      # > 0 builds a speculative_config stand-in
    "speculative_method": "mtp", "multi_module_mtp": false
  },
  "layers": {                       # ordered: layer name -> spec description
    "model.layers.3.self_attn.attn": {
      "type": "full" | "sliding" | "mla" | "mamba",
      # attention ("full", "sliding", "mla"):
      "backend": "FLASH_ATTN",        # AttentionBackendEnum name (TRITON_ATTN, FLASHINFER,
                                      # FLEX_ATTENTION, FLASHMLA, TRITON_MLA, CUTLASS_MLA ...)
      "num_kv_heads": 2,              # per rank, as the layer holds them; or give
      "total_num_kv_heads": 16,       #   the HF total and vLLM divides by TP
                                      #   (ModelConfig.get_num_kv_heads; 1 for MLA)
      "head_size": 256, "head_size_v": 256,  # head_size_v optional (= head_size)
      "dtype": "bfloat16",            # model dtype (the "auto" KV dtype)
      "kv_cache_dtype": "auto",       # fp8, fp8_e4m3, fp8_e5m2, int8_per_token_head,
                                      # fp8_per_token_head, int4_per_token_head, nvfp4 ...
      "block_size": 16,               # omitted: vLLM's Attention.get_kv_cache_spec rule
                                      # (full/mla: cache_config.block_size after "align";
                                      # sliding: _largest_kernel_block_within)
      "sliding_window": 1024,         # "sliding" only
      "page_size_padded": null,
      "indexes_kv_by_block_stride": null,  # null: ask the backend (as the model runner does)
      "customize_spec": true,         # pass through backend.customize_spec (as the runner)
      # mamba:
      "shapes": [[3, 8192], [32, 128, 128]],  # omitted: from the "align" model class
      "dtypes": ["bfloat16", "bfloat16"],     # omitted: from the "align" model class
      "block_size": 544,              # omitted: cache_config.mamba_block_size
      "page_size_padded": 1114112,    # omitted: cache_config.mamba_page_size_padded
      "mamba_cache_mode": "align",    # omitted: cache_config.mamba_cache_mode
      "num_speculative_blocks": 0,    # omitted: config num_speculative_tokens
      "mamba_type": "GDN_ATTN"        # MambaAttentionBackendEnum name, default MAMBA2
    }, ...
  },
  "workers": [["layer", ...], ...],   # optional (PP): the layers of each worker; default one
  "available_memory": 42949672960,    # bytes per worker (int, or a list per worker)
  "align": {                          # optional: run Platform.update_block_size_for_backend
    "backend": "FLASH_ATTN",          # (preferred block size + _align_hybrid_block_size)
    "architecture": "Qwen3NextForCausalLM",
    "hf_config": {...},               # HF config.json; with a real architecture vLLM's own
                                      # model class computes the mamba state shapes/dtypes
                                      # (Qwen3NextForCausalLM, NemotronHForCausalLM import on
                                      # CPU; Qwen3.5 classes need torchvision: use
                                      # "mamba_state"). The architecture's config hook
                                      # (MODELS_CONFIG_MAP, e.g. Qwen3.5's mamba_ssm_dtype)
                                      # runs in every mode.
    "mamba_state": {                  # or: a stand-in model class that calls vLLM's own
      "calculator": "gated_delta_net",#   MambaStateShapeCalculator.<calculator>_state_shape
      "shape_args": {"num_k_heads": 16, "num_v_heads": 48, "head_k_dim": 128,
                     "head_v_dim": 128, "conv_kernel_size": 4},  # tp/num_spec from config
      "dtype_calculator": "gated_delta_net_state_dtype"  # default <calculator>_state_dtype
    },                                #   (model dtype + mamba_*cache_dtype from config)
    "mamba_shapes": [[...], ...],     # or: a stand-in model class returning these verbatim
    "mamba_dtypes": ["bfloat16", ...],
    "total_num_kv_heads": 2,          # HF num_key_value_heads (default from hf_config)
    "head_size": 256,                 # default hf_config head_dim
    "dtype": "bfloat16",              # model dtype (default hf_config torch_dtype/dtype)
    "use_mla": false,
    "supports_mamba_prefix_caching": true  # default: the model class's flag
  }
}

Result
------
{
  "id": ...,
  "specs": {name: {"type", "block_size", "page_size_bytes", "indexes_kv_by_block_stride",
                   "state_content_bytes", "kv_quant_mode"}},   # per-layer specs as built
  "unified": {name: {"block_size", "page_size_bytes"}} | null,  # unify_kv_cache_spec_page_size
  "unify_error": null | {"type", "message"},
  "groups": [{"layer_names", "block_size", "page_size_bytes", "spec_type", "kind",
              "max_memory_usage_bytes", "blocks_per_request",
              "supports_block_size": {backend: bool}}],  # scheduler KVCacheConfig
  "num_blocks": int, "max_concurrency": float, "kv_cache_size_tokens": int,
  "max_model_len": int,                  # after a possible auto-fit
  "scheduler_block_size": int, "hash_block_size": int,  # resolve_kv_cache_block_sizes
  "block_size_error": null | {...},
  "check_enough_kv_cache_memory": null | {"type", "message"},  # per-layer legacy check
  "log": ["message", ...],               # vLLM log records of this case, formatted
  "log_records": [{"level", "logger", "message"}],
  "error": null | {"type": "ValueError", "message": "...", "stage": "..."},
  "align": {"block_size", "mamba_block_size", "mamba_page_size",
            "mamba_page_size_padded", "mamba_cache_mode", "mamba_shapes", "mamba_dtypes",
            "attn_page_size_1_token", "mamba_ssm_cache_dtype", "log": [...]}  # if asked
  "seconds": float
}
Percent-style numbers (e.g. the mamba padding) are only in the log lines, exactly as vLLM
formats them.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import time
import traceback
from dataclasses import replace
from types import SimpleNamespace
from typing import Any

os.environ.setdefault("VLLM_CONFIGURE_LOGGING", "0")

V: SimpleNamespace  # vLLM handles, filled by _load_vllm()


def _load_vllm() -> SimpleNamespace:
    import torch

    # the torchvision op declarations of the engine-start oracle (dryboot boot's child)
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "src", "dryboot", "boot"))
    from engine_start import _declare_torchvision_ops

    torchvision_lib = _declare_torchvision_ops()
    import vllm
    import vllm.logger as vllm_logger
    from vllm.config import VllmConfig
    from vllm.config.cache import CacheConfig
    from vllm.config.model import ModelConfig
    from vllm.config.scheduler import SchedulerConfig
    from vllm.config.vllm import set_current_vllm_config
    from vllm.model_executor.layers.attention import attention as attention_mod
    from vllm.platforms.interface import Platform
    from vllm.utils.torch_utils import STR_DTYPE_TO_TORCH_DTYPE, kv_cache_dtype_str_to_dtype
    from vllm.v1.attention.backends import utils as backend_utils
    from vllm.v1.attention.backends.registry import (
        AttentionBackendEnum,
        MambaAttentionBackendEnum,
    )
    from vllm.v1.core import kv_cache_utils as kcu
    from vllm.v1.kv_cache_interface import (
        FullAttentionSpec,
        MambaSpec,
        MLAAttentionSpec,
        SlidingWindowSpec,
        get_kv_cache_spec_kind,
        get_kv_quant_mode,
    )

    return SimpleNamespace(
        torchvision_lib=torchvision_lib,
        torch=torch,
        vllm=vllm,
        vllm_logger=vllm_logger,
        VllmConfig=VllmConfig,
        CacheConfig=CacheConfig,
        ModelConfig=ModelConfig,
        SchedulerConfig=SchedulerConfig,
        set_current_vllm_config=set_current_vllm_config,
        attention_mod=attention_mod,
        Platform=Platform,
        STR_DTYPE_TO_TORCH_DTYPE=STR_DTYPE_TO_TORCH_DTYPE,
        kv_cache_dtype_str_to_dtype=kv_cache_dtype_str_to_dtype,
        backend_utils=backend_utils,
        AttentionBackendEnum=AttentionBackendEnum,
        MambaAttentionBackendEnum=MambaAttentionBackendEnum,
        kcu=kcu,
        FullAttentionSpec=FullAttentionSpec,
        MambaSpec=MambaSpec,
        MLAAttentionSpec=MLAAttentionSpec,
        SlidingWindowSpec=SlidingWindowSpec,
        get_kv_cache_spec_kind=get_kv_cache_spec_kind,
        get_kv_quant_mode=get_kv_quant_mode,
    )


# --------------------------------------------------------------------------- log capture


class _Capture(logging.Handler):
    def __init__(self) -> None:
        super().__init__(level=logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)

    def take(self) -> list[logging.LogRecord]:
        out, self.records = self.records, []
        return out


def _fmt_records(records: list[logging.LogRecord]) -> tuple[list[str], list[dict[str, str]]]:
    msgs = [r.getMessage() for r in records]
    recs = [{"level": r.levelname, "logger": r.name, "message": m} for r, m in zip(records, msgs, strict=True)]
    return msgs, recs


def _reset_once_caches() -> None:
    # vLLM's *_once log helpers are lru_cached per process: clear them so each case logs
    # exactly what a fresh engine start would.
    for name in ("_print_debug_once", "_print_info_once", "_print_warning_once"):
        fn = getattr(V.vllm_logger, name, None)
        if fn is not None and hasattr(fn, "cache_clear"):
            fn.cache_clear()
    V.backend_utils.get_kv_cache_layout.cache_clear()


# --------------------------------------------------------------------------- stand-ins


def _ns(d: dict[str, Any]) -> SimpleNamespace:
    return SimpleNamespace(**d)


def _make_stand_ins() -> tuple[type, type]:
    class StandInModelConfig(SimpleNamespace):
        """Carries the ModelConfig fields the planner reads; borrows vLLM's methods."""

        get_head_size = V.ModelConfig.get_head_size
        get_total_num_kv_heads = V.ModelConfig.get_total_num_kv_heads
        get_num_kv_heads = V.ModelConfig.get_num_kv_heads
        get_num_attention_heads = V.ModelConfig.get_num_attention_heads
        get_mamba_chunk_size = V.ModelConfig.get_mamba_chunk_size

    class StandInVllmConfig(SimpleNamespace):
        """Only the fields vLLM's planner reads; the derived properties are vLLM's own."""

        max_concurrent_batches = V.VllmConfig.max_concurrent_batches
        max_in_flight_tokens = V.VllmConfig.max_in_flight_tokens
        num_speculative_tokens = V.VllmConfig.num_speculative_tokens

    return StandInModelConfig, StandInVllmConfig


def _dtype(name: str) -> Any:
    if name in V.STR_DTYPE_TO_TORCH_DTYPE:
        return V.STR_DTYPE_TO_TORCH_DTYPE[name]
    return getattr(V.torch, name)


def _build_vllm_config(case: dict[str, Any]) -> Any:
    c = dict(case.get("config") or {})
    model_cls_cfg, vllm_cls_cfg = _make_stand_ins()
    align = case.get("align") or {}
    hf = dict(align.get("hf_config") or {})
    hf_text = hf.get("text_config") if isinstance(hf.get("text_config"), dict) else None
    hf_ns = _ns(hf)
    if hf_text is not None:
        hf_ns.text_config = _ns(dict(hf_text))
    hf_text_ns = hf_ns.text_config if hf_text is not None else hf_ns
    text = hf_text if hf_text is not None else hf

    max_model_len = int(c["max_model_len"])
    model_dtype = align.get("dtype") or text.get("torch_dtype") or text.get("dtype")
    model_dtype = model_dtype or c.get("dtype") or "bfloat16"
    total_kv = align.get("total_num_kv_heads", text.get("num_key_value_heads", 1))
    head_size = align.get("head_size", text.get("head_dim", 0))
    total_heads = align.get("total_num_attention_heads", text.get("num_attention_heads", total_kv))
    architecture = align.get("architecture") or (hf.get("architectures") or ["StandInModel"])[0]

    model_config = model_cls_cfg(
        max_model_len=max_model_len,
        original_max_model_len=c.get("original_max_model_len", max_model_len),
        dtype=_dtype(model_dtype),
        use_mla=bool(align.get("use_mla", False)),
        is_hybrid=True,
        architecture=architecture,
        architectures=[architecture],
        model_impl="auto",
        convert_type="none",
        runner_type="generate",
        hf_config=hf_ns,
        hf_text_config=hf_text_ns,
        model_arch_config=_ns(
            {
                "head_size": head_size,
                "total_num_kv_heads": total_kv,
                "total_num_attention_heads": total_heads,
            }
        ),
        supports_mamba_prefix_caching=bool(align.get("supports_mamba_prefix_caching", True)),
        is_diffusion=False,
        multimodal_config=None,
    )
    block_size_given = "block_size" in c
    cache_config = _ns(
        {
            "block_size": int(c.get("block_size", V.CacheConfig.DEFAULT_BLOCK_SIZE)),
            "user_specified_block_size": bool(c.get("user_specified_block_size", block_size_given)),
            "enable_prefix_caching": bool(c.get("enable_prefix_caching", True)),
            "mamba_cache_mode": c.get("mamba_cache_mode", "none"),
            "mamba_block_size": c.get("mamba_block_size"),
            "user_specified_mamba_block_size": c.get("mamba_block_size") is not None,
            "mamba_page_size_padded": c.get("mamba_page_size_padded"),
            "cache_dtype": c.get("kv_cache_dtype", "auto"),
            "mamba_cache_dtype": c.get("mamba_cache_dtype", "auto"),
            "mamba_ssm_cache_dtype": c.get("mamba_ssm_cache_dtype", "auto"),
            "num_gpu_blocks_override": c.get("num_gpu_blocks_override"),
            "kv_cache_memory_bytes": c.get("kv_cache_memory_bytes"),
            "prefix_match_unit": c.get("prefix_match_unit"),
            "kv_cache_dtype_skip_layers": list(c.get("kv_cache_dtype_skip_layers") or []),
            "skip_page_size_padded": c.get("skip_page_size_padded"),
            "use_replayssm": bool(c.get("use_replayssm", False)),
            "replayssm_buffer_len": int(c.get("replayssm_buffer_len", 16)),
            "num_gpu_blocks": None,
            "kv_cache_size_tokens": None,
            "kv_cache_max_concurrency": None,
        }
    )
    scheduler_config = _ns(
        {
            "max_num_batched_tokens": int(
                c.get("max_num_batched_tokens", V.SchedulerConfig.DEFAULT_MAX_NUM_BATCHED_TOKENS)
            ),
            "max_num_seqs": int(c.get("max_num_seqs", V.SchedulerConfig.DEFAULT_MAX_NUM_SEQS)),
            "async_scheduling": bool(c.get("async_scheduling", True)),
            "enable_chunked_prefill": bool(c.get("enable_chunked_prefill", True)),
            "disable_chunked_mm_input": False,
            "disable_hybrid_kv_cache_manager": bool(c.get("disable_hybrid_kv_cache_manager", False)),
            "max_num_encoder_input_tokens": int(
                c.get("max_num_encoder_input_tokens", c.get("max_num_batched_tokens", 2048))
            ),
        }
    )
    parallel_config = _ns(
        {
            "tensor_parallel_size": int(c.get("tensor_parallel_size", 1)),
            "pipeline_parallel_size": int(c.get("pipeline_parallel_size", 1)),
            "decode_context_parallel_size": int(c.get("decode_context_parallel_size", 1)),
            "prefill_context_parallel_size": int(c.get("prefill_context_parallel_size", 1)),
            "dcp_kv_cache_interleave_size": 1,
            "cp_kv_cache_interleave_size": 1,
        }
    )
    k = int(c.get("num_speculative_tokens", 0))
    speculative_config = None
    if k > 0:
        multi = bool(c.get("multi_module_mtp", False))
        method = c.get("speculative_method", "mtp")
        speculative_config = _ns(
            {
                "num_speculative_tokens": k,
                "method": method,
                "use_multi_module_mtp": lambda: multi,
                "use_eagle": lambda: method in ("eagle", "eagle3", "mtp"),
            }
        )
    return vllm_cls_cfg(
        model_config=model_config,
        cache_config=cache_config,
        scheduler_config=scheduler_config,
        parallel_config=parallel_config,
        speculative_config=speculative_config,
        kv_transfer_config=None,
        diffusion_config=None,
        use_v2_model_runner=bool(c.get("use_v2_model_runner", False)),
        compilation_config=_ns({"static_forward_context": {}}),
    )


# --------------------------------------------------------------------------- align


def _backend(name: str) -> Any:
    return V.AttentionBackendEnum[name].get_class()


def _calculator_model_cls(state: dict[str, Any]) -> Any:
    """A stand-in model class whose state shapes/dtypes come from vLLM's own
    MambaStateShapeCalculator / MambaStateDtypeCalculator, fed with HF-style numbers (for
    architectures whose real class cannot be imported on this CPU venv)."""
    import inspect

    from vllm.model_executor.layers.mamba.mamba_utils import (
        MambaStateDtypeCalculator,
        MambaStateShapeCalculator,
    )

    kind = state["calculator"]  # gated_delta_net, mamba2, mamba1, kda, short_conv, ...
    shape_fn = getattr(MambaStateShapeCalculator, f"{kind}_state_shape")
    dtype_fn = getattr(MambaStateDtypeCalculator, state.get("dtype_calculator", f"{kind}_state_dtype"))
    shape_args = dict(state.get("shape_args") or {})

    class CalculatorMambaModel:
        supports_mamba_prefix_caching = True

        @classmethod
        def get_mamba_state_shape_from_config(cls, vllm_config: Any) -> Any:
            params = inspect.signature(shape_fn).parameters
            kwargs = dict(shape_args)
            for tp_name in ("tp_world_size", "tp_size"):
                if tp_name in params and tp_name not in kwargs:
                    kwargs[tp_name] = vllm_config.parallel_config.tensor_parallel_size
            if "num_spec" in params and "num_spec" not in kwargs:
                kwargs["num_spec"] = vllm_config.num_speculative_tokens
            return shape_fn(**kwargs)

        @classmethod
        def get_mamba_state_dtype_from_config(cls, vllm_config: Any) -> Any:
            params = inspect.signature(dtype_fn).parameters
            cc = vllm_config.cache_config
            available = {
                "model_dtype": vllm_config.model_config.dtype,
                "mamba_cache_dtype": cc.mamba_cache_dtype,
                "mamba_ssm_cache_dtype": cc.mamba_ssm_cache_dtype,
            }
            return dtype_fn(**{k: v for k, v in available.items() if k in params})

    return CalculatorMambaModel


def _resolve_model_cls(cfg: Any, align: dict[str, Any]) -> Any:
    if "mamba_state" in align:
        return _calculator_model_cls(align["mamba_state"])
    if "mamba_shapes" in align:
        shapes = tuple(tuple(int(x) for x in s) for s in align["mamba_shapes"])
        dtypes = tuple(_dtype(d) for d in align["mamba_dtypes"])

        class StandInMambaModel:
            supports_mamba_prefix_caching = True

            @classmethod
            def get_mamba_state_shape_from_config(cls, vllm_config: Any) -> Any:
                return shapes

            @classmethod
            def get_mamba_state_dtype_from_config(cls, vllm_config: Any) -> Any:
                return dtypes

        return StandInMambaModel
    from vllm.model_executor.models import ModelRegistry

    model_cls, _ = ModelRegistry.resolve_model_cls(cfg.model_config.architecture, model_config=cfg.model_config)
    return model_cls


def _run_align(cfg: Any, align: dict[str, Any], capture: _Capture) -> dict[str, Any]:
    from vllm.model_executor.models import config as models_config

    backend_cls = _backend(align.get("backend", "FLASH_ATTN"))
    model_cls = _resolve_model_cls(cfg, align)
    if "supports_mamba_prefix_caching" not in align:
        cfg.model_config.supports_mamba_prefix_caching = bool(
            getattr(model_cls, "supports_mamba_prefix_caching", False)
        )

    # Config hooks that run while VllmConfig is built (per-architecture, then hybrid).
    arch_hook = models_config.MODELS_CONFIG_MAP.get(cfg.model_config.architecture)
    if arch_hook is not None:
        arch_hook.verify_and_update_config(cfg)
    models_config.HybridAttentionMambaModelConfig.verify_and_update_config(cfg)

    class StandInPlatform(V.Platform):
        """The base (CUDA-like) platform; the only override names the model's backend,
        which the real platform finds by walking the constructed model layers."""

        @classmethod
        def _find_non_ssm_backend(cls, vllm_config: Any) -> Any:
            return backend_cls

    import vllm.model_executor.models as models_pkg

    registry = models_pkg.ModelRegistry
    original = registry.resolve_model_cls
    registry.resolve_model_cls = lambda *a, **kw: (model_cls, cfg.model_config.architecture)
    try:
        StandInPlatform.update_block_size_for_backend(cfg)
    finally:
        registry.resolve_model_cls = original

    shapes = model_cls.get_mamba_state_shape_from_config(cfg)
    dtypes = model_cls.get_mamba_state_dtype_from_config(cfg)
    mamba_page = V.MambaSpec(shapes=shapes, dtypes=dtypes, block_size=-1).page_size_bytes
    cc = cfg.cache_config
    attn_1tok = None
    if not cfg.model_config.use_mla:
        spec = V.FullAttentionSpec(
            block_size=1,
            num_kv_heads=cfg.model_config.get_num_kv_heads(cfg.parallel_config),
            head_size=cfg.model_config.get_head_size(),
            dtype=V.kv_cache_dtype_str_to_dtype(cc.cache_dtype, cfg.model_config),
            kv_quant_mode=V.get_kv_quant_mode(cc.cache_dtype),
        )
        attn_1tok = backend_cls.customize_spec(spec).page_size_bytes
    msgs, _ = _fmt_records(capture.take())
    return {
        "block_size": cc.block_size,
        "mamba_block_size": cc.mamba_block_size,
        "mamba_page_size": mamba_page,
        "mamba_page_size_padded": cc.mamba_page_size_padded,
        "mamba_cache_mode": cc.mamba_cache_mode,
        "mamba_ssm_cache_dtype": cc.mamba_ssm_cache_dtype,
        "mamba_shapes": [list(s) for s in shapes],
        "mamba_dtypes": [str(d).replace("torch.", "") for d in dtypes],
        "attn_page_size_1_token": attn_1tok,
        "log": msgs,
    }


# --------------------------------------------------------------------------- specs


def _attention_spec(cfg: Any, name: str, d: dict[str, Any]) -> Any:
    kind = d["type"]
    backend_cls = _backend(d.get("backend", "FLASH_ATTN"))
    kv_cache_dtype = d.get("kv_cache_dtype", "auto")
    model_cfg = SimpleNamespace(dtype=_dtype(d.get("dtype", "bfloat16")))
    torch_dtype = V.kv_cache_dtype_str_to_dtype(kv_cache_dtype, model_cfg)
    quant_mode = V.get_kv_quant_mode(kv_cache_dtype)
    if "num_kv_heads" in d:
        num_kv_heads = int(d["num_kv_heads"])
    else:
        per_layer = cfg.model_config.__class__(
            use_mla=kind == "mla",
            model_arch_config=SimpleNamespace(total_num_kv_heads=int(d["total_num_kv_heads"])),
        )
        num_kv_heads = per_layer.get_num_kv_heads(cfg.parallel_config)
    common: dict[str, Any] = {
        "num_kv_heads": num_kv_heads,
        "head_size": int(d["head_size"]),
        "dtype": torch_dtype,
        "kv_quant_mode": quant_mode,
    }
    if d.get("head_size_v") is not None:
        common["head_size_v"] = int(d["head_size_v"])
    block_size = d.get("block_size")
    if kind == "sliding":
        shared_page = cfg.cache_config.skip_page_size_padded
        if block_size is None:
            # Attention.get_kv_cache_spec: the backend's own per-token page, then
            # _largest_kernel_block_within (smallest kernel block unless a shared page).
            sw_per_token = backend_cls.customize_spec(
                V.SlidingWindowSpec(block_size=1, sliding_window=int(d["sliding_window"]), **common)
            ).real_page_size_bytes
            block_size = V.attention_mod._largest_kernel_block_within(
                backend_cls, sw_per_token, shared_page, cfg.cache_config.block_size
            )
        spec = V.SlidingWindowSpec(
            block_size=int(block_size),
            sliding_window=int(d["sliding_window"]),
            page_size_padded=d.get("page_size_padded", shared_page),
            **common,
        )
    elif kind == "full":
        spec = V.FullAttentionSpec(
            block_size=int(block_size if block_size is not None else cfg.cache_config.block_size),
            page_size_padded=d.get("page_size_padded"),
            **common,
        )
    elif kind == "mla":
        common.pop("head_size_v", None)
        spec = V.MLAAttentionSpec(
            block_size=int(block_size if block_size is not None else cfg.cache_config.block_size),
            page_size_padded=d.get("page_size_padded"),
            cache_dtype_str=kv_cache_dtype,
            **common,
        )
    else:
        raise ValueError(f"layer {name}: unknown attention type {kind!r}")
    # As the model runner does (gpu_model_runner.get_kv_cache_spec).
    indexes = d.get("indexes_kv_by_block_stride")
    if indexes is None:
        with V.set_current_vllm_config(cfg):
            indexes = backend_cls.indexes_kv_by_block_stride()
    spec = replace(spec, indexes_kv_by_block_stride=bool(indexes))
    if d.get("customize_spec", True):
        spec = backend_cls.customize_spec(spec)
    return spec


def _mamba_spec(cfg: Any, d: dict[str, Any], align_model: dict[str, Any] | None) -> Any:
    cc = cfg.cache_config
    if "shapes" in d:
        shapes = tuple(tuple(int(x) for x in s) for s in d["shapes"])
        dtypes = tuple(_dtype(x) for x in d["dtypes"])
    elif align_model is not None:
        shapes = tuple(tuple(s) for s in align_model["mamba_shapes"])
        dtypes = tuple(_dtype(x) for x in align_model["mamba_dtypes"])
    else:
        raise ValueError("mamba layer needs 'shapes'/'dtypes' or an 'align' request")
    k = cfg.speculative_config.num_speculative_tokens if cfg.speculative_config else 0
    block_size = d.get("block_size", cc.mamba_block_size)
    if block_size is None:
        raise ValueError("mamba layer needs 'block_size' (or config/align to set it)")
    return V.MambaSpec(
        shapes=shapes,
        dtypes=dtypes,
        block_size=int(block_size),
        page_size_padded=d.get("page_size_padded", cc.mamba_page_size_padded),
        mamba_type=V.MambaAttentionBackendEnum[d.get("mamba_type", "MAMBA2")],
        mamba_cache_mode=d.get("mamba_cache_mode", cc.mamba_cache_mode),
        num_speculative_blocks=int(d.get("num_speculative_blocks", k)),
    )


def _spec_summary(spec: Any) -> dict[str, Any]:
    out = {
        "type": type(spec).__name__,
        "block_size": spec.block_size,
        "page_size_bytes": spec.page_size_bytes,
    }
    for f in ("indexes_kv_by_block_stride", "state_content_bytes", "page_size_padded"):
        if hasattr(spec, f):
            out[f] = getattr(spec, f)
    if hasattr(spec, "kv_quant_mode"):
        out["kv_quant_mode"] = spec.kv_quant_mode.name
    return out


def _err(e: BaseException, stage: str) -> dict[str, Any]:
    tb = traceback.format_exception(type(e), e, e.__traceback__)
    return {
        "type": type(e).__name__,
        "message": str(e),
        "stage": stage,
        "traceback": "".join(tb[-4:]),
    }


# --------------------------------------------------------------------------- one case


def run_case(case: dict[str, Any], capture: _Capture) -> dict[str, Any]:
    t0 = time.perf_counter()
    _reset_once_caches()
    capture.take()
    res: dict[str, Any] = {
        "id": case.get("id"),
        "specs": None,
        "unified": None,
        "unify_error": None,
        "groups": None,
        "num_blocks": None,
        "max_concurrency": None,
        "kv_cache_size_tokens": None,
        "max_model_len": None,
        "scheduler_block_size": None,
        "hash_block_size": None,
        "block_size_error": None,
        "check_enough_kv_cache_memory": None,
        "log": [],
        "log_records": [],
        "error": None,
    }
    stage = "config"
    try:
        cfg = _build_vllm_config(case)
        layers: dict[str, dict[str, Any]] = case.get("layers") or {}
        has_mamba = any(d.get("type") == "mamba" for d in layers.values())
        align_out = None
        if case.get("align") is not None:
            stage = "align"
            align_out = _run_align(cfg, case["align"], capture)
            res["align"] = align_out
        elif has_mamba:
            # vLLM runs this hook for every hybrid / mamba model while building VllmConfig.
            from vllm.model_executor.models import config as models_config

            models_config.HybridAttentionMambaModelConfig.verify_and_update_config(cfg)

        stage = "specs"
        specs: dict[str, Any] = {}
        for name, d in layers.items():
            if d["type"] == "mamba":
                specs[name] = _mamba_spec(cfg, d, align_out)
            else:
                specs[name] = _attention_spec(cfg, name, d)
        res["specs"] = {n: _spec_summary(s) for n, s in specs.items()}

        stage = "unify"
        try:
            unified = V.kcu.unify_kv_cache_spec_page_size(dict(specs))
            res["unified"] = {
                n: {"block_size": s.block_size, "page_size_bytes": s.page_size_bytes} for n, s in unified.items()
            }
        except Exception as e:
            res["unify_error"] = _err(e, "unify")

        workers = case.get("workers") or [list(layers)]
        specs_per_worker = [{n: specs[n] for n in w} for w in workers]
        avail = case.get("available_memory")
        if avail is None:
            avail = cfg.cache_config.kv_cache_memory_bytes
        if avail is None:
            raise ValueError("case needs 'available_memory' or config.kv_cache_memory_bytes")
        avail_list = [int(a) for a in avail] if isinstance(avail, list) else [int(avail)] * len(workers)

        stage = "check_enough_kv_cache_memory"
        try:
            V.kcu.check_enough_kv_cache_memory(cfg, dict(specs), avail_list[0])
        except Exception as e:
            res["check_enough_kv_cache_memory"] = _err(e, stage)
        _reset_once_caches()

        # EngineCore._initialize_kv_caches, from the collected specs on.
        stage = "get_kv_cache_configs"
        configs = V.kcu.get_kv_cache_configs(cfg, specs_per_worker, avail_list)
        stage = "generate_scheduler_kv_cache_config"
        sched = V.kcu.generate_scheduler_kv_cache_config(configs)
        cfg.cache_config.num_gpu_blocks = sched.num_blocks
        if sched.kv_cache_groups:
            cfg.cache_config.block_size = min(g.kv_cache_spec.block_size for g in sched.kv_cache_groups)
            stage = "update_kv_cache_capacity"
            V.kcu.update_kv_cache_capacity(cfg, sched)
        res["num_blocks"] = sched.num_blocks
        res["max_model_len"] = cfg.model_config.max_model_len
        stage = "get_max_concurrency_for_kv_cache_config"
        res["max_concurrency"] = V.kcu.get_max_concurrency_for_kv_cache_config(cfg, sched)
        res["kv_cache_size_tokens"] = V.kcu.get_kv_cache_capacity(cfg, sched)[0]

        stage = "groups"
        backends_of = {n: d.get("backend", "FLASH_ATTN") for n, d in layers.items() if d["type"] != "mamba"}
        groups = []
        for g in sched.kv_cache_groups:
            spec = g.kv_cache_spec
            mem = spec.max_memory_usage_bytes(cfg)
            supports = {}
            for b in sorted({backends_of[n] for n in g.layer_names if n in backends_of}):
                with V.set_current_vllm_config(cfg):
                    supports[b] = bool(_backend(b).supports_block_size(spec.block_size))
            groups.append(
                {
                    "layer_names": list(g.layer_names),
                    "block_size": spec.block_size,
                    "page_size_bytes": spec.page_size_bytes,
                    "spec_type": type(spec).__name__,
                    "kind": V.get_kv_cache_spec_kind(spec).value,
                    "max_memory_usage_bytes": mem,
                    "blocks_per_request": -(-mem // spec.page_size_bytes),
                    "supports_block_size": supports,
                }
            )
        res["groups"] = groups

        try:
            sbs, hbs = V.kcu.resolve_kv_cache_block_sizes(sched, cfg)
            res["scheduler_block_size"], res["hash_block_size"] = sbs, hbs
        except Exception as e:
            res["block_size_error"] = _err(e, "resolve_kv_cache_block_sizes")
    except Exception as e:
        res["error"] = _err(e, stage)
    res["log"], res["log_records"] = _fmt_records(capture.take())
    res["seconds"] = round(time.perf_counter() - t0, 4)
    return res


def main() -> int:
    global V
    real_stdout = sys.stdout
    sys.stdout = sys.stderr  # anything vLLM prints must not corrupt the JSON
    t0 = time.perf_counter()
    doc = json.load(sys.stdin)
    V = _load_vllm()
    import_seconds = time.perf_counter() - t0

    capture = _Capture()
    vllm_root = logging.getLogger("vllm")
    vllm_root.addHandler(capture)
    vllm_root.setLevel(logging.DEBUG if os.environ.get("ORACLE_DEBUG_LOGS") else logging.INFO)
    vllm_root.propagate = False

    results = [run_case(case, capture) for case in doc.get("cases", [])]
    out = {
        "results": results,
        "meta": {
            "vllm_version": V.vllm.__version__,
            "import_seconds": round(import_seconds, 3),
            "total_seconds": round(time.perf_counter() - t0, 3),
        },
    }
    json.dump(out, real_stdout, default=str)
    real_stdout.write("\n")
    real_stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
