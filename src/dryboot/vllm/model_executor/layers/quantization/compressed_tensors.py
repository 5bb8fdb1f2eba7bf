"""compressed-tensors checkpoints (``quant_method: compressed-tensors``) whose one scheme is
weight-only integer (W4A16 / W8A16, ``pack-quantized``), as vLLM 0.28.0 serves them:
``compressed_tensors/compressed_tensors.py`` (``ignore``, ``config_groups``) and
``schemes/compressed_tensors_wNa16.py`` ``CompressedTensorsWNA16`` over the mixed-precision kernel
chosen per GPU. Every other compressed-tensors scheme is refused by name (``weights.py``)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from dryboot.errors import InputError
from dryboot.vllm.model_executor.layers.quantization.auto_gptq import WNA16, LayerScheme, bool_field, int_field


def is_wna16(qc: Mapping[str, Any]) -> bool:
    """A compressed-tensors config whose every group is weight-only integer, pack-quantized."""
    groups = qc.get("config_groups")
    if not isinstance(groups, Mapping) or not groups:
        return False
    for g in groups.values():
        if not isinstance(g, Mapping) or g.get("input_activations") is not None:
            return False
        w = g.get("weights")
        fmt = g.get("format", qc.get("format"))
        if not isinstance(w, Mapping) or w.get("type") != "int" or fmt != "pack-quantized":
            return False
    return True


def ct_from_config(qc: Mapping[str, Any]) -> WNA16 | None:
    """The W4A16 / W8A16 scheme of a compressed-tensors config, or ``None`` for another scheme.
    One config group targeting ``Linear``; ``weights``: ``num_bits`` 4 or 8, ``symmetric``,
    ``strategy`` ``group`` (``group_size``) or ``channel``; ``ignore``: layer names or ``re:``
    patterns (``re.match``) kept unquantized, a fused layer by any of its parts.

    :raises InputError: what is not modelled (several groups, other targets, ``actorder:
        group``, other strategies or bits)."""
    if not is_wna16(qc):
        return None
    groups = list(qc["config_groups"].values())
    if len(groups) != 1 or groups[0].get("targets") != ["Linear"]:
        raise InputError("quantization_config", "config_groups", "several groups or targets other than Linear")
    w = groups[0]["weights"]
    bits = int_field(w, "num_bits")
    if bits not in (4, 8):
        raise InputError("quantization_config", "num_bits", f"{bits}-bit weights are not served by vLLM's WNA16")
    strategy = w.get("strategy")
    if strategy == "group":
        group = int_field(w, "group_size")
    elif strategy == "channel":
        group = -1
    else:
        raise InputError("quantization_config", "strategy", f"{strategy!r} is not modelled")
    if w.get("actorder") == "group":
        raise InputError("quantization_config", "actorder", "group activation ordering is not modelled")
    return WNA16("ct", LayerScheme(bits, group, bool_field(w, "symmetric")), ignore=ignore_list(qc))


def ignore_list(qc: Mapping[str, Any]) -> tuple[str, ...]:
    """compressed-tensors' ``ignore``: layer names and ``re:`` patterns kept unquantized.

    :raises InputError: not a list, or a ``re:`` entry that is not a regular expression."""
    ignore = qc.get("ignore") or []
    if not isinstance(ignore, list):
        raise InputError("quantization_config", "ignore", "not a list")
    for entry in ignore:
        if str(entry).startswith("re:"):
            try:
                re.compile(str(entry)[3:])
            except re.error:
                raise InputError("quantization_config", "ignore", f"{entry!r}: not a regular expression") from None
    return tuple(str(i) for i in ignore)
