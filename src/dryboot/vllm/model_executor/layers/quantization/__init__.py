"""vLLM's ``layers/quantization``: each method's weight layout, as vLLM holds it after loading."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dryboot.vllm.model_executor.layers.quantization.auto_awq import awq_from_config
from dryboot.vllm.model_executor.layers.quantization.auto_gptq import WNA16, gptq_from_config
from dryboot.vllm.model_executor.layers.quantization.inc import inc_from_config

#: ``quant_method`` values vLLM serves as weight-only integer layers, and how each is read
#: (``get_quantization_config``'s table and the configs' ``override_quantization_method``)
WNA16_METHODS = {
    "gptq": gptq_from_config,
    "gptq_marlin": gptq_from_config,
    "auto_gptq": gptq_from_config,
    "awq": awq_from_config,
    "awq_marlin": awq_from_config,
    "auto_awq": awq_from_config,
    "auto-round": inc_from_config,
}


def wna16_from_config(method: str, qc: Mapping[str, Any]) -> WNA16 | None:
    """The weight-only integer scheme of a ``quantization_config`` whose ``quant_method`` is
    ``method``, or ``None`` for another method.

    :raises InputError: a scheme vLLM refuses or dryboot does not model (named)."""
    reader = WNA16_METHODS.get(method)
    return reader(qc) if reader is not None else None
