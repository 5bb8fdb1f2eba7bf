"""Mixed-precision (weight-only int4/int8) linear kernels: which one vLLM picks, and what it keeps.

Mirrors vLLM 0.28.0's ``model_executor/kernels/linear/mixed_precision/`` (``MPLinearKernel``
subclasses) and ``kernels/linear/__init__.py`` ``choose_mp_linear_kernel``: the CUDA kernels in
priority order, the first whose ``get_min_capability`` and ``can_implement`` accept the layer
serves it; each kernel's ``process_weights_after_loading`` repacks the layer's tensors, and what
stays allocated afterwards is :func:`after_loading`.

Shapes are per rank: ``k`` input and ``n`` output features of the partition, ``full_k`` the
layer's whole input (a row-parallel layer divides it). Bytes are tensor sizes (the caller rounds
each tensor to the allocator's blocks).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from dryboot.errors import InputError
from dryboot.vllm.model_executor.kernels.linear.humming import HummingLayer, humming_locks_bytes, humming_tensors

#: the SM count taken when the GPU's is not known (an upper bound of the Marlin workspace: two
#: 512-byte blocks per layer; GPUs of 128 SMs or fewer take one); Humming's locks refuse it
#: (:func:`~dryboot.vllm.model_executor.kernels.linear.humming.humming_locks_bytes`)
UNKNOWN_SM_COUNT = 256

#: ``marlin_utils.py``: ``MARLIN_SUPPORTED_GROUP_SIZES``, ``GPTQ_MARLIN_MIN_THREAD_N`` / ``_K``
MARLIN_GROUP_SIZES = (-1, 32, 64, 128)
MARLIN_MIN_THREAD_N = 64
MARLIN_MIN_THREAD_K = 128
#: ``machete_utils.py``: ``MACHETE_PREPACKED_BLOCK_SHAPE`` (k, n) and the group sizes of 16-bit
#: activations (``query_machete_supported_group_sizes``)
MACHETE_BLOCK = (64, 128)
MACHETE_GROUP_SIZES = (-1, 64, 128)


@dataclass(frozen=True)
class MPLinearLayerConfig:
    """vLLM's ``MPLinearLayerConfig`` for one layer on one rank.

    :param k: input features of the partition (``partition_weight_shape[0]``).
    :param n: output features of the partition (``partition_weight_shape[1]``).
    :param full_k: the layer's whole input (``full_weight_shape[0]``).
    :param bits: weight bits (4 or 8).
    :param zero_points: asymmetric weights with zero points (``uint4``/``uint8``; AWQ), else the
        biased symmetric types (``uint4b8``/``uint8b128``; GPTQ).
    :param group_size: input features per scale, ``-1`` one per output channel.
    :param has_g_idx: activation reordering (GPTQ ``desc_act``).
    :param act_bytes: the activations' (and scales') element size (2: fp16/bf16).
    """

    k: int
    n: int
    full_k: int
    bits: int
    zero_points: bool
    group_size: int
    has_g_idx: bool
    act_bytes: int = 2

    @property
    def row_parallel(self) -> bool:
        return self.k != self.full_k


def _round_up(x: int, m: int) -> int:
    return -(-x // m) * m


def marlin_padded_nk(n: int, k: int, group_size: int) -> tuple[int, int]:
    """``marlin_utils.py`` ``marlin_padded_nk``: the smaller of (n to 64, k to lcm(128, g)) and
    (n to 128, k to lcm(64, g)) by area, then by perimeter."""
    g = group_size if group_size > 0 else 1
    candidates = (
        (_round_up(n, 64), _round_up(k, math.lcm(128, g))),
        (_round_up(n, 128), _round_up(k, math.lcm(64, g))),
    )
    return min(candidates, key=lambda nk: (nk[0] * nk[1], nk[0] + nk[1]))


def _marlin_can_implement(c: MPLinearLayerConfig) -> str | None:
    """``MarlinLinearKernel.can_implement``: the failure reason, or ``None``."""
    if c.bits not in (4, 8) or (c.zero_points and c.bits != 4):
        return f"Marlin has no {'uint' if c.zero_points else 'biased uint'}{c.bits} weights"
    if c.group_size not in MARLIN_GROUP_SIZES:
        return f"Marlin does not support group_size {c.group_size}"
    if c.has_g_idx:
        # check_marlin_supports_shape
        if c.n % MARLIN_MIN_THREAD_N or c.k % MARLIN_MIN_THREAD_K:
            return f"act-order needs n % {MARLIN_MIN_THREAD_N} and k % {MARLIN_MIN_THREAD_K} (k {c.k}, n {c.n})"
        if c.group_size < c.full_k and c.k % c.group_size:
            return f"group_size {c.group_size} does not divide the partition's input {c.k}"
        return None
    if c.group_size != -1 and c.group_size < c.full_k and c.k % c.group_size:
        return f"in_features per partition {c.k} is not divisible by group_size {c.group_size}"
    return None


def _machete_can_implement(c: MPLinearLayerConfig, capability: int) -> str | None:
    """``MacheteLinearKernel.can_implement`` (SM 9.0 exactly)."""
    if capability != 90:
        return "Machete requires compute capability 90"
    if c.has_g_idx and c.row_parallel:
        return "Machete does not reorder activations of a partitioned input"
    if c.bits not in (4, 8):
        return f"Machete has no {c.bits}-bit weights"
    if c.group_size not in MACHETE_GROUP_SIZES:
        return f"Machete does not support group_size {c.group_size}"
    if c.k % MACHETE_BLOCK[0] or c.n % MACHETE_BLOCK[1]:
        return f"Machete needs k % {MACHETE_BLOCK[0]} and n % {MACHETE_BLOCK[1]} (k {c.k}, n {c.n})"
    return None


def _allspark_takes(c: MPLinearLayerConfig, capability: int) -> bool:
    """``AllSparkLinearKernel`` (0.28; gone in 0.33) serves 8-bit per-channel symmetric weights on
    SM 8.x; dryboot does not model its repacking (refused by name when it would be chosen)."""
    return 80 <= capability < 90 and c.group_size == -1 and c.bits == 8 and not c.zero_points and not c.has_g_idx


def choose_mp_linear_kernel(
    c: MPLinearLayerConfig, capability: int, *, allspark: bool = True, humming: bool = False
) -> str:
    """The kernel vLLM picks for ``c`` on a GPU of ``capability`` (``major * 10 + minor``):
    ``kernels/linear/__init__.py`` ``choose_mp_linear_kernel`` over the CUDA list
    (CutlassW4A8, Machete, AllSpark (``allspark``: releases that list it), Marlin, then Conch,
    Exllama, Triton W4A16, Humming). CutlassW4A8 takes only fp8 activations (never a W4A16 layer).
    ``humming``: the release moves Humming ahead of Marlin on this GPU (0.33, SM 9.0:
    ``prioritize_humming``), so a layer Machete declines goes to ``HummingLinearKernel``
    (:mod:`~dryboot.vllm.model_executor.kernels.linear.humming`).

    :raises InputError: the layer falls through to a kernel whose layout is not modelled
        (AllSpark, Conch, Exllama, ...), named with why Machete and Marlin declined.
    """
    why = []
    if (r := _machete_can_implement(c, capability)) is None:
        return "MacheteLinearKernel"
    why.append(f"Machete: {r}")
    if humming and capability >= 75:
        # HummingLinearKernel.can_implement: CUDA, humming installed, 16-bit (or int8 / fp8)
        # activations; every weight-only layer here has 16-bit activations
        return "HummingLinearKernel"
    if allspark and _allspark_takes(c, capability):
        raise InputError(
            "quantization_config",
            None,
            "vLLM picks AllSparkLinearKernel for this layer (8-bit per-channel on SM 8.x); its repacked "
            "layout is not modelled",
        )
    if capability < 75:
        why.append("Marlin: needs compute capability 75")
    elif (r := _marlin_can_implement(c)) is None:
        return "MarlinLinearKernel"
    else:
        why.append(f"Marlin: {r}")
    raise InputError(
        "quantization_config",
        None,
        "vLLM falls back to a kernel whose layout is not modelled (Conch/Exllama/Triton W4A16): " + "; ".join(why),
    )


def after_loading(
    kernel: str,
    c: MPLinearLayerConfig,
    scale_rows: int,
    *,
    sm_count: int | None,
    gptq_layout: bool,
    g_idx_param: bool = True,
    layer_workspace: bool = True,
    bias: bool = False,
) -> list[tuple[str, int]]:
    """What ``kernel``'s ``process_weights_after_loading`` leaves for one layer, as (kind, bytes).

    ``scale_rows``: the rows of the loaded ``scales`` (groups; the whole input's under act-order).
    ``gptq_layout``: the method created GPTQ's ``qzeros`` (and, with ``g_idx_param``, ``g_idx``
    ``[k]`` int32: 0.28; gone in 0.33) rather than AWQ's. ``layer_workspace``: Marlin allocates
    its workspace per layer at loading (0.28); 0.33 takes it from the worker's workspace manager
    at run time (not a weight). ``sm_count``: the GPU's multiprocessors, ``None`` when unknown
    (Marlin's workspace then taken over :data:`UNKNOWN_SM_COUNT`; Humming refuses it).

    Marlin (``mixed_precision/marlin.py``): the weight repacked by ``gptq_marlin_repack`` to
    ``[pk / 16, pn * 16 / (32 / bits)]`` int32 over the padded ``(pn, pk)`` of
    :func:`marlin_padded_nk` (unpadded under act-order); scales padded to ``pk / g`` rows (when
    padding happens) and permuted, ``[rows, pn]``; zero points (AWQ) repacked to
    ``[pk / g, pn / (32 / bits)]`` int32; ``g_idx``, its sort indices and unused zero points
    emptied (no memory), except under act-order: the sorted ``g_idx`` and ``g_idx_sort_indices``,
    int32 ``[k]`` each; a workspace of one int32 per SM (``marlin_make_workspace_new``) per layer.

    Machete (``mixed_precision/machete.py``): the weight prepacked in place of the same size
    (``machete_prepack_B``'s fake: ``empty_like``); scales as loaded; zero points become
    ``-scale x zero`` in the activation dtype, ``[groups, n]``; GPTQ's ``qzeros`` and ``g_idx``
    stay as loaded; under act-order a kept int32 permutation ``[k]``.

    Humming (``mixed_precision/humming.py``, 0.33 on SM 9.0): every parameter of the layer is
    replaced by Humming's (:func:`~dryboot.vllm.model_executor.kernels.linear.humming.
    humming_tensors`: ``n`` padded to 256 and ``k`` to 128, group scales in the activation dtype,
    zero points, the bias padded plus its ``zero_bias`` twin: ``bias`` says the layer has one and
    the bias entries are then in the answer) and the kernel keeps ``8 x SMs`` int32 locks.
    """
    if kernel == "HummingLinearKernel":
        layer = HummingLayer(
            n=c.n,
            k=c.k,
            bits=c.bits,
            group_size=0 if c.group_size == -1 else c.group_size,
            scale_bytes=c.act_bytes,
            act_bytes=c.act_bytes,
            zero_points=c.zero_points,
            bias=bias,
        )
        return [*humming_tensors(layer), ("workspace", humming_locks_bytes(sm_count))]
    ab = c.act_bytes
    per_int32 = 32 // c.bits
    if kernel == "MarlinLinearKernel":
        pn, pk = (c.n, c.k) if c.has_g_idx else marlin_padded_nk(c.n, c.k, c.group_size)
        padded = (pn, pk) != (c.n, c.k)
        rows = pk // c.group_size if padded and c.group_size > 0 else scale_rows
        out = [("weight", pk * pn * c.bits // 8), ("scale", rows * pn * ab)]
        if layer_workspace:
            # an unknown SM count: the workspace of the largest GPUs (<= 256 SMs: 1024 bytes, two blocks)
            out.append(("workspace", 4 * (sm_count if sm_count is not None else UNKNOWN_SM_COUNT)))
        if c.zero_points:
            groups = pk // c.group_size if c.group_size != -1 else 1
            out.append(("scale", groups * pn // per_int32 * 4))
        if c.has_g_idx:
            out += [("g_idx", 4 * c.k), ("g_idx", 4 * c.k)]
        return out
    if kernel == "MacheteLinearKernel":
        out = [("weight", c.k * c.n * c.bits // 8), ("scale", scale_rows * c.n * ab)]
        if c.zero_points:
            out.append(("scale", scale_rows * c.n * ab))
        elif gptq_layout:
            out.append(("scale", scale_rows * (c.n // per_int32) * 4))  # qzeros as loaded
        if gptq_layout and g_idx_param:
            out.append(("g_idx", 4 * c.k))
        if c.has_g_idx:
            out.append(("g_idx", 4 * c.k))  # the activation permutation Machete keeps
        return out
    raise AssertionError(kernel)  # pragma: no cover - choose_mp_linear_kernel names only these
