"""AWQ checkpoints (``quant_method: awq``), as vLLM 0.28.0 serves them on CUDA: ``auto_awq.py``
``AutoAWQConfig`` / ``AutoAWQMarlinLinearMethod`` (``_convert_awq_to_standard_format``, then the
mixed-precision kernel chosen per GPU: Machete on SM 9.0, else Marlin)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dryboot.errors import InputError
from dryboot.vllm.model_executor.kernels.linear.mixed_precision import MARLIN_GROUP_SIZES
from dryboot.vllm.model_executor.layers.quantization.auto_gptq import WNA16, LayerScheme, bool_field, int_field


def awq_from_config(qc: Mapping[str, Any]) -> WNA16:
    """``AutoAWQConfig.from_config``: ``bits`` (or ``w_bit``), ``group_size`` (or
    ``q_group_size``), ``zero_point``, ``modules_to_not_convert`` (substrings left unquantized).

    :raises InputError: what is not modelled: other than 4 bits, a group size Marlin does not
        take (vLLM's unoptimized AWQ kernel), symmetric AWQ, a quantized LM head.
    """
    bits = int_field(qc, "bits", "w_bit")
    group = int_field(qc, "group_size", "q_group_size")
    if bits != 4:
        raise InputError("quantization_config", "bits", f"AWQ {bits}-bit is not modelled (vLLM serves 4-bit)")
    if group not in MARLIN_GROUP_SIZES:
        raise InputError(
            "quantization_config", "group_size", f"AWQ group_size {group}: vLLM's unoptimized AWQ kernel, not modelled"
        )
    if not bool_field(qc, "zero_point", True):
        raise InputError("quantization_config", "zero_point", "symmetric AWQ is not modelled")
    if qc.get("lm_head"):
        raise InputError("quantization_config", "lm_head", "an AWQ-quantized LM head is not modelled")
    skip_list = qc.get("modules_to_not_convert") or []
    if not isinstance(skip_list, list):
        raise InputError("quantization_config", "modules_to_not_convert", "not a list")
    skip = tuple(str(m) for m in skip_list)
    return WNA16("awq", LayerScheme(bits, group, sym=False), skip=skip)
