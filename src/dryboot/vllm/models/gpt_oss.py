"""gpt-oss: sliding-window attention on even layers, full attention on odd ones.

Mirrors ``vllm/model_executor/models/gpt_oss.py``, which gives each even layer the window
(``layer_idx % 2 == 0``), whatever ``layer_types`` says; an odd layer takes the model-level
window, which exists only when ``layer_types`` are all sliding. Defaults from transformers'
``GptOssConfig``.
"""

from __future__ import annotations

from typing import Any

from dryboot.errors import InputError
from dryboot.vllm.config.hf import ConfigFields, LayerKind, ModelGeometry
from dryboot.vllm.models.common import attention_heads, geometry, layer_types, num_layers, window

_DEFAULTS = {
    "num_attention_heads": 64,
    "num_key_value_heads": 8,
    "head_dim": 64,
    "sliding_window": 128,
    "max_position_embeddings": 131072,
    "num_local_experts": 128,
}


def defaults(f: ConfigFields) -> dict[str, Any]:
    return dict(_DEFAULTS)


def read(f: ConfigFields, architecture: str) -> ModelGeometry:
    n = num_layers(f)
    types = layer_types(f, n)
    # GptOssConfig fills absent layer_types alternating; the model-level window
    # (CacheConfig.sliding_window) is set only when they are all sliding, and odd layers
    # (no window of their own in gpt_oss.py) then take it.
    model_window = types is not None and all(t == "sliding_attention" for t in types)
    kinds = tuple(LayerKind.SLIDING if i % 2 == 0 or model_window else LayerKind.FULL for i in range(n))
    return geometry(
        f, architecture, "gpt_oss", kinds, heads=attention_heads(f), sliding_window=window(f), attention_sinks=True
    )


def verify(model: ModelGeometry, tensor_parallel_size: int) -> None:
    """gpt-oss splits its KV heads across ranks and never replicates them.

    :raises InputError: fewer KV heads than tensor-parallel ranks.
    """
    if model.num_kv_heads < tensor_parallel_size:
        raise InputError(
            "--tensor-parallel-size",
            str(tensor_parallel_size),
            f"{model.source}: gpt-oss splits its {model.num_kv_heads} KV heads across ranks without "
            f"replicating them, so {tensor_parallel_size} ranks leave some with none (vLLM's GptOssAttention)",
        )
