"""Llama-style decoders: Llama, Mistral, Qwen2, Qwen3, the Qwen3-based DFlash drafter and the
EAGLE / EAGLE-3 heads vLLM builds from Llama or Qwen3 decoder layers.

Mirrors ``vllm/model_executor/models/llama.py`` (per-layer windows from ``layer_types``),
``qwen2.py``/``qwen3.py`` (no per-layer window; mixed layer types refused),
``qwen3_dflash.py``, ``llama_eagle.py``, ``llama_eagle3.py`` and ``qwen3_eagle3.py`` (the head's
``num_hidden_layers`` decoder layers, built from the head's own config: its KV heads and head
dim; a window only where the head's own ``layer_types`` says sliding, counted from the head's
first layer), fed by transformers' config classes (``LlamaConfig``, ``MistralConfig``,
``Qwen2Config``, ``Qwen3Config``) and vLLM 0.28.0's ``EngineArgs.create_engine_config``: the
model-level window (``CacheConfig.sliding_window``) is set only when ``layer_types`` is absent
or all sliding, and a layer without a window of its own takes the model-level one.
"""

from __future__ import annotations

import json
from dataclasses import replace
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from dryboot.errors import InputError
from dryboot.vllm import DATA
from dryboot.vllm.config.hf import ConfigFields, LayerKind, ModelGeometry
from dryboot.vllm.models.common import (
    attention_heads,
    check_partial_sliding_window,
    geometry,
    layer_types,
    num_layers,
    partial_sliding_window,
    window,
)

if TYPE_CHECKING:
    from dryboot.vllm.engine_args import EngineArgs

SLIDING = "sliding_attention"

#: EAGLE / EAGLE-3 head architectures (vLLM 0.28.0's ``_SPECULATIVE_DECODING_MODELS``) -> the
#: model file that builds their decoder layers: ``LlamaDecoderLayer`` (``llama_eagle.py``,
#: ``llama_eagle3.py``) or ``Qwen3DecoderLayer`` (``qwen3_eagle3.py``). The registry maps
#: ``Eagle3MiniMaxM2ForCausalLM``, ``Eagle3Qwen2_5vlForCausalLM`` and ``Eagle3Qwen3vlForCausalLM`` to
#: the Llama EAGLE-3 head as well.
EAGLE_HEADS: dict[str, str] = {
    "EagleLlamaForCausalLM": "llama_eagle.py",
    "Eagle3LlamaForCausalLM": "llama_eagle3.py",
    "LlamaForCausalLMEagle3": "llama_eagle3.py",
    "Eagle3MiniMaxM2ForCausalLM": "llama_eagle3.py",
    "Eagle3Qwen2_5vlForCausalLM": "llama_eagle3.py",
    "Eagle3Qwen3vlForCausalLM": "llama_eagle3.py",
    "Eagle3Qwen3ForCausalLM": "qwen3_eagle3.py",
}
#: The config classes (``model_type``) whose heads are read with this module's own defaults
#: (:data:`_DEFAULTS`, the Qwen layer-type rule): vLLM's ``EAGLEConfig`` reads the head with
#: whatever class its ``model_type`` names (the published Mixtral-8x7B EAGLE head: ``mixtral``
#: with ``LlamaForCausalLM``), and the Llama layers then read the heads, ``head_dim`` (else
#: ``hidden_size // num_attention_heads``) and ``layer_types`` from it. A head of any other
#: ``model_type`` is read by :func:`eagle_head_refusal` and :func:`defaults` from
#: ``data/eagle-head-fields.json``.
EAGLE_MODEL_TYPES = frozenset({"llama", "mistral", "mixtral", "qwen2", "qwen3"})

#: the architectures vLLM builds on qwen2.py's Qwen2Model: mimo.py's MiMoForCausalLM (0.27.1-0.33.0)
#: subclasses Qwen2ForCausalLM and keeps its layers (its num_nextn_predict_layers MTP layers are
#: built only as the MiMoMTP drafter, not by the target)
QWEN2_MODELS = ("Qwen2ForCausalLM", "MiMoForCausalLM")

#: transformers 5 config-class defaults that change the KV cache, by ``model_type``.
_DEFAULTS: dict[str, dict[str, Any]] = {
    "llama": {"max_position_embeddings": 2048},
    "mistral": {"max_position_embeddings": 131072, "sliding_window": 4096},
    # an EAGLE head read with MixtralConfig (its window is read only through layer_types, which
    # MixtralConfig has not)
    "mixtral": {"max_position_embeddings": 131072},
    "qwen2": {
        "max_position_embeddings": 32768,
        "sliding_window": 4096,
        "use_sliding_window": False,
        "max_window_layers": 28,
    },
    # MiMo's own MiMoConfig (remote code, auto_map): a Qwen2Config subclass, Qwen2's defaults (its
    # num_key_value_heads default is 32, not the attention heads: recorded on 0.28.0)
    "mimo": {
        "max_position_embeddings": 32768,
        "num_key_value_heads": 32,
        "sliding_window": 4096,
        "use_sliding_window": False,
        "max_window_layers": 28,
    },
    "qwen3": {
        "max_position_embeddings": 32768,
        "head_dim": 128,
        "sliding_window": 4096,
        "use_sliding_window": False,
        "max_window_layers": 28,
    },
}


@lru_cache(maxsize=1)
def _head_fields() -> dict[str, dict[str, Any]]:
    """``model_type`` -> what the Llama EAGLE layers read from that config class where a head's
    ``config.json`` omits it (``data/eagle-head-fields.json``, recorded from the transformers of
    vLLM 0.28.0, 0.29.0 and 0.33.0 by ``scripts/record_eagle_head_fields.py``)."""
    table: dict[str, dict[str, Any]] = json.loads((DATA / "eagle-head-fields.json").read_text(encoding="utf-8"))[
        "model_types"
    ]
    return table


def eagle_head_refusal(model_type: str, data: dict[str, Any]) -> str | None:
    """Why an EAGLE / EAGLE-3 head of ``model_type`` (``data``: its config.json) is not read,
    or ``None`` when it is: vLLM builds the Llama EAGLE layers from whatever config class the
    head names, and they read only heads, KV heads, ``head_dim``, ``max_position_embeddings``,
    ``sliding_window`` and ``layer_types``; a class that cannot hold a head (sub-configs,
    other field names, or a transformers release that reads it otherwise) or one that writes
    ``layer_types`` of its own the head does not give is refused."""
    if model_type in EAGLE_MODEL_TYPES:
        return None
    fields = _head_fields().get(model_type)
    if fields is None:
        return (
            "its config class does not hold a decoder head's fields as the transformers of every recorded release "
            "read them (data/eagle-head-fields.json)"
        )
    if fields["layer_types"] == "generated" and "layer_types" not in data:
        return (
            "its config class writes layer_types of its own (which the EAGLE layers read) that the head does not give"
        )
    return None


def defaults(f: ConfigFields) -> dict[str, Any]:
    """The config class's defaults that change the KV cache, by ``model_type``: this module's
    own (:data:`_DEFAULTS`), else, for an EAGLE head of another class, that class's recorded
    ``head_dim``, ``num_key_value_heads``, ``max_position_embeddings`` and ``sliding_window``."""
    model_type = str(f.get("model_type") or "")
    if model_type in _DEFAULTS:
        return _DEFAULTS[model_type]
    fields = _head_fields().get(model_type)
    if fields is None:
        return {}
    keys = ("head_dim", "num_key_value_heads", "max_position_embeddings", "sliding_window")
    return {k: fields[k] for k in keys if isinstance(fields[k], int)}


def _qwen_layer_types(f: ConfigFields, n: int) -> tuple[list[str], int | None]:
    """``Qwen2Config``/``Qwen3Config``: the window is kept only with ``use_sliding_window``;
    absent ``layer_types`` are sliding from ``max_window_layers`` on."""
    sw = window(f) if f.boolean("use_sliding_window") else None
    types = layer_types(f, n)
    if types is None:
        first = f.integer("max_window_layers", minimum=0)
        types = [SLIDING if sw is not None and i >= first else "full_attention" for i in range(n)]
    return types, sw


def _dflash_kinds(f: ConfigFields, types: list[str] | None, sw: int | None, n: int) -> tuple[LayerKind, ...]:
    """``qwen3_dflash.py``: ``dflash_config.use_swa`` forces every layer sliding (unless the
    types already name some); a sliding layer needs a window. The drafter drafts in parallel,
    which needs a mask token (``llm_base_proposer._init_parallel_drafting_params``)."""
    dflash = f.get("dflash_config") or {}
    if not isinstance(dflash, dict):
        raise InputError(f.source, f.where("dflash_config"), "must be an object")
    use_swa = bool(dflash.get("use_swa", False))
    num_sliding = sum(t == SLIDING for t in types) if types is not None else 0
    # mixed sliding/full layers are served: vLLM then picks the V2 model runner itself
    if types is None or (use_swa and num_sliding == 0):
        sliding = [use_swa] * n
    else:
        sliding = [t == SLIDING for t in types]
    if any(sliding) and dflash.get("swa_window_size", sw) is None:
        raise InputError(
            f.source,
            f.where("sliding_window"),
            "DFlash sliding attention requires a window size configured in dflash_config.swa_window_size "
            "or the top-level sliding_window (a qwen3 config keeps sliding_window only with "
            '"use_sliding_window": true)',
        )
    if not (
        "mask_token_id" in dflash
        or f.get("mask_token_id") is not None
        or any(k in f.data for k in ("dspark_noise_token_id", "pard_token", "ptd_token_id"))
    ):
        raise InputError(
            f.source,
            f.where("dflash_config"),
            "For parallel drafting, the draft model config must have `dflash_config.mask_token_id`, "
            "`mask_token_id`, `dspark_noise_token_id`, `pard_token`, or `ptd_token_id` specified in its "
            "config.json (vLLM's DFlash proposer)",
        )
    return tuple(LayerKind.SLIDING if s else LayerKind.FULL for s in sliding)


def read(f: ConfigFields, architecture: str) -> ModelGeometry:
    n = num_layers(f)
    heads = attention_heads(f)
    if architecture in QWEN2_MODELS:
        # qwen2.py's Qwen2Attention: head_dim = hidden_size // num_attention_heads, whatever the
        # config's head_dim says
        heads = (heads[0], heads[1], f.integer("hidden_size") // heads[0])
    model_type = str(f.get("model_type") or "")
    types: list[str] | None
    if model_type in ("qwen2", "qwen3", "mimo"):
        types, sw = _qwen_layer_types(f, n)
    else:
        types, sw = layer_types(f, n), window(f)
    if architecture == "DFlashDraftModel":
        dflash = f.get("dflash_config") or {}
        if isinstance(dflash, dict) and dflash.get("swa_window_size") is not None:
            sw = int(dflash["swa_window_size"])
        kinds = _dflash_kinds(f, types, sw, n)
        model = geometry(f, architecture, "llama", kinds, heads=heads, sliding_window=sw)
        if isinstance(dflash, dict) and "mask_token_id" in dflash and dflash["mask_token_id"] is None:
            # the V2 model runner's DFlash speculator takes dflash_config's key first, as int()
            # (v1/worker/gpu/spec_decode/utils.py); the V1 proposer serves it
            model = replace(
                model,
                v2_runner_refusal=(
                    f"{f.where('dflash_config')}.mask_token_id is null: vLLM's V2 model runner fails building the "
                    "DFlash speculator (TypeError: int() argument must be a string, a bytes-like object or a real "
                    "number, not 'NoneType')"
                ),
            )
        return model
    if architecture in EAGLE_HEADS:
        # the head's layers take their window from its own layer_types, indexed from the head's
        # first layer (llama.py: layer_idx - target_layer_count; qwen3_eagle3.py: layer_idx)
        kinds = tuple(
            LayerKind.SLIDING if types is not None and types[i] == SLIDING and sw is not None else LayerKind.FULL
            for i in range(n)
        )
        return geometry(f, architecture, "llama", kinds, heads=heads, sliding_window=sw)
    # Qwen3Model is qwen2.py's Qwen2Model: it refuses a partial window while it is built (verify_layers)
    partial = partial_sliding_window(f, n, types) if architecture in (*QWEN2_MODELS, "Qwen3ForCausalLM") else None
    model_window = sw if types is None or all(t == SLIDING for t in types) else None
    per_layer = architecture not in (*QWEN2_MODELS, "Qwen3ForCausalLM")
    kinds = tuple(
        LayerKind.SLIDING
        if (per_layer and types is not None and types[i] == SLIDING and sw is not None) or model_window is not None
        else LayerKind.FULL
        for i in range(n)
    )
    return geometry(f, architecture, "llama", kinds, heads=heads, sliding_window=sw, family_extra=partial)


def verify_layers(model: ModelGeometry, args: EngineArgs) -> None:
    """What ``qwen2.py``'s ``Qwen2Model`` asserts while the model (or a wrapper's language model) is
    built, after vLLM's parallel and model config checks: a partial sliding window
    (:func:`~dryboot.vllm.models.common.check_partial_sliding_window`).

    :raises InputError: naming ``max_window_layers`` and vLLM's AssertionError."""
    check_partial_sliding_window(model)
