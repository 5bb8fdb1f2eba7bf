"""Qwen3-Next and Qwen3.5: Gated DeltaNet layers with every n-th layer full attention.

Mirrors ``vllm/model_executor/models/qwen3_next.py``/``qwen3_5.py`` fed by vLLM's own config
classes (``transformers_utils/configs/qwen3_next.py``, ``qwen3_5.py``): absent ``layer_types``
put full attention on every 4th layer for Qwen3-Next (``full_attention_interval`` is not read;
from 0.32, which reads transformers' ``Qwen3NextConfig``, it is: ``layer_kinds_hf_class``)
and every ``full_attention_interval``-th (default 4) for Qwen3.5. The MTP module
(``qwen3_next_mtp.py``: ``num_nextn_predict_layers``; ``qwen3_5_mtp.py``:
``mtp_num_hidden_layers``; default 1) adds full-attention layers under ``"method": "mtp"``.
``Qwen3_5MoeForCausalLM`` (a text-only Qwen3.5 / 3.6 MoE export) is ``Qwen3_5ForCausalLM``'s class
over a ``qwen3_5_moe_text`` config: the same layers and cache, its MLPs sparse MoE blocks.
MiniCPM-V-4.6 (``minicpmv4_6.py``) and 4.7 (``minicpmv4_7.py``, a subclass) build
``Qwen3_5ForCausalLM`` on their text config.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from dryboot.errors import InputError
from dryboot.vllm.config.hf import (
    ConfigFields,
    FamilyExtra,
    GatedDeltaNet,
    LayerKind,
    ModelGeometry,
    extra_of,
    ssm_dtype,
)
from dryboot.vllm.models.common import LAYER_TYPE_NAMES, attention_heads, geometry, layer_types, num_layers
from dryboot.vllm.versions import VersionRules

if TYPE_CHECKING:
    from dryboot.vllm.engine_args import EngineArgs

#: the Gated DeltaNet hybrid's defaults of vLLM's ``Qwen3NextConfig`` (shared by Qwen3.5 and Qwen4-Exp)
GDN_DEFAULTS = {
    "num_attention_heads": 16,
    "head_dim": 256,
    "max_position_embeddings": 32768,
    "linear_conv_kernel_dim": 4,
    "linear_key_head_dim": 128,
    "linear_value_head_dim": 128,
    "linear_num_key_heads": 16,
    "linear_num_value_heads": 32,
}


@dataclass(frozen=True)
class Qwen3NextExtra(FamilyExtra):
    """``layer_kinds_hf_class``: the layer pattern transformers' own config class gives where it
    differs from vLLM's bundled one (vLLM's class ignores ``full_attention_interval``; releases
    without the bundled class use transformers', switch ``qwen3_next_hf_config_class``)."""

    layer_kinds_hf_class: tuple[LayerKind, ...]


#: wrappers of the Qwen3.5 text model whose state-dtype hook ignores ``mamba_ssm_dtype``
SSM_DTYPE_NOT_READ = frozenset(
    {
        "MiniCPMV4_6ForConditionalGeneration",
        # minicpmv4_7.py inherits 4.6's get_mamba_state_dtype_from_config
        "MiniCPMV4_7ForConditionalGeneration",
    }
)


def _is_qwen3_5(f: ConfigFields) -> bool:
    return str(f.get("model_type") or "").startswith("qwen3_5")


def gated_delta_net(f: ConfigFields) -> GatedDeltaNet:
    """The Gated DeltaNet layers' shape from the ``linear_*`` fields (``Qwen3NextGatedDeltaNet``:
    key / value heads, head widths, convolution kernel), shared by Qwen3-Next, Qwen3.5 and Qwen4-Exp.

    :raises InputError: a field missing or not a positive integer."""
    return GatedDeltaNet(
        num_k_heads=f.integer("linear_num_key_heads"),
        num_v_heads=f.integer("linear_num_value_heads"),
        head_k_dim=f.integer("linear_key_head_dim"),
        head_v_dim=f.integer("linear_value_head_dim"),
        conv_kernel=f.integer("linear_conv_kernel_dim"),
    )


def defaults(f: ConfigFields) -> dict[str, Any]:
    """The config class's defaults: ``Qwen3_5TextConfig`` keeps 4 KV heads, ``Qwen3_5MoeTextConfig``
    (a ``qwen3_5_moe`` checkpoint's text config) 2, ``Qwen3NextConfig`` 2."""
    if _is_qwen3_5(f):
        kv = 2 if str(f.get("model_type") or "").startswith("qwen3_5_moe") else 4
        return {**GDN_DEFAULTS, "num_key_value_heads": kv, "full_attention_interval": 4, "mtp_num_hidden_layers": 1}
    return {**GDN_DEFAULTS, "num_key_value_heads": 2, "num_nextn_predict_layers": 1}


def refuse_dense_moe_class(f: ConfigFields, architecture: str) -> None:
    """``Qwen3_5MoeForCausalLM`` over a dense ``qwen3_5_text`` config: ``qwen3_5.py``'s decoder
    layers take a plain MLP from that model type, and the class's ``set_moe_parameters``
    (``QwenNextMixtureOfExperts``) raises ``RuntimeError`` finding no MoE layer.

    :raises InputError: that pairing (vLLM does not start)."""
    if architecture == "Qwen3_5MoeForCausalLM" and f.get("model_type") == "qwen3_5_text":
        raise InputError(
            "config.json",
            "model_type",
            "Qwen3_5MoeForCausalLM over a dense qwen3_5_text config: vLLM builds no MoE layer and its "
            "set_moe_parameters raises (use Qwen3_5ForCausalLM)",
        )


#: this family's MoE classes -> vLLM's words when one builds no MoE block on its pipeline stage
#: (``set_moe_parameters``' RuntimeError, 0.27.1-0.33.0 alike): ``QwenNextMixtureOfExperts``
#: (``qwen3_next.py``); the Qwen3.5-MoE wrapper builds ``Qwen3_5MoeForCausalLM`` as its language
#: model, whose check fails before its own (``Qwen3_5_MoeMixtureOfExperts``; recorded: ``q35moe-2l-pp4``)
NO_MOE_LAYER = dict.fromkeys(
    ("Qwen3NextForCausalLM", "Qwen3_5MoeForCausalLM", "Qwen3_5MoeForConditionalGeneration"),
    "No Qwen3Next layer found in the model.layers.",
)


def moe_layers(f: ConfigFields, n: int, architecture: str) -> tuple[int, ...]:
    """The decoder layers of ``n`` that hold the sparse MoE block: Qwen3-Next's
    (``Qwen3NextDecoderLayer``) those not in ``mlp_only_layers`` and every ``decoder_sparse_step``-th
    with ``num_experts`` > 0 (its config classes' defaults: [], 1, 512); a ``qwen3_5_moe_text``
    model's every layer (``Qwen3_5DecoderLayer`` follows the model type).

    :raises InputError: ``mlp_only_layers`` not a list, ``decoder_sparse_step`` not a positive integer."""
    if architecture != "Qwen3NextForCausalLM":
        return tuple(range(n))
    dense = f.get("mlp_only_layers") or []
    if not isinstance(dense, list):
        raise InputError(f.source, f.where("mlp_only_layers"), "must be a list of layer indices")
    step = f.integer("decoder_sparse_step", minimum=1) if f.given("decoder_sparse_step") else 1
    experts = f.integer("num_experts", minimum=0) if f.given("num_experts") else 512
    return tuple(i for i in range(n) if i not in dense and experts > 0 and (i + 1) % step == 0)


def _moe_traits(f: ConfigFields, n: int, architecture: str) -> dict[str, Any]:
    """``first_moe_layer`` / ``moe_layers`` / ``no_moe_layer`` of :data:`NO_MOE_LAYER`'s classes
    (none for the dense ones): each pipeline stage must build an MoE block."""
    if architecture not in NO_MOE_LAYER:
        return {}
    moe = moe_layers(f, n, architecture)
    return {
        "first_moe_layer": moe[0] if moe else n,
        "moe_layers": moe,
        "no_moe_layer": NO_MOE_LAYER[architecture],
    }


def verify_layers(model: ModelGeometry, args: EngineArgs) -> None:
    """``set_moe_parameters`` of an MoE class whose config gives no layer the MoE block (at any
    pipeline size; a stage without one under pipeline parallelism: ``planner.plan``).

    :raises InputError: naming ``num_experts`` and vLLM's RuntimeError."""
    words = model.parallel.no_moe_layer
    if words is not None and model.parallel.moe_layers == ():
        raise InputError(
            model.source,
            "num_experts",
            f"no decoder layer holds an MoE block (num_experts, decoder_sparse_step, mlp_only_layers): vLLM's "
            f"{model.architecture} finds no MoE layer (RuntimeError: {words})",
        )


def read(f: ConfigFields, architecture: str) -> ModelGeometry:
    refuse_dense_moe_class(f, architecture)
    n = num_layers(f)
    types = layer_types(f, n)
    qwen3_5 = _is_qwen3_5(f)
    hf_class_kinds = None
    if types is None:
        every = f.integer("full_attention_interval") if qwen3_5 else 4
        types = ["linear_attention" if (i + 1) % every else "full_attention" for i in range(n)]
        if not qwen3_5:
            # transformers' Qwen3NextConfig reads the interval (default 4)
            hf_every = f.integer("full_attention_interval", minimum=1) if f.has("full_attention_interval") else 4
            if hf_every != every:
                hf_class_kinds = tuple(
                    LAYER_TYPE_NAMES["linear_attention" if (i + 1) % hf_every else "full_attention"] for i in range(n)
                )
    kinds = tuple(LAYER_TYPE_NAMES[t] for t in types)
    gdn = gated_delta_net(f)
    # MiniCPM-V-4.6's own state-dtype hook (minicpmv4_6.py) does not pass the text config's
    # mamba_ssm_dtype on, as Qwen3.5's does: its SSM state takes the cache flags' dtype
    reads_ssm = qwen3_5 and architecture not in SSM_DTYPE_NOT_READ
    hf_ssm = ssm_dtype(f, "mamba_ssm_dtype") if reads_ssm and f.has("mamba_ssm_dtype") else None
    mtp_key = "mtp_num_hidden_layers" if qwen3_5 else "num_nextn_predict_layers"
    return geometry(
        f,
        architecture,
        "qwen3_next",
        kinds,
        heads=attention_heads(f),
        gdn=gdn,
        hf_ssm_dtype=hf_ssm,
        num_mtp_layers=f.integer(mtp_key, minimum=0),
        mtp_kind=LayerKind.FULL,
        hybrid_class=True,
        hf_layer_types=True,
        family_extra=None if hf_class_kinds is None else Qwen3NextExtra(hf_class_kinds),
        **_moe_traits(f, n, architecture),
    )


def for_release(model: ModelGeometry, rules: VersionRules) -> ModelGeometry:
    """Releases that no longer bundle vLLM's own ``Qwen3NextConfig`` read the file with
    transformers' (switch ``qwen3_next_hf_config_class``): its layer pattern."""
    extra = extra_of(model, Qwen3NextExtra)
    if rules.qwen3_next_hf_config_class and extra is not None:
        return replace(model, layer_kinds=extra.layer_kinds_hf_class, family_extra=None)
    return model
