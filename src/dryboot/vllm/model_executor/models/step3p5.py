"""Step-3.5 (``step3p5.py``, ``Step3p5ForCausalLM``): per layer two Gemma RMSNorms, attention
(``qkv_proj`` with a bias under ``attention_bias``, ``o_proj``, per-head q/k norms, under
``use_head_wise_attn_gate`` a column-parallel ``g_proj`` ``[heads / TP, H]``) whose heads, key/value
groups and head size are ``attention_other_setting``'s on the layers of its ``attention_type``
(``layer_types``), the config's elsewhere; then a gated MLP, or on the layers of
``moe_layers_enum`` (all but the first by default) a MoE block: the float32 router ``[E, H]`` and
``router_bias`` ``[E]``, a gated shared expert of ``share_expert_dim`` (``moe_intermediate_size
x moe_top_k`` when null) and ``moe_num_experts`` experts of ``moe_intermediate_size``. One rotary
table per distinct rope of the stage's layers (``get_rope``'s cache: head size, rotary size from
``partial_rotary_factors``, ``rope_theta`` per layer when a list, ``rope_scaling`` only on the
layer types of ``yarn_only_types`` when given). The embedding on the first stage, the final norm
and the untied head on the last. vLLM refuses TP above the experts and a stage without MoE
layers; a tied head is refused by name.

0.33 reads the config with transformers' ``Step3p7TextConfig`` (``_CONFIG_REGISTRY``; vLLM's
``Step3p5Config`` is gone; switch ``hf_config_class_architectures``), read here by :func:`_hf_class`:
its defaults (:data:`HF_DEFAULTS`) and aliases, the MoE layers ``moe_layers_enum`` or all from
the fourth, only the heads of ``attention_other_setting`` on the sliding layers (their key/value
groups and head size the config's), and no default for what the MoE block reads
(:data:`HF_REQUIRED`: refused by name, as vLLM fails building the model). Recorded on the meta
device on 0.33.0 (``tests/fidelity/data/weights/recorded-0.33.0-fields.json``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dryboot.errors import InputError
from dryboot.vllm.model_executor.model_loader import weights as W
from dryboot.vllm.model_executor.models.compose import Family, WalkArgs, unquantized
from dryboot.vllm.models.common import config_class_lacks
from dryboot.vllm.models.step3p5 import ASSERTED_TRUE, HF_CLASS_DEFAULTS, HF_REQUIRED
from dryboot.vllm.versions import rules_for

#: ``Step3p5Config``'s defaults (``transformers_utils/configs/step3p5.py``) the walk reads
DEFAULTS: dict[str, Any] = {
    "num_attention_groups": 8,
    "moe_intermediate_size": 10240,
    "moe_num_experts": 16,
    "moe_top_k": 4,
    "rope_theta": 500000,
    "tie_word_embeddings": False,
}


#: transformers' ``Step3p7TextConfig`` defaults (0.33) the walk reads, in the walk's names: the
#: geometry's (:data:`~dryboot.vllm.models.step3p5.HF_CLASS_DEFAULTS`) and the MLP's
HF_DEFAULTS: dict[str, Any] = {
    **HF_CLASS_DEFAULTS,
    "vocab_size": 128815,
    "intermediate_size": 11264,
    "moe_top_k": 8,
    "moe_intermediate_size": 1280,
    "share_expert_dim": 1280,
    "rope_theta": 10000.0,
}
#: ``Step3p7TextConfig.attribute_map`` targets, as this walk names them
_HF_ALIASES = {
    "num_key_value_heads": "num_attention_groups",
    "n_routed_experts": "moe_num_experts",
    "num_experts_per_tok": "moe_top_k",
    "share_expert_dims": "share_expert_dim",
}


def _hf_class(config: Mapping[str, Any]) -> dict[str, Any]:
    """The config as 0.33's model class sees it through transformers' ``Step3p7TextConfig``, in
    the walk's names (module docstring).

    :raises InputError: a field of :data:`HF_REQUIRED` unset, or false where vLLM asserts it true;
        a null ``share_expert_dim``."""
    for key in HF_REQUIRED:
        if key not in config:
            raise InputError("config.json", key, config_class_lacks("Step-3.5", "Step3p7TextConfig", key))
        if key in ASSERTED_TRUE and config[key] is not True:
            raise InputError(
                "config.json", key, f"vLLM's Step-3.5 MoE block asserts it true (Only support {key} is true)"
            )
    c = {**HF_DEFAULTS, **{_HF_ALIASES.get(k, k): v for k, v in config.items()}}
    if c.get("share_expert_dim") is None:
        raise InputError("config.json", "share_expert_dim", "a null shared expert size is not modelled on this release")
    n = W._int(c, "num_hidden_layers")
    if c.get("moe_layers_enum") is None:
        c["moe_layers_enum"] = ",".join(str(i) for i in range(3, n))
    other = c.get("attention_other_setting") or {}
    c["attention_other_setting"] = {
        "attention_type": "sliding_attention",
        "num_attention_heads": other.get("num_attention_heads", c["num_attention_heads"]),
        "num_attention_groups": c["num_attention_groups"],
        "head_dim": c["head_dim"],
    }
    return c


def _moe_layers(config: Mapping[str, Any]) -> set[int]:
    enum = config.get("moe_layers_enum")
    if enum is None:
        return set(range(1, W._int(config, "num_hidden_layers")))
    try:
        return {int(x) for x in str(enum).strip().split(",")}
    except ValueError:
        raise InputError("config.json", "moe_layers_enum", "a comma-separated list of layer indices") from None


def _at(config: Mapping[str, Any], key: str, li: int) -> Any:
    v = config.get(key) or []
    if not isinstance(v, list):
        raise InputError("config.json", key, "a list per layer")
    return v[li] if li < len(v) else None


def walk(config: Mapping[str, Any], par: W.Parallel, args: WalkArgs) -> W.RankWeights:
    """One rank of one stage (module docstring).

    :raises InputError: a quantization method, checkpoint headers, a tied head, sizes TP does
        not divide, TP above the experts, a stage without MoE layers."""
    if "Step3p5ForCausalLM" in rules_for(par.vllm_version).hf_config_class_architectures:
        config, ab = unquantized(_hf_class(config), args, untied="Step-3.5")
    else:
        config, ab = unquantized(config, args, DEFAULTS, untied="Step-3.5")
    tp = par.tp
    h = W._int(config, "hidden_size")
    e, moe_i = W._int(config, "moe_num_experts"), W._int(config, "moe_intermediate_size")
    W.refuse_tp_above_experts(tp, e)
    share = config.get("share_expert_dim") or moe_i * W._int(config, "moe_top_k")
    vocab_r = W.padded_vocab_per_rank(W._int(config, "vocab_size"), tp)
    other = config.get("attention_other_setting") or {}
    moe = _moe_layers(config)
    layers = W.pp_layers(W._int(config, "num_hidden_layers"), par)
    if not any(li in moe for li in layers):
        raise InputError(
            "--pipeline-parallel-size", None, "a stage without MoE layers: vLLM refuses Step3p5ForCausalLM"
        )
    w = W._Walk(None, par.vllm_version)
    w.ends(par, vocab_r, h, ab)
    ropes: set[tuple[int, str]] = set()
    for li in layers:
        kind = _at(config, "layer_types", li)
        src = other if other and kind == other.get("attention_type") else config
        nq, nkv = W._int(src, "num_attention_heads"), W._int(src, "num_attention_groups")
        hd = src.get("head_dim") or h // nq
        nq_r = W._divide(nq, tp, "num_attention_heads")
        nkv_r = W.kv_heads_per_rank(nkv, tp, "num_attention_groups")
        qkv = (nq_r + 2 * nkv_r) * hd
        sizes = [h, h, qkv * h, h * nq_r * hd, hd, hd]
        if config.get("attention_bias"):
            sizes.append(qkv)
        if config.get("use_head_wise_attn_gate"):
            sizes.append(nq_r * h)
        if li in moe:
            e_r, m_r = W.experts_per_rank(e, moe_i, tp, par, "moe_intermediate_size")
            s_r = W._divide(share, tp, "share_expert_dim")
            w.own("router", 4 * e * h)  # float32 router and router_bias
            w.own("router", 4 * e)
            sizes += [2 * s_r * h, h * s_r, e_r * 2 * m_r * h, e_r * h * m_r]
            if par.expert_parallel:
                w.own("expert map", 4 * e, buffer=True)
        else:
            sizes += W.dense_mlp_sizes(h, W._int(config, "intermediate_size"), tp)
        w.attention_layer(sizes, ab)
        partial = _at(config, "partial_rotary_factors", li) or 1.0
        theta = config.get("rope_theta")
        theta = _at(config, "rope_theta", li) if isinstance(theta, list) else theta
        scaling = config.get("rope_scaling")
        yarn_only = config.get("yarn_only_types") or []
        if yarn_only and kind not in yarn_only:
            scaling = None
        rope = {
            "max_position_embeddings": config.get("max_position_embeddings"),
            "partial_rotary_factor": partial,
            "rope_parameters": scaling,
        }
        key = (W._rotary_bytes(rope, hd, ab), repr((hd, partial, theta, sorted((scaling or {}).items()))))
        if key not in ropes:
            ropes.add(key)
            w.own("rotary", key[0], buffer=True)
    return w.result()


FAMILIES: dict[str, Family] = {"Step3p5ForCausalLM": Family(walk)}
