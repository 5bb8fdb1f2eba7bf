"""Dots3-Note's weights (``Dots3NoteForCausalLM``, vLLM 0.33.0: ``vllm/models/dots3_note/nvidia``,
``model.py`` and ``multimodal.py``; config class ``Dots3NoteConfig``, a ``DeepseekV3Config``), its
language model without towers.

Per layer: ``input_layernorm`` and ``post_attention_layernorm`` ``[H]``, then by ``layer_types[i]``:

* ``sliding_attention`` (``Dots3NoteSlidingAttention``), an MLA of the ``swa_*`` dims:
  ``fused_qkv_a_proj`` ``[swa_q_lora + swa_kv_lora + swa_rope, H]`` (replicated),
  ``q_a_layernorm`` ``[swa_q_lora]``, ``q_b_proj`` ``[swa_heads / TP x (swa_nope + swa_rope),
  swa_q_lora]``, ``kv_a_layernorm`` ``[swa_kv_lora]``, ``kv_b_proj`` ``[swa_heads / TP x (swa_nope
  + swa_v), swa_kv_lora]``, ``o_proj`` ``[H, swa_heads / TP x swa_v]``;
* any other (``Dots3NoteFullAttention``): DeepSeek-V3.2's sparse MLA (``DeepseekV2MLAAttention``)
  of the main dims, the same five projections and two norms, and on the layers the IndexCache
  schedule keeps (``weights.has_indexer``) the indexer (replicated ``wq_b`` ``[index_heads x
  index_head_dim, q_lora]``, ``wk_weights_proj`` ``[index_head_dim + index_heads, H]``, a float32
  LayerNorm ``k_norm`` with bias);

each with the output gate ``g_proj`` (``attention_gate_type`` / ``swa_attention_gate_type``:
``headwise`` a replicated ``[heads, H]``, else a column-parallel ``[heads / TP x v, H]``),
``k_rope_only_layernorm`` ``[rope]`` and the MLA layer's scale buffers; a dense MLP ``[2 I / TP,
H]`` / ``[H, I / TP]`` below ``first_k_dense_replace`` (and off ``moe_layer_freq``), else the MoE
block (``Dots3NoteMoE``: the router ``[E, H]`` in the model dtype, a float32
``e_score_correction_bias`` ``[E]`` under ``topk_method`` ``noaux_tc``, the routed experts, the
shared experts ``moe_intermediate_size x n_shared_experts`` wide, TP-split).

One rotary table ``[max_position_embeddings, rope]`` in the model dtype per distinct
``get_rope`` key of the stage's layers: the full layers' (``qk_rope_head_dim``, ``rope_theta``,
interleaved; their rope type forced to ``default``), the sliding layers' (``swa_qk_rope_head_dim``,
``swa_rope_theta``), and the indexer's (NeoX-style where ``indexer_rope_interleave`` is false,
which ``Dots3NoteConfig`` defaults to true). The model's ``[max_num_batched_tokens,
index_topk]`` int32 top-k indices (a local of ``Dots3NoteModel.__init__``; counted as a buffer,
as DeepSeek-V3.2's, though vLLM registers it as none): held where a full layer of the stage keeps
it, freed on a stage of sliding layers only (a stage whose full layers all share another's top-k,
no indexer, is refused: only their attention impls, no module, hold it there, which the
meta-device oracle does not count). The embedding on the first stage, the final norm and the LM
head (always its own: ``DeepseekV2ForCausalLM`` ties none) on the last.

Refused by name: the vision and audio towers (``vision_config`` / ``audio_config``; with
``--language-model-only``, or every modality's limit 0, vLLM builds neither: sized), quantized
checkpoints and checkpoint headers, a stage of indexer-less full layers (above), no
``q_lora_rank`` / ``swa_q_lora_rank``, no shared experts, sequence-parallel MoE (data parallel
with expert parallel and TP > 1: the shared experts replicated), other releases. The MTP
drafter's own weights (``Dots3NoteMTP``) are not part of the target's figure."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dryboot.errors import InputError
from dryboot.vllm.model_executor.model_loader import weights as W
from dryboot.vllm.model_executor.models.compose import Family, WalkArgs, unquantized

#: ``Dots3NoteConfig``'s defaults of the keys the walk reads (``DeepseekV3Config``'s, transformers
#: 5.20.2 of vLLM 0.33.0, with the ``setdefault``s of ``Dots3NoteConfig.__init__``)
DEFAULTS: dict[str, Any] = {
    "vocab_size": 129280,
    "hidden_size": 7168,
    "intermediate_size": 18432,
    "moe_intermediate_size": 2048,
    "num_hidden_layers": 61,
    "num_attention_heads": 128,
    "n_routed_experts": 256,
    "n_shared_experts": 1,
    "first_k_dense_replace": 3,
    "q_lora_rank": 1536,
    "kv_lora_rank": 512,
    "qk_nope_head_dim": 128,
    "qk_rope_head_dim": 64,
    "v_head_dim": 128,
    "max_position_embeddings": 4096,
    "tie_word_embeddings": False,
    "indexer_rope_interleave": True,
}
#: the releases whose ``models/dots3_note`` this module sizes (recorded)
RELEASES = ("0.33.0",)
SLIDING = "sliding_attention"
#: ``rope_theta`` where the config gives none (``get_rope``'s default base)
DEFAULT_THETA = 10000.0


def _theta(c: Mapping[str, Any]) -> float:
    """The full layers' ``rope_theta`` (``rope_parameters``, or the flat key of an older config)."""
    rope = c.get("rope_parameters") or {}
    theta = rope.get("rope_theta") if isinstance(rope, Mapping) else None
    return float(theta if theta is not None else c.get("rope_theta", DEFAULT_THETA))


def _gate(w: W._Walk, kind: Any, heads: int, heads_r: int, v: int, h: int, ab: int) -> None:
    """``g_proj``: replicated ``[heads, H]`` when ``headwise``, else column-parallel ``[heads / TP x v, H]``."""
    w.own("attention", (heads if kind == "headwise" else heads_r * v) * h * ab)


def _sliding(w: W._Walk, c: Mapping[str, Any], par: W.Parallel, h: int, ab: int) -> tuple[int, float, bool]:
    """One ``Dots3NoteSlidingAttention``; its rotary key."""
    heads = W._int(c, "swa_num_attention_heads")
    heads_r = W._divide(heads, par.tp, "swa_num_attention_heads")
    nope, rope, v = (W._int(c, k) for k in ("swa_qk_nope_head_dim", "swa_qk_rope_head_dim", "swa_v_head_dim"))
    if c.get("swa_q_lora_rank") is None:
        raise InputError(
            "config.json", "swa_q_lora_rank", "Dots3-Note's sliding layers without a q LoRA are not modelled"
        )
    q_lora, kv_lora = W._int(c, "swa_q_lora_rank"), W._int(c, "swa_kv_lora_rank")
    for size in W.q_lora_mla_sizes(h, heads_r, nope, rope, v, q_lora, kv_lora):
        w.own("attention", size * ab)
    _gate(w, c.get("swa_attention_gate_type"), heads, heads_r, v, h, ab)
    w.own("norm", rope * ab)  # k_rope_only_layernorm
    w.attention_layer((), ab)
    theta = c.get("swa_rope_theta")
    return rope, float(theta if theta is not None else DEFAULT_THETA), False


def _full(w: W._Walk, c: Mapping[str, Any], par: W.Parallel, li: int, h: int, ab: int) -> list[tuple[int, float, bool]]:
    """One ``Dots3NoteFullAttention`` (with its indexer where the IndexCache schedule keeps one);
    its rotary keys (the MLA's, and the indexer's)."""
    heads = W._int(c, "num_attention_heads")
    heads_r = W._divide(heads, par.tp, "num_attention_heads")
    nope, rope, v = (W._int(c, k) for k in ("qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim"))
    if c.get("q_lora_rank") is None:
        raise InputError(
            "config.json", "q_lora_rank", "Dots3-Note's sparse layers need a q LoRA (its indexer reads it)"
        )
    q_lora, kv_lora = W._int(c, "q_lora_rank"), W._int(c, "kv_lora_rank")
    for size in W.q_lora_mla_sizes(h, heads_r, nope, rope, v, q_lora, kv_lora):
        w.own("attention", size * ab)
    keys = [(rope, _theta(c), False)]
    if W.has_indexer(c, li):
        ih, ihd = W._int(c, "index_n_heads"), W._int(c, "index_head_dim")
        w.own("indexer", ih * ihd * q_lora * ab)
        w.own("indexer", (ihd + ih) * h * ab)
        w.own("indexer", ihd * 4)  # k_norm: float32 weight
        w.own("indexer", ihd * 4)  # and bias
        keys.append((rope, _theta(c), not c.get("indexer_rope_interleave")))
    _gate(w, c.get("attention_gate_type"), heads, heads_r, v, h, ab)
    w.own("norm", rope * ab)  # k_rope_only_layernorm
    w.attention_layer((), ab)
    return keys


def _mlp(w: W._Walk, c: Mapping[str, Any], par: W.Parallel, li: int, h: int, ab: int) -> None:
    """Layer ``li``'s dense MLP or ``Dots3NoteMoE`` block."""
    e = c.get("n_routed_experts")
    freq = W._int(c, "moe_layer_freq", 1) or 1
    if e is None or li < W._int(c, "first_k_dense_replace", 0) or li % freq:
        i_r = W._divide(W._int(c, "intermediate_size"), par.tp, "intermediate_size")
        w.own("mlp", 3 * i_r * h * ab)
        return
    e = W._int(c, "n_routed_experts")
    if not c.get("n_shared_experts"):
        raise InputError("config.json", "n_shared_experts", "Dots3-Note's MoE without shared experts is not modelled")
    w.own("router", e * h * ab)
    if c.get("topk_method") == "noaux_tc":
        w.own("router", e * 4)  # e_score_correction_bias, float32
    shared = W._divide(W._int(c, "moe_intermediate_size") * W._int(c, "n_shared_experts"), par.tp, "shared experts")
    w.own("mlp", 3 * shared * h * ab)
    w.experts(e, h, W._int(c, "moe_intermediate_size"), par, ab, "moe_intermediate_size")


def walk(config: Mapping[str, Any], par: W.Parallel, args: WalkArgs) -> W.RankWeights:
    """One rank of one stage (module docstring).

    :raises InputError: what the module docstring names, sizes TP does not divide, no
        ``max_num_batched_tokens``."""
    if par.vllm_version not in RELEASES:
        raise InputError(
            "--vllm",
            None,
            f"Dots3-Note's weights on vLLM {par.vllm_version} are not modelled "
            f"(recorded on {' / '.join(RELEASES)} only)",
        )
    if par.capability is not None:
        # the heap scan of the built model (quant_cases_ficounterfam.py) sees storages no module holds
        raise InputError(
            "--gpu",
            None,
            "Dots3-Note: vLLM 0.33.0 builds storages its attention implementations hold outside the model's "
            "weights and buffers (the tiny config: 134,367,232 bytes more on H100, two [8193, 2048] int32 among "
            "them; on SM 10.x also CUTLASS-MLA's 128 MiB workspace); not modelled",
        )
    for key in ("vision_config", "audio_config"):
        # --language-model-only (every modality's limit 0): the class builds neither tower
        if config.get(key) is not None and not args.no_tower:
            raise InputError(
                "config.json", key, "Dots3-Note's vision and audio towers (vllm/models/dots3_note) are not sized"
            )
    c, ab = unquantized(config, args, DEFAULTS)
    if par.dp > 1 and par.expert_parallel and par.tp > 1:
        raise InputError(
            "--data-parallel-size", None, "Dots3-Note's sequence-parallel MoE (shared experts unsplit) is not modelled"
        )
    if args.max_num_batched_tokens is None:
        raise InputError(
            "--max-num-batched-tokens", None, "Dots3-Note's top-k indices buffer has one row per batched token"
        )
    n = W._int(c, "num_hidden_layers")
    index_topk = W._int(c, "index_topk")  # Dots3NoteModel reads it whatever the layers
    types = c.get("layer_types")
    if not isinstance(types, list) or len(types) != n:
        raise InputError("config.json", "layer_types", f"one attention type per layer ({n})")
    h = W._int(c, "hidden_size")
    vocab_r = W.padded_vocab_per_rank(W._int(c, "vocab_size"), par.tp)
    w = W._Walk(None, par.vllm_version)
    w.ends(par, vocab_r, h, ab)
    layers = W.pp_layers(n, par)
    full = [li for li in layers if types[li] != SLIDING]
    if full and not any(W.has_indexer(c, li) for li in full):
        # only the attention impls (no module) would hold the top-k indices: not recorded
        raise InputError(
            "index_topk_pattern",
            None,
            "a Dots3-Note stage whose sparse layers all reuse another stage's top-k (no indexer) is not modelled",
        )
    tables: set[tuple[int, float, bool]] = set()
    for li in layers:
        w.own("norm", h * ab)
        w.own("norm", h * ab)
        if types[li] == SLIDING:
            tables.add(_sliding(w, c, par, h, ab))
        else:
            tables.update(_full(w, c, par, li, h, ab))
        _mlp(w, c, par, li, h, ab)
    positions = W._int(c, "max_position_embeddings")
    for rope, _, _ in sorted(tables):
        w.own("rotary", positions * rope * ab, buffer=True)
    if full:  # the top-k indices, held by the full layers' indexers and MLA wrappers
        w.own("topk indices", args.max_num_batched_tokens * index_topk * 4, buffer=True)
    rank = w.result()
    # MLA layers only (sparse full, TRITON_MLA sliding): no FlashInferImpl, no FlashInfer KV counter
    W.flashinfer_counter_layers(rank, par, args.max_num_batched_tokens, [])
    return rank


FAMILIES: dict[str, Family] = {"Dots3NoteForCausalLM": Family(walk, modalities=("image", "audio", "video"))}
