"""DeepSeek-V4 (``DeepseekV4ForCausalLM``; vLLM 0.28.0's ``vllm/models/deepseek_v4/``, config
class ``transformers_utils/configs/deepseek_v4.py``).

Each backbone layer ``i`` is a ``DeepseekV4Attention`` of compress ratio
``max(1, compress_ratios[i])`` (1, 4 or 128; the MTP layer 1). Every layer keeps a sliding-window
cache of ``sliding_window`` tokens; a layer of ratio 4 or 128 also keeps its compressed MLA cache
and its compressor's state cache, and a ratio-4 layer its indexer's key cache and the indexer
compressor's state cache. The cache specs, their grouping and the packed plan are in
:mod:`dryboot.vllm.kv_cache_utils.packed`.
"""

from __future__ import annotations

from typing import Any

from dryboot.errors import InputError, missing_field
from dryboot.vllm.config.hf import ConfigFields, DeepseekV4Caches, LayerKind, ModelGeometry, extra_of
from dryboot.vllm.engine_args import EngineArgs
from dryboot.vllm.models.common import geometry, num_layers

#: releases whose engine config refuses the ``extract_hidden_states`` drafter on a DeepSeek-V4
#: config (``SpeculativeConfig``, before anything else is checked): the draft config re-validates
#: the target's ``mlp_layer_types`` (transformers' ``DeepseekV4Config`` fills it with ``hash_moe`` /
#: ``moe``) against ``('sparse', 'dense')``
HIDDEN_STATES_REFUSED = frozenset({"0.33.0"})
#: compress ratios vLLM 0.28.0 builds (``DeepseekCompressor`` asserts 4 or 128; 0 and 1: none)
RATIOS = frozenset({1, 4, 128})


def defaults(f: ConfigFields) -> dict[str, Any]:
    """``DeepseekV4Config``'s one cache-relevant default."""
    return {"max_position_embeddings": 1048576}


def verify(model: ModelGeometry, tensor_parallel_size: int) -> None:
    """:raises InputError: query heads that do not split over the ranks (vLLM's
    ``DeepseekV4Attention`` asserts it) or output groups that do not (not verified)."""
    caches = extra_of(model, DeepseekV4Caches)
    assert caches is not None
    tp = tensor_parallel_size
    if caches.num_attention_heads % tp:
        raise InputError(
            "--tensor-parallel-size",
            str(tp),
            f"{model.source}: num_attention_heads {caches.num_attention_heads} is not divisible by it "
            "(vLLM's DeepseekV4Attention asserts n_heads % tp_size == 0)",
        )
    if caches.o_groups % tp:
        raise InputError(
            "--tensor-parallel-size",
            str(tp),
            f"{model.source}: o_groups {caches.o_groups} is not divisible by it: not verified against vLLM",
        )


def read(f: ConfigFields, architecture: str) -> ModelGeometry:
    """:raises InputError: a missing field the cache reads, a ``compress_ratios`` list shorter
    than the layers, or a ratio other than 0, 1, 4 and 128 (vLLM's compressor asserts)."""
    n = num_layers(f)
    raw = f.get("compress_ratios")
    if not isinstance(raw, list) or len(raw) < n or not all(isinstance(r, int) for r in raw[:n]):
        raise InputError(
            f.source,
            f.where("compress_ratios"),
            f"needs an integer per layer ({n}): vLLM's DeepseekV4Attention reads compress_ratios[layer]",
        )
    ratios = tuple(max(1, r) for r in raw[:n])
    bad = sorted({r for r in ratios if r not in RATIOS})
    if bad:
        raise InputError(
            f.source,
            f.where("compress_ratios"),
            f"{bad}: vLLM's DeepseekCompressor builds only ratios 4 and 128 (AssertionError)",
        )
    if all(r == 1 for r in ratios):
        raise InputError(
            f.source,
            f.where("compress_ratios"),
            "no compressed layer: vLLM then plans the sliding-window caches alone on its uniform-spec path, which is "
            "not modelled for DeepSeek-V4",
        )
    for key in ("head_dim", "index_head_dim", "sliding_window", "num_attention_heads", "o_groups"):
        if f.get(key) is None:
            raise InputError(f.source, f.where(key), missing_field("vLLM's DeepseekV4 layers read it"))
    head_dim = f.integer("head_dim")
    if head_dim != 512:
        raise InputError(
            f.source,
            f.where("head_dim"),
            f"{head_dim}: the fp8_ds_mla row (584 bytes per token) is modelled for the 512-wide latent of "
            "DeepSeek-V4's checkpoints only",
        )
    heads = f.integer("num_attention_heads")
    if f.integer("index_head_dim") != 128:
        raise InputError(
            f.source,
            f.where("index_head_dim"),
            f"{f.get('index_head_dim')}: the indexer is modelled at the 128-wide head of DeepSeek-V4's checkpoints "
            "only (vLLM 0.28.0 refuses 64: Unsupported head_dim for fused quant+cache)",
        )
    caches = DeepseekV4Caches(
        compress_ratios=ratios,
        head_dim=head_dim,
        index_head_dim=f.integer("index_head_dim"),
        sliding_window=f.integer("sliding_window"),
        num_attention_heads=heads,
        o_groups=f.integer("o_groups"),
        vision_n_layers=f.integer("vision_n_layers", default=0, minimum=0),
    )
    return geometry(
        f,
        architecture,
        "deepseek_v4",
        (LayerKind.DSV4_SWA,) * n,
        heads=(heads, 1, head_dim),
        head_dim_v=0,
        num_mtp_layers=f.integer("num_nextn_predict_layers", default=0, minimum=0),
        mtp_kind=LayerKind.DSV4_SWA,
        family_extra=caches,
    )


def engine_args(model: ModelGeometry, args: EngineArgs) -> EngineArgs:
    """DeepSeek-V4's layers choose their attention class themselves (``nvidia/model.py``
    ``_select_dsv4_attn_cls``): FlashMLA's, with the fp8_ds_mla cache, for any other backend name
    on every CUDA GPU but SM 12.x (SM 8.0 and 9.0 checked against vLLM 0.28.0's engine start);
    they store any fp8 KV cache as fp8_ds_mla (``_resolve_dsv4_kv_cache_dtype``).

    :raises InputError: FlashInfer's DeepSeek-V4 attention (named, or SM 12.x's default), which
        is not modelled; the hidden-state drafter on :data:`HIDDEN_STATES_REFUSED` (vLLM's
        StrictDataclassClassValidationError).
    """
    if extra_of(model, DeepseekV4Caches) is None:
        return args
    if args.speculative_method == "extract_hidden_states" and args.vllm_version in HIDDEN_STATES_REFUSED:
        raise InputError(
            "--speculative-config",
            args.speculative_method,
            f"{model.architecture}: vLLM {args.vllm_version} refuses the draft config "
            "(StrictDataclassClassValidationError: Class validation error for validator 'validate_layer_type': "
            "the target's mlp_layer_types, hash_moe / moe, are not in ('sparse', 'dense'))",
        )
    if args.device.capability[0] == 12:
        raise InputError(
            "--gpu",
            args.device.name,
            f"{model.source}: on SM 12.x vLLM gives DeepSeek-V4 FlashInfer's SM120 attention and its cache, "
            "which are not modelled (FlashMLA's sparse layers, every other CUDA GPU's, are)",
        )
    if args.attention_backend is not None:
        if args.attention_backend.startswith("FLASHINFER_MLA_SPARSE"):
            raise InputError(
                "--attention-backend",
                args.attention_backend,
                f"{model.architecture}: FlashInfer's DeepSeek-V4 attention (FLASHINFER_MLA_SPARSE_DSV4; the other "
                "FLASHINFER_MLA_SPARSE names are refused by vLLM) and its cache are not modelled",
            )
        args = args.evolve(attention_backend=None)
    if args.kv_cache_dtype == "fp8_ds_mla":
        args = args.evolve(kv_cache_dtype="fp8")
    return args


def kv_cache_layout(model: ModelGeometry) -> str:
    """DeepSeek-V4's caches take the packed groups (:mod:`dryboot.vllm.kv_cache_utils.packed`)."""
    return "packed" if extra_of(model, DeepseekV4Caches) is not None else "grouped"


def backend_assumption(model: ModelGeometry) -> str | None:
    """``vllm/models/deepseek_v4/nvidia/model.py`` ``_select_dsv4_attn_cls``: FlashMLA's layers on
    every CUDA GPU but SM 12.x."""
    if extra_of(model, DeepseekV4Caches) is None:
        return None
    return (
        "DeepSeek-V4's layers choose their own attention (FlashMLA with the fp8_ds_mla cache on every CUDA GPU "
        "but SM 12.x), whatever --attention-backend names; SM 12.x's FlashInfer attention is not modelled"
    )
