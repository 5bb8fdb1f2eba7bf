"""DeepSeek-V2/V3: multi-head latent attention (one latent head per layer).

Mirrors ``vllm/model_executor/models/deepseek_v2.py`` (MLA layers: ``kv_lora_rank +
qk_rope_head_dim`` per token, no V part, not split by TP) and ``deepseek_mtp.py``
(``num_nextn_predict_layers`` MLA layers under ``"method": "mtp"``), with transformers'
``DeepseekV2Config``/``DeepseekV3Config`` defaults.

On the GPU dryboot assumes (SM90: H100/H200), the only MLA prefill backend is FlashAttention,
which serves (qk_nope, qk_rope, v) head dims (128, 64, 128), (192, 64, 256) and (64, 64, 128)
(``v1/attention/backends/mla/prefill/flash_attn.py``, ``selector.py``); other dimensions are
refused, as vLLM refuses them while building the model.
"""

from __future__ import annotations

from typing import Any

from dryboot.errors import InputError
from dryboot.vllm.config.hf import ConfigFields, LayerKind, ModelGeometry
from dryboot.vllm.models.common import MAX_LAYERS, geometry, num_layers

_DEFAULTS: dict[str, dict[str, Any]] = {
    "deepseek_v2": {"max_position_embeddings": 2048},
    "deepseek_v3": {"max_position_embeddings": 4096},
    # transformers' Glm4MoeLiteConfig
    "glm4_moe_lite": {
        "max_position_embeddings": 202752,
        "num_attention_heads": 20,
        "kv_lora_rank": 512,
        "qk_rope_head_dim": 64,
        "qk_nope_head_dim": 192,
        "v_head_dim": 256,
        "n_routed_experts": 64,
    },
    # transformers' LongcatFlashConfig
    "longcat_flash": {
        "max_position_embeddings": 131072,
        "num_layers": 28,
        "num_attention_heads": 64,
        "kv_lora_rank": 512,
        "qk_rope_head_dim": 64,
        "qk_nope_head_dim": 128,
        "v_head_dim": 128,
        "n_routed_experts": 512,
    },
}
_MLA = {"kv_lora_rank": 512, "qk_rope_head_dim": 64, "qk_nope_head_dim": 128, "v_head_dim": 128}

#: (qk_nope_head_dim, qk_rope_head_dim, v_head_dim) the SM90 MLA prefill backend serves.
SM90_PREFILL_DIMS = frozenset({(128, 64, 128), (192, 64, 256), (64, 64, 128)})


def defaults(f: ConfigFields) -> dict[str, Any]:
    return {**_MLA, **_DEFAULTS.get(str(f.get("model_type") or ""), {})}


def _latent(f: ConfigFields) -> tuple[int, tuple[int, int, int]]:
    """(latent head size ``kv_lora_rank + qk_rope_head_dim``, (qk_nope, qk_rope, v) head dims).

    :raises InputError: head dims no SM90 MLA prefill backend serves.
    """
    rope = f.integer("qk_rope_head_dim", minimum=0)
    dims = (f.integer("qk_nope_head_dim", minimum=0), rope, f.integer("v_head_dim"))
    check_sm90_mla_dims(f, dims)
    return f.integer("kv_lora_rank") + rope, dims


def check_sm90_mla_dims(f: ConfigFields, dims: tuple[int, int, int]) -> None:
    """:raises InputError: (qk_nope, qk_rope, v) head dims no SM90 MLA prefill backend serves."""
    if dims not in SM90_PREFILL_DIMS:
        raise InputError(
            f.source,
            f.where("qk_rope_head_dim"),
            "No valid MLA prefill backend found on SM90 for (qk_nope_head_dim, qk_rope_head_dim, v_head_dim) = "
            f"{dims}: FlashAttention serves {sorted(SM90_PREFILL_DIMS)}",
        )


def read(f: ConfigFields, architecture: str) -> ModelGeometry:
    if architecture == "Glm4MoeLiteForCausalLM":
        return _glm4_moe_lite(f, architecture)
    if architecture == "LongcatFlashForCausalLM":
        return _longcat_flash(f, architecture)
    n = num_layers(f)
    heads = f.integer("num_attention_heads")
    latent, dims = _latent(f)
    mtp = f.integer("num_nextn_predict_layers", minimum=0) if f.has("num_nextn_predict_layers") else 0
    return geometry(
        f,
        architecture,
        "deepseek",
        (LayerKind.MLA,) * n,
        heads=(heads, 1, latent),
        head_dim_v=0,
        mla_dims=dims,
        num_mtp_layers=mtp,
        mtp_kind=LayerKind.MLA,
    )


def _glm4_moe_lite(f: ConfigFields, architecture: str) -> ModelGeometry:
    """GLM-4.7-Flash (``glm4_moe_lite.py``): DeepSeek-V2's MLA layers (``DeepseekV2MLAAttention``)
    under GLM-4-MoE blocks. Its MoE model class finds an MoE block on every pipeline stage or
    fails (``Glm4MixtureOfExperts.extract_moe_parameters``); the first is layer
    ``first_k_dense_replace`` (read by the class, no config default). Its MTP module
    (``Glm4MoeLiteMTPModel``) is not modelled.

    :raises InputError: ``kv_lora_rank`` null (no MLA: vLLM builds standard attention, not
        modelled), ``moe_layer_freq`` other than 1, no routed experts, ``first_k_dense_replace``
        missing, or a ``head_dim`` that transformers' ``attribute_map`` would write over
        ``qk_rope_head_dim``.
    """
    n = num_layers(f)
    if f.get("kv_lora_rank") is None:
        raise InputError(f.source, f.where("kv_lora_rank"), "null: vLLM then builds MHA layers, not modelled")
    if f.get("head_dim") is not None and f.get("head_dim") != f.get("qk_rope_head_dim"):
        raise InputError(
            f.source,
            f.where("head_dim"),
            "Glm4MoeLiteConfig maps head_dim onto qk_rope_head_dim (attribute_map): a head_dim other than "
            "qk_rope_head_dim is not modelled",
        )
    if f.get("moe_layer_freq") not in (None, 1):
        raise InputError(f.source, f.where("moe_layer_freq"), "an MoE block other than every layer is not modelled")
    if f.get("n_routed_experts") is None:
        raise InputError(
            f.source,
            f.where("n_routed_experts"),
            "null: vLLM's Glm4MoeLiteForCausalLM finds no MoE layer (RuntimeError)",
        )
    if not f.given("first_k_dense_replace"):
        raise InputError(
            f.source, f.where("first_k_dense_replace"), "required field is missing (vLLM's Glm4MoeLite reads it)"
        )
    latent, dims = _latent(f)
    return geometry(
        f,
        architecture,
        "deepseek",
        (LayerKind.MLA,) * n,
        heads=(f.integer("num_attention_heads"), 1, latent),
        head_dim_v=0,
        mla_dims=dims,
        num_mtp_layers=f.opt_int("num_nextn_predict_layers") or 0,
        mtp_kind=None,
        first_moe_layer=f.integer("first_k_dense_replace", minimum=0),
    )


def _longcat_flash(f: ConfigFields, architecture: str) -> ModelGeometry:
    """LongCat-Flash (``longcat_flash.py``): ``num_layers`` decoder layers, each with two
    DeepSeek-V2 MLA attentions (``model.layers.<i>.self_attn.<0|1>``), so two MLA caches per
    decoder layer; pipeline stages split the ``num_layers`` decoder layers (``FlashModel`` builds
    ``FlashConfig(num_layers=...)``). Its MoE block asserts ``zero_expert_type`` (no class
    default). Its MTP module (``LongCatFlashMTPModel``) is not modelled.

    :raises InputError: ``kv_lora_rank`` null, ``zero_expert_type`` missing, or a
        ``num_hidden_layers`` that is not twice ``num_layers`` (transformers' class derives one
        from the other; a file giving both otherwise is not modelled).
    """
    n = f.integer("num_layers", maximum=MAX_LAYERS // 2)
    if f.given("num_hidden_layers") and f.get("num_hidden_layers") != 2 * n:
        raise InputError(
            f.source,
            f.where("num_hidden_layers"),
            f"LongcatFlashConfig counts two attention layers per decoder layer (num_hidden_layers = "
            f"2 * num_layers = {2 * n}): another value is not modelled",
        )
    if f.get("kv_lora_rank") is None:
        raise InputError(f.source, f.where("kv_lora_rank"), "null: not modelled (vLLM builds MLA only)")
    if f.get("zero_expert_type") is None:
        raise InputError(
            f.source, f.where("zero_expert_type"), "required field is missing (vLLM's LongcatMoe asserts it)"
        )
    latent, dims = _latent(f)
    return geometry(
        f,
        architecture,
        "deepseek",
        (LayerKind.MLA,) * (2 * n),
        heads=(f.integer("num_attention_heads"), 1, latent),
        head_dim_v=0,
        mla_dims=dims,
        num_mtp_layers=f.integer("num_nextn_predict_layers", default=1, minimum=0),
        mtp_kind=None,
        decoder_layers=tuple(i for i in range(n) for _ in range(2)),
        layer_names=tuple(f"model.layers.{i}.self_attn.{j}.attn" for i in range(n) for j in range(2)),
    )
