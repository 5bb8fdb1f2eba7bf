"""LongCat-Flash (``longcat_flash.py``, ``LongcatFlashForCausalLM``): ``num_layers`` layers, each
with two multi-head latent attentions (DeepSeek-V2's, :func:`weights._mla_attention`, one rotary
table ``[positions, qk_rope_head_dim]`` for all of them), four RMSNorms, two gated MLPs of
``ffn_hidden_size``, and one MoE block: the router ``classifier`` ``[E + Z, H]`` (float32 when
``router_dtype`` is ``float32``, its default; a bias under ``router_bias``), an
``e_score_correction_bias`` ``[E + Z]`` of the same dtype, and ``n_routed_experts`` experts of
``expert_ffn_hidden_size`` (``Z = zero_expert_num``: identity experts, no weights). The embedding
on the first stage, the final norm and the untied head on the last."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dryboot.errors import InputError
from dryboot.vllm.model_executor.model_loader import weights as W
from dryboot.vllm.model_executor.models.compose import Family, WalkArgs, unquantized

#: ``FlashConfig``'s defaults (``longcat_flash.py``) the walk reads
DEFAULTS: dict[str, Any] = {
    "max_position_embeddings": 8192,
    "q_lora_rank": 1536,
    "qk_rope_head_dim": 64,
    "v_head_dim": 128,
    "qk_nope_head_dim": 128,
    "tie_word_embeddings": False,
    "router_dtype": "float32",
    "router_bias": False,
    "zero_expert_num": 0,
}


def _names(config: Mapping[str, Any]) -> dict[str, Any]:
    c = dict(config)
    c.setdefault("num_hidden_layers", c.get("num_layers"))
    c["intermediate_size"] = c.get("ffn_hidden_size", c.get("intermediate_size"))
    if "moe_intermediate_size" not in c:
        c["moe_intermediate_size"] = c.get("expert_ffn_hidden_size", c["intermediate_size"])
    c["rope_parameters"] = c.get("rope_scaling") or c.get("rope_parameters") or {"rope_type": "default"}
    return c


def walk(config: Mapping[str, Any], par: W.Parallel, args: WalkArgs) -> W.RankWeights:
    """One rank of one stage (module docstring).

    :raises InputError: a quantization method, checkpoint headers, a tied head, sizes TP does
        not divide."""
    merged, ab = unquantized(config, args, DEFAULTS)
    c = _names(merged)
    if c.get("tie_word_embeddings"):
        raise InputError("config.json", "tie_word_embeddings", "a tied LongCat-Flash head is not modelled")
    if isinstance(c.get("num_experts"), list) and "n_routed_experts" not in c:
        raise InputError("config.json", "num_experts", "experts per layer are not modelled")
    tp = par.tp
    h = W._int(c, "hidden_size")
    e, z = W._int(c, "n_routed_experts"), W._int(c, "zero_expert_num")
    router = 4 if c.get("router_dtype") == "float32" else ab
    vocab_r = W.padded_vocab_per_rank(W._int(c, "vocab_size"), tp)
    w = W._Walk(None, par.vllm_version)
    if par.pp_rank == 0:
        w.own("embedding", vocab_r * h * ab)
    if par.pp_rank == par.pp - 1:
        w.own("norm", h * ab)
        w.own("lm_head", vocab_r * h * ab)
    layers = W.pp_layers(W._int(c, "num_hidden_layers"), par)
    i_r = W._divide(W._int(c, "intermediate_size"), tp, "ffn_hidden_size")
    moe_i = W._int(c, "moe_intermediate_size")
    for li in layers:
        for j in range(2):
            W._mla_attention(w, c, W.Quant(), tp, f"model.layers.{li}.self_attn.{j}", h, ab)
        for _ in range(4):
            w.own("norm", h * ab)
        for _ in range(2):
            w.own("mlp", 2 * i_r * h * ab)
            w.own("mlp", h * i_r * ab)
        w.own("router", (e + z) * h * router)
        if c.get("router_bias"):
            w.own("router", (e + z) * router)
        w.own("router", (e + z) * router)
        e_r, m_r = W.experts_per_rank(e, moe_i, tp, par, "expert_ffn_hidden_size")
        for kind, nbytes in W.experts_bytes(W.Quant(), e_r, h, m_r, ab):
            w.own(kind, nbytes)
        if par.expert_parallel:
            w.own("expert map", 4 * e, buffer=True)
    if layers:
        w.own("rotary", W._rotary_bytes(c, W._int(c, "qk_rope_head_dim"), ab), buffer=True)
    return w.result()


FAMILIES: dict[str, Family] = {"LongcatFlashForCausalLM": Family(walk)}
