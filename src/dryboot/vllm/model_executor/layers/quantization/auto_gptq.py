"""GPTQ checkpoints (``quant_method: gptq``), as vLLM 0.28.0 serves them: ``auto_gptq.py``
``AutoGPTQConfig`` / ``AutoGPTQLinearMethod`` over the mixed-precision kernel vLLM chooses per GPU
(:mod:`dryboot.vllm.model_executor.kernels.linear.mixed_precision`).

Also the shared description of a weight-only integer scheme (:class:`WNA16`), which AWQ
(:mod:`.auto_awq`) and AutoRound (:mod:`.inc`) fill from their own configs, and the per-layer
bytes of all three (:func:`wna16_linear_bytes`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from dryboot.errors import InputError
from dryboot.vllm.model_executor.kernels.linear.humming import HummingLayer, humming_locks_bytes, humming_tensors
from dryboot.vllm.model_executor.kernels.linear.mixed_precision import (
    MARLIN_GROUP_SIZES,
    UNKNOWN_SM_COUNT,
    MPLinearLayerConfig,
    after_loading,
    choose_mp_linear_kernel,
)
from dryboot.vllm.model_executor.layers.quantization.utils.quant_utils import is_layer_skipped, should_ignore_layer

#: vLLM's fused layers and the checkpoint modules each loads (``packed_modules_mapping``; the
#: Gated DeltaNet projections: ``qwen3_5.py`` ``Qwen3_5ForCausalLMBase``)
PACKED_MODULES = {
    "qkv_proj": ("q_proj", "k_proj", "v_proj"),
    "gate_up_proj": ("gate_proj", "up_proj"),
    "in_proj_qkvz": ("in_proj_qkv", "in_proj_z"),
    "in_proj_ba": ("in_proj_b", "in_proj_a"),
}


#: the module list the loader gives a GPTQ config whose checkpoint's headers hold no non-float
#: tensor (``AutoGPTQConfig.maybe_update_config`` then leaves vLLM's list empty):
#: :func:`gptq_from_config` reads it as ``quantize_substrings = ()``, :func:`gptq_empty_read`
#: applies the release's reading of that empty list
NO_QUANTIZED_TENSOR = "(no quantized tensor in the checkpoint)"
#: what dryboot names where an empty list read from the checkpoint is not served as modelled
WHY_NO_QUANTIZED_TENSOR = "the checkpoint holds no quantized tensor (only F16 / BF16 / F32 in its headers)"


@dataclass(frozen=True)
class LayerScheme:
    """One layer's weight-only scheme: ``bits``, ``group_size`` (-1: per channel), ``sym``."""

    bits: int
    group_size: int
    sym: bool = True


@dataclass(frozen=True)
class WNA16:
    """A weight-only integer checkpoint (W4A16 / W8A16) and the GPU that serves it.

    :param packing: ``gptq`` (``qweight [k / pack, n]``, ``g_idx``, ``qzeros``, ``scales``;
        symmetric), ``awq`` (``qweight [k, n / pack]``, ``qzeros``, ``scales``; zero points) or
        ``ct`` (compressed-tensors: ``weight_packed [n, k / pack]``, ``weight_scale``, an int64
        ``weight_shape [2]``, zero points when asymmetric).
    :param scheme: the default layer scheme.
    :param desc_act: GPTQ act-order (``g_idx`` reorders the input; off with ``group_size -1``).
    :param skip: module name substrings left unquantized (AWQ ``modules_to_not_convert``:
        ``is_layer_skipped``'s ``substring`` mode; a fused layer's shards must agree).
    :param ignore: compressed-tensors ``ignore``: layer names, or ``re:`` patterns
        (``re.match``), matched as the release's ``should_ignore_layer`` does (``vllm_version``).
    :param per_layer: layer name -> scheme, or ``None`` for a layer kept in 16 bits (AutoRound's
        ``extra_config``), matched on the name or its ``.``-suffix.
    :param quantize_prefixes: only layers under these prefixes are quantized (AutoRound's
        ``block_name_to_quantize``), or ``None``.
    :param quantize_substrings: GPTQ's ``modules_in_block_to_quantize`` (given, or read from the
        checkpoint's non-float tensors as vLLM's ``maybe_update_config`` does): a layer is
        quantized when one of them is a substring of its name (a fused layer's parts must agree);
        ``None``: every layer; ``()``: the checkpoint holds no quantized tensor (no layer, where the
        release reads an empty list so: :func:`gptq_empty_read`).
    :param capability: the GPU's compute capability as ``major * 10 + minor``.
    :param sm_count: the GPU's multiprocessors (the Marlin workspace), ``None`` when unknown.
    :param allspark: the release lists vLLM's AllSpark kernel (0.28; gone by 0.33).
    :param g_idx_param: GPTQ's method creates ``g_idx`` (0.28; not in 0.33).
    :param layer_workspace: Marlin allocates a workspace per layer at loading (0.28; not in 0.33).
    :param humming: the release ranks the Humming kernels ahead of Marlin on this GPU
        (:attr:`~dryboot.vllm.model_executor.layers.quantization.QuantRules.humming_before_marlin`).
    """

    packing: str
    scheme: LayerScheme
    desc_act: bool = False
    skip: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    per_layer: tuple[tuple[str, LayerScheme | None], ...] = ()
    quantize_prefixes: tuple[str, ...] | None = None
    quantize_substrings: tuple[str, ...] | None = None
    capability: int = 90
    sm_count: int | None = None
    allspark: bool = True
    g_idx_param: bool = True
    layer_workspace: bool = True
    humming: bool = False
    #: the release serving it (compressed-tensors' ``ignore`` on a fused layer differs)
    vllm_version: str = "0.28.0"

    def layer_scheme(self, name: str) -> LayerScheme | None:
        """The scheme of vLLM layer ``name`` (``model.layers.0.self_attn.qkv_proj``), or ``None``
        (unquantized). A fused layer takes its checkpoint modules' common entry.

        :raises InputError: a fused layer whose parts have different schemes (vLLM refuses it).
        """
        if self.skip and is_layer_skipped(name, self.skip, match_mode="substring"):
            return None
        if self.ignore and should_ignore_layer(name, self.ignore, self.vllm_version):
            return None
        if self.per_layer:
            parts = _parts(name)
            found = {self._entry(p) for p in parts}
            if len(found) > 1:
                raise InputError(
                    "quantization_config", "extra_config", f"{name}: its parts {', '.join(parts)} differ in scheme"
                )
            entry = found.pop()
            if entry != "default":
                return entry  # type: ignore[return-value]
        if self.quantize_prefixes is not None and not any(name.startswith(p) for p in self.quantize_prefixes):
            return None
        if self.quantize_substrings is not None:
            quantized = {any(m in p for m in self.quantize_substrings) for p in _parts(name)}
            if len(quantized) > 1:
                raise InputError(
                    "quantization_config",
                    "modules_in_block_to_quantize",
                    f"some but not all parts of {name} are quantized (vLLM refuses it)",
                )
            if not quantized.pop():
                return None
        return self.scheme

    def head_scheme(self) -> LayerScheme | None:
        """The LM head's scheme: only an explicit ``lm_head`` entry quantizes it (vLLM's INC
        ``config_parser``: a ``ParallelLMHead`` is otherwise unquantized); ``None``: the model
        dtype."""
        return next((s for key, s in self.per_layer if key == "lm_head"), None)

    def _entry(self, name: str) -> LayerScheme | str | None:
        for key, scheme in self.per_layer:
            if name == key or name.endswith("." + key) or name == "model." + key:
                return scheme
        return "default"


def _matches(name: str, entry: str) -> bool:
    """compressed-tensors' ``_is_equal_or_regex_match``: ``re:`` patterns by ``re.match``."""
    if entry.startswith("re:"):
        return re.match(entry[3:], name) is not None
    return name == entry


def _parts(name: str) -> tuple[str, ...]:
    head, _, last = name.rpartition(".")
    if last in PACKED_MODULES:
        return tuple(f"{head}.{p}" for p in PACKED_MODULES[last])
    return (name,)


def int_field(qc: Mapping[str, Any], *keys: str, default: int | None = None) -> int:
    """The first of ``keys`` in ``qc`` as an integer (JSON number), else ``default``.

    :raises InputError: absent without a default, or not an integer."""
    for k in keys:
        if k in qc:
            v = qc[k]
            if isinstance(v, bool) or not isinstance(v, int):
                raise InputError("quantization_config", k, f"not an integer: {v!r}"[:80])
            return v
    if default is None:
        raise InputError("quantization_config", keys[0], "missing")
    return default


def bool_field(qc: Mapping[str, Any], key: str, default: bool | None = None) -> bool:
    """``qc[key]`` as a boolean (JSON true/false), else ``default``.

    :raises InputError: absent without a default, or not a boolean."""
    if key not in qc or qc[key] is None:
        if default is None:
            raise InputError("quantization_config", key, "missing")
        return default
    v = qc[key]
    if not isinstance(v, bool):
        raise InputError("quantization_config", key, f"not a boolean: {v!r}"[:80])
    return v


def gptq_from_config(qc: Mapping[str, Any]) -> WNA16:
    """``AutoGPTQConfig.from_config``: ``bits``, ``group_size``, ``desc_act``, ``sym`` (all
    required), ``lm_head``; 4- or 8-bit symmetric only (vLLM's ``TYPE_MAP``).

    :raises InputError: a scheme vLLM refuses (asymmetric, other bits), or what is not modelled:
        a quantized LM head, ``dynamic`` per-module overrides, ``modules_in_block_to_quantize``.
    """
    bits, group = int_field(qc, "bits"), int_field(qc, "group_size")
    desc_act, sym = bool_field(qc, "desc_act"), bool_field(qc, "sym")
    if (bits, sym) not in ((4, True), (8, True)):
        raise InputError("quantization_config", "bits", f"GPTQ bits={bits}, sym={sym}: vLLM serves 4/8-bit sym only")
    if qc.get("lm_head"):
        raise InputError("quantization_config", "lm_head", "a GPTQ-quantized LM head is not modelled")
    if qc.get("dynamic"):
        raise InputError("quantization_config", "dynamic", "GPTQ per-module overrides are not modelled")
    modules = qc.get("modules_in_block_to_quantize")
    substrings: tuple[str, ...] | None = None
    if modules is not None:
        if not isinstance(modules, list):
            raise InputError("quantization_config", "modules_in_block_to_quantize", "not a list")
        flat = [m for item in modules for m in (item if isinstance(item, list) else [item])]
        if flat == [NO_QUANTIZED_TENSOR]:
            substrings = ()  # the loader read the checkpoint's dtypes: none quantized
        elif flat:
            substrings = tuple(str(m) for m in flat)
        # else empty, as absent: vLLM reads the checkpoint's dtypes (maybe_update_config); from the
        # config alone, every decoder-block linear layer
    return WNA16(
        "gptq", LayerScheme(bits, group, True), desc_act=desc_act and group != -1, quantize_substrings=substrings
    )


def gptq_empty_read(q: WNA16, version: str, empty_read: str) -> WNA16:
    """A GPTQ checkpoint whose headers hold no quantized tensor (``quantize_substrings == ()``;
    ``modules_in_block_to_quantize`` absent or ``[]``, so vLLM reads the checkpoint's dtypes and
    finds none: ``AutoGPTQConfig.maybe_update_config``), as release ``version`` serves it.
    ``empty_read`` (:attr:`~dryboot.vllm.model_executor.layers.quantization.QuantRules.gptq_empty_read`):
    ``unquantized``: ``utils/gptq_utils.py`` ``is_layer_gptq_quantized`` matches no entry, every
    linear layer stays in the model dtype and the float checkpoint loads (0.27.1-0.31.0, each
    recorded); ``quantized``: an empty list is taken as unread metadata and quantizes
    every linear layer, whose GPTQ parameters the checkpoint's float ``weight`` tensors then do
    not fit: vLLM's loader fails (0.32.0, 0.33.0, recorded with vLLM's own ``load_weights``):
    refused by name. Any other ``q`` is returned as it is.

    :raises InputError: the release quantizes every layer (vLLM fails loading)."""
    if q.packing != "gptq" or q.quantize_substrings != ():
        return q
    if empty_read == "unquantized":
        return q
    why = (
        f"{WHY_NO_QUANTIZED_TENSOR}: vLLM {version} reads the empty module list as every linear layer "
        "quantized (is_layer_gptq_quantized), then fails loading the float weights"
    )
    raise InputError("quantization_config", "modules_in_block_to_quantize", why)


def wna16_linear_bytes(
    q: WNA16,
    name: str,
    k: int,
    parts: tuple[int, ...],
    act_bytes: int,
    *,
    tp: int,
    split: str,
    bias: bool = False,
) -> list[tuple[str, int]] | None:
    """What one linear layer holds after ``process_weights_after_loading``, as (kind, bytes), or
    ``None`` for a layer vLLM leaves unquantized. ``k``: input per rank; ``parts``: output parts
    per rank; ``split``: ``row`` (the input divided over ``tp``), else the input whole; ``bias``:
    the layer has a bias (its entry is in the answer).

    GPTQ's ``create_weights`` (``AutoGPTQLinearMethod``): scales ``[groups, n]`` with the whole
    input's groups on every rank under act-order or a per-channel row-parallel layer
    (``marlin_repeat_scales_on_all_ranks``), else the partition's. AWQ's
    (``AutoAWQMarlinLinearMethod``): the partition's groups. Then the chosen kernel's layout
    (:func:`~dryboot.vllm.model_executor.kernels.linear.mixed_precision.after_loading`).

    :raises InputError: vLLM's refusal of the layer (no kernel), or a kernel not modelled.
    """
    s = q.layer_scheme(name)
    if s is None:
        return None
    if q.packing in ("gptq", "awq") and q.scheme.group_size not in MARLIN_GROUP_SIZES:
        # AutoGPTQLinearMethod / AutoAWQ's __init__: verify_marlin_supported on every CUDA GPU,
        # whichever kernel then serves the layer (Machete, Humming)
        raise InputError(
            "quantization_config",
            "group_size",
            f"vLLM refuses it: Marlin does not support group_size = {q.scheme.group_size} (its {q.packing} "
            f"method checks Marlin's group sizes {', '.join(map(str, MARLIN_GROUP_SIZES))} on every GPU)",
        )
    n = sum(parts)
    full_k = k * tp if split == "row" and tp > 1 else k
    awq = q.packing == "awq"
    has_g_idx = q.desc_act and q.packing == "gptq"
    c = MPLinearLayerConfig(
        k=k,
        n=n,
        full_k=full_k,
        bits=s.bits,
        zero_points=not s.sym,
        group_size=s.group_size,
        has_g_idx=has_g_idx,
        act_bytes=act_bytes,
    )
    try:
        kernel = choose_mp_linear_kernel(c, q.capability, allspark=q.allspark, humming=q.humming)
    except InputError as e:
        raise InputError(e.source, e.where, f"{name}: {e.reason}") from None
    group = s.group_size if s.group_size != -1 else full_k
    repeat = not awq and (has_g_idx or (s.group_size == -1 and c.row_parallel))
    scale_rows = (full_k if repeat else k) // group
    out = after_loading(
        kernel,
        c,
        scale_rows,
        sm_count=q.sm_count,
        gptq_layout=q.packing == "gptq",
        g_idx_param=q.g_idx_param,
        layer_workspace=q.layer_workspace,
        bias=bias,
    )
    if kernel == "HummingLinearKernel":
        return out  # Humming replaced every parameter, the bias among them
    if q.packing == "ct":
        out.append(("weight_shape", 16))  # int64 [2], kept
    if bias:
        out.append(("bias", n * act_bytes))
    return out


#: the group sizes vLLM's fused MoE Marlin kernel takes (``check_moe_marlin_supports_config``)
MOE_MARLIN_GROUPS = (-1, 32, 64, 128)


def wna16_experts_bytes(q: WNA16, name: str, e: int, h: int, i: int, act_bytes: int) -> list[tuple[str, int]]:
    """What a ``FusedMoE`` layer of ``e`` local experts (hidden ``h``, intermediate ``i`` per rank)
    holds after ``process_weights_after_loading`` under GPTQ packing (AutoRound
    ``auto_round:auto_gptq`` or GPTQ), AWQ packing (AWQ, AutoRound ``auto_round:auto_awq``:
    ``AutoAWQMoEMethod``) or compressed-tensors' symmetric W4A16 / W8A16
    (``CompressedTensorsWNA16MoEMethod``: no zero points, its two ``weight_shape [e, 2]``
    parameters in the model dtype kept) served by vLLM's fused MoE Marlin backend
    (``fused_moe/oracle/int_wna16.py`` ``_process_weights_marlin`` /
    ``_process_awq_weights_marlin``): the weights repacked per expert by
    ``gptq_marlin_moe_repack`` / ``awq_marlin_moe_repack`` (``[e, k / 16, n x bits / 2]`` int32:
    the bytes they were loaded in), the scales ``[e, groups, n]`` in the activation dtype
    (permuted in place of the loaded ones), the zero points ``[e, groups, n / (32 / bits)]`` int32
    (GPTQ's kept, AWQ's converted by ``moe_awq_to_marlin_zero_points`` to the same shape);
    ``g_idx`` and its sort indices emptied (``[e, 0]``) and the biases dropped; the layer's
    workspace, four int32 per SM (0.27.1-0.30.0; 0.33.0 has none per layer). ``w13``: ``k = h``,
    ``n = 2i``; ``w2``: ``k = i``, ``n = h``. Checked on vLLM 0.27.1, 0.28.0, 0.30.0 and 0.33.0.
    Zero-point experts (AWQ) are served by Marlin on every SM from 7.5 (FlashInfer TRT-LLM, first
    on SM 10.x, takes no zero points: ``_backend_incompatibility_reason``); symmetric ones on SM
    7.5-9.x only.

    :raises InputError: what is not modelled: asymmetric compressed-tensors experts, act-order,
        per-expert ``extra_config`` entries, symmetric experts on SM 10.0+ (FlashInfer TRT-LLM
        comes first), shapes Marlin pads (``marlin_moe_padded_intermediate``) or does not take.
    """
    if q.packing not in ("gptq", "awq", "ct"):
        raise InputError("quantization_config", "quant_method", f"{q.packing} MoE experts are not modelled")
    ct_scheme = q.layer_scheme(name) if q.packing == "ct" else None
    if q.packing == "ct" and (ct_scheme is None or not ct_scheme.sym):
        raise InputError(
            "quantization_config", "config_groups", "compressed-tensors experts: asymmetric or ignored: not modelled"
        )
    if q.desc_act:
        raise InputError("quantization_config", "desc_act", "act-order MoE experts are not modelled")
    if any(key.startswith(name) or ".experts." in key for key, _ in q.per_layer):
        raise InputError("quantization_config", "extra_config", f"{name}: per-expert entries are not modelled")
    if q.quantize_substrings == ():
        # get_moe_quant_method quantizes the experts whatever the list: their float weights then
        # meet GPTQ parameters (not recorded)
        raise InputError(
            "quantization_config", "modules_in_block_to_quantize", f"{name}: {WHY_NO_QUANTIZED_TENSOR}; not modelled"
        )
    # GPTQ's modules_in_block_to_quantize picks linear layers only: vLLM's get_moe_quant_method
    # (auto_gptq.py) quantizes the experts whatever it lists (Qwen1.5-MoE's lists them per expert)
    s = replace(q, quantize_substrings=None).layer_scheme(name)
    if s is None:
        raise InputError("quantization_config", "extra_config", f"{name}: unquantized experts beside quantized layers")
    g = s.group_size
    # AutoAWQ's MoE method runs the same check; off Humming the Marlin check below refuses its shapes
    checked = q.packing == "gptq" or (q.packing == "awq" and q.humming)
    if checked and g in MOE_MARLIN_GROUPS and not h % 128 and not i % 64 and i % max(64, g):
        # check_moe_marlin_supports_layer, before any MoE kernel is chosen (Humming on 0.33 SM 9.0
        # too): a group straddling the TP shard sends vLLM to its MoeWNA16 method (recorded:
        # Qwen1.5-MoE-A2.7B GPTQ at TP 2, intermediate 704, group 128, on SM 8.6-9.0; Qwen4-Exp's
        # tiny AWQ config at TP 2, intermediate 64, group 128, on 0.33.0 SM 9.0, where vLLM's
        # MoeWNA16 Humming conversion then fails)
        raise InputError(
            "quantization_config",
            "group_size",
            f"{name}: intermediate {i} per rank is not a multiple of group {g}: vLLM falls back to its "
            "MoeWNA16 experts, not modelled",
        )
    if q.humming:
        return humming_wna16_experts_bytes(q, s, e, h, i, act_bytes)
    top = 1000 if q.packing == "awq" else 100
    if q.capability is None or not 75 <= q.capability < top:
        raise InputError(
            "--gpu",
            None,
            f"{'AWQ' if q.packing == 'awq' else 'symmetric'} MoE experts are modelled on SM 7.5"
            f"{'+' if top == 1000 else '-9.x'} only (vLLM's Marlin MoE backend)",
        )
    if g not in MOE_MARLIN_GROUPS or h % 128 or i % max(64, g):
        raise InputError(
            "quantization_config",
            "group_size",
            f"{name}: Marlin MoE pads or refuses hidden {h}, intermediate {i} per rank, group {g}: not modelled",
        )
    pack = 32 // s.bits
    groups_h, groups_i = (1, 1) if g == -1 else (h // g, i // g)
    act = act_bytes
    if q.packing == "ct":
        # compressed-tensors (CompressedTensorsWNA16MoEMethod): symmetric, no zero points kept;
        # its two weight_shape parameters [e, 2] in the model dtype stay
        extra = [("weight_shape", e * 2 * act), ("weight_shape", e * 2 * act)]
    else:
        extra = [("zeros", e * groups_h * (2 * i // pack) * 4), ("zeros", e * groups_i * (h // pack) * 4)]
    return [
        ("experts", e * h * 2 * i * s.bits // 8),
        ("experts", e * i * h * s.bits // 8),
        ("scale", e * groups_h * 2 * i * act),
        ("scale", e * groups_i * h * act),
        *extra,
        # the layer's Marlin MoE workspace: four int32 per SM (marlin_make_workspace_new(device, 4));
        # 0.33 takes it from the worker's workspace manager per call
        *(
            [("workspace", 4 * 4 * (q.sm_count if q.sm_count is not None else UNKNOWN_SM_COUNT))]
            if q.layer_workspace
            else []
        ),
    ]


def humming_wna16_experts_bytes(
    q: WNA16, s: LayerScheme, e: int, h: int, i: int, act_bytes: int
) -> list[tuple[str, int]]:
    """GPTQ / AWQ / compressed-tensors W4A16 experts where vLLM 0.33 ranks its ``HUMMING`` backend
    ahead of Marlin (SM 9.0: ``fused_moe/oracle/int_wna16.py`` ``_get_priority_backends`` through
    ``prioritize_humming``; Humming declines no WNA16 layout): ``convert_to_humming_moe_kernel_format``
    converts each sub-layer (``w13``: ``n = 2i``, ``k = h``; ``w2``: ``n = h``, ``k = i``) with
    the checkpoint's schema (GPTQ's scales in the activation dtype, no zero points when symmetric;
    AWQ's integer zero points) and keeps Humming's tensors per expert
    (:func:`~dryboot.vllm.model_executor.kernels.linear.humming.humming_tensors`, ``[e, ...]``:
    ``n`` padded to 256, ``k`` to 128); every other ``w13_`` / ``w2_`` parameter (``g_idx``,
    ``weight_shape``, the loaded ``qzeros`` of a symmetric checkpoint) is deleted. The experts
    object (``HummingGroupedExperts``) keeps ``8 x SMs`` int32 locks per MoE layer.

    :raises InputError: per-channel experts (``group_size -1``: not checked)."""
    if s.group_size <= 0:
        raise InputError(
            "quantization_config", "group_size", "per-channel MoE experts through Humming (SM 9.0) are not modelled"
        )
    zp = not s.sym  # AWQ; an asymmetric GPTQ checkpoint keeps its qzeros as zero points too
    out: list[tuple[str, int]] = []
    for n, k in ((2 * i, h), (h, i)):
        layer = HummingLayer(
            n=n, k=k, bits=s.bits, group_size=s.group_size, scale_bytes=act_bytes, act_bytes=act_bytes,
            zero_points=zp, experts=e,
        )  # fmt: skip
        out += humming_tensors(layer)
    return [*out, ("workspace", humming_locks_bytes(q.sm_count))]
