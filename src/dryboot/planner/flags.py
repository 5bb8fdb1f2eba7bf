"""vLLM engine flags by name: one table used by the CLI and by launcher profiles.

Each flag keeps vLLM's spelling (``--kv-cache-dtype``...) and maps to an
:class:`~dryboot.vllm.engine_args.EngineArgs` field. Values are parsed the way vLLM's argument
parser parses them (human-readable integers for sizes and lengths).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from dryboot.errors import InputError, not_positive_integer
from dryboot.units import parse_human_int, parse_human_int_or_auto
from dryboot.vllm.config.compilation import parse_compilation_config
from dryboot.vllm.config.mm_encoder_tp import parse_mode
from dryboot.vllm.dtypes import KV_CACHE_DTYPES, parse_custom_kv_cache_dtype
from dryboot.vllm.engine_args import EngineArgs
from dryboot.vllm.gpus import GPU, parse_gpu, parse_gpu_memory
from dryboot.vllm.models.registry import in_release_registry
from dryboot.vllm.versions import resolve_version


def _int(text: str) -> int:
    try:
        return int(text.strip())
    except ValueError:
        raise ValueError(f"must be a whole number, got {text!r}") from None


def _float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise ValueError(f"{text!r} is not a number") from None
    if not math.isfinite(value):
        raise ValueError(f"{text!r} is not a finite number")
    return value


def _bool(text: str) -> bool:
    lowered = text.lower()
    if lowered in ("1", "true", "yes", "on"):
        return True
    if lowered in ("0", "false", "no", "off"):
        return False
    raise ValueError(f"expected true or false, got {text!r}")


def _str(text: str) -> str:
    return text


def _json_object(text: str, example: str) -> dict[str, Any]:
    """``text`` read as a JSON object. :raises ValueError: not JSON, or not an object (one line
    naming ``example``, an object of the expected shape)."""
    try:
        data = json.loads(text)
    except (json.JSONDecodeError, RecursionError):
        raise ValueError(f"not JSON; expected an object such as {example}") from None
    if not isinstance(data, dict):
        raise ValueError(f"expected a JSON object such as {example}, got {type(data).__name__}")
    return data


def parse_limit_mm_per_prompt(text: str) -> tuple[tuple[str, int], ...]:
    """``--limit-mm-per-prompt`` as vLLM 0.28 takes it: a JSON object of modality -> items per
    prompt, each a count (``{"image": 2, "video": 0}``) or an object with a ``count``
    (``{"image": {"count": 1, "width": 512}}``; the size options do not change the count).

    :raises ValueError: not such an object (one line naming what is wrong).
    """
    data = _json_object(text, '{"image": 2, "video": 0}')
    out: list[tuple[str, int]] = []
    for modality, value in data.items():
        count = value.get("count") if isinstance(value, dict) else value
        if isinstance(count, bool) or not isinstance(count, int) or count < 0:
            raise ValueError(f"{modality!r}: expected a count >= 0 (or an object with one), got {value!r}")
        out.append((str(modality), count))
    return tuple(sorted(out))


def parse_mm_processor_kwargs(text: str) -> tuple[tuple[str, Any], ...]:
    """``--mm-processor-kwargs``: a JSON object of the processor's keyword arguments
    (``{"do_pan_and_scan": true}``), its values scalars; which keys a plan models is the
    encoder term's business (others are refused there by name).

    :raises ValueError: not such an object (one line naming what is wrong).
    """
    data = _json_object(text, '{"do_pan_and_scan": true}')
    for key, value in data.items():
        if not isinstance(value, bool | int | float | str):
            raise ValueError(f"{key!r}: expected a scalar value, got {type(value).__name__}")
    return tuple(sorted((str(k), v) for k, v in data.items()))


def _vllm_version(text: str) -> str:
    return resolve_version(text)


def _gpu(text: str) -> GPU:
    try:
        return parse_gpu(text)
    except InputError as exc:
        raise ValueError(exc.reason) from None


@dataclass(frozen=True)
class Flag:
    """One engine flag: its vLLM name (no dashes), the EngineArgs field, a parser, help."""

    name: str
    field: str
    parse: Callable[[str], Any]
    help: str
    kind: type = str


FLAGS: tuple[Flag, ...] = (
    Flag("tensor-parallel-size", "tensor_parallel_size", _int, "TP size (KV heads and state split across ranks).", int),
    Flag(
        "pipeline-parallel-size",
        "pipeline_parallel_size",
        _int,
        "PP size: layers split into stages (VLLM_PP_LAYER_PARTITION or vLLM's split); the "
        "fewest blocks of any stage win.",
        int,
    ),
    Flag(
        "data-parallel-size",
        "data_parallel_size",
        _int,
        "DP size: independent engines, each planning this same KV cache (figures are per engine).",
        int,
    ),
    Flag(
        "decode-context-parallel-size",
        "decode_context_parallel_size",
        _int,
        "DCP size: each request's KV cache sharded across this many of the TP ranks (must divide TP); "
        "vLLM refuses it with sliding-window, chunked-local and mamba layers, and dryboot plans no other model "
        "with it yet (refused by name).",
        int,
    ),
    Flag("nnodes", "nnodes", _int, "Nodes the engine spans (8 GPUs each assumed; default 1).", int),
    Flag("dtype", "dtype", _str, "Model dtype (auto = the config's)."),
    Flag(
        "kv-cache-dtype",
        "kv_cache_dtype",
        _str,
        "KV cache dtype (auto, bfloat16, fp8, int8_per_token_head, ... or a custom one).",
    ),
    Flag(
        "attention-backend", "attention_backend", _str, "Attention backend (FLASH_ATTN, TRITON_ATTN, FLASHINFER, ...)."
    ),
    Flag(
        "block-size", "block_size", _int, "Attention block size in tokens (default: the backend's preferred, 16).", int
    ),
    Flag("mamba-cache-dtype", "mamba_cache_dtype", _str, "Mamba conv state dtype (auto = model dtype)."),
    Flag(
        "mamba-ssm-cache-dtype",
        "mamba_ssm_cache_dtype",
        _str,
        "Mamba SSM/temporal state dtype (auto = config's or conv dtype).",
    ),
    Flag(
        "mamba-cache-mode",
        "mamba_cache_mode",
        _str,
        "none | align | all (default: align with prefix caching, else none).",
    ),
    Flag(
        "max-model-len",
        "max_model_len",
        parse_human_int_or_auto,
        "Max model length in tokens (1k = 1000, 1K = 1024; -1/auto fits the budget).",
    ),
    Flag(
        "max-num-batched-tokens",
        "max_num_batched_tokens",
        parse_human_int,
        "Tokens per scheduler step (default 2048; 8192 on >= 70 GiB GPUs).",
    ),
    Flag("max-num-seqs", "max_num_seqs", parse_human_int, "Max sequences per step."),
    Flag("enable-lora", "enable_lora", _bool, "LoRA: vLLM allocates the adapters' stacks while loading.", bool),
    Flag("max-loras", "max_loras", _int, "LoRA adapters in one batch (default 1).", int),
    Flag("max-lora-rank", "max_lora_rank", _int, "Max LoRA rank (default 16).", int),
    Flag("max-cpu-loras", "max_cpu_loras", _int, "LoRA adapters cached on the host (>= --max-loras).", int),
    Flag("fully-sharded-loras", "fully_sharded_loras", _bool, "Shard LoRA's A/B stacks over TP.", bool),
    Flag("lora-dtype", "lora_dtype", _str, "LoRA dtype (auto: the model dtype)."),
    Flag(
        "enable-prefix-caching",
        "enable_prefix_caching",
        _bool,
        "Prefix caching (default on; off for attention-free models).",
        bool,
    ),
    Flag("async-scheduling", "async_scheduling", _bool, "Async scheduling (default on: two batches in flight).", bool),
    Flag(
        "enforce-eager",
        "enforce_eager",
        _bool,
        "No CUDA graphs and no torch.compile (the KV budget then subtracts no graph estimate).",
        bool,
    ),
    Flag(
        "language-model-only",
        "language_model_only",
        _bool,
        "A multimodal model without its encoder (vLLM loads no tower and profiles no encoder).",
        bool,
    ),
    Flag(
        "limit-mm-per-prompt",
        "limit_mm_per_prompt",
        parse_limit_mm_per_prompt,
        'Items per prompt by modality, JSON ({"image": 2, "video": 0}); 0 for every modality: no encoder.',
    ),
    Flag(
        "mm-processor-kwargs",
        "mm_processor_kwargs",
        parse_mm_processor_kwargs,
        "The multimodal processor's options, JSON ({\"do_pan_and_scan\": true}: Gemma-3's crops).",
    ),
    Flag(
        "skip-mm-profiling",
        "skip_mm_profiling",
        _bool,
        "vLLM skips the multimodal encoder's memory profiling (the budget then has no encoder term).",
        bool,
    ),
    Flag(
        "mm-encoder-tp-mode",
        "mm_encoder_tp_mode",
        parse_mode,
        "weights (default: the encoder tower split over the TP ranks) or data (a class with "
        "supports_encoder_tp_data builds it whole on each rank; others fall back to weights).",
    ),
    Flag(
        "optimization-level",
        "optimization_level",
        _int,
        "vLLM's -O level: 0 no torch.compile and no CUDA graphs, 1 PIECEWISE, 2 (default) and 3 FULL_AND_PIECEWISE.",
        int,
    ),
    Flag(
        "compilation-config",
        "compilation_config",
        parse_compilation_config,
        "vLLM's compilation config, JSON; the budget reads cudagraph_mode, cudagraph_capture_sizes, "
        "max_cudagraph_capture_size, cudagraph_mm_encoder and mode (alias -cc).",
    ),
    Flag(
        "kv-cache-memory-bytes",
        "kv_cache_memory_bytes",
        parse_human_int,
        "KV cache budget in bytes (40G = 40 GiB, 40g = 40e9); alias --kv-cache-memory.",
    ),
    Flag(
        "gpu-memory",
        "gpu_memory_bytes",
        parse_gpu_memory,
        "CUDA's total GPU memory as vLLM sees it: bytes (24G), or vLLM's logged 'Free memory on device (F/T "
        "GiB)' line (T is taken); overrides the --gpu table's total (with --non-kv-memory, instead of a KV budget).",
    ),
    Flag(
        "gpu-memory-utilization",
        "gpu_memory_utilization",
        _float,
        "Fraction of GPU memory vLLM may use (default 0.92).",
        float,
    ),
    Flag(
        "non-kv-memory",
        "non_kv_memory_bytes",
        parse_human_int,
        "Bytes a boot profiles as non-KV (weights, activations, graphs).",
    ),
    Flag(
        "num-gpu-blocks-override", "num_gpu_blocks_override", parse_human_int, "Replace the computed number of blocks."
    ),
    Flag(
        "num-speculative-tokens",
        "num_speculative_tokens",
        _int,
        "Speculative tokens per step (grows mamba state and its pages).",
        int,
    ),
    Flag(
        "prefix-match-unit",
        "prefix_match_unit",
        _int,
        "Hash block size for prefix matching (default: GCD of group blocks).",
        int,
    ),
    Flag(
        "gpu",
        "gpu",
        _gpu,
        "The GPU: a name of dryboot's table (RTX 3090, A100-80GB, H100, B200...; case and separators "
        "ignored) or smXY:SIZE (sm86:24G). Default: an H200, stated as an assumption.",
    ),
    Flag(
        "flashinfer-cubin",
        "flashinfer_cubin",
        _bool,
        "Whether the box has flashinfer-cubin (vLLM's images: yes, the default): FlashInfer's TRT-LLM "
        "kernels (SM 10.x nvfp4 KV, FlashInfer attention sinks on SM 10.x/12.x, and on SM 9.0 from 0.30.0).",
        bool,
    ),
    Flag(
        "trust-remote-code",
        "trust_remote_code",
        _bool,
        "Trust the checkpoint's own config code (auto_map): without it a model_type transformers does not "
        "ship is refused, as vLLM refuses it; with it the config is read as dryboot reads its architecture.",
        bool,
    ),
    Flag(
        "vllm-version",
        "vllm_version",
        _vllm_version,
        "vLLM version whose rules apply (default 0.28.0; auto = the vLLM installed here).",
    ),
)
FLAGS_BY_NAME: dict[str, Flag] = {f.name: f for f in FLAGS}
#: flags vLLM takes as JSON: a profile may give them as a TOML table
JSON_FLAGS = frozenset({"limit_mm_per_prompt", "compilation_config", "mm_processor_kwargs"})
ALIASES = {"kv-cache-memory": "kv-cache-memory-bytes"}


def parse_value(flag: Flag, value: object, source: str, where: str | None) -> Any:
    """Parse ``value`` (CLI text, or a TOML scalar) for ``flag``.

    :raises InputError: ``<source>: <where>: <reason>``.
    """
    if isinstance(value, bool):
        if flag.kind is not bool:
            raise InputError(source, where, f"expected a {flag.kind.__name__}, got a boolean")
        return value
    if isinstance(value, int | float) and not isinstance(value, bool):
        value = str(value)
    if isinstance(value, dict) and flag.field in JSON_FLAGS:
        value = json.dumps(value)  # a TOML inline table for a flag vLLM takes as JSON
    if not isinstance(value, str):
        raise InputError(source, where, f"expected a scalar, got {type(value).__name__}")
    try:
        return flag.parse(value)
    except ValueError as exc:
        raise InputError(source, where, str(exc)) from None


def apply_flags(args: EngineArgs, values: Mapping[str, object], source: str, prefix: str = "") -> EngineArgs:
    """Return ``args`` with flags (vLLM names without dashes) from ``values`` applied.

    :raises InputError: an unknown flag or a bad value (named with ``prefix``).
    """
    changes: dict[str, Any] = {}
    for raw_name, value in values.items():
        name = ALIASES.get(raw_name, raw_name)
        flag = FLAGS_BY_NAME.get(name)
        # on the command line the source is the flag itself: do not name it twice
        where = None if source == f"--{raw_name}" else f"{prefix}{raw_name}"
        if flag is None:
            raise InputError(source, where, "unknown engine flag")
        changes[flag.field] = parse_value(flag, value, source, where)
    return replace(args, **changes)


def add_custom_dtypes(args: EngineArgs, specs: list[str], source: str = "--custom-kv-cache-dtype") -> EngineArgs:
    """Declare custom KV cache dtypes (``NAME:BYTES[:kernel_block=N][:pad=yes|no]``).

    :raises InputError: a malformed declaration, or a name declared twice (which of the two
        a ``--kv-cache-dtype NAME`` meant would be a guess).
    """
    customs = args.custom_kv_cache_dtypes
    for text in specs:
        custom = parse_custom_kv_cache_dtype(text, source)
        if any(c.name == custom.name for c in customs):
            raise InputError(source, text, f"{custom.name!r} is already declared; declare each name once")
        customs += (custom,)
    return replace(args, custom_kv_cache_dtypes=customs)


@dataclass(frozen=True)
class SpeculativeConfig:
    """vLLM's ``--speculative-config`` keys that shape the KV cache (``method``, ``model``,
    ``num_speculative_tokens``, the drafter's ``kv_cache_dtype`` and ``attention_backend``,
    ``disable_padded_drafter_batch``, which turns async scheduling off), plus dryboot's own
    ``block_size`` of the drafter's layers. ``ignored`` lists the keys given that vLLM reads
    but that do not touch the KV cache."""

    method: str
    model: str | None
    num_speculative_tokens: int
    kv_cache_dtype: str | None = None
    attention_backend: str | None = None
    block_size: int | None = None
    disable_padded_drafter_batch: bool = False
    ignored: tuple[str, ...] = ()
    draft_tensor_parallel_size: int | None = None
    aux_hidden_state_layer_ids: tuple[int, ...] | None = None


#: vLLM 0.28.0's speculative methods (``SpeculativeMethod``; any ``*_mtp`` is an MTP type).
SPECULATIVE_METHODS = frozenset(
    {
        "ngram",
        "ngram_gpu",
        "medusa",
        "mlp_speculator",
        "draft_model",
        "suffix",
        "custom_class",
        "eagle",
        "eagle3",
        "extract_hidden_states",
        "mtp",
        "dflash",
        "dspark",
    }
)
#: Methods that propose without a separate draft model (no drafter KV layers).
MODEL_FREE_METHODS = frozenset({"ngram", "ngram_gpu", "suffix"})

_SPEC_KEYS = {
    "method",
    "model",
    "num_speculative_tokens",
    "kv_cache_dtype",
    "attention_backend",
    "block_size",
    "draft_tensor_parallel_size",
    "disable_padded_drafter_batch",
    "draft_model_config",
}
#: vLLM 0.28.0 ``SpeculativeConfig`` fields that do not change the KV cache: accepted, noted.
_SPEC_KEYS_WITHOUT_KV_EFFECT = {
    "enforce_eager",
    "quantization",
    "moe_backend",
    "max_model_len",
    "revision",
    "code_revision",
    "use_local_argmax_reduction",
    "use_heterogeneous_vocab",
    "prompt_lookup_max",
    "prompt_lookup_min",
    "suffix_decoding_max_tree_depth",
    "suffix_decoding_max_cached_requests",
    "suffix_decoding_max_spec_factor",
    "suffix_decoding_min_token_prob",
    "draft_load_config",
    "rejection_sample_method",
    "synthetic_acceptance_rates",
    "synthetic_acceptance_length",
    "enable_adaptive_verification",
    "draft_sample_method",
    "dspark_draft_topk",
}


def parse_speculative_config(data: object, source: str = "--speculative-config") -> SpeculativeConfig:
    """Read a ``--speculative-config`` (a JSON text or an already-parsed mapping).

    :raises InputError: malformed JSON, unknown keys, wrong types.
    """
    if isinstance(data, str):
        try:
            data = json.loads(data)
        except json.JSONDecodeError as exc:
            raise InputError(source, f"column {exc.colno}", f"invalid JSON: {exc.msg}") from None
    if not isinstance(data, Mapping):
        raise InputError(source, None, "must be a JSON object")
    unknown = sorted(set(data) - _SPEC_KEYS - _SPEC_KEYS_WITHOUT_KV_EFFECT)
    if unknown:
        raise InputError(
            source,
            unknown[0],
            f"not modelled: dryboot reads {', '.join(sorted(_SPEC_KEYS))} and ignores the keys that do not "
            "change the KV cache",
        )
    padded = data.get("disable_padded_drafter_batch", False)
    if not isinstance(padded, bool):
        raise InputError(source, "disable_padded_drafter_batch", f"must be true or false, got {padded!r}")
    k = data.get("num_speculative_tokens", 0)
    if isinstance(k, bool) or not isinstance(k, int) or k < 0:
        raise InputError(source, "num_speculative_tokens", f"must be an integer >= 0, got {k!r}")
    block = data.get("block_size")
    if block is not None and (isinstance(block, bool) or not isinstance(block, int) or block < 1):
        raise InputError(source, "block_size", not_positive_integer(block))
    draft_tp = data.get("draft_tensor_parallel_size")
    if draft_tp is not None and (isinstance(draft_tp, bool) or not isinstance(draft_tp, int) or draft_tp < 1):
        # vLLM: SpeculativeConfig.draft_tensor_parallel_size = Field(default=None, ge=1)
        raise InputError(source, "draft_tensor_parallel_size", f"must be an integer >= 1, got {draft_tp!r}")
    for key in ("method", "model", "kv_cache_dtype", "attention_backend"):
        if data.get(key) is not None and not isinstance(data[key], str):
            raise InputError(source, key, "must be a string")
    method = data.get("method")
    if method is not None and method not in SPECULATIVE_METHODS and not method.endswith("_mtp"):
        raise InputError(
            source, "method", f"unknown speculative method {method!r} ({', '.join(sorted(SPECULATIVE_METHODS))}, *_mtp)"
        )
    aux_ids = _aux_hidden_state_layer_ids(data, source)
    return SpeculativeConfig(
        aux_hidden_state_layer_ids=aux_ids,
        method=str(data.get("method") or "draft_model"),
        model=data.get("model"),
        num_speculative_tokens=k,
        kv_cache_dtype=data.get("kv_cache_dtype"),
        attention_backend=data.get("attention_backend"),
        block_size=block,
        disable_padded_drafter_batch=padded,
        ignored=tuple(sorted(set(data) & _SPEC_KEYS_WITHOUT_KV_EFFECT)),
        draft_tensor_parallel_size=draft_tp,
    )


def _aux_hidden_state_layer_ids(data: Mapping[str, object], source: str) -> tuple[int, ...] | None:
    """``draft_model_config.hf_config.eagle_aux_hidden_state_layer_ids``: the target layers
    whose hidden states ``"method": "extract_hidden_states"`` caches (vLLM's
    ``SpeculativeConfig.__post_init__`` reads ``hf_config`` from a ``draft_model_config``
    mapping into ``ExtractHiddenStatesConfig``). Only that method reads the key here.

    :raises InputError: the key with another method, or a malformed value.
    """
    if "draft_model_config" not in data:
        return None
    where = "draft_model_config"
    if data.get("method") != "extract_hidden_states":
        raise InputError(source, where, "not modelled: dryboot reads it only for method extract_hidden_states")
    dmc = data["draft_model_config"]
    if not isinstance(dmc, Mapping) or set(dmc) - {"hf_config"}:
        raise InputError(source, where, 'must be an object {"hf_config": {...}} (other keys are not modelled)')
    hf = dmc.get("hf_config", {})
    if not isinstance(hf, Mapping):
        raise InputError(source, f"{where}.hf_config", "must be an object")
    ids = hf.get("eagle_aux_hidden_state_layer_ids")
    if ids is None:
        return None
    if not isinstance(ids, list) or not all(isinstance(i, int) and not isinstance(i, bool) for i in ids):
        raise InputError(
            source,
            f"{where}.hf_config.eagle_aux_hidden_state_layer_ids",
            f"must be a list of layer indices, got {ids!r}",
        )
    return tuple(ids)


def check_speculative_config(
    cfg: SpeculativeConfig, args: EngineArgs, source: str = "--speculative-config", customs_from: str = ""
) -> None:
    """What a speculative config must satisfy given the engine flags (``args``).

    - ``kv_cache_dtype``: one of vLLM's ``CacheDType`` names that dryboot plans, or a custom
      dtype declared in ``args`` (``customs_from`` says where they are declared).
    - ``draft_tensor_parallel_size``: 1 or the target's ``--tensor-parallel-size``
      (``SpeculativeConfig._verify_and_get_draft_tp``); for ``method = draft_model``
      exactly the target's (vLLM 0.28.0's ``DraftModelProposer`` refuses any other).

    - ``method`` ``medusa``: only on a release whose registry has ``MedusaModel`` (0.33 has none;
      its ``SpeculativeConfig`` refuses the method).

    :raises InputError: naming ``source`` and the key.
    """
    if cfg.method == "medusa" and not in_release_registry("MedusaModel", args.vllm_version):
        raise InputError(
            source, "method", f"vLLM {args.vllm_version} has no Medusa drafter (its SpeculativeConfig refuses medusa)"
        )
    dtype = cfg.kv_cache_dtype
    if dtype is not None and dtype not in KV_CACHE_DTYPES and args.custom_dtype(dtype) is None:
        where = customs_from or "--custom-kv-cache-dtype"
        raise InputError(
            source,
            "kv_cache_dtype",
            f"unknown KV cache dtype {dtype!r} ({', '.join(KV_CACHE_DTYPES)}, or one declared with {where})",
        )
    draft_tp, tp = cfg.draft_tensor_parallel_size, args.tensor_parallel_size
    if draft_tp is None:
        return
    if draft_tp not in (1, tp):
        raise InputError(
            source,
            "draft_tensor_parallel_size",
            f"{draft_tp} is neither 1 nor the target's tensor parallel size ({tp}); vLLM refuses it",
        )
    if cfg.method == "draft_model" and draft_tp != tp:
        raise InputError(
            source,
            "draft_tensor_parallel_size",
            f"a draft_model drafter must run at the target's tensor parallel size ({tp}), got {draft_tp}",
        )


def resolve_path(path: str, base: Path | None) -> Path:
    """``path`` relative to ``base`` (a profile file's folder) unless absolute."""
    p = Path(path).expanduser()
    return p if p.is_absolute() or base is None else base / p
