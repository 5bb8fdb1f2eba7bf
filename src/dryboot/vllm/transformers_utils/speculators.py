"""Draft models in the speculators format (``speculators_config``), read as vLLM 0.28.0 reads
them (``vllm/transformers_utils/configs/speculators/``: ``SpeculatorsConfig`` and its algorithm
updaters): the draft model's own config is ``transformer_layer_config``, with ``architectures``
named by ``speculators_model_type``.
"""

from __future__ import annotations

from typing import Any

from dryboot.errors import InputError

#: ``speculators_model_type: eagle3``: the head's class by its layer config's ``model_type``
#: (``update_eagle3``'s map; ``llama`` when unset)
EAGLE3_ARCHITECTURES = {"qwen3": "Eagle3Qwen3ForCausalLM", "llama": "Eagle3LlamaForCausalLM"}


#: the layer config's fields vLLM's draft decoder layers read without a default
LAYER_FIELDS = (
    "hidden_size",
    "num_attention_heads",
    "num_hidden_layers",
    "intermediate_size",
    "hidden_act",
    "rms_norm_eps",
    "vocab_size",
    "max_position_embeddings",
)


def is_speculators(data: dict[str, Any]) -> bool:
    """Whether ``data`` (a parsed ``config.json``) is in the speculators format."""
    return data.get("speculators_config") is not None


def verifier(data: dict[str, Any]) -> str:
    """The target a speculators-format config names (``speculators_config.verifier.name_or_path``),
    or ``"?"``."""
    spec = data.get("speculators_config")
    ver = spec.get("verifier") if isinstance(spec, dict) else None
    name = ver.get("name_or_path") if isinstance(ver, dict) else None
    return name if isinstance(name, str) else "?"


def draft_config(data: dict[str, Any], source: str) -> dict[str, Any]:
    """The config vLLM builds a speculators-format draft model from: its
    ``transformer_layer_config`` with the algorithm's fields (``eagle3``: ``architectures``
    ``Eagle3LlamaForCausalLM`` / ``Eagle3Qwen3ForCausalLM``; ``dflash``: ``DFlashDraftModel`` with
    a ``dflash_config`` holding ``mask_token_id``).

    :raises InputError: a malformed speculators config, an algorithm dryboot does not model
        (``peagle``, ``dspark``), or one vLLM refuses (its ``ValueError`` / ``KeyError``).
    """
    kind = data.get("speculators_model_type")
    layer = data.get("transformer_layer_config")
    if not isinstance(layer, dict):
        raise InputError(source, "transformer_layer_config", "Must provide transformer_layer_config (an object)")
    out = dict(layer)
    if kind in ("eagle3", "dflash"):
        # SpeculatorsConfig is no model config class: every field the decoder layers read must be
        # in transformer_layer_config (vLLM: AttributeError: 'SpeculatorsConfig' object has no
        # attribute ...)
        missing = [k for k in LAYER_FIELDS if k not in out]
        if missing:
            raise InputError(
                source,
                f"transformer_layer_config.{missing[0]}",
                f"missing: vLLM's SpeculatorsConfig has no defaults, and the draft layers read it "
                f"(AttributeError: 'SpeculatorsConfig' object has no attribute '{missing[0]}')",
            )
    if kind == "eagle3":
        model_type = out.get("model_type", "llama")
        if model_type not in EAGLE3_ARCHITECTURES:
            where = "transformer_layer_config.model_type"
            raise InputError(source, where, f"Unsupported model_type {model_type} for Eagle3 speculator")
        out["architectures"] = [EAGLE3_ARCHITECTURES[str(model_type)]]
        if "model_type" not in out:
            out["model_type"] = "llama"
        return out
    if kind == "dflash":
        for key in ("aux_hidden_state_layer_ids", "mask_token_id"):
            if key not in data:
                raise InputError(source, key, "missing: vLLM's DFlash speculator reads it (KeyError)")
        out["architectures"] = ["DFlashDraftModel"]
        out["dflash_config"] = {"mask_token_id": data["mask_token_id"]}
        return out
    if kind in ("peagle", "dspark"):
        raise InputError(source, "speculators_model_type", f"{kind}: this speculators algorithm is not modelled")
    raise InputError(
        source,
        "speculators_model_type",
        f"{kind!r}: Expected one of: eagle3, peagle, dflash, dspark (vLLM's speculators algorithms)",
    )
