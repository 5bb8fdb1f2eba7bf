"""Hunyuan V1 (dense and MoE): full attention in every layer, and cross-layer attention (CLA)
that vLLM 0.28.0 cannot start.

Mirrors ``vllm/model_executor/models/hunyuan_v1.py`` fed by transformers' ``HunYuanDenseV1Config``
/ ``HunYuanMoEV1Config``: every layer builds one ``Attention`` with the cache config (so the
model-level window and ``--kv-cache-dtype`` apply), of ``num_key_value_heads`` KV heads (the
config class fills in ``num_attention_heads``) and a head size of ``head_dim`` when set and
non-zero, else ``attention_head_dim``, else ``hidden_size // num_attention_heads``
(``HunYuanAttention``).

Cross-layer attention: with ``use_cla`` and ``cla_share_factor`` f (``_get_cla_factor``), a layer
whose index is not a multiple of f reuses the keys and values of the layer before it
(``HunYuanModel.forward``), and vLLM builds its attention as ``HunYuanCrossAttention``: an
``Attention`` of type ``ENCODER_DECODER`` with no ``kv_sharing_target_layer_name``. vLLM 0.28.0's
``Attention.get_kv_cache_spec`` asserts a decoder layer, so such a model never reaches the KV cache
planner (``AssertionError`` at engine start; FLASHINFER and FLEX_ATTENTION refuse the attention type
before that). dryboot refuses it the same way; ``use_cla`` with f = 1 (or without ``use_cla``) is
plain full attention.

The MoE class builds a sparse MoE block in every layer when ``num_experts`` is above 1
(``_is_moe``), which refuses more tensor-parallel ranks than experts
(``HunYuanSparseMoeBlock``), reads ``moe_intermediate_size``, ``use_mixed_mlp_moe`` and
``num_shared_expert`` (no config-class default), and fails without any MoE layer
(``HunYuanMoEV1Base``: "No HunYuanMoE layer found in model.layers.").
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from dryboot.errors import InputError, missing_field
from dryboot.vllm.config.hf import ConfigFields, FamilyExtra, LayerKind, ModelGeometry, extra_of
from dryboot.vllm.models.common import check_kv_heads_divide, geometry, num_layers, window
from dryboot.vllm.versions import VersionRules

MOE = "HunYuanMoEV1ForCausalLM"
_DEFAULTS: dict[str, dict[str, Any]] = {
    # HunYuanDenseV1Config / HunYuanMoEV1Config
    "HunYuanDenseV1ForCausalLM": {"max_position_embeddings": 2048, "hidden_size": 4096, "num_attention_heads": 32},
    MOE: {"max_position_embeddings": 2048, "hidden_size": 4096, "num_attention_heads": 32, "num_experts": 1},
}
#: keys ``HunYuanSparseMoeBlock`` reads that ``HunYuanMoEV1Config`` does not default
_MOE_KEYS = ("moe_topk", "moe_intermediate_size", "use_mixed_mlp_moe", "num_shared_expert")


def defaults(f: ConfigFields) -> dict[str, Any]:
    architecture = (f.root.get("architectures") or [""])[0]
    return dict(_DEFAULTS.get(str(architecture), {}))


def cla_factor(f: ConfigFields) -> int:
    """``_get_cla_factor``: ``cla_share_factor`` (default 1) with ``use_cla``, else 1.

    :raises InputError: a factor below 1 (vLLM divides the layer index by it).
    """
    if not f.boolean("use_cla"):
        return 1
    return f.integer("cla_share_factor", default=1)


def read(f: ConfigFields, architecture: str) -> ModelGeometry:
    n = num_layers(f)
    factor = cla_factor(f)
    if factor > 1 and n > 1:
        raise InputError(
            f.source,
            f.where("use_cla"),
            f"cross-layer attention (use_cla, cla_share_factor {factor}): vLLM 0.28.0 builds every layer whose "
            f"index is not a multiple of {factor} as encoder-decoder attention (HunYuanCrossAttention) with no KV "
            "sharing target, and Attention.get_kv_cache_spec asserts a decoder layer (AssertionError at engine "
            "start)",
        )
    heads = f.integer("num_attention_heads")
    kv = f.integer("num_key_value_heads", default=heads)
    if f.get("head_dim"):
        head_dim = f.integer("head_dim")
    elif f.has("attention_head_dim"):
        head_dim = f.integer("attention_head_dim")
    else:
        head_dim = f.integer("hidden_size") // heads
    check_kv_heads_divide(f, heads, kv)
    if window(f) is not None:
        raise InputError(
            f.source,
            f.where("sliding_window"),
            "a sliding window in a Hunyuan V1 model is not verified against vLLM 0.28.0: not modelled",
        )
    experts = None
    if architecture == MOE:
        value = f.get("num_experts")
        if isinstance(value, list):
            raise InputError(
                f.source,
                f.where("num_experts"),
                "a per-layer expert list is not modelled (vLLM's HunYuanSparseMoeBlock compares it with the TP size)",
            )
        n_experts = f.integer("num_experts")
        if n_experts <= 1:
            raise InputError(
                f.source,
                f.where("num_experts"),
                f"{n_experts} expert: no layer is MoE, and vLLM's {MOE} fails to build "
                "(RuntimeError: No HunYuanMoE layer found in model.layers.)",
            )
        for key in _MOE_KEYS:
            if not f.given(key):
                raise InputError(
                    f.source,
                    f.where(key),
                    missing_field("vLLM's HunYuanSparseMoeBlock reads it; HunYuanMoEV1Config has no default"),
                )
        experts = ("num_experts", n_experts)
    kinds = (LayerKind.FULL,) * n
    extra = HunYuanExtra(head_dim_unset=not f.given("head_dim"))
    # every HunYuanDecoderLayer of an MoE config builds the sparse block: HunYuanMoEV1Base's MoE
    # parameters need one on each pipeline stage (an empty stage fails)
    stage: dict[str, Any] = (
        {"first_moe_layer": 0, "no_moe_layer": "No HunYuanMoE layer found in model.layers."} if experts else {}
    )
    return geometry(
        f, architecture, "hunyuan", kinds, heads=(heads, kv, head_dim), moe_experts=experts, family_extra=extra, **stage
    )


@dataclass(frozen=True)
class HunYuanExtra(FamilyExtra):
    """``head_dim_unset``: the file sets no ``head_dim`` (the head size comes from
    ``attention_head_dim`` or the hidden size)."""

    head_dim_unset: bool = False


def verify_release(model: ModelGeometry, rules: VersionRules) -> None:
    """Releases that serve Hunyuan V1 through the Transformers backend (switch
    ``hunyuan_transformers_backend``: 0.29+, ``registry.py`` maps both classes to
    ``TransformersForCausalLM`` / ``TransformersMoEForCausalLM``) build transformers' attention,
    which takes the head size from ``head_dim`` alone (``HunYuanMoEV1Config`` defaults it to
    ``None``) and fails without it.

    :raises InputError: naming ``head_dim`` and vLLM's error.
    """
    extra = extra_of(model, HunYuanExtra)
    if rules.hunyuan_transformers_backend and extra is not None and extra.head_dim_unset:
        raise InputError(
            model.source,
            "head_dim",
            f"vLLM {rules.version} serves {model.architecture} through its Transformers backend, whose attention "
            "reads the head size from head_dim alone (attention_head_dim is not read) and fails without it "
            "(TypeError: unsupported operand type(s) for ** or pow(): 'NoneType' and 'float')",
        )


def verify(model: ModelGeometry, tensor_parallel_size: int) -> None:
    """``HunYuanSparseMoeBlock``: no more tensor-parallel ranks than experts.

    :raises InputError: naming ``num_experts`` and vLLM's message.
    """
    if model.parallel.moe_experts is not None and tensor_parallel_size > model.parallel.moe_experts[1]:
        key, n = model.parallel.moe_experts
        raise InputError(
            model.source,
            key,
            f"Tensor parallel size {tensor_parallel_size} is greater than the number of experts {n}. "
            f"(vLLM's {model.architecture} MoE block)",
        )
