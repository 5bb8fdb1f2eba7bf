"""Bailing-V2.5 (Ling-2.5 / Ring-2.5, Ling-2.6): lightning (linear) attention layers with an MLA
layer closing each group.

Mirrors ``BailingMoeV25ForCausalLM`` (``bailing_moe_linear.py``, the same layer structure in every
release 0.27.1-0.33.0). Layer ``i`` is a linear-attention layer when ``layer_group_size`` > 0 and
``(i + 1) % layer_group_size != 0`` (``is_linear_layer``), else multi-head latent attention (one
latent head of ``kv_lora_rank + qk_rope_head_dim``, as DeepSeek's; ``ModelConfig.use_mla`` holds
for ``model_type`` ``bailing_hybrid`` with ``kv_lora_rank`` set). A linear layer
(``layers/mamba/linear/bailing_linear_attn.py`` ``BailingMoELinearAttention`` on
``LinearAttention``, mamba type ``LINEAR``) at ``model.layers.i.self_attn`` keeps one
``(num_attention_heads / TP, head_dim, head_dim)`` state in the ``--mamba-cache-dtype``
(``linear_attention_state_shape``, ``linear_attention_state_dtype``); the MLA layer's cache is at
``model.layers.i.self_attn.attn``. A hybrid model class without mamba prefix caching.

The checkpoints' ``model_type`` is ``bailing_hybrid``, which vLLM reads with transformers'
``BailingHybridConfig`` (Ling-3.0's class): present in the transformers of the 0.28.0-0.30.0 and
0.33.0 environments, absent from 0.27.1's, 0.31.0's and 0.32.0's (vLLM refuses the config there:
``known_model_types``). That class's defaults fill absent keys, and its ``__post_init__`` sets
``head_dim`` to ``qk_rope_head_dim``, whatever the file says: the linear layers' state (and
projections) take that ``head_dim`` (recorded). With ``--trust-remote-code`` and an
``auto_map`` ``AutoConfig`` the checkpoint's own config class reads the file instead: not
verifiable offline, refused by name.

Its MTP module (``bailing_moe_mtp.py`` ``BailingMoeV25MTPModel``, ``--speculative-config`` method
``mtp``): ``num_nextn_predict_layers`` MLA decoder layers (``BailingHybridConfig``'s default 1), named
``model.layers.<num_hidden_layers + i>.self_attn.attn`` (recorded on 0.28.0 and 0.33.0).

Refused by name: a linear layer's ``group_norm_size`` that TP does not divide or exceeds
(``BailingMoELinearAttention`` asserts), a config without ``use_bias`` / ``use_qkv_bias`` (the
class reads them: AttributeError), MLA head dims the SM90 prefill backend does not serve.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from dryboot.errors import InputError
from dryboot.vllm.config.hf import ConfigFields, FamilyExtra, LayerKind, LinearAttention, ModelGeometry, extra_of
from dryboot.vllm.engine_args import EngineArgs
from dryboot.vllm.models.common import geometry, num_layers
from dryboot.vllm.models.deepseek import check_mla_prefill
from dryboot.vllm.versions import VersionRules

#: transformers' ``BailingHybridConfig`` defaults of the keys the layout reads (its fields; the
#: weights' walk adds those of the keys it reads beside them)
BAILING_HYBRID_DEFAULTS: dict[str, Any] = {
    "hidden_size": 2560,
    "num_hidden_layers": 42,
    "num_attention_heads": 32,
    "layer_group_size": 6,
    "kv_lora_rank": 512,
    "qk_rope_head_dim": 64,
    "qk_nope_head_dim": 128,
    "v_head_dim": 128,
    "max_position_embeddings": 262144,
    "num_nextn_predict_layers": 1,
}


@dataclass(frozen=True)
class BailingLinearLayers(FamilyExtra):
    """What ``BailingMoELinearAttention`` asserts against TP: ``group_norm_size`` (default 1), the
    groups its gated RMS norm spans."""

    group_norm_size: int


def defaults(f: ConfigFields) -> dict[str, Any]:
    return dict(BAILING_HYBRID_DEFAULTS)


def is_linear_layer(li: int, layer_group_size: int) -> bool:
    """vLLM's ``is_linear_layer``: ``layer_group_size`` > 0 and ``(li + 1) % layer_group_size != 0``."""
    return layer_group_size > 0 and (li + 1) % layer_group_size != 0


def layer_kinds(n: int, layer_group_size: int) -> tuple[LayerKind, ...]:
    """Each decoder layer's cache kind: linear attention where :func:`is_linear_layer` holds, else MLA."""
    return tuple(LayerKind.LINEAR_ATTN if is_linear_layer(i, layer_group_size) else LayerKind.MLA for i in range(n))


def read(f: ConfigFields, architecture: str) -> ModelGeometry:
    """The geometry as ``BailingHybridConfig`` reads ``f`` and ``BailingMoeV25ForCausalLM`` lays it out.

    :raises InputError: a field the model class reads is missing or malformed."""
    n = num_layers(f)
    group = f.integer("layer_group_size", minimum=0)
    kinds = layer_kinds(n, group)
    heads = f.integer("num_attention_heads")
    for key in ("use_bias", "use_qkv_bias"):
        if LayerKind.LINEAR_ATTN in kinds and f.get(key) is None:
            raise InputError(
                f.source,
                f.where(key),
                "required: vLLM's BailingMoELinearAttention reads it and BailingHybridConfig does not define it "
                "(AttributeError while building the model)",
            )
    dims = (
        f.integer("qk_nope_head_dim", minimum=0),
        f.integer("qk_rope_head_dim", minimum=0),
        f.integer("v_head_dim"),
    )
    latent = f.integer("kv_lora_rank") + dims[1]
    # BailingHybridConfig.__post_init__: head_dim = qk_rope_head_dim, whatever the file says
    linear = LinearAttention(heads, dims[1])
    mtp = _mtp_layers(f)
    return geometry(
        f,
        architecture,
        "bailing_moe_linear",
        kinds,
        heads=(heads, 1, latent),
        head_dim_v=0,
        mla_dims=dims if LayerKind.MLA in kinds else None,
        mla_config=True,
        linear_attn=linear,
        hybrid_class=True,
        hf_layer_types=True,
        mamba_prefix_caching=False,
        layer_names=tuple(
            f"model.layers.{i}.self_attn" + ("" if k is LayerKind.LINEAR_ATTN else ".attn") for i, k in enumerate(kinds)
        ),
        family_extra=BailingLinearLayers(f.integer("group_norm_size", 1)),
        # its MTP module (bailing_moe_mtp.py BailingMoeV25MTPModel, --speculative-config method mtp): an MLA
        # decoder layer (BailingMoeV25MLAAttention) per predict layer, numbered after the target's
        num_mtp_layers=mtp,
        mtp_kind=LayerKind.MLA,
        mtp_layer_names=tuple(f"model.layers.{n + i}.self_attn.attn" for i in range(mtp)),
    )


def _mtp_layers(f: ConfigFields) -> int:
    """``num_nextn_predict_layers`` (``BailingHybridConfig`` maps ``num_mtp_layers`` onto it; default 1)."""
    key = "num_mtp_layers" if f.given("num_mtp_layers") else "num_nextn_predict_layers"
    return f.integer(key, minimum=0)


def engine_args(model: ModelGeometry, args: EngineArgs) -> EngineArgs:
    """The flags as given; refuses a checkpoint config class dryboot cannot read offline.

    :raises InputError: ``--trust-remote-code`` with an ``auto_map`` ``AutoConfig``: the
        checkpoint's own config class reads the file (not ``BailingHybridConfig``)."""
    if args.trust_remote_code and model.config_class.auto_config:
        raise InputError(
            model.source,
            "auto_map",
            "with --trust-remote-code vLLM reads this config with the checkpoint's own config class (remote "
            "code), not transformers' BailingHybridConfig: not verifiable offline (without the flag it is planned)",
        )
    return args


def verify_layers(model: ModelGeometry, args: EngineArgs) -> None:
    """What ``BailingMoELinearAttention`` asserts while the model is built: TP at most
    ``group_norm_size`` and dividing it.

    :raises InputError: naming ``group_norm_size`` and vLLM's AssertionError."""
    extra = extra_of(model, BailingLinearLayers)
    tp = args.tensor_parallel_size
    if extra is None or LayerKind.LINEAR_ATTN not in model.kinds or tp == 1:
        return
    g = extra.group_norm_size
    if tp > g:
        raise InputError(
            model.source,
            "group_norm_size",
            f"{g} at tensor parallel size {tp}: AssertionError: tp_size must be <= group_norm_size for local rms "
            "norm (BailingMoELinearAttention)",
        )
    if g % tp:
        raise InputError(
            model.source,
            "group_norm_size",
            f"{g} at tensor parallel size {tp}: AssertionError: group_norm_size must be divisible by tp_size "
            "(BailingMoELinearAttention)",
        )


def verify_release(model: ModelGeometry, rules: VersionRules) -> None:
    """The MLA layers' prefill backend, selected as they are built, after their decode attention
    backend (:func:`dryboot.vllm.models.deepseek.check_mla_prefill`).

    :raises InputError: MLA head dims no SM90 prefill backend serves."""
    check_mla_prefill(model)
