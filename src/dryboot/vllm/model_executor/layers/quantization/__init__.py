"""vLLM's ``layers/quantization``: each method's weight layout, as vLLM holds it after loading."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from dryboot.errors import InputError
from dryboot.vllm.model_executor.layers.quantization.auto_awq import awq_from_config
from dryboot.vllm.model_executor.layers.quantization.auto_gptq import WNA16, gptq_from_config
from dryboot.vllm.model_executor.layers.quantization.compressed_tensors import ct_from_config
from dryboot.vllm.model_executor.layers.quantization.inc import inc_from_config

#: ``quant_method`` values vLLM serves as weight-only integer layers, and how each is read
#: (``get_quantization_config``'s table and the configs' ``override_quantization_method``)
WNA16_METHODS: dict[str, Callable[[Mapping[str, Any]], WNA16 | None]] = {
    "gptq": gptq_from_config,
    "gptq_marlin": gptq_from_config,
    "auto_gptq": gptq_from_config,
    "awq": awq_from_config,
    "awq_marlin": awq_from_config,
    "auto_awq": awq_from_config,
    "auto-round": inc_from_config,
    # W4A16 / W8A16 only (None for its other schemes, refused by name in weights.py)
    "compressed-tensors": ct_from_config,
}


def wna16_from_config(method: str, qc: Mapping[str, Any]) -> WNA16 | None:
    """The weight-only integer scheme of a ``quantization_config`` whose ``quant_method`` is
    ``method``, or ``None`` for another method.

    :raises InputError: a scheme vLLM refuses or dryboot does not model (named)."""
    reader = WNA16_METHODS.get(method)
    return reader(qc) if reader is not None else None


@dataclass(frozen=True)
class QuantRules:
    """What differs between releases in how vLLM serves weight-only integer checkpoints.

    :param allspark: ``AllSparkLinearKernel`` is in the CUDA kernel list (0.28; not in 0.33).
    :param gptq_act_order: GPTQ ``desc_act: true`` is served (0.28); 0.33's ``VllmConfig``
        refuses it ("GPTQ group activation ordering (desc_act=True) is no longer supported").
    :param gptq_g_idx_param: ``AutoGPTQLinearMethod.create_weights`` registers ``g_idx`` (0.28; gone
        in 0.33), which Machete keeps.
    :param marlin_layer_workspace: ``MarlinLinearKernel.process_weights_after_loading`` allocates
        a workspace per layer (0.28); 0.33 takes one from the worker's workspace manager per call.
    :param oai_triton_below: the OAI Triton MoE kernels (MXFP4) serve SM 9.0 up to this capability
        (``gpt_oss_triton_kernels_moe.py``: below 11.0 up to 0.31; below 13.0 from 0.32).
    :param oai_triton_after_marlin: GPU majors whose capability family has gpt-oss's MXFP4 backend
        list move the OAI Triton kernels after Marlin and Batched Marlin
        (``fused_moe/oracle/mxfp4.py`` ``_get_priority_backends_for_gpt_oss``: consumer Blackwell,
        ``is_device_capability_family(120)``, 0.32+; recorded: gpt-oss on RTX 5090 through Marlin).
    :param modelopt_moe: ModelOpt ``MIXED_PRECISION`` and ModelOpt NVFP4 MoE experts after loading
        are checked against this release (``quant-recorded-modelopt-<version>.json``; 0.29.0-0.32.0
        at TP 1 on SM 8.6-12.0); elsewhere refused by name.
    :param modelopt_fp8_marlin: ModelOpt FP8 and plain fp8 (``Fp8LinearMethod``) per-tensor layers below
        SM 8.9 go through Marlin weight-only (0.27.1, 0.28.0, 0.31.0-0.33.0); on 0.29.0 and 0.30.0 both
        pick CUTLASS there (``_POSSIBLE_FP8_KERNELS`` lists ``CutlassFP8ScaledMMLinearKernel`` ahead of
        Marlin's and its ``is_supported`` asks for CUDA only; 0.31.0 asks ``cutlass_fp8_supported``),
        whose layout is SM 8.9's (recorded on SM 8.6: ``quant-recorded-fp8-<version>.json``'s per-tensor
        Qwen3-8B rows).
    :param humming_before_marlin: capabilities (``major * 10 + minor``) on which the release puts
        the Humming kernels (``humming-kernels``, a requirement of the CUDA wheel) ahead of Marlin
        (0.33 ``humming/priority.py`` ``prioritize_humming``: SM 9.0); their layouts:
        :mod:`dryboot.vllm.model_executor.kernels.linear.humming`.
        Recorded on both releases that rank it so: 0.33.0 with the ``humming-kernels`` 0.1.19 its
        CUDA wheel pins, 0.32.0 with 0.1.17 (whose package imports ``triton`` and
        ``cuda-bindings`` at import, absent from the CPU boot environment: the oracle stands them
        in for humming's own imports, ``quant_fakes.humming_import_stand_ins``). The layouts are
        the same on both: the package's shape rules (``transform.py``, ``ops/weight.py``) are
        unchanged between 0.1.17 and 0.1.19, and 0.32.0's integration differs from 0.33.0's in
        what keeps no tensor (``utils/humming.py`` ``_patch_humming``, a cached ``DeviceInfo``;
        ``replace_parameter`` in place of a new ``Parameter``; the MoE forward's alignment).
    :param gptq_empty_read: how ``utils/gptq_utils.py`` ``is_layer_gptq_quantized`` reads GPTQ's
        ``modules_in_block_to_quantize`` left empty by a checkpoint holding no quantized tensor
        (:func:`~dryboot.vllm.model_executor.layers.quantization.auto_gptq.gptq_empty_read`):
        ``unquantized`` (no layer: 0.27.1-0.31.0, each recorded with vLLM's loader run; the
        checkpoint loads), ``quantized`` (every linear layer, then vLLM fails loading the float
        weights: 0.32.0, 0.33.0, each recorded).
    :param humming_wfp8a16_locks: the locks of ``HummingFP8ScaledMMLinearKernel``, which every
        release lists ahead of Marlin for weight-only fp8 (compressed-tensors fp8 below SM 8.9,
        ``_POSSIBLE_WFP8A16_KERNELS``): ``fixed`` (1024 int32 per layer, 0.27.1-0.31.0) or ``sm``
        (``create_humming_locks``, ``8 x SMs`` int32, 0.32.0+); the layouts:
        :func:`~dryboot.vllm.model_executor.layers.quantization.scaled_mm.humming_fp8_linear_bytes`,
        recorded with the ``humming-kernels`` each release pins (``quant-recorded-humfp8-<version>.json``).
    """

    allspark: bool = True
    gptq_act_order: bool = True
    gptq_g_idx_param: bool = True
    marlin_layer_workspace: bool = True
    oai_triton_below: int = 110
    oai_triton_after_marlin: tuple[int, ...] = ()
    modelopt_moe: bool = False
    modelopt_fp8_marlin: bool = True
    humming_before_marlin: tuple[int, ...] = ()
    gptq_empty_read: str = "unquantized"
    humming_wfp8a16_locks: str = "fixed"


#: the releases whose GPTQ / AWQ / AutoRound layouts are checked against vLLM itself
#: (``tests/fidelity/data/weights/quant-recorded-<version>.json``)
QUANT_RULES = {
    # 0.27.1's GPTQ / AWQ / INC / compressed-tensors linear methods and Marlin / Machete kernels
    # are 0.28.0's (the differences are XPU paths and MoE shard counts)
    "0.27.1": QuantRules(modelopt_moe=True),
    "0.28.0": QuantRules(modelopt_moe=True),
    # 0.29.0's GPTQ / AWQ / INC / compressed-tensors linear methods and Marlin / Machete / AllSpark
    # kernels are 0.28.0's (act-order served, ``g_idx`` registered, a Marlin workspace per layer);
    # its ModelOpt FP8 layers below SM 8.9 are 0.30.0's (CUTLASS's layout: recorded on SM 8.6);
    # ModelOpt MoE: uniform NVFP4 Qwen3-MoE and nvidia/Qwen3.6-35B-A3B-NVFP4 (MIXED_PRECISION; its
    # wrapper's import of fastapi, through vllm/tokenizers/mistral.py, is in 0.29.0's pins since 2026-12-06)
    "0.29.0": QuantRules(modelopt_fp8_marlin=False, modelopt_moe=True),
    # 0.30.0: GPTQ loses ``g_idx`` and refuses act-order (``gptq_utils.py``
    # ``normalize_and_validate_gptq_desc_act``); AllSpark and the per-layer Marlin workspace stay
    "0.30.0": QuantRules(gptq_act_order=False, gptq_g_idx_param=False, modelopt_moe=True, modelopt_fp8_marlin=False),
    # 0.31.0: 0.30.0's GPTQ rules, and 0.33.0's kernels: no AllSpark in the CUDA list, no per-layer
    # Marlin workspace (linear layers and MoE experts take the worker's); Humming after Marlin, the
    # OAI Triton MoE kernels below SM 11.0
    "0.31.0": QuantRules(
        allspark=False, gptq_act_order=False, gptq_g_idx_param=False, marlin_layer_workspace=False, modelopt_moe=True
    ),
    # 0.32.0: 0.31.0's, with 0.33.0's Humming ahead of Marlin on SM 9.0 (``prioritize_humming``; its
    # layouts 0.33.0's: quant-recorded-humming-0.32.0.json, quant-recorded-mm3hum-0.32.0.json) and
    # the OAI Triton MoE kernels up to SM 12.x
    "0.32.0": QuantRules(
        allspark=False,
        gptq_act_order=False,
        gptq_g_idx_param=False,
        marlin_layer_workspace=False,
        oai_triton_below=130,
        oai_triton_after_marlin=(12,),
        modelopt_moe=True,
        humming_before_marlin=(90,),
        gptq_empty_read="quantized",
        humming_wfp8a16_locks="sm",
    ),
    "0.33.0": QuantRules(
        allspark=False,
        gptq_act_order=False,
        gptq_g_idx_param=False,
        marlin_layer_workspace=False,
        oai_triton_below=130,
        oai_triton_after_marlin=(12,),
        modelopt_moe=True,
        humming_before_marlin=(90,),
        gptq_empty_read="quantized",
        humming_wfp8a16_locks="sm",
    ),
}


def quant_rules(version: str) -> QuantRules:
    """The rules of ``version``.

    :raises InputError: a release whose layouts are not checked (named with those that are)."""
    rules = QUANT_RULES.get(version)
    if rules is None:
        raise InputError(
            "--vllm-version",
            None,
            f"GPTQ/AWQ/AutoRound weights are checked on vLLM {', '.join(QUANT_RULES)} only, not {version}",
        )
    return rules
