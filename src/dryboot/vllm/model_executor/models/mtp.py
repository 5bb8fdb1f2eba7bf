"""The target's own MTP layers as a drafter (``--speculative-config '{"method": "mtp"}'``):
``qwen3_next_mtp.py`` / ``qwen3_5_mtp.py`` (Qwen3-Next, Qwen3.5, Qwen3.5-MoE) and
``deepseek_mtp.py`` (DeepSeek-V3 and its derivatives), built from the TARGET's config on the last
pipeline stage, per rank, in the target's dtype and quantization:

* each MTP layer is one of the target's decoder layers (Qwen: a full-attention layer with the
  target's MLP or MoE block; DeepSeek: an MoE layer, ``mtp_block``), sized by the target's own
  walk as the difference of the target cut to ``n + 1`` and ``n`` layers;
* Qwen: ``fc`` (ColumnParallelLinear ``[H / TP, 2 H]``), ``pre_fc_norm_hidden``,
  ``pre_fc_norm_embedding`` and the final ``norm`` ``[H]`` once; layers: ``mtp_num_hidden_layers``
  (else ``num_nextn_predict_layers``, else 1);
* DeepSeek, per layer of ``num_nextn_predict_layers``: ``enorm``, ``hnorm``, ``shared_head.norm``
  ``[H]`` and ``eh_proj`` (replicated, unquantized ``[H, 2 H]``);
* the embedding and the LM head (``shared_head.head``) are the target's: vLLM shares them with an
  MTP drafter unconditionally (``_maybe_share_embeddings`` / ``_maybe_share_lm_head``), the
  embedding only without pipeline parallelism (refused by name there); the rotary table is the
  target's (``get_rope``'s cache returns the same one).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dryboot.errors import InputError
from dryboot.vllm.model_executor.model_loader import weights as W

QWEN_MTP = frozenset({"Qwen3NextForCausalLM", "Qwen3_5ForConditionalGeneration", "Qwen3_5MoeForConditionalGeneration"})
DEEPSEEK_MTP = frozenset({"DeepseekV3ForCausalLM", "DeepseekV2ForCausalLM"})


def _cut(config: Mapping[str, Any], n: int, *, full_attention: bool) -> dict[str, Any]:
    """``config`` with its language model cut to ``n`` decoder layers (all full attention)."""
    out = dict(config)
    text = dict(out["text_config"]) if isinstance(out.get("text_config"), Mapping) else out
    text["num_hidden_layers"] = n
    if full_attention:
        text["layer_types"] = ["full_attention"] * n
    if text is not out:
        out["text_config"] = text
    return out


def mtp_weights(target_config: Mapping[str, Any], par: W.Parallel, *, dtype: str = "auto") -> W.RankWeights:
    """The MTP layers' weights on the last stage's rank (vLLM 0.28.0), in bytes and 512-byte
    allocator blocks.

    :raises InputError: a target whose MTP layers are not modelled, pipeline parallelism (the
        embedding is then the drafter's own: not modelled), or what the target's walk refuses."""
    archs = list(target_config.get("architectures") or [])
    arch = archs[0] if archs else "no architectures"
    if par.pp > 1:
        raise InputError("--speculative-config", "method", "MTP layers under pipeline parallelism are not modelled")
    text = target_config.get("text_config") or target_config
    h = W._int(text, "hidden_size")
    ab = W.model_dtype_bytes(target_config, dtype)
    flat = W.Parallel(tp=par.tp, dp=par.dp, expert_parallel=par.expert_parallel)
    out = W.RankWeights(source="config")
    if arch in QWEN_MTP:
        n = next((W._int(text, k) for k in ("mtp_num_hidden_layers", "num_nextn_predict_layers") if text.get(k)), 1)

        def walk(k: int) -> W.RankWeights:
            cut = _cut(target_config, k, full_attention=True)
            return W.rank_weights(cut, flat, dtype=dtype, language_model_only=True)

        two, one = walk(2), walk(1)
        layer = two.allocated_bytes - one.allocated_bytes
        out.allocated_bytes += n * layer
        out.param_bytes += n * layer
        out.load_segment_bytes += n * (two.load_segment_bytes - one.load_segment_bytes)
        out.add("fc", W._divide(h, par.tp, "the MTP fc's output") * 2 * h * ab)
        for _norm in range(3):
            out.add("norm", h * ab)
        return out
    if arch in DEEPSEEK_MTP and text.get("num_nextn_predict_layers"):
        n = W._int(text, "num_nextn_predict_layers")
        dense = W._int(text, "first_k_dense_replace", 0)

        def walk_ds(k: int) -> W.RankWeights:
            return W.rank_weights(_cut(target_config, k, full_attention=False), flat, dtype=dtype)

        two, one = walk_ds(dense + 2), walk_ds(dense + 1)
        layer = two.allocated_bytes - one.allocated_bytes
        for _ in range(n):
            out.allocated_bytes += layer
            out.param_bytes += layer
            out.load_segment_bytes += two.load_segment_bytes - one.load_segment_bytes
            out.add("eh_proj", h * 2 * h * ab)
            for _norm in range(3):
                out.add("norm", h * ab)
        return out
    raise InputError(
        "--speculative-config",
        "method",
        f"the MTP layers of {arch} are not modelled (Qwen3-Next, Qwen3.5 and DeepSeek-V2/V3 targets are)",
    )
