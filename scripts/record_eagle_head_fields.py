"""Record, per ``model_type``, what vLLM's Llama EAGLE / EAGLE-3 layers read from a head's config
class where the head's ``config.json`` omits it.

    ~/.cache/dryboot/boot-env/0.28.0/bin/python scripts/record_eagle_head_fields.py > fields-0.28.0.json

vLLM's ``EAGLEConfig`` reads a head with the config class its ``model_type`` names
(``AutoConfig.for_model``); the Llama decoder layers then read ``num_attention_heads``,
``num_key_value_heads`` (default: the heads), ``head_dim`` (default: hidden // heads),
``max_position_embeddings``, ``sliding_window`` and ``layer_types`` (``llama.py``
``LlamaAttention`` / ``LlamaDecoderLayer``). For each config class of the transformers in this
environment, built from a small head (the fields every published head gives), this prints the
values those reads get: ``head_dim`` (``null``: none of its own, so hidden // heads),
``num_key_value_heads`` (``"heads"``: an omitted one takes ``num_attention_heads``; else the
class's fixed default),
``max_position_embeddings`` (``null``: none, vLLM's 8192), ``sliding_window`` and
``layer_types`` (``"generated"`` when the class writes layer types the head did not give).
Classes that fail to build from such a head are left out (dryboot refuses their heads).
Run in the fidelity venvs only; nothing here imports dryboot.
"""

from __future__ import annotations

import json
import sys
import warnings

#: a head with an unusual head count, so that a default that follows it is told from a fixed one
HEAD = {
    "hidden_size": 384,
    "num_attention_heads": 6,
    "num_hidden_layers": 1,
    "intermediate_size": 1024,
    "vocab_size": 1000,
}


def _fields(cls: type) -> dict[str, object] | None:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return _read(cls(**HEAD))
    except Exception:
        return None


def _read(cfg: object) -> dict[str, object] | None:
    if getattr(cfg, "num_attention_heads", None) != 6 or getattr(cfg, "hidden_size", None) != 384:
        return None  # the class names these fields otherwise (sub-configs, attribute maps)
    if getattr(cfg, "num_hidden_layers", None) != 1:
        return None
    kv = getattr(cfg, "num_key_value_heads", None)
    layer_types = getattr(cfg, "layer_types", None)
    sw = getattr(cfg, "sliding_window", None)
    mpe = getattr(cfg, "max_position_embeddings", None)
    hd = getattr(cfg, "head_dim", None)
    return {
        "head_dim": hd if isinstance(hd, int) and hd != 384 // 6 else None,
        "num_key_value_heads": "heads" if kv is None or kv == 6 else kv,
        "max_position_embeddings": mpe if isinstance(mpe, int) else None,
        "sliding_window": sw if isinstance(sw, int) else None,
        "layer_types": "generated" if layer_types else None,
    }


def main() -> int:
    import transformers
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING

    out: dict[str, object] = {}
    for model_type in sorted(CONFIG_MAPPING.keys()):
        try:
            cls = CONFIG_MAPPING[model_type]
        except Exception:
            continue
        fields = _fields(cls)
        if fields is not None:
            out[model_type] = fields
    json.dump({"transformers": transformers.__version__, "model_types": out}, sys.stdout, indent=1, sort_keys=True)
    print()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
