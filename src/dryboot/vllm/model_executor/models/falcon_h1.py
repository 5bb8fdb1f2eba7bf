"""Falcon-H1 (``falcon_h1.py``, ``FalconH1ForCausalLM``): every layer runs attention and a Mamba2
mixer side by side, then a gated MLP. Per layer: ``input_layernorm``, attention (``qkv_proj``,
``o_proj``; one rotary table for the model), the Mamba2 mixer (``layers/mamba/mamba_mixer2.py``,
``I = mamba_d_ssm``, else ``mamba_expand x H``; ``in_proj`` ``[(2 I + 2 G N + Hm) / TP, H]``,
``conv1d`` ``[(I + 2 G N) / TP, K]`` (+ bias under ``mamba_conv_bias``), ``A`` float32, ``D``,
``dt_bias`` ``[Hm / TP]``, the gated norm ``[I / TP]`` only under ``mamba_rms_norm``,
``out_proj`` ``[H, I / TP]``; ``conv_weights`` is a view) with its ``mup_vector`` buffer ``[1,
in_proj width / TP]``, ``pre_ff_layernorm`` and the MLP; the embedding on the first stage,
``final_layernorm`` and the untied head on the last. A single Mamba2 group is replicated per rank."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dryboot.vllm.model_executor.model_loader import weights as W
from dryboot.vllm.model_executor.models.compose import Family, WalkArgs, unquantized

#: ``FalconH1Config``'s defaults (transformers 5.x) for what a config leaves out
DEFAULTS: dict[str, Any] = {
    "tie_word_embeddings": False,
    "mamba_d_ssm": 1024,
    "mamba_n_heads": 128,
    "mamba_d_head": "auto",
    "mamba_n_groups": 1,
    "mamba_d_state": 256,
    "mamba_d_conv": 4,
    "mamba_expand": 2,
    "mamba_conv_bias": True,
    "mamba_proj_bias": False,
    "mamba_rms_norm": False,
    "max_position_embeddings": 8192,
}


def walk(config: Mapping[str, Any], par: W.Parallel, args: WalkArgs) -> W.RankWeights:
    """One rank of one stage (module docstring).

    :raises InputError: a quantization method, checkpoint headers, sizes TP does not divide."""
    config, ab = unquantized(config, args, DEFAULTS)
    tp = par.tp
    h = W._int(config, "hidden_size")
    nq = W._int(config, "num_attention_heads")
    nkv = W._int(config, "num_key_value_heads", nq)
    hd = config.get("head_dim") or h // nq
    nq_r = W._divide(nq, tp, "num_attention_heads")
    nkv_r = W._divide(nkv, tp, "num_key_value_heads") if nkv >= tp else 1
    vocab_r = W.padded_vocab_per_rank(W._int(config, "vocab_size"), tp)
    inter = config.get("mamba_d_ssm") or W._int(config, "mamba_expand") * h
    nh = W._int(config, "mamba_n_heads")
    g, n, k = W._int(config, "mamba_n_groups"), W._int(config, "mamba_d_state"), W._int(config, "mamba_d_conv")
    nh_r, i_r, proj, conv = W.mamba2_split(nh, int(inter), g, n, tp, "mamba_d_ssm")
    mlp_r = W._divide(W._int(config, "intermediate_size"), tp, "intermediate_size")
    w = W._Walk(None, par.vllm_version)
    first, last = par.pp_rank == 0, par.pp_rank == par.pp - 1
    if first:
        w.own("embedding", vocab_r * h * ab)
    if last:
        w.own("norm", h * ab)
        if not config.get("tie_word_embeddings") or not first:
            w.own("lm_head", vocab_r * h * ab)
    layers = W.pp_layers(W._int(config, "num_hidden_layers"), par)
    for _ in layers:
        sizes = [h, (nq_r + 2 * nkv_r) * hd * h, h * nq_r * hd]  # input_layernorm, qkv_proj, o_proj
        sizes += [proj * h, *([proj] if config.get("mamba_proj_bias") else []), conv * k]
        sizes += [*([conv] if config.get("mamba_conv_bias") else []), nh_r, nh_r]  # conv bias, D, dt_bias
        sizes += [*([i_r] if config.get("mamba_rms_norm") else []), h * i_r]
        sizes += [*([h] if config.get("mamba_proj_bias") else []), h, 2 * mlp_r * h, h * mlp_r]
        for count in sizes:
            w.own("weight", count * ab)
        w.own("mamba", 4 * nh_r)  # A, float32
        w.own("mup vector", proj * ab, buffer=True)
        w.own("attention scales", 16, buffer=True)
        w.ref.allocated_bytes += w.attention_blocks * W.ALLOC_ROUND
    if layers:
        w.own("rotary", W._rotary_bytes(config, int(hd), ab), buffer=True)
    return w.result()


FAMILIES: dict[str, Family] = {"FalconH1ForCausalLM": Family(walk)}
