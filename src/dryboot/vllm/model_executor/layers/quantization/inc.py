"""AutoRound checkpoints (``quant_method: auto-round``), as vLLM 0.28.0 serves them: ``inc/inc.py``
``INCConfig`` (the INC method) and ``inc/config_parser.py`` (per-layer schemes from
``extra_config`` and ``block_name_to_quantize``); a weight-only integer layer is served by GPTQ's
or AWQ's Marlin-family method (``inc/schemes/inc_wna16_linear.py``) by its ``packing_format``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dryboot.errors import InputError
from dryboot.vllm.model_executor.layers.quantization.auto_gptq import WNA16, LayerScheme, bool_field, int_field

#: characters that make an ``extra_config`` key a regular expression (``config_parser.py``)
REGEX_CHARS = set(r"*+?^$()[]{}|\\")


def inc_from_config(qc: Mapping[str, Any]) -> WNA16:
    """``INCConfig.from_config``: ``bits``, ``group_size``, ``sym``, ``packing_format``
    (``auto_round:auto_gptq`` by default, or ``auto_round:auto_awq``), ``data_type`` ``int``,
    ``extra_config`` (per layer; ``bits >= 16``: kept in 16 bits; an ``lm_head`` entry quantizes
    the ``ParallelLMHead``, which vLLM's ``INCConfig.get_quant_method`` serves like a linear
    layer), ``block_name_to_quantize``.
    GPTQ packing is served without act-order (``desc_act`` is ignored).

    :raises InputError: what is not modelled (MXFP data types, the llm_compressor packing,
        regular-expression ``extra_config`` keys, asymmetric GPTQ packing).
    """
    data_type = str(qc.get("data_type", "int"))
    packing = str(qc.get("packing_format", "auto_round:auto_gptq"))
    if data_type != "int":
        raise InputError("quantization_config", "data_type", f"AutoRound {data_type!r} weights are not modelled")
    if packing not in ("auto_round:auto_gptq", "auto_round:auto_awq"):
        raise InputError("quantization_config", "packing_format", f"AutoRound {packing!r} is not modelled")
    base = LayerScheme(int_field(qc, "bits"), int_field(qc, "group_size"), bool_field(qc, "sym"))
    extra = qc.get("extra_config") or {}
    if not isinstance(extra, Mapping):
        raise InputError("quantization_config", "extra_config", "not an object")
    per_layer: list[tuple[str, LayerScheme | None]] = []
    for key, cfg in extra.items():
        if any(c in REGEX_CHARS for c in str(key)):
            raise InputError("quantization_config", "extra_config", f"{key}: pattern keys are not modelled")
        if not isinstance(cfg, Mapping):
            raise InputError("quantization_config", f"extra_config.{key}", "not an object")
        bits = int_field(cfg, "bits", default=base.bits)
        scheme = (
            None
            if bits >= 16
            else LayerScheme(
                bits, int_field(cfg, "group_size", default=base.group_size), bool_field(cfg, "sym", base.sym)
            )
        )
        if scheme is not None and str(key) != "lm_head" and str(key).endswith(".lm_head"):
            raise InputError(
                "quantization_config", f"extra_config.{key}", f"a {bits}-bit LM head under a prefix is not modelled"
            )
        per_layer.append((_text_name(str(key)), scheme))
    backend = str(qc.get("backend", qc.get("vllm_backend", "auto")))
    if backend not in ("auto", "marlin", "gptq:marlin", "awq:marlin"):
        raise InputError("quantization_config", "backend", f"AutoRound backend {backend!r} is not modelled")
    awq = "awq" in packing
    schemes = [base, *(s for _, s in per_layer if s is not None)]
    for s in schemes:
        if awq and (s.bits != 4 or s.sym):
            raise InputError(
                "quantization_config", "bits", f"AutoRound AWQ packing bits={s.bits}, sym={s.sym}: not modelled"
            )
        if not awq and (s.bits, s.sym) not in ((4, True), (8, True)):
            raise InputError(
                "quantization_config",
                "bits",
                f"AutoRound GPTQ packing bits={s.bits}, sym={s.sym}: not served by Marlin",
            )
    blocks = qc.get("block_name_to_quantize", qc.get("to_quant_block_names"))
    prefixes = None
    if blocks:
        if not isinstance(blocks, (str, list)):
            raise InputError("quantization_config", "block_name_to_quantize", "not a string or a list")
        prefixes = tuple(_text_name(str(b)) for b in (blocks.split(",") if isinstance(blocks, str) else blocks))
    return WNA16("awq" if awq else "gptq", base, per_layer=tuple(per_layer), quantize_prefixes=prefixes)


def _text_name(name: str) -> str:
    """A checkpoint name of a vision-language wrapper's text model (``model.language_model.layers.3``,
    Qwen3-VL's and Qwen3.5's layout) as the text model's layer is named (``model.layers.3``): vLLM maps
    ``extra_config`` keys and ``block_name_to_quantize`` through the model's ``hf_to_vllm_mapper``."""
    head = "model.language_model."
    return "model." + name[len(head) :] if name.startswith(head) else name
