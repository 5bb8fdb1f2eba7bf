"""Medusa heads as a drafter (``--speculative-config '{"method": "medusa", "model": ...}'``):
``medusa.py`` ``Medusa``, which vLLM 0.28.0 builds from the head's ``MedusaConfig`` on the last
pipeline stage, per rank, in the target's dtype:

* ``num_heads`` residual blocks of ``num_hidden_layers`` ``nn.Linear(H, H)`` each (replicated;
  a bias ``[H]`` with ``medusa_fc_bias``);
* ``num_heads`` LM heads ``[pad64(vocab) / TP, H]``, or one ``[pad64(truncated_vocab_size) / TP,
  H]`` shared by every head with ``original_lm_head``.

The config as ``MedusaConfig`` reads it: a key holding ``num`` and ``heads`` is ``num_heads``, one
holding ``num`` and ``layers`` is ``num_hidden_layers`` (the original checkpoints'
``medusa_num_heads`` / ``medusa_num_layers``); absent fields take its defaults (``hidden_size``
4096, ``vocab_size`` 32001, five heads, one layer); a vocabulary other than the target's becomes
the target's (and so does ``truncated_vocab_size``); ``num_speculative_tokens``, when given,
sets the number of heads. Nothing is shared with the target (the
proposer's ``load_model`` only builds the heads): decided. vLLM 0.33.0 has no Medusa class.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dryboot.errors import InputError
from dryboot.vllm.model_executor.model_loader import weights as W

#: ``MedusaConfig``'s defaults
MEDUSA_DEFAULTS: Mapping[str, int] = {"hidden_size": 4096, "vocab_size": 32001, "num_heads": 5, "num_hidden_layers": 1}


def medusa_config(config: Mapping[str, Any]) -> dict[str, Any]:
    """``config`` as ``MedusaConfig.from_pretrained`` leaves it: ``*num*heads*`` / ``*num*layers*``
    keys renamed, defaults filled, ``truncated_vocab_size`` the vocabulary when not given."""
    out: dict[str, Any] = {}
    for k, v in config.items():
        if "num" in k and "heads" in k:
            out["num_heads"] = v
        elif "num" in k and "layers" in k:
            out["num_hidden_layers"] = v
        else:
            out[k] = v
    for k, v in MEDUSA_DEFAULTS.items():
        if out.get(k) is None:
            out[k] = v
    if out.get("truncated_vocab_size") is None:
        out["truncated_vocab_size"] = out["vocab_size"]
    return out


def medusa_weights(
    target_config: Mapping[str, Any],
    draft_config: Mapping[str, Any],
    par: W.Parallel,
    *,
    dtype: str = "auto",
    num_speculative_tokens: int | None = None,
) -> W.RankWeights:
    """The Medusa heads' weights on the last stage's rank (module text), in bytes and 512-byte
    allocator blocks.

    :param num_speculative_tokens: ``--speculative-config``'s; given, it is the number of heads
        vLLM builds (``SpeculativeConfig`` sets ``num_lookahead_tokens``, ``MedusaConfig``'s
        ``num_heads``).

    :raises InputError: a field that is not a non-negative integer, a quantized head, a vocabulary
        the tensor parallel size does not divide after padding."""
    if "quantization_config" in draft_config:
        raise InputError(
            "--speculative-config", "quantization_config", "a quantized drafter's weights are not modelled"
        )
    archs = draft_config.get("architectures")
    if archs and archs != ["MedusaModel"]:
        # MedusaConfig names MedusaModel only when the config names nothing: vLLM then builds the
        # named (base model's) class as the drafter and fails ("Duplicate layer name")
        raise InputError(
            "--speculative-config",
            "architectures",
            f"a Medusa head whose config names {archs[0]!r}: vLLM builds that class, not Medusa's, and fails",
        )
    cfg = medusa_config(draft_config)
    target = target_config.get("text_config") or target_config
    t_vocab = W._int(target, "vocab_size")
    if W._int(cfg, "vocab_size") != t_vocab:  # SpeculativeConfig aligns it with the target's
        cfg["vocab_size"] = cfg["truncated_vocab_size"] = t_vocab
    ab = W.model_dtype_bytes(target_config, dtype)
    h = W._int(cfg, "hidden_size")
    if num_speculative_tokens:
        cfg["num_heads"] = num_speculative_tokens
    heads = W._int(cfg, "num_heads")
    bias = cfg.get("medusa_fc_bias")
    if bias is not None and not isinstance(bias, bool):
        raise InputError("config.json", "medusa_fc_bias", f"must be true or false, got {bias!r}")
    out = W.RankWeights(source="config")
    for _ in range(heads * W._int(cfg, "num_hidden_layers")):
        out.add("medusa blocks", h * h * ab)
        if bias:
            out.add("medusa blocks", h * ab)

    def head(vocab: int) -> int:
        padded = -(-vocab // W.VOCAB_PADDING) * W.VOCAB_PADDING
        return W._divide(padded, par.tp, "the Medusa LM head's padded vocabulary") * h * ab

    if cfg.get("original_lm_head"):
        out.add("lm_head", head(W._int(cfg, "truncated_vocab_size")))
    else:
        for _ in range(heads):
            out.add("lm_head", head(W._int(cfg, "vocab_size")))
    return out
