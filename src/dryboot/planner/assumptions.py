"""What a plan's figures assume beyond the flags given: stated in the report and in ``--json``.

Three kinds, each naming the flag that settles it:

* ``assumed``: a default that depends on the GPU, which dryboot cannot see (the scheduler's
  ``--max-num-batched-tokens``, the attention backend vLLM picks).
* ``ignored``: a flag given but without effect, as in vLLM (``--gpu-memory-utilization`` when
  ``--kv-cache-memory-bytes`` sets the budget).
* ``unverified``: the plan uses the rules of a vLLM version that dryboot models from release
  notes but has not checked against vLLM itself.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

from dryboot.planner.plan import Plan
from dryboot.vllm.engine_args import ASSUMED_GPU, GIB, EngineArgs
from dryboot.vllm.gpus import default_gpu
from dryboot.vllm.models.registry import family_of
from dryboot.vllm.versions import VERIFIED_VERSIONS


@dataclass(frozen=True)
class Assumption:
    """One assumption: its kind, the flag that settles it, the value used, and why."""

    kind: str
    flag: str
    value: object
    reason: str

    def line(self) -> str:
        """``assumed --max-num-batched-tokens 2048: <reason>``."""
        return f"{self.kind} {self.flag} {self.value}: {self.reason}"

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "flag": self.flag, "value": self.value, "reason": self.reason}


def _given(args: EngineArgs, given: Collection[str] | None, flag: str, field: str) -> bool:
    """Whether the user gave ``flag`` (vLLM's name, no dashes); without the list of flags
    given, whether ``args`` differs from the default there."""
    if given is not None:
        return flag in given
    return bool(getattr(args, field) != getattr(EngineArgs(), field))


def _batched_tokens_reason(args: EngineArgs) -> str:
    rule = "2048 below 70 GiB or on an A100, 8192 from 70 GiB, 16384 from 160 GiB"
    if args.gpu is not None and args.gpu_memory_bytes is None:
        gpu = args.gpu
        if gpu.unified_memory and not gpu.nvml_total_bytes:
            return (
                f"vLLM's `vllm serve` default for the {gpu.label()}, whose NVML reports no memory total "
                f"(unified memory): the small tier ({rule})"
            )
        return (
            f"vLLM's `vllm serve` default for the {gpu.label()}, whose NVML total is "
            f"{gpu.nvml_total_bytes / GIB:,.2f} GiB ({rule})"
        )
    if args.gpu_memory_bytes is None:
        return (
            f"vLLM's `vllm serve` default, which depends on the GPU's memory ({rule}); "
            f"the GPU is unknown: an {ASSUMED_GPU} ({default_gpu().cuda_total_bytes / GIB:,.2f} GiB) is assumed "
            "(give --max-num-batched-tokens, or --gpu-memory)"
        )
    return f"vLLM's `vllm serve` default for a GPU of {args.gpu_memory_bytes / GIB:,.1f} GiB ({rule})"


def _depends_on_batched_tokens(p: Plan) -> bool:
    """Blocks of sliding-window and chunked-local groups count the tokens in flight."""
    computed = p.capacity is not None or p.memory_error is not None
    groups = p.grouping.groups if p.grouping is not None else ()
    return computed and any(g.kind in ("sliding", "chunked") for g in groups)


def _gpu_assumptions(args: EngineArgs, has_attention: bool) -> list[Assumption]:
    """The GPU assumed when none is named; a table figure that is a placeholder; what the box's
    FlashInfer install is assumed to be where it changes vLLM's choices (SM 10.x, 12.x)."""
    out = []
    gpu = args.device
    if args.gpu is None and args.gpu_memory_bytes is None:
        out.append(
            Assumption(
                "assumed",
                "--gpu",
                gpu.name,
                f"no GPU named: an {gpu.label()} is assumed; the GPU decides vLLM's attention backend, its "
                "block size, fp8 refusals and the batch defaults (give --gpu NAME or --gpu smXY:SIZE)",
            )
        )
    if (
        args.gpu is not None
        and gpu.approximate
        and args.kv_cache_memory_bytes is None
        and args.gpu_memory_bytes is None
        and args.non_kv_memory_bytes is not None
    ):
        out.append(
            Assumption(
                "assumed",
                "--gpu",
                gpu.name,
                f"the {gpu.name}'s CUDA total ({gpu.cuda_total_bytes:,} bytes) is a specification figure, not "
                "a posted one: the budget from --gpu-memory-utilization is approximate (give --gpu-memory)",
            )
        )
    if args.gpu is not None and has_attention and gpu.capability[0] in (10, 12):
        out.append(
            Assumption(
                "assumed",
                "--flashinfer-cubin",
                args.flashinfer_cubin,
                "whether flashinfer-cubin is installed (vLLM's images: yes): it enables FlashInfer's TRT-LLM "
                "kernels, which decide FlashInfer attention sinks here"
                + (" and the nvfp4 KV cache" if gpu.capability[0] == 10 else ""),
            )
        )
    return out


def _cubin_decides_sm90_sinks(p: Plan) -> bool:
    """FlashInfer serves the model's attention sinks on an SM 9.0 GPU (named or assumed) on a release
    whose ``FlashInferBackend.supports_sink`` takes SM 9.0 (:attr:`VersionRules.flashinfer_sinks_sm90`):
    whether flashinfer-cubin is installed decides it (``supports_trtllm_attention``)."""
    return (
        p.backend.name == "FLASHINFER"
        and p.model.attn.attention_sinks
        and p.rules.flashinfer_sinks_sm90
        and p.args.device.capability == (9, 0)
    )


def assumptions(p: Plan, given: Collection[str] | None = None) -> list[Assumption]:
    """What ``p``'s figures assume.

    :param given: the engine flags the user gave (vLLM's names without dashes, e.g.
        ``gpu-memory-utilization``); ``None`` judges from values that differ from the defaults.
    """
    args = p.args
    out: list[Assumption] = []
    if args.max_num_batched_tokens is None and _depends_on_batched_tokens(p):
        out.append(
            Assumption(
                "assumed",
                "--max-num-batched-tokens",
                args.resolved_max_num_batched_tokens(),
                _batched_tokens_reason(args),
            )
        )
    has_attention = p.drafter is not None or any(k.is_attention for k in p.model.kinds)
    out.extend(_gpu_assumptions(args, has_attention))
    if _cubin_decides_sm90_sinks(p):
        out.append(
            Assumption(
                "assumed",
                "--flashinfer-cubin",
                args.flashinfer_cubin,
                "whether flashinfer-cubin is installed (vLLM's images: yes): on SM 9.0 FlashInfer serves the "
                "model's attention sinks only through TRT-LLM's XQA decode kernel, which it needs (without it, "
                "and without NVIDIA's artifactory reachable, vLLM refuses FLASHINFER: attention sinks not "
                "supported)",
            )
        )
    chosen_by_layers = family_of(p.model).backend_assumption(p.model)
    if chosen_by_layers is not None:
        out.append(Assumption("assumed", "--attention-backend", p.backend.name, chosen_by_layers))
    elif has_attention and args.attention_backend is None and not p.kv_cache_dtype.endswith("_per_token_head"):
        blackwell = "FLASHINFER_MLA" if p.model.use_mla else "FLASHINFER"
        if p.model.sparse_mla:
            # platforms/cuda.py: SM100's sparse MLA priorities
            blackwell = "FLASHINFER_MLA_SPARSE or FLASHMLA_SPARSE (by KV dtype and heads)"
        where = (
            f"vLLM's choice on the SM90 GPU assumed (H100, H200) for this model and KV dtype; "
            f"on SM100 (B200) it prefers {blackwell}"
            if args.gpu is None
            else f"vLLM's choice on the {args.gpu.label()} for this model and KV dtype"
        )
        out.append(Assumption("assumed", "--attention-backend", p.backend.name.split("+")[0], where))
    for name in args.ignored_inputs:
        flag, _, key = name.partition(" ")
        out.append(Assumption("ignored", flag, key, "vLLM reads it, but it does not change the KV cache"))
    if args.kv_cache_memory_bytes is not None and _given(
        args, given, "gpu-memory-utilization", "gpu_memory_utilization"
    ):
        out.append(
            Assumption(
                "ignored",
                "--gpu-memory-utilization",
                args.gpu_memory_utilization,
                "--kv-cache-memory-bytes sets the KV budget, and vLLM then ignores the utilization",
            )
        )
    version = args.vllm_version.strip()
    version = version + ".0" if version.count(".") == 1 else version
    if version not in VERIFIED_VERSIONS:
        verified = ", ".join(sorted(VERIFIED_VERSIONS))
        if p.rules.version == version:
            reason = (
                f"vLLM {version}'s rule table is checked on recorded release cases "
                "(tests/fidelity/data/releases) but has not reached the 99.5% end-to-end bar"
            )
        else:
            reason = f"no rule table for vLLM {version}: planned with those of {p.rules.version}"
        out.append(
            Assumption(
                "unverified",
                "--vllm-version",
                args.vllm_version,
                f"{reason}, not verified against vLLM {version} itself "
                f"(only {verified} {'is' if len(VERIFIED_VERSIONS) == 1 else 'are'})",
            )
        )
    return out
