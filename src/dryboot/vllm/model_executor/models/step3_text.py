"""Step-3 text model (``step3_text.py``, ``Step3TextForCausalLM``): per layer two RMSNorms, the
attention's fused ``qkv_proj`` (``[share_q_dim + 2 x num_attention_groups x head_dim, H]``,
replicated), ``inter_norm`` ``[share_q_dim]``, ``wq`` (ColumnParallel ``[heads / TP x head_dim,
share_q_dim]``), ``o_proj`` (RowParallel ``[H, heads / TP x head_dim]``), then a gated MLP, or on
the layers of ``moe_layers_enum`` a MoE block (router ``[E, H]``, ``moe_num_experts`` experts of
``moe_intermediate_size``) with its shared expert (``share_expert_dim``); one rotary table
``[max_position_embedding, head_dim]``; an untied head. vLLM 0.28.0 fails it under pipeline
parallelism (``Step3TextConfig`` has no ``tie_word_embeddings``): refused."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dryboot.errors import InputError
from dryboot.vllm.model_executor.model_loader import weights as W
from dryboot.vllm.model_executor.models.compose import Family, WalkArgs, unquantized, without_pp


def _moe_layers(config: Mapping[str, Any]) -> set[int]:
    enum = config.get("moe_layers_enum")
    if enum is None:
        return set(range(1, W._int(config, "num_hidden_layers")))
    try:
        return {int(x) for x in str(enum).split(",") if x.strip()}
    except ValueError:
        raise InputError("config.json", "moe_layers_enum", "a comma-separated list of layer indices") from None


def walk(config: Mapping[str, Any], par: W.Parallel, args: WalkArgs) -> W.RankWeights:
    """One rank (module docstring).

    :raises InputError: a quantization method, checkpoint headers, sizes TP does not divide."""
    config, ab = unquantized(config, args)
    tp = par.tp
    h = W._int(config, "hidden_size")
    heads_r = W._divide(W._int(config, "num_attention_heads"), tp, "num_attention_heads")
    hd, q = W._int(config, "head_dim"), W._int(config, "share_q_dim")
    groups = W._int(config, "num_attention_groups")
    i_r = W._divide(W._int(config, "intermediate_size"), tp, "intermediate_size")
    e, moe_i = W._int(config, "moe_num_experts"), W._int(config, "moe_intermediate_size")
    s_r = W._divide(W._int(config, "share_expert_dim"), tp, "share_expert_dim")
    vocab_r = W.padded_vocab_per_rank(W._int(config, "vocab_size"), tp)
    moe = _moe_layers(config)
    w = W._Walk(None, par.vllm_version)
    for n in (vocab_r * h, vocab_r * h, h):  # embedding, head, final norm
        w.own("weight", n * ab)
    layers = W.pp_layers(W._int(config, "num_hidden_layers"), par)
    for li in layers:
        sizes = [h, h, (q + 2 * groups * hd) * h, q, heads_r * hd * q, h * heads_r * hd]
        if li in moe:
            e_r, m_r = W.experts_per_rank(e, moe_i, tp, par, "moe_intermediate_size")
            sizes += [e * h, 2 * s_r * h, h * s_r, e_r * 2 * m_r * h, e_r * h * m_r]
            if par.expert_parallel:
                w.own("expert map", 4 * e, buffer=True)
        else:
            sizes += [2 * i_r * h, h * i_r]
        for n in sizes:
            w.own("weight", n * ab)
        w.own("attention scales", 16, buffer=True)
        w.ref.allocated_bytes += w.attention_blocks * W.ALLOC_ROUND
    if layers:
        positions = config.get("max_position_embedding", config.get("max_position_embeddings"))
        w.own("rotary", W._int({"p": positions}, "p") * hd * ab, buffer=True)
    return w.result()


FAMILIES: dict[str, Family] = {"Step3TextForCausalLM": without_pp(Family(walk))}
