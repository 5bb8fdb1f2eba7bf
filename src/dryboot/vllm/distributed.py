"""Parallelism: the one place for vLLM's checks of TP/PP/DP sizes against the model and the
node (``ParallelConfig``, ``ModelConfig.verify_with_parallel_config``, ``SupportsPP``), and which
decoder layers each pipeline stage builds.

Mirrors ``get_pp_indices`` (``vllm/distributed/utils.py``): ``VLLM_PP_LAYER_PARTITION`` (comma-
separated layers per stage) when set, else ``num_hidden_layers // pp`` per stage with the
remainder given one layer each to the stages before the last (the last stage holds the final
norm and the head), starting from the one just before it.
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

from dryboot.errors import InputError
from dryboot.vllm import DATA
from dryboot.vllm.config.hf import LayerKind, ModelGeometry
from dryboot.vllm.engine_args import ASSUMED_GPUS_PER_NODE, EngineArgs
from dryboot.vllm.versions import VersionRules

ENV = "VLLM_PP_LAYER_PARTITION"
#: vLLM's refusal of pipeline parallelism for a model class without ``SupportsPP``
DCP_FLAG = "--decode-context-parallel-size"
NOT_SUPPORTS_PP = (
    "Pipeline parallelism is not supported for this model. Supported models implement the `SupportsPP` interface."
)

#: vLLM's failure, under pipeline parallelism, of a model class that builds its language model from
#: ``vllm_config.with_hf_config(text_config)`` without naming its architecture, on a text config that
#: names none: the derived ``VllmConfig``'s validation asks the registry whether the (absent)
#: architecture supports PP (``ModelRegistry.inspect_model_cls``: "No model architectures are specified")
UNNAMED_TEXT_CONFIG_PP = "VllmConfig validation of the text config: No model architectures are specified"
#: the same validation of an encoder tower's sub-config (``with_hf_config(audio_config)``: a Whisper
#: config, which the view names ``WhisperForCausalLM`` after transformers' causal-LM mapping, an
#: architecture outside vLLM's registry) finding no ``SupportsPP``
TOWER_NOT_SUPPORTS_PP = f"VllmConfig validation of the audio tower's config: {NOT_SUPPORTS_PP}"
#: refusals that come from validating a ``with_hf_config`` view, which 0.33+ no longer validates
_SUBMODEL_REFUSALS = frozenset({UNNAMED_TEXT_CONFIG_PP, TOWER_NOT_SUPPORTS_PP})


def model_pp_refusal(model: ModelGeometry, rules: VersionRules) -> str | None:
    """Why ``rules``' release fails to build ``model`` under pipeline parallelism (its reader's
    ``pp_refusal``, read as 0.28.0 builds it), or ``None``: a release whose model class names its
    language model's architecture itself (``rules.pp_text_model_named``) builds a text config that
    names none, and one that does not validate ``with_hf_config`` views
    (``rules.pp_submodel_unvalidated``) builds what only such a view's validation refused, and one
    whose tower view passes (``rules.pp_tower_view_builds``) builds the tower."""
    refusal = model.parallel.pp_refusal
    if refusal in _SUBMODEL_REFUSALS and rules.pp_submodel_unvalidated:
        return None
    if refusal == TOWER_NOT_SUPPORTS_PP and rules.pp_tower_view_builds:
        return None
    if refusal == UNNAMED_TEXT_CONFIG_PP and model.architecture in rules.pp_text_model_named:
        return None
    return refusal


def pp_refused(pp: int, who: str, reason: str = NOT_SUPPORTS_PP) -> InputError:
    """The refusal of ``--pipeline-parallel-size pp`` for ``who`` (an architecture, a drafter)."""
    return InputError("--pipeline-parallel-size", str(pp), f"{who}: {reason}")


def check_drafter_pp(pp: int, method: str | None, pp_draft_models: bool) -> None:
    """``ModelConfig.verify_with_parallel_config`` on the draft model, which
    ``SpeculativeConfig.__post_init__`` runs with the target's pipeline size while the engine
    config is created (before the target model is built): the drafter's class does not implement
    ``SupportsPP`` (MTP, EAGLE, DFlash in releases without ``pp_draft_models``; the hidden-state
    extractor in every release). ``method``: the drafter's speculative method, ``None`` for none.

    :raises InputError: ``pp`` > 1 with such a drafter.
    """
    if pp > 1 and method is not None and (not pp_draft_models or method == "extract_hidden_states"):
        raise pp_refused(pp, f"{method} drafter")


def check_world_size(args: EngineArgs) -> None:
    """``ParallelConfig`` with the mp executor on one node (no ``--nnodes``, no ray): TP x PP
    GPUs must fit the node (8 assumed).

    :raises InputError: naming the PP flag when PP > 1, else the TP flag.
    """
    world = args.tensor_parallel_size * args.pipeline_parallel_size
    if args.nnodes == 1 and world > ASSUMED_GPUS_PER_NODE:
        raise InputError(
            "--pipeline-parallel-size" if args.pipeline_parallel_size > 1 else "--tensor-parallel-size",
            None,
            f"World size ({world}) is larger than the number of available GPUs ({ASSUMED_GPUS_PER_NODE}) in this "
            "node (dryboot assumes 8-GPU nodes; give --nnodes for more)",
        )


#: Layer kinds whose cache vLLM refuses under DCP > 1, with its words: ``SlidingWindowSpec.max_memory_usage_bytes``
#: asserts "DCP not support sliding window." (0.28.0 and 0.33.0 alike), ``ChunkedLocalAttentionManager`` "DCP
#: not support chunked local attn now.".
_DCP_REFUSED = (
    (
        frozenset(
            {
                LayerKind.SLIDING,
                LayerKind.DSV4_SWA,
                LayerKind.DSV4_COMPRESSOR,
                LayerKind.INKLING_CONV,
                LayerKind.INKLING_CONV_FULL,
                LayerKind.SLIDING_MLA,
            }
        ),
        "DCP not support sliding window.",
    ),
    (frozenset({LayerKind.CHUNKED}), "DCP not support chunked local attn now."),
)
#: What dryboot plans under DCP > 1: full attention, its cache sharded by tokens across the DCP ranks
#: (checked against vLLM 0.28.0 and 0.33.0's engine start). MLA, the indexer and mamba state are not:
#: the engine-start oracle cannot build an MLA layer's DCP group, and hybrids keep replicated state.
DCP_PLANNED = frozenset({LayerKind.FULL, LayerKind.NONE})


def check_dcp_divides_tp(args: EngineArgs) -> None:
    """``ParallelConfig.__post_init__`` (0.28.0): without prefill context parallelism, DCP must
    divide TP.

    :raises InputError: "tp_size=T must be divisible by dcp_size=D.", naming ``--decode-context-parallel-size``.
    """
    dcp, tp = args.decode_context_parallel_size, args.tensor_parallel_size
    if dcp > 1 and tp % dcp:
        raise InputError(DCP_FLAG, str(dcp), f"tp_size={tp} must be divisible by dcp_size={dcp}.")


def check_dcp_kv_heads(model: ModelGeometry, args: EngineArgs) -> None:
    """``ModelConfig.verify_with_parallel_config`` (after the head and PP checks, 0.27.1-0.33.0):
    DCP on a model without MLA needs more TP ranks than KV heads, at most ``tp // kv_heads``
    DCP ranks, and query heads per KV head divisible by DCP.

    :raises InputError: vLLM's line for the first check that fails.
    """
    dcp, tp = args.decode_context_parallel_size, args.tensor_parallel_size
    if dcp == 1 or model.use_mla:
        return
    kv = model.num_kv_heads
    if tp <= kv:
        raise InputError(
            DCP_FLAG,
            str(dcp),
            f"{model.source}: Decode context parallelism for GQA/MQA requires `--tensor-parallel-size` ({tp}) to be "
            f"greater than the model's total number of KV heads ({kv}). Increase "
            "`--tensor-parallel-size` or set `--decode-context-parallel-size 1`.",
        )
    if dcp > tp // kv:
        raise InputError(
            DCP_FLAG,
            str(dcp),
            f"{model.source}: `--decode-context-parallel-size` ({dcp}) exceeds the maximum supported value "
            f"({tp // kv}) for `--tensor-parallel-size` ({tp}) and {kv} model KV heads.",
        )
    q_per_kv = model.num_attention_heads // kv
    if q_per_kv % dcp:
        raise InputError(
            DCP_FLAG,
            str(dcp),
            f"{model.source}: The model's number of query heads per KV head ({q_per_kv}) must be divisible by "
            f"`--decode-context-parallel-size` ({dcp}) for GQA/MQA.",
        )


def check_dcp_layers(model: ModelGeometry, args: EngineArgs, backend: str, dcp_backends: frozenset[str] | None) -> None:
    """DCP > 1 against the backend and the layers' caches, once the engine config stands: an
    explicit ``--attention-backend`` the release finds invalid with DCP (``dcp_backends``:
    vLLM's "DCP not supported"), vLLM's refusals of sliding-window and chunked-local caches
    (:data:`_DCP_REFUSED`), then dryboot's limits: a backend vLLM's selection would skip under
    DCP, or a cache other than full attention (:data:`DCP_PLANNED`), is refused by name.

    :raises InputError: naming ``--attention-backend`` or ``--decode-context-parallel-size``.
    """
    dcp = args.decode_context_parallel_size
    if dcp == 1:
        return
    if dcp_backends is not None and backend not in dcp_backends and not model.use_mla:
        if args.attention_backend is not None:
            raise InputError(
                "--attention-backend",
                args.attention_backend,
                f"Selected backend AttentionBackendEnum.{backend} is not valid for this configuration. "
                "Reason: ['DCP not supported']",
            )
        raise InputError(
            DCP_FLAG,
            str(dcp),
            f"vLLM's selection skips {backend} under DCP (it does not support DCP) and picks another backend, "
            "which dryboot does not model: give --attention-backend FLASH_ATTN or FLASHINFER",
        )
    kinds = set(model.layer_kinds)
    for refused, words in _DCP_REFUSED:
        if kinds & refused:
            raise InputError(DCP_FLAG, str(dcp), f"AssertionError: {words}")
    others = sorted(k.value for k in kinds - DCP_PLANNED)
    if others or model.use_mla:
        raise InputError(
            DCP_FLAG,
            str(dcp),
            f"decode context parallelism with {', '.join(others) or 'mla'} caches (vLLM shards MLA caches by tokens "
            "and keeps mamba state replicated) was not checked against vLLM's engine start: not modelled",
        )


@lru_cache(maxsize=1)
def _pp_support() -> tuple[frozenset[str], frozenset[str]]:
    """(architectures without ``SupportsPP``, architectures not inspectable) of vLLM 0.28.0's
    registry, as ``scripts/vllm_pp_support.py`` read them from vLLM itself."""
    data = json.loads(Path(DATA, "vllm-0.28.0-no-pp.json").read_text(encoding="utf-8"))
    return frozenset(data["no_pp"]), frozenset(data["unknown"])


#: architectures 0.28.0's class could not be inspected for (``"unknown"`` in the table) whose class in
#: the one release dryboot plans them on implements ``SupportsPP``, recorded served under pipeline
#: parallelism there: Dots3-Note (vLLM 0.33.0's ``dots3_note/nvidia/multimodal.py``,
#: ``tests/fidelity/data/dots3-note/``)
PP_ON_PLANNED_RELEASE = frozenset({"Dots3NoteForCausalLM"})


def check_pipeline_parallel(architecture: str, pp: int) -> None:
    """vLLM's ``ModelConfig.verify_with_parallel_config``: pipeline parallelism needs a model
    class implementing ``SupportsPP``.

    :raises InputError: the architecture's class does not (vLLM's message), or could not be
        inspected.
    """
    no_pp, unknown = _pp_support()
    if architecture in no_pp:
        raise InputError(
            "--pipeline-parallel-size",
            str(pp),
            f"{architecture}: {NOT_SUPPORTS_PP}",
        )
    if architecture in unknown and architecture not in PP_ON_PLANNED_RELEASE:
        raise InputError(
            "--pipeline-parallel-size", str(pp), f"whether {architecture} supports pipeline parallelism is not known"
        )


def check_tensor_parallel(model: ModelGeometry, tp: int, flag: str = "--tensor-parallel-size") -> None:
    """The head splits vLLM requires: attention heads divisible by TP
    (``ModelConfig.verify_with_parallel_config``) and KV heads either divisible by TP or
    dividing it (replicated; ``QKVParallelLinear``). MLA keeps one latent head.

    :raises InputError: naming the flag, the model file and the heads that do not split.
    """
    if tp == 1 or model.mamba.attention_free:
        return
    heads = model.num_attention_heads
    if heads and heads % tp:
        raise InputError(
            flag,
            str(tp),
            f"{model.source}: total number of attention heads ({heads}) must be divisible by the "
            f"tensor parallel size ({tp})",
        )
    for other in model.parallel.extra_attention_heads:
        # layers with heads of their own assert the same while the model is built
        if other % tp:
            raise InputError(
                flag,
                str(tp),
                f"{model.source}: layers with {other} attention heads: total_num_heads % tp_size == 0 fails "
                f"(AssertionError while vLLM builds the model)",
            )
    kv = model.num_kv_heads
    if not model.use_mla and any(k.is_attention for k in model.kinds) and (kv % tp if kv >= tp else tp % kv):
        raise InputError(
            flag,
            str(tp),
            f"{model.source}: {kv} KV heads can neither be split across nor replicated over {tp} ranks",
        )


def pp_partition(num_hidden_layers: int, pp_size: int, partition: str | None = None) -> tuple[int, ...]:
    """Layers per pipeline stage (``len == pp_size``, summing to ``num_hidden_layers``).

    :param partition: ``VLLM_PP_LAYER_PARTITION``'s value, e.g. ``"10,11,11"``.
    :raises InputError: vLLM's ValueErrors for a malformed partition or one that does not match
        the stages or the layers.
    """
    if partition is not None:
        try:
            parts = tuple(int(p) for p in partition.split(","))
        except ValueError:
            raise InputError(ENV, partition, f"Invalid partition string: {partition}") from None
        if len(parts) != pp_size:
            raise InputError(ENV, partition, f"len(partitions)={len(parts)} does not match pp_size={pp_size}.")
        if sum(parts) != num_hidden_layers:
            raise InputError(
                ENV, partition, f"sum(partitions)={sum(parts)} does not match num_hidden_layers={num_hidden_layers}."
            )
        return parts
    per_stage = [num_hidden_layers // pp_size] * pp_size
    for i in range(2, num_hidden_layers % pp_size + 2):
        per_stage[-i] += 1
    return tuple(per_stage)


def pp_stage_ranges(num_hidden_layers: int, pp_size: int, partition: str | None = None) -> list[range]:
    """Each stage's layer indices (``range(start, end)``), stage 0 first.

    :raises InputError: as :func:`pp_partition`.
    """
    out, start = [], 0
    for n in pp_partition(num_hidden_layers, pp_size, partition):
        out.append(range(start, start + n))
        start += n
    return out
