"""vLLM's engine flags that shape the KV cache, with vLLM's names, defaults and checks.

Names and meanings follow ``vllm/engine/arg_utils.py`` (``EngineArgs``) and
``vllm/config/cache.py`` / ``scheduler.py`` in vLLM 0.28.0. dryboot adds only what a boot
measures and a planner must be told: the GPU's total memory and the non-KV bytes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, fields
from typing import Any, NamedTuple

from dryboot.errors import InputError
from dryboot.vllm.dtypes import (
    KV_CACHE_DTYPES,
    MAMBA_DTYPES,
    MODEL_DTYPES,
    UNMODELLED_KV_CACHE_DTYPES,
    CustomKVCacheDtype,
)
from dryboot.vllm.gpus import GPU, default_gpu
from dryboot.vllm.versions import DEFAULT_VERSION, version_key
from dryboot.vllm.worker.utils import request_memory

GIB = 1 << 30


class DeferredRefusal(NamedTuple):
    """A refusal found while reading the inputs that vLLM gives later in its engine start (a speculative
    drafter whose class release ``version``'s registry lacks, which ``SpeculativeConfig`` finds after
    ``ModelConfig`` and ``ParallelConfig`` have checked the target): carried to that stage and raised there,
    so that an earlier refusal of vLLM's comes first. ``source``, ``where`` and ``reason`` are the
    :class:`InputError`'s."""

    source: str
    where: str | None
    reason: str
    version: str

    def error(self, version: str) -> InputError:
        """The refusal for a plan of release ``version``: the one read, or (another release, as
        ``--compare-version`` plans) that it was read for ``self.version`` only."""
        if version == self.version:
            return InputError(self.source, self.where, self.reason)
        return InputError(
            self.source,
            self.where,
            f"{self.reason}; it was read for vLLM {self.version} only: plan vLLM {version} with its own --vllm-version",
        )


#: The GPU dryboot assumes when none is named (``--gpu-memory``): an H200 (SM90; its table row's
#: CUDA total, 143156 MiB: :func:`~dryboot.vllm.gpus.default_gpu`). It decides vLLM's
#: GPU-dependent defaults (``--max-num-batched-tokens``) and backend rules.
ASSUMED_GPU = "H200"
#: GPUs per node dryboot assumes (an HGX H200 board): ``tp * pp`` may not exceed them times
#: ``--nnodes``.
ASSUMED_GPUS_PER_NODE = 8

#: Speculative methods vLLM 0.28.0 runs with async scheduling (``VllmConfig.__post_init__``:
#: EAGLE-type incl. MTP and DFlash, ngram_gpu, draft_model, dspark); any other method turns
#: the default off and is refused with an explicit ``--async-scheduling``.
ASYNC_SPECULATIVE_METHODS = frozenset(
    {"eagle", "eagle3", "extract_hidden_states", "dflash", "ngram_gpu", "draft_model", "dspark"}
)


def supports_async_scheduling(method: str) -> bool:
    """Whether speculative ``method`` keeps async scheduling (MTP variants end in ``mtp``)."""
    return method in ASYNC_SPECULATIVE_METHODS or method.endswith("mtp")


#: Why each refused KV cache dtype is refused (by name, or by the name's first word).
_UNMODELLED_WHY = {
    "turboquant": " (TurboQuant's packed K+V slot per head, the boundary layers it keeps in the model dtype "
    "and the block alignment between the two)",
    "fp8_inc": " (Intel Gaudi's cache: vLLM finds no attention backend for it on an SM90 GPU)",
}


@dataclass(frozen=True)
class EngineArgs:
    """Engine flags (vLLM's names). ``None`` means "vLLM's default", resolved by the planner.

    Memory (bytes): ``kv_cache_memory_bytes`` is used exactly when given; otherwise
    ``ceil(gpu_memory_bytes * gpu_memory_utilization) - non_kv_memory_bytes``.
    ``max_model_len`` is tokens (``-1`` auto-fits to the budget). ``async_scheduling``
    ``None`` is vLLM's default (on unless the speculative method cannot run with it).
    ``speculative_method``, ``disable_padded_drafter_batch`` and ``aux_hidden_state_layer_ids``
    (``draft_model_config.hf_config.eagle_aux_hidden_state_layer_ids``, read for
    ``extract_hidden_states``) are ``--speculative-config``'s.
    ``pipeline_parallel_size`` splits the layers into stages (``pp_layer_partition`` is
    ``VLLM_PP_LAYER_PARTITION``); ``data_parallel_size`` engines each plan the same KV cache.
    ``decode_context_parallel_size`` (``-dcp``) shards each request's tokens across that many of
    the TP ranks (:func:`dryboot.vllm.distributed.check_decode_context_parallel`).
    ``enforce_eager`` (``--enforce-eager``) captures no CUDA graph (the KV budget's graph term).
    ``language_model_only`` (``--language-model-only``), ``limit_mm_per_prompt``
    (``--limit-mm-per-prompt``: (modality, items per prompt) pairs) and ``skip_mm_profiling``
    (``--skip-mm-profiling``) decide whether a multimodal model's encoder is loaded and profiled;
    ``mm_encoder_tp_mode`` (``--mm-encoder-tp-mode``) whether a supporting class's tower is built
    whole on every TP rank (``data``) or split over them (``weights``).
    ``optimization_level`` (``-O``) and ``compilation_config`` (``--compilation-config``, canonical
    JSON) decide the CUDA-graph capture set (:mod:`dryboot.vllm.config.compilation`).
    ``input_notes`` are notes on the input itself for the plan to carry (an ``--hf-overrides``
    key the config does not have). ``ignored_inputs`` names inputs accepted but ignored because
    they do not change the KV cache (reported as notes). ``trust_remote_code`` is
    ``--trust-remote-code``: a config whose class is the checkpoint's own code (``auto_map``) is
    read, as the config class transformers ships for its ``model_type`` would read it.
    """

    tensor_parallel_size: int = 1
    pipeline_parallel_size: int = 1
    pp_layer_partition: str | None = None
    data_parallel_size: int = 1
    decode_context_parallel_size: int = 1
    nnodes: int = 1
    dtype: str = "auto"
    kv_cache_dtype: str = "auto"
    attention_backend: str | None = None
    block_size: int | None = None
    mamba_cache_dtype: str = "auto"
    mamba_ssm_cache_dtype: str = "auto"
    mamba_cache_mode: str | None = None
    max_model_len: int | None = None
    max_num_batched_tokens: int | None = None
    max_num_seqs: int | None = None
    enable_lora: bool = False
    max_loras: int = 1
    max_lora_rank: int = 16
    max_cpu_loras: int | None = None
    fully_sharded_loras: bool = False
    lora_dtype: str = "auto"
    enable_prefix_caching: bool | None = None
    async_scheduling: bool | None = None
    kv_cache_memory_bytes: int | None = None
    gpu_memory_bytes: int | None = None
    gpu_memory_utilization: float = 0.92
    non_kv_memory_bytes: int | None = None
    num_gpu_blocks_override: int | None = None
    num_speculative_tokens: int = 0
    speculative_method: str | None = None
    #: the drafter's path where no KV-holding drafter is planned (Medusa heads): its weights' source
    speculative_model_path: str | None = None
    #: the speculative config's ``attention_backend`` for a drafter built from the target's checkpoint (an MTP
    #: module; a given draft model carries its own)
    speculative_attention_backend: str | None = None
    #: the speculative config's drafter refused as read (its class absent from the release's registry), raised
    #: where vLLM's ``SpeculativeConfig`` resolves that class: after the target's ``ModelConfig`` and
    #: ``ParallelConfig`` checks (:func:`dryboot.vllm.config.resolve.create_engine_config`); no plan is made
    drafter_refusal: DeferredRefusal | None = None
    disable_padded_drafter_batch: bool = False
    aux_hidden_state_layer_ids: tuple[int, ...] | None = None
    ignored_inputs: tuple[str, ...] = ()
    prefix_match_unit: int | None = None
    custom_kv_cache_dtypes: tuple[CustomKVCacheDtype, ...] = field(default=())
    vllm_version: str = DEFAULT_VERSION
    input_notes: tuple[str, ...] = ()
    gpu: GPU | None = None
    flashinfer_cubin: bool = True
    #: ``VLLM_ALLOW_LONG_MAX_MODEL_LEN`` known set (check-log: a logged length above the config's)
    allow_long_max_model_len: bool = False
    enforce_eager: bool = False
    language_model_only: bool = False
    limit_mm_per_prompt: tuple[tuple[str, int], ...] | None = None
    #: ``--mm-processor-kwargs``: (key, scalar) pairs
    mm_processor_kwargs: tuple[tuple[str, Any], ...] | None = None
    skip_mm_profiling: bool = False
    #: ``--mm-encoder-tp-mode`` (``weights`` or ``data``: :mod:`dryboot.vllm.config.mm_encoder_tp`)
    mm_encoder_tp_mode: str = "weights"
    optimization_level: int = 2
    compilation_config: str | None = None

    @property
    def mm_limits(self) -> dict[str, int] | None:
        """``--limit-mm-per-prompt`` as vLLM's ``MultiModalConfig.get_limit_per_prompt`` reads it
        (items per prompt by modality; ``None``: not given, every modality 999)."""
        return None if self.limit_mm_per_prompt is None else dict(self.limit_mm_per_prompt)

    trust_remote_code: bool = False

    @property
    def device(self) -> GPU:
        """The GPU vLLM runs on: ``--gpu``, else :func:`~dryboot.vllm.gpus.default_gpu` (H200).
        ``flashinfer_cubin`` is whether the ``flashinfer-cubin`` package is installed (vLLM's
        images: yes), which turns on FlashInfer's TRT-LLM kernels and ``has_flashinfer()``."""
        return self.gpu or default_gpu()

    def custom_dtype(self, name: str) -> CustomKVCacheDtype | None:
        for custom in self.custom_kv_cache_dtypes:
            if custom.name == name:
                return custom
        return None

    def evolve(self, **changes: Any) -> EngineArgs:
        """``dataclasses.replace(self, **changes)`` without its per-field work (a plan resolves
        one default this way; ``replace`` was a tenth of a plan's time). EngineArgs has no
        ``__post_init__``, so copying the fields (less the mark that they were checked) is all
        ``replace`` does.

        :raises TypeError: a name that is not a field.
        """
        unknown = changes.keys() - _FIELD_NAMES
        if unknown:
            raise TypeError(f"EngineArgs has no field {sorted(unknown)[0]!r}")
        new = object.__new__(EngineArgs)
        new.__dict__.update(self.__dict__, **changes)
        new.__dict__.pop("_valid", None)  # the changed fields are checked again
        return new

    def validate(self) -> None:
        """Reject impossible flags, naming the flag (checked once per instance: it is immutable).

        :raises InputError: e.g. ``--tensor-parallel-size: must be >= 1, got 0``.
        """
        if self.__dict__.get("_valid"):
            return
        self._check()
        self.__dict__["_valid"] = True

    def _check(self) -> None:
        self._check_types()
        positive = {
            "--tensor-parallel-size": self.tensor_parallel_size,
            "--pipeline-parallel-size": self.pipeline_parallel_size,
            "--data-parallel-size": self.data_parallel_size,
            "--decode-context-parallel-size": self.decode_context_parallel_size,
            "--nnodes": self.nnodes,
            "--block-size": self.block_size,
            "--max-num-batched-tokens": self.max_num_batched_tokens,
            "--max-num-seqs": self.max_num_seqs,
            "--prefix-match-unit": self.prefix_match_unit,
            "--gpu-memory": self.gpu_memory_bytes,
        }
        for flag, value in positive.items():
            if value is not None and value < 1:
                raise InputError(flag, None, f"must be >= 1, got {value}")
        nonneg = {
            "--kv-cache-memory-bytes": self.kv_cache_memory_bytes,
            "--non-kv-memory": self.non_kv_memory_bytes,
            "--num-gpu-blocks-override": self.num_gpu_blocks_override,
            "--num-speculative-tokens": self.num_speculative_tokens,
        }
        for flag, value in nonneg.items():
            if value is not None and value < 0:
                raise InputError(flag, None, f"must be >= 0, got {value}")
        if self.drafter_refusal is not None and not isinstance(self.drafter_refusal, DeferredRefusal):
            raise InputError(
                "EngineArgs", "drafter_refusal", f"must be a DeferredRefusal, got {self.drafter_refusal!r}"
            )
        if self.optimization_level not in (0, 1, 2, 3):
            raise InputError("--optimization-level", None, f"must be 0, 1, 2 or 3, got {self.optimization_level}")
        for item in self.limit_mm_per_prompt or ():
            if not (
                isinstance(item, tuple)
                and len(item) == 2
                and isinstance(item[0], str)
                and isinstance(item[1], int)
                and not isinstance(item[1], bool)
                and item[1] >= 0
            ):
                raise InputError(
                    "--limit-mm-per-prompt", None, f"each entry must be (modality, count >= 0), got {item!r}"
                )
        if self.max_model_len is not None and self.max_model_len < 1 and self.max_model_len != -1:
            raise InputError("--max-model-len", None, f"must be >= 1 or -1/auto, got {self.max_model_len}")
        if not 0 < self.gpu_memory_utilization <= 1:
            raise InputError(
                "--gpu-memory-utilization",
                None,
                f"must be in (0, 1], got {self.gpu_memory_utilization}",
            )
        if self.dtype not in MODEL_DTYPES:
            raise InputError("--dtype", None, f"unknown dtype {self.dtype!r} ({', '.join(MODEL_DTYPES)})")
        if self.kv_cache_dtype in UNMODELLED_KV_CACHE_DTYPES:
            raise InputError(
                "--kv-cache-dtype",
                None,
                f"{self.kv_cache_dtype} is a vLLM 0.28.0 KV cache dtype whose page layout dryboot does not model"
                + _UNMODELLED_WHY.get(self.kv_cache_dtype, _UNMODELLED_WHY.get(self.kv_cache_dtype.split("_")[0], "")),
            )
        if self.kv_cache_dtype not in KV_CACHE_DTYPES and self.custom_dtype(self.kv_cache_dtype) is None:
            raise InputError(
                "--kv-cache-dtype",
                None,
                f"unknown KV cache dtype {self.kv_cache_dtype!r} ({', '.join(KV_CACHE_DTYPES)}, "
                "or one declared with --custom-kv-cache-dtype)",
            )
        for flag, dtype_name in (
            ("--mamba-cache-dtype", self.mamba_cache_dtype),
            ("--mamba-ssm-cache-dtype", self.mamba_ssm_cache_dtype),
        ):
            if dtype_name not in MAMBA_DTYPES:
                raise InputError(flag, None, f"unknown dtype {dtype_name!r} ({', '.join(MAMBA_DTYPES)})")
        if self.mamba_cache_mode not in (None, "none", "align", "all"):
            raise InputError("--mamba-cache-mode", None, f"must be none, align or all, got {self.mamba_cache_mode!r}")
        if (
            self.non_kv_memory_bytes is not None
            and self.gpu_memory_bytes is None
            and self.gpu is None
            and self.kv_cache_memory_bytes is None
        ):
            raise InputError(
                "--non-kv-memory",
                None,
                "needs --gpu-memory or --gpu (the KV budget is the GPU's share minus the non-KV bytes)",
            )
        if self.gpu is not None and self.gpu_memory_bytes is not None:
            most = max(self.gpu.nvml_total_bytes, self.gpu.cuda_total_bytes)
            # a GiB figure vLLM printed with two decimals may round up past the card's bytes
            if 0 < most + (1 << 30) // 200 < self.gpu_memory_bytes:
                raise InputError(
                    "--gpu-memory",
                    None,
                    f"{self.gpu_memory_bytes / 2**30:.2f} GiB contradicts --gpu {self.gpu.name} "
                    f"({most / 2**30:.2f} GiB): give one of them (--gpu smXY:SIZE names another GPU)",
                )
        for flag, value in (
            ("--kv-cache-memory-bytes", self.kv_cache_memory_bytes),
            ("--gpu-memory", self.gpu_memory_bytes),
            ("--non-kv-memory", self.non_kv_memory_bytes),
        ):
            if value is not None and value > MAX_MEMORY_BYTES:
                raise InputError(flag, None, f"{value:.3g} bytes is more than any GPU has (at most 1 PiB, 2**50)")

    def _check_types(self) -> None:
        """Every field of the type it is declared with (the API takes any object; the CLI parses)."""
        for name, kinds in _FIELD_TYPES.items():
            value = self.__dict__[name]
            if type(value) in _FIELD_EXACT_TYPES[name] and type(value) is not float:
                continue  # exactly a declared type (the common case; a float is checked finite below)
            if value is None and type(None) in kinds:
                continue
            if isinstance(value, bool) and bool not in kinds:
                ok = False
            elif isinstance(value, tuple) and tuple in kinds:
                ok = True
            else:
                ok = isinstance(value, tuple(k for k in kinds if k is not tuple))
            if not ok:
                expected = " or ".join("None" if k is type(None) else k.__name__ for k in kinds)
                raise InputError("EngineArgs", name, f"must be {expected}, got {value!r}")
            if isinstance(value, float) and not math.isfinite(value):
                raise InputError("EngineArgs", name, f"must be a finite number, got {value!r}")

    def available_kv_bytes(self) -> int | None:
        """The KV budget in bytes, or ``None`` when no memory flag was given.

        ``--kv-cache-memory-bytes`` exactly; else ``ceil(total * utilization) - non_kv``
        (``vllm/v1/worker/gpu_worker.py``: requested memory minus the profiled non-KV bytes).
        """
        if self.kv_cache_memory_bytes is not None:
            return self.kv_cache_memory_bytes
        total = self.gpu_memory_bytes or (self.gpu.cuda_total_bytes if self.gpu is not None else None)
        if total is None or self.non_kv_memory_bytes is None:
            return None
        return request_memory(total, self.gpu_memory_utilization) - self.non_kv_memory_bytes

    def resolved_max_num_batched_tokens(self) -> int:
        """``--max-num-batched-tokens`` or ``vllm serve``'s default for the GPU's memory:
        2048 below 70 GiB, 8192 from 70 GiB, 16384 from 160 GiB (``get_batch_defaults``); the
        GPU is ``--gpu-memory`` or, unnamed, :data:`ASSUMED_GPU` (8192)."""
        if self.max_num_batched_tokens is not None:
            return self.max_num_batched_tokens
        return self.batch_defaults()[0]

    def batch_defaults(self) -> tuple[int, int]:
        """``vllm serve``'s (tokens, seqs) defaults for the device, before either caps the other
        (``get_batch_defaults``; the scheduler of an encoder-decoder model reads both): NVML's
        total (``--gpu-memory`` when given) >= 160 GiB (0.28+) 16384 / 1024; >= 70 GiB unless the
        device name holds "a100" (0.33: nor capability 12.1) 8192 / 1024; else 2048 / 256."""
        gpu = self.device
        total = self.gpu_memory_bytes or gpu.nvml_total_bytes
        name = gpu.device_name.lower()
        if total >= 160 * GIB and version_key(self.vllm_version) >= (0, 28):
            return 16384, 1024
        spark = version_key(self.vllm_version) >= (0, 33) and gpu.capability == (12, 1)
        if total >= 70 * GIB and "a100" not in name and not spark:
            return 8192, 1024
        return 2048, 256

    def resolved_max_num_seqs(self) -> int:
        """``--max-num-seqs`` or ``vllm serve``'s default: 1024 on a GPU of 70 GiB or more, else
        256, capped at the batched-token budget (``EngineArgs.get_batch_defaults``,
        ``_set_default_max_num_seqs_and_batched_tokens_args``)."""
        if self.max_num_seqs is not None:
            return self.max_num_seqs
        return min(self.batch_defaults()[1], self.resolved_max_num_batched_tokens())


_FIELD_NAMES = frozenset(f.name for f in fields(EngineArgs))
#: each field's accepted Python types (a float field takes an int too)
_FIELD_TYPES: dict[str, tuple[type, ...]] = {
    f.name: tuple(
        {"int": int, "str": str, "bool": bool, "float": float, "None": type(None), "GPU": GPU}.get(part.strip(), tuple)
        for part in str(f.type).replace("float", "float | int").split("|")
    )
    for f in fields(EngineArgs)
}
#: each field's types a value of exactly that type passes as (a ``bool`` passes an ``int`` field
#: only where ``bool`` is declared: ``type(True)`` is ``bool``)
_FIELD_EXACT_TYPES: dict[str, frozenset[type]] = {name: frozenset(kinds) for name, kinds in _FIELD_TYPES.items()}
#: the largest memory figure taken (2**50 bytes, 1 PiB: no GPU comes near)
MAX_MEMORY_BYTES = 1 << 50
