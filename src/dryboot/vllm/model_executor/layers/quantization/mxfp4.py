"""MXFP4 checkpoints (``quant_method: mxfp4``: gpt-oss), as vLLM serves their experts on CUDA:
``quantization/mxfp4.py`` ``GptOssMxfp4Config`` / ``GptOssMxfp4MoEMethod`` over the MoE backend
``fused_moe/oracle/mxfp4.py`` ``select_mxfp4_moe_backend`` picks per GPU, whose padding
(``mxfp4_round_up_hidden_size_and_intermediate_size``) and post-load conversion
(``convert_gpt_oss_weight_to_mxfp4_moe_kernel_format``) decide what stays allocated.

Modelled: the Marlin backend (``utils/marlin_utils_fp4.py`` ``prepare_moe_mxfp4_layer_for_marlin``),
whose every shape is declared in Python (the repack through ``gptq_marlin_repack``'s
``register_fake``), and the OAI Triton backend on SM 9.0 (``utils/mxfp4_utils.py``
``_swizzle_mxfp4`` over the vendored ``vllm/third_party/triton_kernels``: ``HopperMXValueLayout`` /
``HopperMXScaleLayout``, pure torch reshapes and pads) and FlashInfer TRT-LLM on SM 10.x (row
permutations that keep the shapes, ``block_scale_interleave``'s padded scales, the cached permute
indices), each on the releases it is checked for (:data:`GPT_OSS_CHECKED`). Refused by name: the
OAI Triton backend off SM 9.0 (SM 11.x from 0.32: triton_kernels' Blackwell layouts; SM 12.x, where
0.32+ put Marlin first, only under ``--moe-backend``: not modelled), the releases not
checked.
"""

from __future__ import annotations

from dryboot.errors import InputError
from dryboot.vllm.model_executor.kernels.linear.humming import HummingLayer, humming_locks_bytes, humming_tensors

#: OCP MX block: one e8m0 scale per 32 fp4 values
MXFP4_BLOCK = 32
#: ``mxfp4_round_up_hidden_size_and_intermediate_size`` for Marlin on CUDA: (hidden, intermediate)
MARLIN_ROUND_UP = (256, 128)


def _round_up(x: int, m: int) -> int:
    return -(-x // m) * m


def gpt_oss_mxfp4_backend(capability: int, triton_below: int, triton_after_marlin: tuple[int, ...] = ()) -> str:
    """The backend vLLM picks for gpt-oss's MXFP4 experts with 16-bit activations on a CUDA GPU
    of ``capability`` (``major * 10 + minor``), as ``select_mxfp4_moe_backend`` walks
    ``_get_priority_backends_for_gpt_oss`` (the BF16-activation variants, no ``--moe-backend``,
    the CUDA wheel's FlashInfer and triton_kernels installed): FlashInfer TRT-LLM on SM 10.x,
    the OAI Triton kernels from SM 9.0 up to ``triton_below`` (110 up to 0.31, 130 from 0.32)
    except on the GPU majors of ``triton_after_marlin`` (0.32+: SM 12.x, where the list puts them
    after Marlin), FlashInfer CUTLASS (SM 9.0, after Triton: never reached), Marlin from SM 7.5.

    :raises InputError: below SM 7.5 (no backend: vLLM refuses)."""
    if 100 <= capability < 110:
        return "FLASHINFER_TRTLLM_MXFP4_BF16"
    if 90 <= capability < triton_below and capability // 10 not in triton_after_marlin:
        return "TRITON"
    if capability >= 75:
        return "MARLIN"
    raise InputError(
        "--gpu", None, f"no MXFP4 MoE backend serves SM {capability // 10}.{capability % 10} (vLLM refuses)"
    )


#: ``mxfp4_round_up_hidden_size_and_intermediate_size`` for the OAI Triton backend on CUDA (no rule
#: of its own: the intermediate per rank to a multiple of 64, the hidden size as is)
TRITON_INTERMEDIATE_ROUND_UP = 64
#: ``HopperMXValueLayout.swizzle_data`` (``mma_version`` 3): the packed weight ``[M, K / 2]`` padded
#: to (rows, bytes) multiples of (k_tile x warp_tile x threads x scott_trick x contig per axis:
#: 1 x 2 x 4 x 2 x 1, 4 x 2 x 4 x 1 x 1)
HOPPER_VALUE_PAD = (16, 32)
#: ``HopperMXScaleLayout.swizzle_data`` (``num_warps`` 8, as ``_swizzle_mxfp4`` asks): the scales
#: ``[M, K / 32]`` padded to (2 x num_warps x 2 x 8, 2)
HOPPER_SCALE_PAD = (256, 2)
#: ``_swizzle_mxfp4`` on SM 9.0 pads the scale groups (``K / 32``) to a multiple of 4 first
#: (vLLM's comment: "Patches #47303", until it moves to the Triton 3.8.0 kernels)
HOPPER_SCALE_GROUPS_PAD = 4


#: the releases whose gpt-oss MXFP4 experts on each non-Marlin backend are checked against vLLM on
#: the meta device (``quant-recorded-<release>-mxfp4.json``: H100 for the OAI Triton kernels, B200
#: for FlashInfer TRT-LLM)
GPT_OSS_CHECKED = {
    "TRITON": ("0.27.1", "0.28.0", "0.29.0", "0.30.0", "0.31.0", "0.32.0", "0.33.0"),
    "FLASHINFER_TRTLLM_MXFP4_BF16": ("0.27.1", "0.28.0", "0.29.0", "0.30.0", "0.31.0", "0.32.0", "0.33.0"),
}


def check_modelled(backend: str, capability: int = 90, release: str | None = None) -> None:
    """:raises InputError: ``backend``'s layout after loading is not modelled on a GPU of
    ``capability`` (``major * 10 + minor``) with vLLM ``release`` (``None``: any release; named:
    the OAI Triton kernels off SM 9.0, a backend whose layout the release is not checked for)."""
    if backend == "MARLIN":
        return
    if backend == "TRITON" and capability != 90:
        raise InputError(
            "--gpu",
            None,
            f"MXFP4 experts on vLLM's {backend} backend: the OAI Triton kernels' Blackwell swizzled weight and "
            "scale layouts (triton_kernels) are not modelled",
        )
    checked = GPT_OSS_CHECKED.get(backend)
    if checked is None or release not in checked:
        what = {
            "TRITON": "the OAI Triton kernels' Hopper swizzled layouts",
            "FLASHINFER_TRTLLM_MXFP4_BF16": "FlashInfer TRT-LLM's shuffled weights and interleaved block scales",
        }.get(backend, "its layout")
        where = f"checked on vLLM {' / '.join(checked)} only, not {release}" if checked and release else "not modelled"
        raise InputError("--gpu", None, f"MXFP4 experts on vLLM's {backend} backend: {what} are {where}")


#: ``mxfp4_round_up_hidden_size_and_intermediate_size`` for FlashInfer TRT-LLM: (hidden, intermediate)
TRTLLM_ROUND_UP = (256, 128)
#: FlashInfer's ``block_scale_interleave`` (``_compute_swizzled_layout_sf_size``): each expert's
#: scales ``[M, groups]`` padded to (128 rows, 4 groups)
TRTLLM_SCALE_PAD = (128, 4)


def trtllm_mxfp4_experts_bytes(e: int, h: int, i: int) -> list[tuple[str, int]]:
    """What a ``FusedMoE`` layer of ``e`` local experts (hidden ``h``, intermediate ``i`` per rank)
    holds after ``convert_gpt_oss_weight_to_mxfp4_moe_kernel_format`` on FlashInfer TRT-LLM
    (``FLASHINFER_TRTLLM_MXFP4_BF16``, SM 10.x; 0.27.1-0.33.0, the same on each):

    * ``create_weights`` takes the hidden size rounded up to 256 and the intermediate to 128
      (:data:`TRTLLM_ROUND_UP`);
    * the weights keep their shapes (rows permuted per expert, then stacked anew): ``w13``
      ``[e, 2 ip, hp / 2]``, ``w2`` ``[e, hp, ip / 2]``, one byte each;
    * the e8m0 scales go through ``block_scale_interleave`` per expert: ``[M, K / 32]`` padded to
      :data:`TRTLLM_SCALE_PAD` (a flat buffer, stacked);
    * the biases become float32 ``[e, 2 ip]`` / ``[e, hp]``;
    * the method's ``_cache_permute_indices`` keeps one int64 row map ``[M]`` per distinct
      permuted shape on the GPU (``get_w2_permute_indices_with_cache``: ``w13`` weight, scale
      and bias ``[2 ip, ...]``, ``w2``'s ``[hp, ...]``; the two biases ``[M, 1]`` share one where
      ``2 ip == hp``);
    * the experts object (``TrtLlmMxfp4ExpertsBase``) keeps ``gemm1_alpha``, ``gemm1_beta`` and
      ``gemm1_clamp_limit``, float32 ``[e]`` each (gpt-oss's SwiGLU constants).

    :returns: ``(kind, bytes)`` per tensor, bytes allocated before the allocator's rounding."""
    hp, ip = _round_up(h, TRTLLM_ROUND_UP[0]), _round_up(i, TRTLLM_ROUND_UP[1])
    out: list[tuple[str, int]] = [("experts", e * 2 * ip * hp // 2), ("experts", e * hp * ip // 2)]
    for m, k in ((2 * ip, hp), (hp, ip)):
        groups = k // MXFP4_BLOCK
        out.append(("scale", e * _round_up(m, TRTLLM_SCALE_PAD[0]) * _round_up(groups, TRTLLM_SCALE_PAD[1])))
    out += [("experts", e * 2 * ip * 4), ("experts", e * hp * 4)]
    shapes = {
        (2 * ip, hp // 2),
        (2 * ip, hp // MXFP4_BLOCK),
        (2 * ip, 1),
        (hp, ip // 2),
        (hp, ip // MXFP4_BLOCK),
        (hp, 1),
    }
    out += [("workspace", m * 8) for m, _ in sorted(shapes)]
    return [*out, *(("workspace", e * 4) for _ in range(3))]


def triton_hopper_mxfp4_experts_bytes(e: int, h: int, i: int) -> list[tuple[str, int]]:
    """What a ``FusedMoE`` layer of ``e`` local experts (hidden ``h``, intermediate ``i`` per rank)
    holds after ``convert_gpt_oss_weight_to_mxfp4_moe_kernel_format`` on the OAI Triton backend on
    SM 9.0 (``_swizzle_mxfp4``; the same in 0.27.1-0.33.0, the vendored triton_kernels unchanged):

    * ``create_weights`` takes the intermediate rounded up to :data:`TRITON_INTERMEDIATE_ROUND_UP`;
    * each weight (``w13``: ``M = 2 ip`` rows of ``h / 2`` bytes; ``w2``: ``M = h`` rows of
      ``ip / 2`` bytes) becomes ``HopperMXValueLayout``'s bit-twiddled copy: rows padded to 16,
      bytes to 32 (``[e, M / 4, 4 K]``, the same bytes);
    * each e8m0 scale (``M`` rows of ``K / 32`` groups): the groups padded to 4
      (:data:`HOPPER_SCALE_GROUPS_PAD`), then ``HopperMXScaleLayout``: rows padded to 256, groups to
      2, one byte each;
    * the original weights and scales are deleted; the biases kept as float32 ``[e, 2 ip]`` and
      ``[e, h]``.

    :returns: ``(kind, bytes)`` per tensor, bytes allocated before the allocator's rounding."""
    ip = _round_up(i, TRITON_INTERMEDIATE_ROUND_UP)
    out: list[tuple[str, int]] = []
    for m, k in ((2 * ip, h), (h, ip)):
        out.append(("experts", e * _round_up(m, HOPPER_VALUE_PAD[0]) * _round_up(k // 2, HOPPER_VALUE_PAD[1])))
    for m, k in ((2 * ip, h), (h, ip)):
        groups = _round_up(_round_up(k // MXFP4_BLOCK, HOPPER_SCALE_GROUPS_PAD), HOPPER_SCALE_PAD[1])
        out.append(("scale", e * _round_up(m, HOPPER_SCALE_PAD[0]) * groups))
    return [*out, ("experts", e * 2 * ip * 4), ("experts", e * h * 4)]


def mxfp4_experts_bytes(
    backend: str, e: int, h: int, i: int, act_bytes: int, *, biases: bool = True
) -> list[tuple[str, int]]:
    """What a ``FusedMoE`` layer of ``e`` local experts (hidden ``h``, intermediate ``i`` per
    rank; ``biases``: gpt-oss's, DeepSeek-V4's experts have none) holds after
    ``process_weights_after_loading`` under ``backend``.

    Marlin: hidden padded to 256 and the intermediate to 128 (``create_weights`` takes the padded
    sizes); ``w13`` / ``w2`` repacked per expert by ``gptq_marlin_repack`` (4-bit: ``k x n / 2``
    bytes each, ``[e, k / 16, n / 2]`` int32); the e8m0 scales permuted into the activation dtype
    and back to e8m0 (one byte per 32 values: ``[e, k / 32, n]``); the biases permuted in the
    activation dtype ``[e, 2 I]`` and ``[e, H]``.

    The OAI Triton backend (SM 9.0) and FlashInfer TRT-LLM (SM 10.x; the caller checks the GPU
    and release with :func:`check_modelled`): :func:`triton_hopper_mxfp4_experts_bytes`,
    :func:`trtllm_mxfp4_experts_bytes` (gpt-oss's, with biases).

    :raises InputError: a backend whose layout is not modelled (named), those two without
        biases."""
    if backend in GPT_OSS_CHECKED:
        if not biases:
            raise InputError(
                "--gpu", None, f"MXFP4 experts without biases on vLLM's {backend} backend are not modelled"
            )
        if backend == "TRITON":
            return triton_hopper_mxfp4_experts_bytes(e, h, i)
        return trtllm_mxfp4_experts_bytes(e, h, i)
    check_modelled(backend)
    hp, ip = _round_up(h, MARLIN_ROUND_UP[0]), _round_up(i, MARLIN_ROUND_UP[1])
    out = [
        ("experts", e * hp * 2 * ip // 2),
        ("experts", e * ip * hp // 2),
        ("scale", e * (hp // MXFP4_BLOCK) * 2 * ip),
        ("scale", e * (ip // MXFP4_BLOCK) * hp),
    ]
    if biases:
        out += [("experts", e * 2 * ip * act_bytes), ("experts", e * hp * act_bytes)]
    return out


#: the releases whose ``Mxfp4MoEMethod`` layouts for Kimi-K3 are checked against vLLM on the meta
#: device (``quant-recorded-kimik3-<release>.json``)
KIMI_K3_MXFP4_RELEASES = ("0.27.1", "0.28.0", "0.29.0", "0.30.0", "0.31.0", "0.32.0", "0.33.0")
#: releases whose fused-MoE backend lists put Humming ahead of Marlin on SM 9.0
#: (``humming/priority.py`` ``prioritize_humming``, 0.32+)
HUMMING_FIRST_RELEASES = ("0.32.0", "0.33.0")
#: ``mxfp4_round_up_hidden_size_and_intermediate_size`` for a CUDA backend without a rule of its
#: own (Humming): the intermediate per rank to a multiple of 64, the hidden size as is
OTHER_INTERMEDIATE_ROUND_UP = 64


def kimi_k3_mxfp4_backend(capability: int, release: str) -> str:
    """The backend ``Mxfp4MoEMethod`` picks for Kimi-K3's MXFP4 experts (``quant_method`` ``mxfp4``
    after ``KimiK3ForConditionalGenerationConfig``'s rewrite; SiTU activation, 16-bit activations)
    on a CUDA GPU of ``capability`` (``major * 10 + minor``), as ``select_deepseek_v4_mxfp4_moe_backend``
    walks ``_get_priority_backends`` (no ``--moe-backend``, the CUDA wheel's packages installed):
    FlashInfer TRT-LLM (MXFP8 activations) and DeepGEMM are SM 10.x's; on SM 9.0 Humming ranks
    ahead of Marlin from 0.32.0 (``prioritize_humming``); Marlin otherwise, from SM 8.0.

    :returns: ``"MARLIN"``, ``"HUMMING"`` or the name of an SM 10.x / 12.x choice (refused by
        :func:`check_kimi_k3_modelled`).
    :raises InputError: below SM 8.0 (``Mxfp4Config.get_min_capability``: vLLM refuses)."""
    if capability < 80:
        raise InputError(
            "--gpu", None, f"vLLM serves mxfp4 from SM 8.0 (this GPU: SM {capability // 10}.{capability % 10})"
        )
    if 100 <= capability < 110:
        return "FLASHINFER_TRTLLM_MXFP4_MXFP8"
    if capability >= 110:
        return f"SM {capability // 10}.{capability % 10}"
    if capability == 90 and release in HUMMING_FIRST_RELEASES:
        return "HUMMING"
    return "MARLIN"


def check_kimi_k3_modelled(backend: str, release: str) -> None:
    """:raises InputError: a release whose Kimi-K3 MXFP4 build is not checked, or a backend whose
    layout after loading is not modelled (named: SM 10.x's FlashInfer TRT-LLM, SM 11.x / 12.x)."""
    if release not in KIMI_K3_MXFP4_RELEASES:
        raise InputError(
            "--vllm",
            None,
            f"Kimi-K3's MXFP4 experts (Mxfp4MoEMethod) are checked on vLLM {' / '.join(KIMI_K3_MXFP4_RELEASES)} "
            f"only, not {release}",
        )
    why = {
        "FLASHINFER_TRTLLM_MXFP4_MXFP8": (
            "FlashInfer TRT-LLM's shuffled weights and interleaved block scales (SM 10.x; where the installed "
            "FlashInfer lacks the SiTU activation vLLM falls back to another backend)"
        ),
    }
    if backend.startswith("SM "):
        raise InputError("--gpu", None, f"Kimi-K3's MXFP4 experts on {backend}: the backend vLLM picks is not checked")
    if backend in why:
        raise InputError("--gpu", None, f"Kimi-K3's MXFP4 experts on vLLM's {backend} backend: {why[backend]}")


def humming_mxfp4_experts_bytes(e: int, h: int, i: int, *, sm_count: int | None) -> list[tuple[str, int]]:
    """MXFP4 experts (``e`` local experts, hidden ``h``, intermediate ``i`` per rank) that vLLM
    0.32's and 0.33's ``HUMMING`` backend serves (SM 9.0): ``create_weights`` takes the intermediate rounded
    up to :data:`OTHER_INTERMEDIATE_ROUND_UP`; Humming's transform keeps per sub-layer (``w13``:
    ``n = 2i``, ``k = h``; ``w2``: ``n = h``, ``k = i``) the padded 4-bit weights and the e8m0
    group scales ``[e, pk / 32, pn]`` (one byte each), no secondary scale; the experts object keeps
    ``8 x SMs`` int32 locks (:func:`~dryboot.vllm.model_executor.kernels.linear.humming.humming_locks_bytes`)."""
    ip = _round_up(i, OTHER_INTERMEDIATE_ROUND_UP)
    out: list[tuple[str, int]] = []
    for n, k in ((2 * ip, h), (h, ip)):
        out += humming_tensors(HummingLayer(n=n, k=k, bits=4, group_size=MXFP4_BLOCK, scale_bytes=1, experts=e))
    return [*out, ("workspace", humming_locks_bytes(sm_count))]


def kimi_k3_mxfp4_experts_bytes(backend: str, e: int, h: int, i: int, *, sm_count: int | None) -> list[tuple[str, int]]:
    """What Kimi-K3's ``Mxfp4MoEMethod`` experts (no biases) hold after loading under ``backend``
    (:func:`kimi_k3_mxfp4_backend`): Marlin's layout as :func:`mxfp4_experts_bytes`, or
    :func:`humming_mxfp4_experts_bytes`.

    :raises InputError: another backend (named)."""
    if backend == "HUMMING":
        return humming_mxfp4_experts_bytes(e, h, i, sm_count=sm_count)
    return mxfp4_experts_bytes(backend, e, h, i, 2, biases=False)
