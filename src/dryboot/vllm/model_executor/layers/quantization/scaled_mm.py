"""W8A8 (int8, fp8) and NVFP4 (W4A4) linear layers as vLLM holds them after loading:
compressed-tensors' ``CompressedTensorsW8A8Int8`` / ``CompressedTensorsW8A8Fp8`` /
``CompressedTensorsW4A4Fp4`` schemes and ModelOpt's FP8 / NVFP4 linear methods, over the kernel
vLLM 0.28.0 / 0.33.0 pick per GPU (``kernels/linear/scaled_mm``, ``kernels/linear/nvfp4``).

What each kernel keeps per linear layer of ``n`` outputs (``parts`` merged) and ``k`` inputs per
rank, checked against vLLM on the meta device (``tests/fidelity/quant_cases_extra.py``):

* int8, channel weights (CUTLASS, every SM): int8 ``[k, n]``, float32 ``weight_scale [n, 1]``;
  with asymmetric (``azp``) activations also ``azp_adj`` int32 ``[n]`` (refused: not checked).
* fp8 below SM 8.9 (``MarlinFP8ScaledMMLinearKernel``, weight-only): the weight padded to
  ``marlin_padded_nk``'s ``(pn, pk)`` and repacked to int32 (its bytes: a Gated DeltaNet
  ``in_proj_ba`` of 96 outputs holds 128), the scales in the activation dtype ``[1, pn]`` (channel /
  tensor) or ``[pk / bk, pn]`` (block: each block's scale repeated over its ``bn`` columns), a
  workspace of one int32 per SM (0.28; 0.33 takes it from the worker).
* fp8 on SM 8.9+ (CUTLASS / FlashInfer): fp8 ``[k, n]``; float32 ``weight_scale [n, 1]``
  (channel), one float32 per fused part (tensor: a per-part scale, requantized to the largest)
  or ``[ceil(n / bn), ceil(k / bk)]`` (block).
* NVFP4 below SM 10.0 (``MarlinNvFp4LinearKernel``, weight-only; ``prepare_fp4_layer_for_marlin``):
  the packed weight padded to ``marlin_padded_nk(n, k, 16)``'s ``(pn, pk)`` and repacked to int32
  (``pn x pk / 2`` bytes), the fp8 block scales padded and permuted (``pn x pk / 16`` bytes), four
  float32 scalars (``weight_global_scale``, ``input_global_scale`` and its inverse, ``alpha``), the
  workspace as above. On 0.33.0 SM 9.0 a CUDA install picks ``HummingNvFp4LinearKernel`` instead
  (:func:`humming_nvfp4_linear_bytes`).
* NVFP4 on SM 10.0+ (FlashInfer CUTLASS / CuTe DSL): uint8 ``[n, k / 2]``, the block scales
  swizzled for the tensor cores: fp8 ``[round_up(n, 128), round_up(k / 16, 4)]``
  (``nvfp4_utils.swizzle_blockscale``), the four float32 scalars.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from dryboot.errors import InputError
from dryboot.vllm.model_executor.kernels.linear.humming import (
    HummingLayer,
    humming_fp8_locks_bytes,
    humming_locks_bytes,
    humming_tensors,
)
from dryboot.vllm.model_executor.kernels.linear.mixed_precision import marlin_padded_nk
from dryboot.vllm.model_executor.layers.quantization.auto_gptq import PACKED_MODULES
from dryboot.vllm.model_executor.layers.quantization.compressed_tensors import ignore_list
from dryboot.vllm.model_executor.layers.quantization.utils.quant_utils import (
    fused_shards,
    is_layer_excluded,
    is_layer_skipped,
    should_ignore_layer,
)

#: the float32 scalars an NVFP4 layer keeps after loading (global scales, inverse, alpha)
NVFP4_SCALARS = 4


@dataclass(frozen=True)
class ScaledScheme:
    """One layer's W8A8 / W4A4 scheme.

    :param kind: ``int8``, ``fp8`` or ``nvfp4``.
    :param strategy: the weight scales': ``tensor``, ``channel``, ``block`` (fp8 ``[bn, bk]``
        blocks) or ``group`` (NVFP4's 16-element groups).
    :param block: fp8 block ``(bn, bk)``.
    :param static_input: a static input scale per part (fp8 ``tensor`` activations).
    """

    kind: str
    strategy: str
    block: tuple[int, int] | None = None
    static_input: bool = False


@dataclass(frozen=True)
class ScaledQuant:
    """A W8A8 / NVFP4 checkpoint and the GPU serving it.

    :param groups: (targets, scheme) in the config's order: a layer takes the scheme of the
        group whose target matches its name (``re:`` patterns by ``re.match``; ``Linear``: every
        linear layer), the most specific (a name) before a pattern before ``Linear``.
    :param ignore: the config's ignore list, matched by ``ignore_rule``: compressed-tensors' names
        or ``re:`` patterns, plain fp8's ``modules_to_not_convert``, ModelOpt's ``exclude_modules``.
    :param ignore_rule: whose matching applies (:func:`ignored_by`): ``compressed-tensors``
        (``should_ignore_layer``, per ``vllm_version``), ``fp8`` (``Fp8Config``: ``is_layer_skipped``,
        exact) or ``modelopt`` (``is_layer_excluded``: substrings, wildcards).
    :param vllm_version: the release serving it (compressed-tensors' fused-layer rule differs).
    :param capability: the GPU's compute capability as ``major * 10 + minor``.
    :param sm_count: the GPU's multiprocessors (Marlin's workspace), ``None`` when unknown.
    :param layer_workspace: Marlin allocates a workspace per layer (0.28; not 0.33).
    :param humming: the release ranks the Humming kernels ahead of Marlin on this GPU (0.33, SM
        9.0): the NVFP4 layers Marlin would serve go to ``HummingNvFp4LinearKernel``.
    """

    groups: tuple[tuple[tuple[str, ...], ScaledScheme], ...]
    ignore: tuple[str, ...] = ()
    ignore_rule: str = "compressed-tensors"
    vllm_version: str = "0.28.0"
    capability: int = 90
    sm_count: int | None = None
    layer_workspace: bool = True
    humming: bool = False
    #: the release's compressed-tensors W8A8 / NVFP4 MoE experts after loading are recorded
    #: (``fused_moe.SCALED_EXPERTS_RELEASES``); elsewhere a ``FusedMoE`` layer is refused by name
    experts_checked: bool = True
    #: plain fp8 (``Fp8Config``, ``Fp8LinearMethod``), not compressed-tensors: its dense block
    #: layers keep their layout below SM 8.9 (no Marlin FP8 repack), on SM 9.0 (DeepGEMM keeps
    #: Hopper's block scales) and on SM 12.x (as the public SM 12.x boots log it): recorded,
    #: quant_cases_fp8.py
    plain_fp8: bool = False
    #: compressed-tensors fp8 block layers of a family whose SM 9.0 layout is recorded with
    #: DeepGEMM present (Laguna: quant_cases_fp8rest.py): DeepGEMM keeps Hopper's float32 block
    #: scales as loaded, as plain fp8's
    deep_gemm_recorded: bool = False
    #: plain fp8 block layers served by DeepGEMM with UE8M0 scales (SM 10.x: vLLM 0.27.1-0.30.0):
    #: each layer's block scales broadcast to one per output row, packed four to an int32
    deep_gemm_ue8m0: bool = False
    #: the release's CUTLASS fp8 kernel pads a layer whose ``k`` or ``n`` is not a multiple of 16
    #: (0.33.0); before (:data:`CUTLASS_FP8_PAD_FAILS`) it fails re-registering the padded weight's
    #: ``weight_loader`` (``set_weight_attrs``: "Overwriting existing tensor attribute")
    cutlass_fp8_pad: bool = True
    #: compressed-tensors fp8 below SM 8.9 (weight-only, ``CompressedTensorsW8A16Fp8``) goes to
    #: ``HummingFP8ScaledMMLinearKernel``, ahead of Marlin in every release's W8A16 fp8 list; the
    #: value is the release's locks rule (``QuantRules.humming_wfp8a16_locks``), ``None``: Marlin
    humming_fp8: str | None = None
    #: per-tensor fp8 layers below SM 8.9 go through Marlin weight-only (plain fp8's ``Fp8LinearMethod``
    #: and ModelOpt FP8: ``QuantRules.modelopt_fp8_marlin``); ``False`` (0.29.0 / 0.30.0): their
    #: ``_POSSIBLE_FP8_KERNELS`` list CUTLASS ahead of Marlin and its ``is_supported`` asks for CUDA only,
    #: so the layer keeps SM 8.9's CUTLASS layout
    fp8_marlin: bool = True

    def layer_scheme(self, name: str, parts: tuple[str, ...]) -> ScaledScheme | None:
        """The scheme of vLLM layer ``name`` whose checkpoint modules are ``parts``, or ``None``
        (unquantized).

        :raises InputError: a fused layer whose parts have different schemes, or some but not all
            of them ignored (vLLM refuses it)."""
        if ignored_by(self.ignore_rule, self.ignore, name, parts, self.vllm_version):
            return None
        found = {self._scheme_of(p) for p in parts}
        if len(found) > 1:
            raise InputError("quantization_config", "config_groups", f"{name}: its parts differ in scheme")
        return found.pop()

    def _scheme_of(self, name: str) -> ScaledScheme | None:
        best: tuple[int, ScaledScheme] | None = None
        for targets, scheme in self.groups:
            for t in targets:
                rank = 0 if t == name else 1 if t.startswith("re:") and _matches(name, t) else 2 if t == "Linear" else 3
                if rank < 3 and (best is None or rank < best[0]):
                    best = (rank, scheme)
        return best[1] if best is not None else None


#: MLA's fused low-rank projection (``deepseek_v2.py`` ``packed_modules_mapping``): one replicated
#: layer of the checkpoint's ``q_a_proj`` and ``kv_a_proj_with_mqa``, excluded when they are
#: (nvidia/DeepSeek-V3.1-NVFP4's ``exclude_modules`` name the parts)
MLA_PACKED_MODULES = {"fused_qkv_a_proj": ("q_a_proj", "kv_a_proj_with_mqa")}


def checkpoint_parts(name: str) -> tuple[str, ...]:
    """The checkpoint modules vLLM's layer ``name`` loads (a fused layer's parts, else itself)."""
    head, _, last = name.rpartition(".")
    packed = PACKED_MODULES.get(last) or MLA_PACKED_MODULES.get(last)
    if packed:
        return tuple(f"{head}.{p}" for p in packed)
    return (name,)


def scaled_refusal(q: ScaledQuant, capability: int, version: str) -> str | None:
    """Why the layout of ``q`` on SM ``capability`` under vLLM ``version`` is not given, or
    ``None``: vLLM's own refusal (fp8 needs SM 8.9 for W8A8 inputs, served weight-only below; int8
    CUTLASS needs SM 7.5), or a kernel the oracle cannot run (0.33's fp8 blocks on SM 9.0+ go
    through DeepGEMM, whose scale-layout transform declares no shape)."""
    for _, s in q.groups:
        if s.kind == "int8" and capability < 75:
            return "int8 W8A8 needs SM 7.5 (vLLM refuses)"
        # DeepGEMM serves SM 9.0 and 10.x; plain fp8's layouts there are recorded with it (the
        # caller gates the releases and GPUs)
        deep_gemm = not (q.plain_fp8 or (q.deep_gemm_recorded and capability == 90))
        if s.kind == "fp8" and s.strategy == "block" and capability >= 90 and version != "0.28.0" and deep_gemm:
            return (
                f"fp8 block weights on SM {capability // 10}.{capability % 10} in vLLM {version}: DeepGEMM's scale "
                "layout (a kernel without a shape declaration) is not modelled"
            )
        if capability < 80 and s.kind in ("fp8", "nvfp4", "nvfp4_a16"):
            return f"{s.kind} weights on SM {capability // 10}.{capability % 10} are not checked"
    return None


def ignored_by(rule: str, ignore: tuple[str, ...], name: str, parts: tuple[str, ...], version: str) -> bool:
    """Whether ``ignore`` leaves vLLM's layer ``name`` unquantized under method ``rule``
    (:class:`ScaledQuant`'s ``ignore_rule``); ``parts``: the checkpoint modules it loads (a fused
    layer's shards, or an MoE layer's expert-0 projections). ``fp8``: ``Fp8Config``'s
    ``is_layer_skipped`` (exact); ``modelopt``: ``is_layer_excluded``; ``compressed-tensors``:
    ``should_ignore_layer`` on the layer, or, for an MoE layer, on each projection of its expert 0,
    which must agree (``CompressedTensorsMoEMethod.get_moe_method``).

    :raises InputError: some but not all shards (projections) ignored: vLLM refuses it."""
    if not ignore:
        return False
    if rule == "fp8":
        return is_layer_skipped(name, ignore)
    if rule == "modelopt":
        return is_layer_excluded(name, ignore)
    if parts == (name,) or fused_shards(name) is not None:
        return should_ignore_layer(name, ignore, version)
    found = {should_ignore_layer(p, ignore, version) for p in parts}
    if len(found) > 1:
        raise InputError(
            "quantization_config",
            "ignore",
            f"some but not all projections of {name} are on it (vLLM refuses it: all MoE projections need the "
            "same scheme)",
        )
    return found.pop()


def _matches(name: str, entry: str) -> bool:
    if entry.startswith("re:"):
        return re.match(entry[3:], name) is not None
    return name == entry


def _round_up(x: int, m: int) -> int:
    return -(-x // m) * m


def nvfp4_marlin_bytes(n: int, k: int) -> list[tuple[str, int]]:
    """An NVFP4 weight (``n`` outputs, ``k`` inputs per rank, 16-element groups) as Marlin holds it
    (``marlin_utils_fp4.py`` ``prepare_fp4_layer_for_marlin``, W4A4 and W4A16 alike): padded to
    ``marlin_padded_nk(n, k, 16)``'s ``(pn, pk)`` (``marlin_pad_qweight`` / ``marlin_pad_scales``),
    the weight repacked to int32, ``pn x pk / 2`` bytes, the fp8 scales permuted, ``pn x pk / 16``
    bytes. Without the scalars and the workspace, which differ by method."""
    pn, pk = marlin_padded_nk(n, k, 16)
    return [("weight", pn * pk // 2), ("scale", pn * pk // 16)]


def scaled_linear_bytes(
    q: ScaledQuant, s: ScaledScheme, k: int, parts: tuple[int, ...], act_bytes: int, *, bias: bool = False
) -> list[tuple[str, int]]:
    """What one W8A8 / NVFP4 linear layer holds after ``process_weights_after_loading``, as
    (kind, bytes): ``k`` inputs and output ``parts`` per rank (see the module's docstring);
    ``bias``: the layer's bias is among them.

    :raises InputError: what is not modelled (named)."""
    n = sum(parts)
    if s.kind == "nvfp4" and q.capability < 100 and q.humming:
        return humming_nvfp4_linear_bytes(n, k, act_bytes, sm_count=q.sm_count, bias=bias)
    if s.kind == "fp8" and q.capability < 89 and q.humming_fp8 is not None:
        locks = humming_fp8_locks_bytes(q.humming_fp8, q.sm_count)
        kept = s.static_input and q.vllm_version in HUMMING_FP8_INPUT_SCALE_KEPT
        zero_bias = q.vllm_version not in HUMMING_FP8_BIAS_ALONE
        return humming_fp8_linear_bytes(
            s, n, k, act_bytes, locks=locks, bias=bias, input_scales=len(parts) if kept else 0, zero_bias=zero_bias
        )
    out = _scaled_linear_bytes(q, s, k, parts, act_bytes)
    return [*out, ("bias", n * act_bytes)] if bias else out


def humming_nvfp4_linear_bytes(
    n: int, k: int, act_bytes: int, *, sm_count: int | None, bias: bool = False
) -> list[tuple[str, int]]:
    """An NVFP4 linear layer (W4A4 or W4A16; ``n`` outputs, ``k`` inputs per rank) that
    ``HummingNvFp4LinearKernel`` serves (0.33.0 on SM 9.0): vLLM converts it as a
    compressed-tensors ``nvfp4-pack-quantized`` layer (16-element groups, fp8 scales, the global
    scale inverted back into ``weight_scale_2``) and Humming keeps
    (:func:`~dryboot.vllm.model_executor.kernels.linear.humming.humming_tensors`) the padded
    weight, the fp8 group scales ``[pk / 16, pn]``, ``weight_scale_2`` (one float32), the bias
    and ``zero_bias`` when there is one, and the kernel's locks. The input's global scale
    (``input_scale_2``, W4A4) is dropped: Humming falls back from fp4 activations on SM 9.0
    (``check_and_fallback_input_schema``) and keeps no static input scale."""
    layer = HummingLayer(
        n=n, k=k, bits=4, group_size=16, scale_bytes=1, act_bytes=act_bytes, weight_scale_2="tensor", bias=bias
    )
    return [*humming_tensors(layer), ("workspace", humming_locks_bytes(sm_count))]


#: releases whose Humming W8A16 fp8 linear layers keep a bias through ``humming_utils.py``
#: (``prepare_humming_linear_layer_config``; 0.27.1's ``prepare_humming_layer``): the bias padded to
#: ``pn`` with the other tensors, no ``zero_bias`` buffer, unlike 0.31.0+'s ``utils/humming/linear.py``
#: (recorded: Qwen2.5-1.5B / 0.5B compressed-tensors FP8-dynamic below SM 8.9 on 0.27.1-0.33.0,
#: ``quant-recorded-humfp8-<release>.json``)
HUMMING_FP8_BIAS_ALONE = ("0.27.1", "0.28.0", "0.29.0", "0.30.0")


#: releases whose Humming W8A16 fp8 layers keep a static per-tensor ``input_scale`` (``[parts]`` float32, as
#: loaded) after ``process_weights_after_loading``: 0.27.1's ``humming_utils.prepare_humming_layer``
#: re-registers every tensor humming-kernels 0.1.10's compressed-tensors weight schema hands back, the
#: input scale among them (recorded: ``RECORD_DUMP`` of Qwen3-8B's static fp8 checkpoint on RTX 3090,
#: ``qkv_proj.input_scale`` ``(3,)``, ``o_proj.input_scale`` ``(1,)``; 0.28.0+ drop it)
HUMMING_FP8_INPUT_SCALE_KEPT = ("0.27.1",)


def humming_fp8_linear_bytes(
    s: ScaledScheme,
    n: int,
    k: int,
    act_bytes: int,
    *,
    locks: int,
    bias: bool = False,
    input_scales: int = 0,
    zero_bias: bool = True,
) -> list[tuple[str, int]]:
    """A compressed-tensors fp8 linear layer below SM 8.9 (``n`` outputs, ``k`` inputs per rank)
    that ``HummingFP8ScaledMMLinearKernel`` serves weight-only (``scaled_mm/humming.py``
    ``process_weights_after_loading``: ``float8e4m3`` weights in Humming's standard schema,
    :func:`~dryboot.vllm.model_executor.kernels.linear.humming.humming_tensors`): the weight padded
    to ``(pn, pk)``, one byte per element; the scales per output channel ``[1, pn]`` in the
    activation dtype (``channel``, and ``tensor``, which ``CompressedTensorsW8A16Fp8`` first turns
    into channel scales, ``convert_to_channelwise``), or float32 block scales
    ``[pk / bk, pn / bn]``; the bias (padded to ``pn``) and, with ``zero_bias`` (0.31.0+, not
    :data:`HUMMING_FP8_BIAS_ALONE`), its ``zero_bias`` twin when there is one; the kernel's ``locks``
    (``locks`` bytes: ``humming_fp8_locks_bytes``); ``input_scales`` float32 static input scales
    kept as loaded (one per output part where :data:`HUMMING_FP8_INPUT_SCALE_KEPT` lists the
    release; else 0: none kept)."""
    if s.strategy == "block":
        assert s.block is not None
        layer = HummingLayer(
            n=n,
            k=k,
            bits=8,
            group_size=s.block[1],
            group_size_n=s.block[0],
            scale_bytes=4,
            act_bytes=act_bytes,
            bias=bias,
            zero_bias=zero_bias,
        )
    else:
        layer = HummingLayer(
            n=n, k=k, bits=8, group_size=0, scale_bytes=act_bytes, act_bytes=act_bytes, bias=bias, zero_bias=zero_bias
        )
    kept = [("scale", 4 * input_scales)] if input_scales else []
    return [*humming_tensors(layer), *kept, ("workspace", locks)]


def humming_nvfp4_experts_bytes(
    e: int, h: int, i: int, *, sm_count: int | None, gated: bool = True
) -> list[tuple[str, int]]:
    """NVFP4 MoE experts (W4A4 or W4A16; ``e`` local experts, hidden ``h``, intermediate ``i``
    per rank) that vLLM 0.33's ``HUMMING`` backend serves (SM 9.0: ``fused_moe/oracle/nvfp4.py``
    puts it ahead of Marlin through ``prioritize_humming``): ``convert_to_humming_moe_kernel_format``
    keeps, per sub-layer (``w13``: ``n = 2i`` (``i`` when not ``gated``), ``k = h``; ``w2``:
    ``n = h``, ``k = i``), the padded fp4 weights, the fp8 group scales ``[e, pk / 16, pn]`` and
    one float32 secondary scale per expert (``[e]``); the input scales are dropped (16-bit
    activations: ``VLLM_HUMMING_INPUT_QUANT_CONFIG`` unset); the experts object keeps ``8 x SMs``
    int32 locks.

    Assumed (the oracle answers it so: a value, not a shape): a gated expert's ``w1`` and ``w3``
    share one global scale, as llm-compressor and ModelOpt write them fused. Where they differ,
    Humming's ``_may_process_global_scale`` keeps a per-channel secondary scale ``[e, pn]`` in the
    model dtype for ``w13`` instead of ``[e]`` float32."""
    out: list[tuple[str, int]] = []
    for n, k in (((2 if gated else 1) * i, h), (h, i)):
        layer = HummingLayer(n=n, k=k, bits=4, group_size=16, scale_bytes=1, weight_scale_2="tensor", experts=e)
        out += humming_tensors(layer)
    return [*out, ("workspace", humming_locks_bytes(sm_count))]


def _scaled_linear_bytes(
    q: ScaledQuant, s: ScaledScheme, k: int, parts: tuple[int, ...], act_bytes: int
) -> list[tuple[str, int]]:
    n = sum(parts)
    sms = q.sm_count if q.sm_count is not None else 256
    workspace = [("workspace", 4 * sms)] if q.layer_workspace else []
    if s.kind == "int8":
        if s.strategy != "channel" or s.static_input:
            raise InputError("quantization_config", "config_groups", f"int8 {s.strategy} weights are not modelled")
        return [("weight", n * k), ("scale", 4 * n)]
    if s.kind == "fp8":
        if q.capability < 89 and not (q.plain_fp8 and s.strategy == "block"):  # weight-only fp8 through Marlin
            if s.strategy == "block":
                assert s.block is not None
                pn, pk = marlin_padded_nk(n, k, s.block[1])
                scale = -(-pk // s.block[1]) * pn * act_bytes
            else:
                pn, pk = marlin_padded_nk(n, k, -1)
                scale = pn * act_bytes
            return [("weight", pn * pk), ("scale", scale), *workspace]
        if s.strategy in ("channel", "tensor"):
            out = _cutlass_fp8_bytes(q, s, k, parts)
        elif s.strategy == "block" and q.deep_gemm_ue8m0:
            out = [("weight", n * k), ("scale", deep_gemm_ue8m0_scale_bytes(n, k, s.block))]
        elif s.strategy == "block":
            assert s.block is not None
            bn, bk = s.block
            out = [("weight", n * k), ("scale", 4 * -(-n // bn) * -(-k // bk))]
        else:
            out = [("weight", n * k), ("scale", 4 * len(parts))]
        if s.static_input:
            out.append(("scale", 4))
        return out
    if s.kind == "nvfp4":
        scalars = [("scale", 4)] * NVFP4_SCALARS
        if q.capability < 100:  # weight-only NVFP4 through Marlin
            return [*nvfp4_marlin_bytes(n, k), *scalars, *workspace]
        return [("weight", n * k // 2), ("scale", _round_up(n, 128) * _round_up(k // 16, 4)), *scalars]
    raise AssertionError(s.kind)  # pragma: no cover


#: releases whose ``CutlassFP8ScaledMMLinearKernel.process_weights_after_loading`` raises on a layer
#: it pads (``set_weight_attrs`` over the kept ``weight_loader``)
CUTLASS_FP8_PAD_FAILS = ("0.27.1", "0.28.0", "0.29.0", "0.30.0", "0.31.0", "0.32.0")


def _cutlass_fp8_bytes(q: ScaledQuant, s: ScaledScheme, k: int, parts: tuple[int, ...]) -> list[tuple[str, int]]:
    """An fp8 layer with one scale per output channel or per tensor (``n = sum(parts)`` outputs,
    ``k`` inputs per rank) after ``CutlassFP8ScaledMMLinearKernel.process_weights_after_loading``
    (vLLM's kernel for them from SM 8.9): the weight ``[k, n]`` padded with zeros to multiples of
    16 in both dimensions, and, where ``n`` is padded and the scale holds more than one value
    (per channel, or one per merged part), the scale padded to a multiple of 16 entries (float32).

    :raises InputError: a layer to pad on a release whose kernel fails doing so
        (:attr:`ScaledQuant.cutlass_fp8_pad`)."""
    n = sum(parts)
    pk, pn = _round_up(k, 16), _round_up(n, 16)
    if (pk, pn) != (k, n) and not q.cutlass_fp8_pad:
        raise InputError(
            "--tensor-parallel-size",
            None,
            f"an fp8 layer of {n} x {k} per rank: vLLM's CUTLASS fp8 kernel pads it to multiples of 16 and this "
            "release then fails re-registering its weight_loader (AssertionError: Overwriting existing tensor "
            "attribute: weight_loader)",
        )
    scales = n if s.strategy == "channel" else len(parts)
    if pn != n and scales > 1:
        scales = _round_up(scales, 16)
    return [("weight", pn * pk), ("scale", 4 * scales)]


def deep_gemm_ue8m0_scale_bytes(n: int, k: int, block: tuple[int, int] | None) -> int:
    """The block scales of an fp8 linear layer (``n`` outputs, ``k`` inputs per rank, ``[128,
    128]`` blocks) as DeepGEMM keeps them on SM 10.x (vLLM's ``DeepGemmFp8BlockScaledMMKernel``
    post-load step, ``deepgemm_post_process_fp8_weight_block``; DeepGEMM's
    ``transform_sf_into_required_layout``): one scale per output row (a block's scale repeated over
    its 128 rows), the UE8M0 exponents packed four to an int32, MN-major with the rows padded to
    4: ``4 * round_up(n, 4) * ceil(ceil(k / 128) / 4)`` bytes.

    :raises InputError: a layer DeepGEMM does not take (``should_use_deepgemm_for_fp8_linear``:
        ``n`` a multiple of 64, ``k`` of 128) or other blocks: vLLM's next kernel is not modelled."""
    if block != (128, 128) or n % 64 or k % 128:
        raise InputError(
            "quantization_config",
            "weight_block_size",
            f"an fp8 block layer of {n} x {k} per rank (blocks {block}) on SM 10.x: DeepGEMM does not take it "
            "and the kernel vLLM picks instead is not modelled",
        )
    k_blocks = -(-k // 128)
    return 4 * _round_up(n, 4) * -(-k_blocks // 4)


def _args(g: Mapping[str, Any], key: str) -> Mapping[str, Any] | None:
    v = g.get(key)
    if v is None:
        return None
    if not isinstance(v, Mapping):
        raise InputError("quantization_config", key, "not an object")
    return v


def ct_scheme(group: Mapping[str, Any]) -> ScaledScheme:
    """One compressed-tensors config group's W8A8 / W4A4 scheme (``weights`` /
    ``input_activations``: ``num_bits``, ``type``, ``strategy``, ``dynamic``, ``symmetric``,
    ``block_structure``, ``group_size``).

    :raises InputError: a scheme not modelled (named)."""
    w = _args(group, "weights")
    a = _args(group, "input_activations")
    if w is None:
        raise InputError("quantization_config", "weights", "a config group without weights")
    bits, typ, strategy = w.get("num_bits"), w.get("type", "int"), w.get("strategy")
    if typ == "float" and bits == 4 and strategy == "tensor_group" and w.get("group_size") == 16:
        if a is not None and not (a.get("num_bits") == 4 and a.get("type") == "float"):
            raise InputError(
                "quantization_config", "input_activations", "NVFP4 weights with these inputs: not modelled"
            )
        if a is None:  # CompressedTensorsW4A4Fp4(use_a16=True): the kernels of ModelOpt's W4A16_NVFP4
            return ScaledScheme("nvfp4_a16", "group")
        return ScaledScheme("nvfp4", "group")
    if a is None:
        raise InputError("quantization_config", "input_activations", f"{typ} {bits}-bit weight-only: not modelled")
    if bits != 8 or a.get("num_bits") != 8 or typ != a.get("type") or typ not in ("int", "float"):
        raise InputError("quantization_config", "weights", f"W{bits}A{a.get('num_bits')} {typ}: not modelled")
    dynamic = a.get("dynamic") is True
    if typ == "int":
        if strategy != "channel" or not dynamic or a.get("strategy") != "token":
            raise InputError(
                "quantization_config", "weights", "int8 W8A8 other than channel weights, dynamic tokens: not modelled"
            )
        if a.get("symmetric") is False:
            raise InputError(
                "quantization_config", "input_activations", "asymmetric int8 activations (azp): not modelled"
            )
        return ScaledScheme("int8", "channel")
    if not w.get("symmetric", True):
        raise InputError("quantization_config", "weights", "asymmetric fp8 weights: not modelled")
    if strategy == "block":
        block = w.get("block_structure")
        if (
            not isinstance(block, list)
            or len(block) != 2
            or not all(isinstance(b, int) and not isinstance(b, bool) and b > 0 for b in block)
        ):
            raise InputError("quantization_config", "block_structure", f"not two positive integers: {block!r}"[:80])
        if not dynamic:
            raise InputError("quantization_config", "input_activations", "fp8 blocks with static inputs: vLLM refuses")
        return ScaledScheme("fp8", "block", (block[0], block[1]))
    if strategy not in ("channel", "tensor"):
        raise InputError("quantization_config", "strategy", f"fp8 {strategy!r} weights: not modelled")
    if not dynamic and a.get("strategy") != "tensor":
        raise InputError(
            "quantization_config", "input_activations", "static fp8 inputs other than per tensor: not modelled"
        )
    return ScaledScheme("fp8", str(strategy), static_input=not dynamic)


#: the transform locations compressed-tensors applies to the weights offline (folded into the
#: checkpoint: ``TransformArgs.is_online`` is false for them, and vLLM's
#: ``get_linear_transform_schemes`` builds no transform module for them)
OFFLINE_TRANSFORM_LOCATIONS = ("weight_input", "weight_output")


def online_transforms(qc: Mapping[str, Any]) -> str:
    """The ``transform_config`` groups of compressed-tensors config ``qc`` that apply a transform
    online (a location other than :data:`OFFLINE_TRANSFORM_LOCATIONS`: ``input``, ``output``,
    ``q_attn``, ...), by name, comma-separated; empty when every transform is folded into the
    weights (then vLLM allocates nothing for them) or there is none."""
    tc = qc.get("transform_config")
    groups = tc.get("config_groups") if isinstance(tc, Mapping) else None
    if tc and not isinstance(groups, Mapping):
        return "transform_config"
    online = []
    for name, group in (groups or {}).items():
        applies = group.get("apply") if isinstance(group, Mapping) else None
        if not isinstance(applies, list) or any(
            not isinstance(a, Mapping) or str(a.get("location")) not in OFFLINE_TRANSFORM_LOCATIONS for a in applies
        ):
            online.append(repr(str(name))[1:-1][:40])
    return ", ".join(online)


def ct_scaled_from_config(qc: Mapping[str, Any]) -> ScaledQuant:
    """A compressed-tensors config whose groups are W8A8 int8 / fp8 or NVFP4 W4A4
    (``CompressedTensorsConfig``: ``config_groups`` with ``targets``, ``ignore``).

    :raises InputError: a group not modelled, or no group."""
    groups = qc.get("config_groups")
    if not isinstance(groups, Mapping) or not groups:
        raise InputError("quantization_config", "config_groups", "missing or empty")
    online = online_transforms(qc)
    if online:
        raise InputError(
            "quantization_config",
            "transform_config",
            f"compressed-tensors online transforms ({online}: vLLM's compressed_tensors/transform/module.py "
            "HadamardTransform, which also refuses TP > 1) are not modelled",
        )
    out = []
    for raw_key, g in groups.items():
        key = repr(str(raw_key))[1:-1][:40]
        if not isinstance(g, Mapping):
            raise InputError("quantization_config", f"config_groups.{key}", "not an object")
        targets = g.get("targets")
        if not isinstance(targets, list) or not targets:
            raise InputError("quantization_config", f"config_groups.{key}.targets", "missing or not a list")
        out.append((tuple(str(t) for t in targets), ct_scheme(g)))
    return ScaledQuant(tuple(out), ignore=ignore_list(qc))
