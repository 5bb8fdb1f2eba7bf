"""Beam (vLLM 0.33.0's ``vllm/models/beam/nvidia/model.py``, ``BeamForCausalLM``, on vLLM's own
``BeamConfig``): per layer four RMSNorms ``[H]`` (input, post-attention, pre- and
post-feed-forward), the attention's QKV and output gate (one ``qkv_gate_proj`` ``[(2 Q + 2 KV) /
TP, H]``, or ``qkv_proj`` + ``output_gate_proj``: the same bytes), ``o_proj``, per-head q/k norms
``[head_dim]``, a gate bias ``[heads / TP]``; a ``dense`` layer of ``mlp_layer_types`` a gated MLP
of ``intermediate_size``, a ``sparse`` one a ``FusedMoE`` block of ``num_experts`` experts of
``moe_intermediate_size`` with a float32 router ``[E, H]`` and float32 ``e_score_correction_bias``
``[E]`` (no shared expert). One float32 rotary table (``get_rope(dtype=torch.float32)``,
``[max_position_embeddings, head_dim]``) where the stage holds a ``sliding_attention`` layer (the
full-attention layers are NoPE). Embedding, final norm and head on their stages; the head never
tied (vLLM raises ``NotImplementedError``).

Refused by name: ``BeamAllReduceWorkspace`` (``allreduce.py``), which at TP 2 / 4 / 8 with a
bfloat16 model of a hidden size multiple of 1024 in [1024, 8192] maps FlashInfer multicast Lamport
buffers (``McastGPUBuffer``, outside torch's allocator, sized by ``max_num_batched_tokens``) where
the GPUs support NVLink multicast, which dryboot cannot see.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dryboot.errors import InputError
from dryboot.vllm.model_executor.model_loader import weights as W
from dryboot.vllm.model_executor.models.compose import Family, Layout, WalkArgs, decoder

#: ``BeamConfig``'s defaults of the fields the layout reads (``transformers_utils/configs/beam.py``)
_DEFAULTS: dict[str, Any] = {
    "vocab_size": 151936,
    "hidden_size": 2048,
    "intermediate_size": 6144,
    "num_hidden_layers": 24,
    "num_attention_heads": 32,
    "num_key_value_heads": 4,
    "max_position_embeddings": 32768,
    "tie_word_embeddings": False,
    "moe_intermediate_size": 768,
    "num_experts": 128,
}


def _prepare(config: Mapping[str, Any]) -> Mapping[str, Any]:
    """``BeamConfig``: its defaults; every layer ``sliding_attention`` and ``sparse`` when
    ``layer_types`` / ``mlp_layer_types`` are absent.

    :raises InputError: a per-layer list that is not one valid entry per layer (``BeamConfig``'s
        own refusal)."""
    out = {**_DEFAULTS, **{k: v for k, v in config.items() if v is not None}}
    n = W._int(out, "num_hidden_layers")
    for key, default, allowed in (
        ("layer_types", "sliding_attention", ("full_attention", "sliding_attention")),
        ("mlp_layer_types", "sparse", ("dense", "sparse")),
    ):
        kinds = out.setdefault(key, [default] * n)
        if not isinstance(kinds, list) or len(kinds) != n or any(k not in allowed for k in kinds):
            raise InputError("config.json", key, f"must list one of {' / '.join(allowed)} per layer ({n})")
    return out


def _sparse(config: Mapping[str, Any], li: int) -> bool:
    return bool(config["mlp_layer_types"][li] == "sparse")


def _sliding(config: Mapping[str, Any], li: int) -> bool:
    return bool(config["layer_types"][li] == "sliding_attention")


def _every_layer(config: Mapping[str, Any], li: int) -> bool:
    return True


_LAYOUT = decoder(
    Layout(
        qk_norm="head",
        norms=4,
        output_gate=True,
        head_vector=_every_layer,
        moe=_sparse,
        router_fp32=True,
        score_bias=True,
        uses_rope=_sliding,
        rope_bytes=4,
    ),
    _prepare,
)


def _dtype_name(config: Mapping[str, Any], dtype: str) -> str:
    """The model dtype's name as :func:`weights.model_dtype_bytes` resolves it (float32
    checkpoints under ``auto`` served as bfloat16)."""
    name = dtype if dtype != "auto" else str(config.get("torch_dtype") or config.get("dtype") or "bfloat16")
    name = name.replace("torch.", "")
    return "bfloat16" if name == "float32" and dtype == "auto" else name


def allreduce_workspace_refusal(config: Mapping[str, Any], tp: int, dtype: str = "auto") -> str | None:
    """Why ``BeamAllReduceWorkspace.create`` may map memory dryboot cannot size at ``tp`` under
    ``--dtype`` ``dtype`` (module docstring), else ``None``."""
    h = W._int(config, "hidden_size")
    if tp not in (2, 4, 8) or _dtype_name(config, dtype) != "bfloat16":
        return None
    if h % 1024 or not 1024 <= h <= 8192:
        return None
    return (
        f"vLLM's BeamAllReduceWorkspace (vllm/models/beam/nvidia/allreduce.py) maps FlashInfer multicast "
        f"Lamport buffers outside torch's allocator at TP {tp} (hidden size {h}, bfloat16) where the GPUs "
        "support NVLink multicast: not sized"
    )


def _walk(config: Mapping[str, Any], par: W.Parallel, args: WalkArgs) -> W.RankWeights:
    """:data:`_LAYOUT`, after vLLM's and dryboot's refusals.

    :raises InputError: a tied head (vLLM's ``NotImplementedError``), the all-reduce workspace
        (:func:`allreduce_workspace_refusal`)."""
    prepared = _prepare(config)
    if prepared.get("tie_word_embeddings"):
        raise InputError(
            "config.json", "tie_word_embeddings", "vLLM refuses it: Beam requires tie_word_embeddings=False"
        )
    if (why := allreduce_workspace_refusal(prepared, par.tp, args.dtype)) is not None:
        raise InputError("--tensor-parallel-size", None, why)
    return _LAYOUT.walk(config, par, args)


FAMILIES: dict[str, Family] = {"BeamForCausalLM": Family(_walk)}
