"""Pipeline parallelism: which decoder layers each stage builds.

Mirrors ``get_pp_indices`` (``vllm/distributed/utils.py``): ``VLLM_PP_LAYER_PARTITION`` (comma-
separated layers per stage) when set, else ``num_hidden_layers // pp`` per stage with the
remainder given one layer each to the stages before the last (the last stage holds the final
norm and the head), starting from the one just before it.
"""

from __future__ import annotations

from dryboot.errors import InputError

ENV = "VLLM_PP_LAYER_PARTITION"


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
