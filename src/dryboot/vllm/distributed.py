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
from dryboot.vllm.config.hf import ModelGeometry
from dryboot.vllm.engine_args import ASSUMED_GPUS_PER_NODE, EngineArgs

ENV = "VLLM_PP_LAYER_PARTITION"
#: vLLM's refusal of pipeline parallelism for a model class without ``SupportsPP``
NOT_SUPPORTS_PP = (
    "Pipeline parallelism is not supported for this model. Supported models implement the `SupportsPP` interface."
)


def pp_refused(pp: int, who: str, reason: str = NOT_SUPPORTS_PP) -> InputError:
    """The refusal of ``--pipeline-parallel-size pp`` for ``who`` (an architecture, a drafter)."""
    return InputError("--pipeline-parallel-size", str(pp), f"{who}: {reason}")


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


@lru_cache(maxsize=1)
def _pp_support() -> tuple[frozenset[str], frozenset[str]]:
    """(architectures without ``SupportsPP``, architectures not inspectable) of vLLM 0.28.0's
    registry, as ``scripts/vllm_pp_support.py`` read them from vLLM itself."""
    data = json.loads(Path(DATA, "vllm-0.28.0-no-pp.json").read_text(encoding="utf-8"))
    return frozenset(data["no_pp"]), frozenset(data["unknown"])


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
    if architecture in unknown:
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
