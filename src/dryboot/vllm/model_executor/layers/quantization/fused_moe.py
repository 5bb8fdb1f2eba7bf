"""MoE experts under compressed-tensors' W8A8 (int8, fp8) and NVFP4 W4A4 schemes, as vLLM holds
them after ``process_weights_after_loading``: ``compressed_tensors_moe_w8a8_int8.py``,
``compressed_tensors_moe_w8a8_fp8.py``, ``compressed_tensors_moe_w4a4_nvfp4.py`` over the
expert backend vLLM picks per GPU (``fused_moe/oracle/int8.py``, ``fp8.py``, ``nvfp4.py``).

A ``FusedMoE`` layer of ``e`` local experts, hidden ``h``, intermediate ``i`` per rank
(``w13``: ``[e, 2i, h]``, ``w2``: ``[e, h, i]``), checked against vLLM 0.28.0 and 0.33.0 on the
meta device (``tests/fidelity/quant_cases_moe.py``; 0.29.0 / 0.31.0 / 0.32.0 at TP 1 too; 0.30.0:
``quant_cases_llama4.py``'s experts; other releases refused by name, :data:`SCALED_EXPERTS_RELEASES`):

* int8 (channel weights, dynamic per-token inputs; ``TritonExperts``, the only CUDA backend):
  int8 weights as loaded, float32 ``w13_weight_scale [e, 2i, 1]`` / ``w2_weight_scale [e, h, 1]``.
* fp8 below SM 8.9 (``MarlinExperts``, weight-only; ``prepare_fp8_moe_layer_for_marlin``): the
  weights repacked per expert by ``gptq_marlin_repack`` (8-bit: their bytes), the scales in the
  activation dtype ``[e, 1, n]`` (channel) or ``[e, ceil(k / bk), n]`` (blocks: each block's
  scale repeated over its ``bn`` columns), a workspace of four int32 per SM (0.28; not 0.33).
* fp8 channel weights on SM 8.9 and from SM 11.0 (``TritonExperts``: the CUTLASS grouped GEMM
  serves SM 9.0 up to 11.0, FlashInfer takes per-tensor and block scales only): fp8 weights,
  float32 scales ``[e, 2i, 1]`` / ``[e, h, 1]``.
* fp8 ``[bn, bk]`` blocks on SM 8.9 and SM 9.0 (TP without expert parallelism: vLLM moves Triton
  to the front on Hopper): fp8 weights, float32 ``[e, 2 ceil(i / bn), ceil(h / bk)]`` /
  ``[e, ceil(h / bn), ceil(i / bk)]``.
* plain fp8 (``Fp8MoEMethod``) ``[bn, bk]`` blocks on SM 10.x (FlashInfer TRT-LLM's
  ``TrtLlmFp8ExpertsMonolithic``: ``prepare_fp8_moe_layer_for_fi`` shuffles the weights into
  ``[e, 2i / 128, h, 128]`` tiles and transposes the scales, the same bytes; recorded on 0.27.1,
  0.28.0 and 0.30.0, the releases whose SM 10.x block layers are checked) and SM 12.x: as loaded.
* NVFP4 below SM 10.0 (``MarlinExperts``, weight-only; ``prepare_nvfp4_moe_layer_for_marlin``):
  the packed weights repacked (their bytes, ``n x k / 2``), the fp8 group scales permuted
  (``[e, k / 16, n]``), float32 global scales kept as loaded (weight and input: ``[e, 2]`` for
  ``w13``, ``[e]`` for ``w2``) and ``w13_weight_scale_2`` / ``w2_weight_scale_2`` ``[e]``, the
  workspace as above.

Refused by name: fp8 channel weights on SM 9.0-10.x (vLLM's CUTLASS grouped GEMM, whose
per-layer stride tensors the oracle cannot build), fp8 per-tensor weights (FlashInfer CUTLASS
from SM 9.0), compressed-tensors' fp8 blocks on SM 10.0+ (FlashInfer TRT-LLM, DeepGEMM where
installed; not recorded), NVFP4 on SM
10.0+ (FlashInfer CUTLASS / TRT-LLM), shapes Marlin pads. Where 0.33 ranks Humming ahead of
Marlin (SM 9.0) NVFP4 experts take Humming's layout (:func:`~dryboot.vllm.model_executor.layers.
quantization.scaled_mm.humming_nvfp4_experts_bytes`).
"""

from __future__ import annotations

from dryboot.errors import InputError
from dryboot.vllm.model_executor.kernels.linear.mixed_precision import UNKNOWN_SM_COUNT
from dryboot.vllm.model_executor.layers.quantization.scaled_mm import (
    ScaledQuant,
    ScaledScheme,
    humming_nvfp4_experts_bytes,
)

#: releases whose compressed-tensors W8A8 / NVFP4 experts after loading are recorded
#: (quant_cases_moe.py on 0.28.0 / 0.33.0 at TP 1 and 2, on 0.29.0 / 0.31.0 / 0.32.0 at TP 1 on SM
#: 8.6 / 8.9 / 9.0; quant_cases_llama4.py on 0.27.1 / 0.28.0 / 0.30.0 / 0.33.0; 0.27.1's Qwen3-MoE at TP 1
#: on SM 8.6 / 8.9 / 9.0; its compressed-tensors fp8 below SM 8.9 is Humming's, refused in weights.py)
SCALED_EXPERTS_RELEASES = ("0.27.1", "0.28.0", "0.29.0", "0.30.0", "0.31.0", "0.32.0", "0.33.0")


#: the NVFP4 schemes whose experts these layouts give: W4A4 and weight-only (W4A16, ``use_a16``)
NVFP4_KINDS = ("nvfp4", "nvfp4_a16")


def _ceil(x: int, m: int) -> int:
    return -(-x // m)


def scaled_experts_refusal(s: ScaledScheme, capability: int, *, plain_fp8: bool = False) -> str | None:
    """Why the experts of scheme ``s`` on SM ``capability`` (``major * 10 + minor``) are not given,
    or ``None`` (the same on 0.28.0 and 0.33.0; the release's own gates are the callers').
    ``plain_fp8``: ``Fp8MoEMethod`` (``Fp8Config``), whose block experts on SM 12.x keep the
    layout as loaded (recorded on 0.27.1 / 0.30.0 / 0.33.0, and two public boots of 0.27.1 and
    0.30.0 on RTX PRO 6000 Blackwell and GB10 log it to the hundredth), and on SM 10.x hold the
    same bytes shuffled for FlashInfer TRT-LLM (recorded on 0.27.1 / 0.28.0 / 0.30.0; the
    releases and SM 11.x are gated by the caller, ``weights._fp8_post_load``)."""
    sm = f"SM {capability // 10}.{capability % 10}"
    if s.kind == "int8":
        return None if s.strategy == "channel" and not s.static_input else "int8 MoE experts other than channel weights"
    if s.kind == "nvfp4_a16":  # weight-only: MarlinExperts on every SM (no FlashInfer / CUTLASS backend takes it)
        return None
    if s.kind == "nvfp4":
        if capability >= 100:
            return f"NVFP4 MoE experts on {sm} (FlashInfer CUTLASS / TRT-LLM layouts) are not modelled"
        return None
    if s.strategy == "tensor":
        return "fp8 per-tensor MoE experts (FlashInfer CUTLASS from SM 9.0, requantized per expert) are not modelled"
    if capability < 89:
        return None
    if s.strategy == "channel":
        if 90 <= capability < 110:  # ops.cutlass_group_gemm_supported: SM 9.0 up to 11.0
            return (
                f"fp8 channel MoE experts on {sm}: vLLM's CUTLASS grouped-GEMM experts (their stride tensors) "
                "are not modelled"
            )
        return None
    # blocks: Triton up to SM 9.0 (on Hopper vLLM moves it to the front for TP); from SM 10.0
    # FlashInfer TRT-LLM, or DeepGEMM where installed
    if capability >= 100 and not plain_fp8:
        return f"fp8 block MoE experts on {sm}: FlashInfer TRT-LLM's / DeepGEMM's layouts are not modelled"
    return None


def scaled_experts_bytes(
    q: ScaledQuant, s: ScaledScheme, e: int, h: int, i: int, act_bytes: int
) -> list[tuple[str, int]]:
    """What a ``FusedMoE`` layer of scheme ``s`` holds after loading, as (kind, bytes) (see the
    module's docstring).

    :raises InputError: what is not modelled (named)."""
    if not q.plain_fp8 and not q.experts_checked:
        raise InputError(
            "quantization_config",
            "config_groups",
            f"compressed-tensors {s.kind} MoE experts after loading are checked on vLLM "
            f"{', '.join(SCALED_EXPERTS_RELEASES)} only",
        )
    refused = scaled_experts_refusal(s, q.capability, plain_fp8=q.plain_fp8)
    if refused:
        raise InputError("quantization_config", "config_groups", refused)
    if s.kind in NVFP4_KINDS and q.humming:  # 0.33 SM 9.0: the HUMMING backend ahead of Marlin
        return humming_nvfp4_experts_bytes(e, h, i, sm_count=q.sm_count)
    sms = q.sm_count if q.sm_count is not None else UNKNOWN_SM_COUNT
    workspace = [("workspace", 4 * 4 * sms)] if q.layer_workspace else []
    w13, w2 = e * 2 * i * h, e * h * i
    marlin = (s.kind == "fp8" and q.capability < 89) or s.kind in NVFP4_KINDS
    if marlin and i % 64:
        raise InputError(
            "--tensor-parallel-size",
            None,
            f"Marlin MoE pads the experts' intermediate size per rank ({i}) to 64: not modelled",
        )
    if s.kind in NVFP4_KINDS:
        return [
            ("experts", w13 // 2),
            ("experts", w2 // 2),
            ("scale", w13 // 16),
            ("scale", w2 // 16),
            # w13's weight and input global scales [e, 2], w2's [e]; each one's inverse [e]
            ("scale", 4 * e * 2),
            ("scale", 4 * e * 2),
            ("scale", 4 * e),
            ("scale", 4 * e),
            ("scale", 4 * e),
            ("scale", 4 * e),
            *workspace,
        ]
    if s.kind == "fp8" and q.capability < 89:
        if s.strategy == "block":
            assert s.block is not None
            bk = s.block[1]
            scales = [("scale", e * _ceil(h, bk) * 2 * i * act_bytes), ("scale", e * _ceil(i, bk) * h * act_bytes)]
        else:
            scales = [("scale", e * 2 * i * act_bytes), ("scale", e * h * act_bytes)]
        return [("experts", w13), ("experts", w2), *scales, *workspace]
    if s.strategy == "block":
        assert s.block is not None
        bn, bk = s.block
        return [
            ("experts", w13),
            ("experts", w2),
            ("scale", 4 * e * 2 * _ceil(i, bn) * _ceil(h, bk)),
            ("scale", 4 * e * _ceil(h, bn) * _ceil(i, bk)),
        ]
    # int8 / fp8 channel weights through Triton: as loaded
    return [("experts", w13), ("experts", w2), ("scale", 4 * e * 2 * i), ("scale", 4 * e * h)]
