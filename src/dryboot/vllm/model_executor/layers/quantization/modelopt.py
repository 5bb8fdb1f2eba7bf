"""ModelOpt (NVIDIA Model Optimizer) checkpoints as vLLM holds them after loading: the uniform FP8 /
NVFP4 methods and ``MIXED_PRECISION`` (vLLM's ``layers/quantization/modelopt.py``
``ModelOptMixedPrecisionConfig``, served as ``modelopt_mixed``), linear layers and MoE experts.

``MIXED_PRECISION`` names each quantized layer in ``quantized_layers`` (``{name: {"quant_algo":
"FP8" | "NVFP4" | "W4A16_NVFP4" | ..., "group_size": 16}}``, in ``config.json``'s
``quantization_config`` or the legacy ``hf_quant_config.json``'s ``quantization``); a layer it does
not name stays unquantized. vLLM resolves a layer's algorithm (``_resolve_quant_algo``) by its own
name, then a fused layer's parts (which must agree), then any key under the layer's name, then,
for routed experts, any key under their parent block; the checkpoint's names of a vision-language
wrapper (``model.language_model.layers.N``) are the text model's (``model.layers.N`` here).

After ``process_weights_after_loading`` (checked against vLLM on the meta device,
``tests/fidelity/quant_cases_modelopt.py``):

* ``FP8`` (``ModelOptFp8LinearMethod``): per-tensor fp8 weights with static per-tensor inputs, the
  layout of :func:`~dryboot.vllm.model_executor.layers.quantization.scaled_mm.scaled_linear_bytes`
  for the kernel vLLM picks per SM (Marlin below SM 8.9, CUTLASS / FlashInfer from it).
* ``NVFP4`` (W4A4, ``ModelOptNvFp4LinearMethod``): the NVFP4 layout of ``scaled_linear_bytes``.
* ``W4A16_NVFP4`` (``ModelOptNvFp4W4A16LinearMethod``): Marlin on every SM (``use_a16``): the
  packed weight repacked to int32 over ``marlin_padded_nk``'s ``(pn, pk)`` (``pn x pk / 2``
  bytes), the fp8 group scales permuted (``pn x pk / 16``), one float32 ``weight_global_scale``
  (the checkpoint's ``weight_scale_2`` max-reduced; the ``input_scale`` placeholder deleted), and
  the per-layer Marlin workspace (one int32 per SM) where the release has it. On 0.33.0 SM 9.0
  ``HummingNvFp4LinearKernel`` serves it (as the NVFP4 W4A4 layers there:
  :func:`~dryboot.vllm.model_executor.layers.quantization.scaled_mm.humming_nvfp4_linear_bytes`).
* NVFP4 (W4A4) MoE experts on SM 12.0 through CUTLASS: :func:`_cutlass_experts_bytes`; on SM
  10.x through FlashInfer TRT-LLM (0.27.1-0.33.0, gated experts without SwiGLU limits, the hidden
  size padded to 256): :func:`trtllm_nvfp4_experts_bytes`; other SM 10.x cases refused by name.
* MoE experts under ``NVFP4`` / ``W4A16_NVFP4`` (``ModelOptNvFp4FusedMoE``) through Marlin
  (``W4A16_NVFP4`` on every SM, ``NVFP4`` below SM 10.0; ``prepare_nvfp4_moe_layer_for_marlin``):
  the intermediate size per rank padded (to 64 when ``hidden % 128 == 0``, else to 128), ``w13``
  ``[E, H / 16, 2 x 2 pI]`` and ``w2`` ``[E, pI / 16, 2 H]`` int32 (``E x H x 2 pI / 2`` and
  ``E x pI x H / 2`` bytes), their fp8 scales (an eighth of that), one float32 global scale per
  expert for each (``[E]``), the input scales dropped, and a workspace of four int32 per SM
  (0.27.1-0.30.0; 0.33.0 takes it from the worker). On 0.33.0 SM 9.0 the Humming MoE backend
  serves them (:func:`~dryboot.vllm.model_executor.layers.quantization.scaled_mm.
  humming_nvfp4_experts_bytes`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from dryboot.errors import InputError
from dryboot.vllm.model_executor.kernels.linear.humming import HummingLayer, humming_locks_bytes, humming_tensors
from dryboot.vllm.model_executor.kernels.linear.mixed_precision import marlin_padded_nk
from dryboot.vllm.model_executor.layers.quantization.auto_gptq import PACKED_MODULES
from dryboot.vllm.model_executor.layers.quantization.scaled_mm import (
    ScaledQuant,
    ScaledScheme,
    humming_nvfp4_experts_bytes,
    humming_nvfp4_linear_bytes,
    ignored_by,
    nvfp4_marlin_bytes,
    scaled_linear_bytes,
)

#: the per-layer ``quant_algo`` values of ``MIXED_PRECISION`` that dryboot models, as schemes
#: (``FP8``: per-tensor weights and static per-tensor inputs; ``W4A16_NVFP4``: weight-only NVFP4)
MIXED_ALGOS = {
    "FP8": ScaledScheme("fp8", "tensor", static_input=True),
    "NVFP4": ScaledScheme("nvfp4", "group"),
    "W4A16_NVFP4": ScaledScheme("nvfp4_a16", "group"),
}
#: what vLLM's mixed-precision config also serves, not modelled here (refused by name)
OTHER_ALGOS = ("MXFP8", "FP8_PB_WO", "FP8_PER_CHANNEL_PER_TOKEN", "FP8_BLOCK_SCALES", "W4A8_AWQ", "NVFP4_AWQ")

#: the checkpoint's names of a vision-language wrapper's text model, and the text model's
_WRAPPER_PREFIXES = ("model.language_model.", "language_model.model.", "backbone.")


def text_model_name(name: str) -> str:
    """A checkpoint layer name as the text model's walk names it: ``model.language_model.X`` and
    ``language_model.model.X`` are ``model.X`` (vLLM's ``_quantized_layer_prefix_candidates``);
    Nemotron-H's ``backbone.X`` is ``model.X`` (its ``hf_to_vllm_mapper``)."""
    for p in _WRAPPER_PREFIXES:
        if name.startswith(p):
            return "model." + name[len(p) :]
    return name


#: a vision-language wrapper's tower as the checkpoint names it, and as vLLM's model does (the
#: Qwen3.5 / 3.6 wrappers' ``hf_to_vllm_mapper``: ``model.visual.`` is ``visual.``)
_TOWER_PREFIX = ("model.visual", "visual")


def checkpoint_module_name(name: str) -> str:
    """A module name of a checkpoint's quantization config as vLLM maps it onto its modules and
    dryboot's walks name them: a wrapper's tower ``model.visual...`` is ``visual...``, a text-model
    name as :func:`text_model_name` gives it; a ``re:`` pattern or any other name unchanged (the
    mappers rewrite name prefixes only)."""
    ckpt, model = _TOWER_PREFIX
    return model + name[len(ckpt) :] if name.startswith(ckpt) else text_model_name(name)


def exclude_names(names: tuple[str, ...]) -> tuple[str, ...]:
    """ModelOpt's ``exclude_modules`` / ``ignore`` as vLLM matches them (``apply_vllm_mapper``,
    then ``is_layer_excluded``: :func:`.quant_utils.is_layer_excluded`): each name mapped onto
    dryboot's walk names (:func:`checkpoint_module_name`), wildcards kept."""
    return tuple(checkpoint_module_name(i) for i in names)


@dataclass(frozen=True)
class ModelOptQuant(ScaledQuant):
    """A ModelOpt checkpoint on the GPU serving it: uniform (``algo``: ``FP8`` / ``NVFP4``, every
    linear layer but the excluded) or ``MIXED_PRECISION`` (``layers``: (text-model name, algo) of
    ``quantized_layers``).

    :param group_size: NVFP4's group (16; vLLM's kernels take no other).
    :param moe_checked: the release's NVFP4 experts are checked (:attr:`QuantRules.modelopt_moe`).
    :param kv_cache: a KV-cache algorithm is given (``kv_cache_quant_algo``, or config.json's
        ``kv_cache_scheme`` of 8-bit floats): the attention layers take ``ModelOptKVCacheMethod``.
    """

    algo: str | None = None
    layers: tuple[tuple[str, str], ...] = ()
    group_size: int = 16
    kv_cache: bool = True
    moe_checked: bool = True

    def algo_of(self, name: str) -> str | None:
        """The ``quant_algo`` vLLM resolves for its layer ``name`` (``_resolve_quant_algo``), or
        ``None`` (unquantized).

        :raises InputError: a fused layer whose parts name different algorithms (vLLM refuses it)."""
        if self.algo is not None:
            return self.algo
        table = dict(self.layers)
        if name in table:
            return table[name]
        head, _, last = name.rpartition(".")
        if last in PACKED_MODULES:
            found = {table[f"{head}.{p}"] for p in PACKED_MODULES[last] if f"{head}.{p}" in table}
            if len(found) > 1:
                raise InputError("quantization_config", "quantized_layers", f"{name!r}: its parts differ in quant_algo")
            if found:
                return found.pop()
        under = [a for k, a in self.layers if k.startswith(name + ".")]
        if under:
            return under[0]
        if name.endswith(".experts"):
            parent = name.rsplit(".experts", 1)[0] + "."
            under = [a for k, a in self.layers if k.startswith(parent)]
            if under:
                return under[0]
        return None

    def layer_scheme(self, name: str, parts: tuple[str, ...]) -> ScaledScheme | None:
        """The scheme of vLLM's linear layer ``name`` (``parts``: its checkpoint modules, for the
        exclusions), or ``None`` (unquantized).

        :raises InputError: an algorithm not modelled, or fused parts that differ (named)."""
        if self.algo is not None:
            return super().layer_scheme(name, parts)
        if self._excluded(name, parts):
            return None
        algo = self.algo_of(name)
        return None if algo is None else _scheme(algo, name)

    def _excluded(self, name: str, parts: tuple[str, ...]) -> bool:
        return ignored_by("modelopt", self.ignore, name, parts, self.vllm_version)

    def experts_excluded(self, name: str) -> bool:
        """Whether ``exclude_modules`` leave the ``FusedMoE`` layer ``name`` (``...mlp.experts``)
        unquantized (``is_layer_excluded``: the config gives it no method, so vLLM serves it with
        ``UnquantizedFusedMoEMethod``)."""
        return self._excluded(name, (name,))


def _scheme(algo: str, name: str) -> ScaledScheme:
    scheme = MIXED_ALGOS.get(algo)
    if scheme is None:
        raise InputError("quantization_config", "quantized_layers", f"{name!r}: quant_algo {algo} is not modelled")
    return scheme


def modelopt_quant(algo: str, ignore: tuple[str, ...], group_size: int = 16) -> ModelOptQuant:
    """ModelOpt ``FP8`` (per-tensor weights and static per-tensor inputs) or ``NVFP4`` (16-element
    groups): every linear layer but those of ``exclude_modules`` (names, ``*`` wildcards)."""
    scheme = MIXED_ALGOS[algo]
    return ModelOptQuant(
        ((("Linear",), scheme),),
        ignore=exclude_names(ignore),
        ignore_rule="modelopt",
        algo=algo,
        group_size=group_size,
    )


def _layers_table(qc: Mapping[str, Any]) -> Mapping[str, Any]:
    inner = qc.get("quantization")
    table = inner.get("quantized_layers") if isinstance(inner, Mapping) else qc.get("quantized_layers")
    if not isinstance(table, Mapping) or not table:
        raise InputError(
            "quantization_config", "quantized_layers", "MIXED_PRECISION needs a non-empty mapping (vLLM refuses it)"
        )
    return table


def modelopt_mixed_from_config(qc: Mapping[str, Any], ignore: tuple[str, ...]) -> ModelOptQuant:
    """A ``MIXED_PRECISION`` config (``quantized_layers``; ``ignore`` / ``exclude_modules`` given
    as ``ignore``) as :class:`ModelOptQuant`.

    :raises InputError: no ``quantized_layers``, an entry without a ``quant_algo`` string, or an
        NVFP4 group other than 16 (named)."""
    layers: list[tuple[str, str]] = []
    group = 16
    for raw, info in _layers_table(qc).items():
        key = repr(str(raw))[1:-1][:60]
        algo = info.get("quant_algo") if isinstance(info, Mapping) else None
        if not isinstance(algo, str):
            raise InputError("quantization_config", f"quantized_layers.{key}", "no quant_algo string")
        algo = algo.upper()
        if algo in ("NVFP4", "W4A16_NVFP4"):
            g = info.get("group_size", 16)
            if g != 16:
                raise InputError("quantization_config", f"quantized_layers.{key}", f"NVFP4 group_size {g!r}: not 16")
        layers.append((text_model_name(str(raw)), algo))
    groups = tuple(((name,), MIXED_ALGOS[a]) for name, a in layers if a in MIXED_ALGOS)
    inner = qc.get("quantization")
    if isinstance(inner, Mapping):  # hf_quant_config.json
        kv = bool(inner.get("kv_cache_quant_algo"))
    else:  # config.json: an 8-bit float kv_cache_scheme
        scheme = qc.get("kv_cache_scheme")
        kv = isinstance(scheme, Mapping) and scheme.get("type") == "float" and scheme.get("num_bits") == 8
    return ModelOptQuant(
        groups,
        ignore=exclude_names(ignore),
        ignore_rule="modelopt",
        layers=tuple(layers),
        group_size=group,
        kv_cache=kv,
    )


def modelopt_linear_bytes(
    q: ScaledQuant, s: ScaledScheme, k: int, parts: tuple[int, ...], act_bytes: int, *, bias: bool = False
) -> list[tuple[str, int]]:
    """What one ModelOpt linear layer holds after loading (``k`` inputs, output ``parts`` per
    rank), as (kind, bytes): ``W4A16_NVFP4`` through Marlin (the module's docstring), the other
    algorithms as :func:`scaled_linear_bytes` gives them. ``bias``: the layer's bias is among the
    entries."""
    if s.kind == "fp8" and s.strategy == "tensor" and q.capability < 89 and not q.fp8_marlin:
        return scaled_linear_bytes(replace(q, capability=89), s, k, parts, act_bytes, bias=bias)
    if s.kind != "nvfp4_a16":
        return scaled_linear_bytes(q, s, k, parts, act_bytes, bias=bias)
    if q.humming:  # HummingNvFp4LinearKernel (0.33, SM 9.0): every parameter replaced
        return humming_nvfp4_linear_bytes(sum(parts), k, act_bytes, sm_count=q.sm_count, bias=bias)
    if q.capability in W4A16_CUTEDSL_CAPABILITIES and q.vllm_version in W4A16_CUTEDSL_RELEASES:
        plain = [("bias", sum(parts) * act_bytes)] if bias else []
        return [*w4a16_cutedsl_linear_bytes(sum(parts), k), *plain]
    sms = q.sm_count if q.sm_count is not None else 256
    workspace = [("workspace", 4 * sms)] if q.layer_workspace else []
    plain = [("bias", sum(parts) * act_bytes)] if bias else []
    return [*nvfp4_marlin_bytes(sum(parts), k), ("scale", 4), *workspace, *plain]


#: the releases whose ``init_nvfp4_linear_kernel(use_a16=True)`` (``kernels/linear/__init__.py``)
#: prefers FlashInfer's CuTe DSL BF16 x FP4 GEMM (``FlashInferCuteDslNvFp4W4A16LinearKernel``) on SM
#: 10.0 / 10.3 over Marlin (0.27.1-0.29.0: Marlin there, recorded on B200 with 0.28.0 / 0.29.0); its
#: layout (:func:`w4a16_cutedsl_linear_bytes`) recorded on B200 on each (nvidia/Qwen3.6-27B-NVFP4:
#: ``quant-recorded-modelopt-0.30.0-fam.json``, ``-0.31.0``, ``-0.32.0``, ``quant-recorded-bw33-0.33.0.json``)
W4A16_CUTEDSL_RELEASES = ("0.30.0", "0.31.0", "0.32.0", "0.33.0")
#: the capabilities (``major * 10 + minor``) that kernel is preferred on
W4A16_CUTEDSL_CAPABILITIES = (100, 103)


def w4a16_cutedsl_linear_bytes(n: int, k: int) -> list[tuple[str, int]]:
    """A weight-only NVFP4 (``W4A16_NVFP4``) linear layer of ``n`` outputs and ``k`` inputs per rank
    after ``FlashInferCuteDslNvFp4W4A16LinearKernel.process_weights_after_loading`` (SM 10.0 / 10.3,
    vLLM 0.30.0-0.33.0, :data:`W4A16_CUTEDSL_RELEASES`), as (kind, bytes): the packed uint8 weight
    padded to multiples of 64 in rows and in 4-bit inputs (``pad_nvfp4_weight_for_cutlass(alignment=64)``;
    FlashInfer's SM 10.x ``_prepare_cute_dsl_sm100`` keeps it as given), the fp8 block scales (one per
    16 inputs) swizzled to ``[round_up(n, 128), round_up(k / 16, 4)]`` (``swizzle_blockscale``; the
    6-D MMA layout FlashInfer makes of them is a view), and the float32 global scale (a view of the
    loaded one)."""
    weight = _round_up(n, 64) * _round_up(k, 64) // 2
    return [("weight", weight), ("scale", _round_up(n, 128) * _round_up(k // 16, 4)), ("scale", 4)]


def _round_up(x: int, m: int) -> int:
    return -(-x // m) * m


def _cutlass_experts_bytes(e: int, h: int, i: int) -> list[tuple[str, int]]:
    """NVFP4 (W4A4) experts on SM 12.0 (FlashInfer CUTLASS, or vLLM's CUTLASS: the same sizes;
    ``prepare_nvfp4_moe_layer_for_fi_or_cutlass``): packed uint8 weights as loaded (w1 / w3
    reordered in place), the fp8 block scales swizzled per expert (rows to 128, scale columns to
    4), and six float32 ``[E]``: the two weight global scales, the two input scales (max-reduced,
    or one shared value repeated) and their reciprocals the quant config holds.

    :raises InputError: an intermediate size per rank vLLM would have to pad (it refuses)."""
    if (2 * i) % 128:
        raise InputError(
            "--tensor-parallel-size",
            None,
            f"NVFP4 experts' gate/up rows per rank ({2 * i}) not a multiple of 128: vLLM's CUTLASS MoE "
            "refuses the padding",
        )
    return [
        ("experts", e * 2 * i * h // 2),
        ("experts", e * h * i // 2),
        ("scale", e * 2 * i * _round_up(h // 16, 4)),
        ("scale", e * _round_up(h, 128) * _round_up(i // 16, 4)),
        *[("scale", 4 * e)] * 6,
    ]


#: releases whose ModelOpt NVFP4 (W4A4) experts on SM 10.x through FlashInfer TRT-LLM
#: (``TrtLlmNvFp4ExpertsMonolithic`` / ``Modular``, first in ``select_nvfp4_moe_backend`` on each)
#: are recorded: quant-recorded-modelopt-0.33.0.json (nvidia/Qwen3-30B-A3B-NVFP4 on B200 at TP 1 /
#: 2 / 4 / 8, TP 8's intermediate padded 96 -> 128) and quant-recorded-trtllm-<release>.json (tiny
#: Qwen3-MoE, hidden 1024 and 1152 -> 1280, TP 1 / 2 / 4, expert parallelism at TP 2 / 4)
TRTLLM_NVFP4_MOE_RELEASES = ("0.27.1", "0.28.0", "0.29.0", "0.30.0", "0.31.0", "0.32.0", "0.33.0")
#: ``prepare_nvfp4_moe_layer_for_fi_or_cutlass`` on FlashInfer TRT-LLM: the hidden size padded
#: to 256 (``align_fp4_moe_hidden_dim_for_fi``), the gated intermediate size to 64
#: (``align_fp4_moe_weights_for_fi``)
TRTLLM_NVFP4_ALIGN = (256, 64)


def trtllm_nvfp4_experts_bytes(e: int, h: int, i: int) -> list[tuple[str, int]]:
    """NVFP4 (W4A4) gated experts on SM 10.x through FlashInfer TRT-LLM, vLLM 0.27.1-0.33.0
    (``prepare_nvfp4_moe_layer_for_fi_or_cutlass`` then ``TrtLlmNvFp4ExpertsBase.
    process_weights_after_loading``) for ``e`` local experts (all of them, or ``E / EP`` under
    expert parallelism): the hidden size padded to ``ph``, a multiple of 256
    (``align_fp4_moe_hidden_dim_for_fi``; 0.27-0.31 ``align_trtllm_fp4_moe_hidden_dim_for_fi``:
    zero columns), the intermediate size per rank padded to ``pi``, a multiple of 64
    (``align_fp4_moe_weights_for_fi``: gate and up each padded), the packed weights and the fp8
    block scales shuffled in place of the loaded ones (``prepare_static_weights_for_trtllm_fp4_moe``:
    ``[e, 2 pi, ph / 2]`` / ``[e, ph, pi / 2]`` uint8, ``[e, 2 pi, ph / 16]`` / ``[e, ph, pi / 16]``
    fp8, no swizzle padding), and seven float32 ``[e]``: the two weight global scales (the input
    scales folded in place), the two input scales (max-reduced and repeated), their reciprocals
    the quant config holds, and ``g1_scale_c`` (registered on the layer). No clamp / alpha / beta
    (the callers' experts take no SwiGLU limit). Bytes."""
    ph, pi = _round_up(h, TRTLLM_NVFP4_ALIGN[0]), _round_up(i, TRTLLM_NVFP4_ALIGN[1])
    return [
        ("experts", e * 2 * pi * ph // 2),
        ("experts", e * ph * pi // 2),
        ("scale", e * 2 * pi * ph // 16),
        ("scale", e * ph * pi // 16),
        *[("scale", 4 * e)] * 7,
    ]


def modelopt_fp8_experts_bytes(q: ModelOptQuant, e: int, h: int, i: int, act_bytes: int) -> list[tuple[str, int]]:
    """ModelOpt ``FP8`` (per-tensor) MoE experts after loading (``ModelOptFp8MoEMethod``: the two
    input scales max-reduced to one float32 scalar each, ``w13``'s two shard scales to one per
    expert, ``w13`` requantized in place), over the backend vLLM picks per SM
    (``fused_moe/oracle/fp8.py``): below SM 8.9 Marlin (weight-only: the weights repacked, their
    bytes; the scales ``[e, 1, 2i]`` / ``[e, 1, h]`` in the activation dtype; a workspace of four
    int32 per SM where the release keeps one per layer); SM 8.9 Triton (fp8 weights, float32
    scales ``[e]``); SM 9.0 and 12.x FlashInfer CUTLASS (Triton's tensors, plus ``g1_alphas`` /
    ``g2_alphas`` ``[e]`` float32 and the two inverse input scales the quant config holds).
    Checked against vLLM for Llama-4 (``tests/fidelity/quant_cases_llama4.py``).

    :raises InputError: SM 10.x (FlashInfer TRT-LLM's per-tensor experts: not modelled)."""
    w13, w2 = e * 2 * i * h, e * h * i
    inputs = [("scale", 4), ("scale", 4)]
    if q.capability < 89:
        sms = q.sm_count if q.sm_count is not None else 256
        workspace = [("workspace", 16 * sms)] if q.layer_workspace else []
        return [("experts", w13), ("experts", w2), ("scale", e * 2 * i * act_bytes), ("scale", e * h * act_bytes),
                *inputs, *workspace]  # fmt: skip
    triton = [("experts", w13), ("experts", w2), ("scale", 4 * e), ("scale", 4 * e), *inputs]
    if q.capability < 90:
        return triton
    if 100 <= q.capability < 120:
        raise InputError(
            "--gpu",
            None,
            f"ModelOpt FP8 MoE experts on SM {q.capability // 10}.{q.capability % 10}: vLLM's FlashInfer TRT-LLM "
            "per-tensor experts (their output scales) are not modelled",
        )
    return [*triton, ("scale", 4 * e), ("scale", 4 * e), ("scale", 4), ("scale", 4)]


def modelopt_experts_bytes(
    q: ModelOptQuant,
    name: str,
    e: int,
    h: int,
    i: int,
    *,
    gated: bool = True,
    fp8_act_bytes: int | None = None,
    plain_swiglu: bool = False,
) -> list[tuple[str, int]]:
    """What a ``FusedMoE`` layer ``name`` of ``e`` local experts (hidden ``h``, intermediate ``i``
    per rank) holds after loading under ModelOpt (see the module's docstring: NVFP4 experts
    through Marlin). ``gated=False``: Nemotron-H's relu² experts (``up_proj`` / ``down_proj``
    only), whose ``w13`` holds one intermediate block, not two (``[E, H / 16, 2 pI]`` int32).

    :raises InputError: the experts' algorithm or backend not modelled (named): FP8 experts,
        W4A4 NVFP4 experts on SM 10.0+ (FlashInfer / CUTLASS layouts), no per-layer workspace.
        ``fp8_act_bytes``: the activation dtype's bytes where the caller's FP8 experts are checked
        (:func:`modelopt_fp8_experts_bytes`); ``None``: FP8 experts refused. ``plain_swiglu``: the
        caller's experts are gated without SwiGLU limits (clamp / alpha / beta), as checked for the
        caller (the generic MoE walk: SiLU, with or without expert parallelism): on SM 10.x, on
        :data:`TRTLLM_NVFP4_MOE_RELEASES`, they go through FlashInfer TRT-LLM
        (:func:`trtllm_nvfp4_experts_bytes`); otherwise refused there."""
    if not q.moe_checked:
        raise InputError(
            "quantization_config",
            "quant_method",
            "ModelOpt MoE experts after loading: not checked on this vLLM release",
        )
    algo = q.algo_of(name)
    if algo is None:
        raise InputError("quantization_config", "quantized_layers", f"{name!r}: unquantized ModelOpt experts")
    if algo == "FP8" and fp8_act_bytes is not None:
        return modelopt_fp8_experts_bytes(q, e, h, i, fp8_act_bytes)
    if algo not in ("NVFP4", "W4A16_NVFP4"):
        raise InputError("quantization_config", "quant_algo", f"ModelOpt {algo} MoE experts are not modelled")
    if algo == "NVFP4" and q.capability >= 100 and not gated:
        raise InputError(
            "quantization_config",
            "quant_algo",
            "ModelOpt NVFP4 (W4A4) non-gated MoE experts on SM 10.0+ are not modelled",
        )
    if algo == "NVFP4" and q.capability >= 120:
        return _cutlass_experts_bytes(e, h, i)
    if algo == "NVFP4" and q.capability >= 100:
        if plain_swiglu and q.vllm_version in TRTLLM_NVFP4_MOE_RELEASES:
            return trtllm_nvfp4_experts_bytes(e, h, i)
        raise InputError(
            "--gpu",
            None,
            f"ModelOpt NVFP4 (W4A4) MoE experts on SM {q.capability // 10}.{q.capability % 10}: vLLM's FlashInfer "
            "TRT-LLM / CuTe DSL backends (shuffled, hidden-padded layouts) are not modelled for this model on this "
            f"release (modelled: the SiLU-gated MoE families on {TRTLLM_NVFP4_MOE_RELEASES[0]}-"
            f"{TRTLLM_NVFP4_MOE_RELEASES[-1]}, Llama-4 and Gemma-4 where recorded)",
        )
    if q.humming:  # 0.33 SM 9.0: prioritize_humming puts HUMMING ahead of MARLIN (fused_moe/oracle/nvfp4.py)
        return humming_nvfp4_experts_bytes(e, h, i, sm_count=q.sm_count, gated=gated)
    if h % 64:
        raise InputError("config.json", "hidden_size", f"{h}: not a multiple of 64 (Marlin's MoE tiles refuse it)")
    pi = -(-i // 64) * 64 if h % 128 == 0 else -(-i // 128) * 128
    w13, w2 = e * h * (2 if gated else 1) * pi // 2, e * pi * h // 2
    sms = q.sm_count if q.sm_count is not None else 256
    return [
        ("experts", w13),
        ("experts", w2),
        ("scale", w13 // 8),
        ("scale", w2 // 8),
        ("scale", 4 * e),
        ("scale", 4 * e),
        *([("workspace", 16 * sms)] if q.layer_workspace else []),
    ]


#: MXFP8's scale block along K (``MXFP8_BLOCK_SIZE``: one e8m0 byte per 32 fp8 weights)
MXFP8_BLOCK = 32


def mxfp8_marlin_linear_bytes(n: int, k: int) -> list[tuple[str, int]]:
    """An MXFP8 linear layer (``n`` outputs, ``k`` inputs per rank; no bias) after
    ``MarlinMxfp8LinearKernel`` (``prepare_mxfp8_layer_for_marlin``): over ``marlin_padded_nk(n,
    k, 32)``'s ``(pn, pk)`` the fp8 weight packed to int32 and repacked (``gptq_marlin_repack``,
    8 bits: ``[pk / 16, pn x 4]`` int32, ``pn x pk`` bytes) and the e8m0 scales permuted
    (``[pk / 32, pn]``, one byte each).

    :raises InputError: ``k`` not a multiple of 32 (vLLM refuses it)."""
    if k % MXFP8_BLOCK:
        raise InputError("config.json", "hidden_size", f"MXFP8 needs input sizes divisible by 32, got {k}")
    pn, pk = marlin_padded_nk(n, k, MXFP8_BLOCK)
    return [("weight", pn * pk), ("scale", pn * pk // MXFP8_BLOCK)]


def mxfp8_humming_linear_bytes(n: int, k: int, *, sm_count: int) -> list[tuple[str, int]]:
    """An MXFP8 linear layer (``n`` outputs, ``k`` inputs per rank; no bias) after
    ``HummingMxfp8LinearKernel`` (vLLM 0.33.0 on SM 9.0, where ``prioritize_humming`` ranks it
    ahead of ``MarlinMxfp8LinearKernel``; ``kernels/linear/mxfp8/humming.py``): Humming's standard
    schema of 8-bit float weights with e8m0 group scales of 32 (one byte each), padded to
    ``(pn, pk)`` (:data:`~dryboot.vllm.model_executor.kernels.linear.humming.PAD_N` /
    ``PAD_K``): the repacked weight (``pn x pk`` bytes), the scales ``[pk / 32, pn]``, and the
    kernel's locks (``8 x sm_count`` int32,
    :func:`~dryboot.vllm.model_executor.kernels.linear.humming.humming_locks_bytes`).

    :raises InputError: ``k`` not a multiple of 32 (vLLM refuses it)."""
    if k % MXFP8_BLOCK:
        raise InputError("config.json", "hidden_size", f"MXFP8 needs input sizes divisible by 32, got {k}")
    layer = HummingLayer(n=n, k=k, bits=8, group_size=MXFP8_BLOCK, scale_bytes=1)
    return [*humming_tensors(layer), ("workspace", humming_locks_bytes(sm_count))]


def mxfp8_marlin_experts_bytes(e: int, h: int, i: int) -> list[tuple[str, int]]:
    """``ModelOptMxFp8FusedMoE`` experts (``e`` local, hidden ``h``, intermediate ``i`` per rank,
    gated) through the Marlin backend (``prepare_mxfp8_moe_layer_for_marlin``): ``i`` padded to
    64 (``marlin_moe_padded_intermediate``), ``w13`` ``[E, H / 16, 2 pI x 4]`` and ``w2``
    ``[E, pI / 16, H x 4]`` int32 (``E x H x 2 pI`` and ``E x pI x H`` bytes), their e8m0 scales a
    32nd of that.

    :raises InputError: ``h`` or ``i`` not a multiple of 32 (vLLM refuses it)."""
    if h % MXFP8_BLOCK or i % MXFP8_BLOCK:
        raise InputError(
            "config.json",
            "intermediate_size",
            "MXFP8 MoE needs hidden and intermediate sizes per rank divisible by 32",
        )
    pi = _round_up(i, 64)
    w13, w2 = e * h * 2 * pi, e * pi * h
    return [("experts", w13), ("experts", w2), ("scale", w13 // MXFP8_BLOCK), ("scale", w2 // MXFP8_BLOCK)]
