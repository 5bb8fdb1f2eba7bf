"""DeepSeek-V2/V3: multi-head latent attention (one latent head per layer).

Mirrors ``vllm/model_executor/models/deepseek_v2.py`` (MLA layers: ``kv_lora_rank +
qk_rope_head_dim`` per token, no V part, not split by TP) and ``deepseek_mtp.py``
(``num_nextn_predict_layers`` MLA layers under ``"method": "mtp"``), with transformers'
``DeepseekV2Config``/``DeepseekV3Config`` defaults.

On the GPU dryboot assumes (SM90: H100/H200), the only MLA prefill backend is FlashAttention,
which serves (qk_nope, qk_rope, v) head dims (128, 64, 128), (192, 64, 256) and (64, 64, 128)
(``v1/attention/backends/mla/prefill/flash_attn.py``, ``selector.py``); other dimensions are
refused, as vLLM refuses them while building the model.
"""

from __future__ import annotations

from typing import Any

from dryboot.errors import InputError
from dryboot.vllm.config.hf import ConfigFields, LayerKind, ModelGeometry
from dryboot.vllm.models.common import geometry, num_layers

_DEFAULTS: dict[str, dict[str, Any]] = {
    "deepseek_v2": {"max_position_embeddings": 2048},
    "deepseek_v3": {"max_position_embeddings": 4096},
}
_MLA = {"kv_lora_rank": 512, "qk_rope_head_dim": 64, "qk_nope_head_dim": 128, "v_head_dim": 128}

#: (qk_nope_head_dim, qk_rope_head_dim, v_head_dim) the SM90 MLA prefill backend serves.
SM90_PREFILL_DIMS = frozenset({(128, 64, 128), (192, 64, 256), (64, 64, 128)})


def defaults(f: ConfigFields) -> dict[str, Any]:
    return {**_MLA, **_DEFAULTS.get(str(f.get("model_type") or ""), {})}


def check_sm90_mla_dims(f: ConfigFields, dims: tuple[int, int, int]) -> None:
    """:raises InputError: (qk_nope, qk_rope, v) head dims no SM90 MLA prefill backend serves."""
    if dims not in SM90_PREFILL_DIMS:
        raise InputError(
            f.source,
            f.where("qk_rope_head_dim"),
            "No valid MLA prefill backend found on SM90 for (qk_nope_head_dim, qk_rope_head_dim, v_head_dim) = "
            f"{dims}: FlashAttention serves {sorted(SM90_PREFILL_DIMS)}",
        )


def read(f: ConfigFields, architecture: str) -> ModelGeometry:
    n = num_layers(f)
    heads = f.integer("num_attention_heads")
    rope = f.integer("qk_rope_head_dim", minimum=0)
    dims = (f.integer("qk_nope_head_dim", minimum=0), rope, f.integer("v_head_dim"))
    check_sm90_mla_dims(f, dims)
    latent = f.integer("kv_lora_rank") + rope
    mtp = f.integer("num_nextn_predict_layers", minimum=0) if f.has("num_nextn_predict_layers") else 0
    return geometry(
        f,
        architecture,
        "deepseek",
        (LayerKind.MLA,) * n,
        heads=(heads, 1, latent),
        head_dim_v=0,
        mla_dims=dims,
        num_mtp_layers=mtp,
        mtp_kind=LayerKind.MLA,
    )
