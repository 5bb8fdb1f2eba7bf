"""fp8 block-quantized weights under tensor parallelism: the shape checks vLLM runs while it builds
the model (vLLM 0.28.0 ``model_executor/layers/quantization/utils/fp8_utils.py``
``validate_fp8_block_shape``; ``quantization/fp8.py`` ``Fp8MoEMethod.create_weights``).

A checkpoint's ``quantization_config`` gives its weight blocks (``weight_block_size`` of the
``fp8`` method, ``block_structure`` of a compressed-tensors ``block`` scheme): ``[block_n,
block_k]``. Under TP each sharded layer's partition must hold whole blocks:

* a fused MoE's experts (``moe_intermediate_size / tp``): a multiple of ``block_n`` ("The
  output_size of gate's and up's weight = N is not divisible by weight quantization block_n = B.")
  and, under TP, of ``block_k`` (the down projection's input). From 0.29 (``VersionRules
  .fp8_moe_block_refine``) vLLM refines the block scales to a finer block of at least 32 that
  divides the shard (``fused_moe/oracle/fp8.py`` ``refine_fp8_moe_block_shape``), so only a shard
  no such block divides is refused.
* a column-parallel MLP (the dense ``intermediate_size``, a shared expert's width): each
  ``gate_up_proj`` output partition a multiple of ``block_n`` ("Weight output_partition_size = N is
  not divisible by weight quantization block_n = B."), on every release.

Checked are the layers whose shard sizes the config names; attention projections (whose heads
split in whole ``head_dim`` slices, multiples of 128 in the published fp8 checkpoints) and layers
the config leaves unquantized by a name with ``shared_expert`` are not.
"""

from __future__ import annotations

from typing import Any

from dryboot.errors import InputError

__all__ = ["block_shards", "check_block_shards"]

#: the smallest refined block vLLM's MoE scales take (``refine_fp8_moe_block_shape``)
MIN_REFINED_BLOCK = 32


def _weight_block(q: dict[str, Any]) -> tuple[int, int] | None:
    """``[block_n, block_k]`` of a block-quantized checkpoint, or ``None``."""
    block = q.get("weight_block_size")
    if block is None:
        groups = q.get("config_groups")
        for group in groups.values() if isinstance(groups, dict) else ():
            weights = group.get("weights") if isinstance(group, dict) else None
            if isinstance(weights, dict) and weights.get("strategy") == "block":
                block = weights.get("block_structure")
                break
    if (
        isinstance(block, list)
        and len(block) == 2
        and all(isinstance(b, int) and not isinstance(b, bool) and b > 0 for b in block)
    ):
        return block[0], block[1]
    return None


def block_shards(q: Any, text: dict[str, Any]) -> tuple[tuple[str, int, int, int], ...]:
    """The TP-sharded widths of a block-quantized checkpoint: ``(kind, width, block_n, block_k)``
    with kind ``linear`` (a column-parallel MLP: the dense ``intermediate_size``, a shared expert's
    ``shared_expert_intermediate_size`` or ``n_shared_experts * moe_intermediate_size``) or
    ``moe`` (a fused MoE's ``moe_intermediate_size``; with ``num_local_experts`` and no
    ``moe_intermediate_size``, the Mixtral-style ``intermediate_size``), in the order vLLM builds them. Empty for a
    checkpoint without fp8 weight blocks. ``q`` is the ``quantization_config``; ``text`` the
    language model's fields."""
    if not isinstance(q, dict) or str(q.get("quant_method") or "").lower() not in ("fp8", "compressed-tensors"):
        return ()
    block = _weight_block(q)
    if block is None:
        return ()

    def width(key: str) -> int | None:
        v = text.get(key)
        return v if isinstance(v, int) and not isinstance(v, bool) and v > 0 else None

    ignored = q.get("ignore") or q.get("modules_to_not_convert") or q.get("ignored_layers") or []
    shared_ignored = isinstance(ignored, list) and any("shared_expert" in str(p) for p in ignored)
    out: list[tuple[str, int, int, int]] = []
    dense = width("intermediate_size")
    moe = width("moe_intermediate_size")
    experts = width("num_local_experts")
    if moe is None and experts is not None and experts > 1:
        # Mixtral-style configs (MiniMax-M2, Mixtral, PhiMoE, ...): intermediate_size is the experts' width
        dense, moe = None, dense
    if dense is not None and moe is not None:
        out.append(("linear", dense, *block))
    shared = width("shared_expert_intermediate_size")
    n_shared = width("n_shared_experts")
    if shared is None and n_shared is not None and moe is not None:
        shared = n_shared * moe
    if shared is not None and not shared_ignored:
        out.append(("linear", shared, *block))
    if moe is not None:
        out.append(("moe", moe, *block))
    return tuple(out)


def check_block_shards(
    shards: tuple[tuple[str, int, int, int], ...], tp: int, source: str, *, moe_refine: bool
) -> None:
    """Refuse a TP size whose shard of a block-quantized layer holds a partial block, with vLLM's
    own message (:func:`block_shards`; ``moe_refine``: the release refines MoE block scales).

    :raises InputError: naming ``--tensor-parallel-size`` and the layer's shard.
    """
    if tp == 1:
        return
    for kind, full, block_n, block_k in shards:
        if full % tp:
            continue  # another rule refuses an uneven split (or the layer is replicated)
        part = full // tp
        if kind == "linear" and part % block_n:
            reason = (
                f"Weight output_partition_size = {part} is not divisible by weight quantization block_n = {block_n}."
            )
        elif kind == "moe" and (part % block_n or part % block_k):
            if moe_refine and all(part % b == 0 for b in _refined(block_n, block_k)):
                continue
            if part % block_n:
                reason = (
                    f"The output_size of gate's and up's weight = {part} is not divisible by weight "
                    f"quantization block_n = {block_n}."
                )
            else:
                reason = (
                    f"The input_size of down's weight = {part} is not divisible by weight quantization "
                    f"block_k = {block_k}."
                )
        else:
            continue
        raise InputError(
            "--tensor-parallel-size",
            str(tp),
            f"{source}: ValueError: {reason} (fp8 block-quantized weights: vLLM refuses while it builds the model)",
        )


def _refined(block_n: int, block_k: int) -> tuple[int, int]:
    """The smallest refined ``[block_n, block_k]`` vLLM may take (at least 32, dividing the
    checkpoint's blocks)."""
    return (min(block_n, MIN_REFINED_BLOCK), min(block_k, MIN_REFINED_BLOCK))
