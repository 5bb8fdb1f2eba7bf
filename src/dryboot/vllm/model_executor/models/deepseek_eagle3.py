"""EAGLE-3 heads with DeepSeek's multi-head latent attention (vLLM's ``deepseek_eagle3.py``
``Eagle3DeepseekV2ForCausalLM``, also registered as ``Eagle3DeepseekV3ForCausalLM``): the
drafter's own weights per rank of the last pipeline stage, in the target's dtype (vLLM 0.27.1,
0.28.0, 0.30.0 and 0.33.0 recorded on the meta device).

Per layer of the head's ``num_hidden_layers`` (``DeepseekV2Eagle3DecoderLayer``):

* ``DeepseekV2MLAAttention`` over ``2 H`` inputs in the first layer (the embedding and the hidden
  state side by side), ``H`` in the others: with ``q_lora_rank`` the replicated
  ``fused_qkv_a_proj`` ``[q_lora + kv_lora + rope, in]``, ``q_a_layernorm``, ``q_b_proj``; without,
  ``q_proj`` and ``kv_a_proj_with_mqa`` over ``in``; ``kv_a_layernorm``, ``kv_b_proj``, ``o_proj``
  (the target walk's MLA layout, :func:`dryboot.vllm.model_executor.model_loader.weights._mla_attention`)
  and the MLA layer's six float32 scalars;
* a dense ``DeepseekV2MLP`` (never MoE): ``gate_up_proj`` ``[2 I / TP, H]``, ``down_proj``
  ``[H, I / TP]``;
* ``input_layernorm``, ``post_attention_layernorm`` and ``hidden_norm`` ``[H]``.

Once: ``fc`` ``[H, n_aux x target_hidden_size]`` (replicated; ``n_aux`` from
``num_aux_hidden_states``, else ``eagle_config.eagle_aux_hidden_state_layer_ids``, else 3),
``fc_norm`` ``n_aux x [target_hidden_size]`` with ``fc_norm``, the final ``norm`` ``[H]``;
``draft_id_to_target_id`` ``[draft_vocab]`` int64 (through 0.29 always, from 0.30 only for a
draft vocabulary other than the target's); the rotary table ``[positions, qk_rope_head_dim]``
(not NeoX-style; YaRN: ``original_max_position_embeddings x factor`` rows) unless ``get_rope``'s
cache hands back the target's (an MLA target with the same table); the embedding and the LM head,
own or shared with the target's as for every EAGLE-3 head
(:func:`dryboot.vllm.model_executor.models.llama_eagle3._with_embedding_and_head`).

Refused by name: a head without YaRN on 0.27 (vLLM fails to build it), a quantized head,
parallel drafting (the class has no ``mask_hidden``), a head with DeepSeek-V3.2's indexer
(``index_topk``), a default-RoPE head without ``max_position_embeddings`` (its config class's
default is not recorded). A head of ``model_type`` ``deepseek_v3`` is refused before (vLLM reads
it as DeepSeek's MTP module: ``Eagle3DeepSeekMTPModel``).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

from dryboot.errors import InputError
from dryboot.vllm.model_executor.model_loader import weights as W
from dryboot.vllm.model_executor.models import llama_eagle3 as E
from dryboot.vllm.versions import rules_for


def _rope(config: Mapping[str, Any]) -> Mapping[str, Any]:
    """The rope dictionary the MLA layer reads (``rope_parameters``, else ``rope_scaling``)."""
    rope = config.get("rope_parameters") or config.get("rope_scaling") or {}
    return rope if isinstance(rope, Mapping) else {}


def _is_yarn(config: Mapping[str, Any]) -> bool:
    rope = _rope(config)
    return str(rope.get("rope_type", rope.get("type", "default"))) in ("yarn", "deepseek_yarn")


def eagle3_mla(
    target_config: Mapping[str, Any],
    draft_config: Mapping[str, Any],
    par: W.Parallel,
    draft_tensors: Collection[str] | None,
    *,
    max_model_len: int,
    dtype: str,
    parallel_drafting: bool = False,
    own_d2t: bool = True,
    vllm_version: str = "0.28.0",
) -> E.DrafterWeights:
    """An MLA EAGLE-3 head's weights on the last stage's rank (the module text lists them).

    :param own_d2t: ``draft_id_to_target_id`` whatever the vocabularies (vLLM through 0.29).
    :param vllm_version: the release: 0.27's decoder layer rewrites every head's rope as
        ``deepseek_yarn`` (transformers 5's config always holds ``rope_theta`` there), so a head
        without YaRN's ``factor`` fails to build (``KeyError: 'factor'``, recorded): refused.
    :raises InputError: a head this module does not size (named), or a field vLLM's layers
        refuse (heads not divisible by TP)."""
    if "quantization_config" in draft_config:
        raise InputError(
            "--speculative-config", "quantization_config", "a quantized drafter's weights are not modelled"
        )
    if parallel_drafting:
        raise InputError(
            "--speculative-config",
            "parallel_drafting",
            "parallel drafting with a DeepSeek (MLA) EAGLE-3 head is not modelled",
        )
    if "index_topk" in draft_config:
        raise InputError(
            "--speculative-config", "index_topk", "a DeepSeek EAGLE-3 head with an indexer (index_topk) is not modelled"
        )
    tp = par.tp
    ab = W.model_dtype_bytes(target_config, dtype)
    h = W._int(draft_config, "hidden_size")
    layers = W._int(draft_config, "num_hidden_layers")
    inter_r = W._divide(W._int(draft_config, "intermediate_size"), tp, "the drafter's intermediate size")
    walk = W._Walk(None)  # 0.28.0's attention layers: 0.27's range scalars are drafter_weights'
    no_quant = W.Quant()
    for i in range(layers):
        prefix = f"model.layers.{i}"
        W._mla_attention(
            walk, draft_config, no_quant, tp, f"{prefix}.self_attn", h, ab, input_size=2 * h if i == 0 else h
        )
        W._mlp(walk, no_quant, f"{prefix}.mlp", h, inter_r, ab, tp)
        for _norm in ("input_layernorm", "post_attention_layernorm", "hidden_norm"):
            walk.own("norm", h * ab)
    core = walk.result()
    eagle = draft_config.get("eagle_config") or {}
    if not isinstance(eagle, Mapping):
        raise InputError("config.json", "eagle_config", "must be an object")
    h_t = E._opt(draft_config, "target_hidden_size", h)
    n_aux = E._eagle3_aux(draft_config, eagle, "llama")
    if E._flag(draft_config, "fc_norm"):
        for _ in range(n_aux):
            core.add("norm", h_t * ab)
    core.add("fc", h * n_aux * h_t * ab)
    core.add("norm", h * ab)
    vocab = W._int(draft_config, "vocab_size")
    draft_vocab = E._opt(draft_config, "draft_vocab_size", vocab)
    target = target_config.get("text_config") or target_config
    if own_d2t or draft_vocab != W._int(target, "vocab_size"):
        core.add("draft_id_to_target_id", draft_vocab * 8)
    rope_dim = W._int(draft_config, "qk_rope_head_dim")
    if rules_for(vllm_version).deepseek_eagle3_yarn_only and not _is_yarn(draft_config):
        raise InputError(
            "--speculative-config",
            "rope_scaling",
            f"vLLM {vllm_version} builds a DeepSeek EAGLE-3 head's rotary as deepseek_yarn and fails on one "
            "without YaRN (KeyError: 'factor')",
        )
    if draft_config.get("max_position_embeddings") is None and not _is_yarn(draft_config):
        raise InputError(
            "--speculative-config",
            "max_position_embeddings",
            "a DeepSeek EAGLE-3 head without max_position_embeddings or YaRN: its rotary table is not modelled",
        )
    positions = max(E._opt(draft_config, "max_position_embeddings", 0), max_model_len)
    mla_target = target.get("kv_lora_rank") is not None and not W.deepseek_mha(target)
    same = mla_target and E._rope_key(draft_config, positions, rope_dim) == E._rope_key(
        target, E._opt(target, "max_position_embeddings", 0), W._int(target, "qk_rope_head_dim")
    )
    if not same:
        table = {**draft_config, "max_position_embeddings": positions}
        core.add("rotary", W._rotary_bytes(table, rope_dim, ab), buffer=True)
    return E._with_embedding_and_head(
        core, target, par, draft_tensors, h=h, vocab=vocab, draft_vocab=draft_vocab, ab=ab
    )


E.register_mla_head(eagle3_mla)
