"""DeepSeek-V4 (``DeepseekV4ForCausalLM``; vLLM 0.28.0's ``vllm/models/deepseek_v4/``, config
class ``transformers_utils/configs/deepseek_v4.py``) and its multimodal wrapper
(``DeepseekV4ForConditionalGeneration``, vLLM 0.30.0+: ``common/vl_model.py``).

Each backbone layer ``i`` is a ``DeepseekV4Attention`` of compress ratio
``max(1, compress_ratios[i])`` (1, 4 or 128; the MTP layer 1). Every layer keeps a sliding-window
cache of ``sliding_window`` tokens; a layer of ratio 4 or 128 also keeps its compressed MLA cache
and its compressor's state cache, and a ratio-4 layer its indexer's key cache and the indexer
compressor's state cache. The cache specs, their grouping and the packed plan are in
:mod:`dryboot.vllm.kv_cache_utils.packed`.

The wrapper builds ``DeepseekV4ForCausalLM`` on its own config (``init_vllm_registered_model``,
``architectures=["DeepseekV4ForCausalLM"]``) beside a ``DeepseekV4ViT`` tower and aligner, built
only where ``vision_n_layers > 0`` and images are allowed; releases of :data:`WRAPPER_RELEASES`
also serve a ``DeepseekV4ForCausalLM`` config with ``vision_n_layers > 0`` as the wrapper
(``DeepseekV4ModelArchConfigConvertor``). Its KV cache is the text model's: the image spans widen
the sparse sliding window inside the kernels only (``sparse_swa.py``'s prefill index rows), no
spec, block or group changes (recorded on 0.30.0-0.33.0, ``tests/fidelity/test_deepseek_v4_vl.py``).
What it adds at engine start is :func:`check_wrapper`'s.
"""

from __future__ import annotations

from collections.abc import Mapping
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
#: releases whose registry has ``DeepseekV4ForConditionalGeneration`` and that serve a
#: ``DeepseekV4ForCausalLM`` config with ``vision_n_layers > 0`` as it
#: (``model_arch_config_convertor.py`` ``DeepseekV4ModelArchConfigConvertor``)
WRAPPER_RELEASES = frozenset({"0.30.0", "0.31.0", "0.32.0", "0.33.0"})
#: the wrapper
WRAPPER = "DeepseekV4ForConditionalGeneration"
#: the config keys the wrapper's tower, aligner and processor read, in the order vLLM reads them
#: (``common/vision.py`` ``DeepseekV4ViT`` / ``DeepseekV4Aligner`` while the model is built, then
#: ``mm_preprocess.py`` for the scheduler's encoder budget and the encoder's profile)
VISION_KEYS = (
    "vision_dim",
    "vision_n_heads",
    "vision_rope_theta",
    "vision_patch_size",
    "vision_inter_dim",
    "vision_downsample_ratio",
    "vision_max_n_token",
    "vision_min_pixels",
    "vision_max_wh_ratio",
)
#: releases that read a ``deepseek_v4`` config with transformers' ``DeepseekV4Config`` (vLLM's own
#: class, which defaults :data:`VISION_KEYS`, is gone): a key the file lacks is an AttributeError
VISION_KEYS_REQUIRED = frozenset({"0.33.0"})
#: ``DeepseekV4VLProcessingInfo.get_mm_max_tokens_per_item``: ``vision_max_n_token`` plus
#: ``COMPRESS_PAD_TO - 1`` (``common/mm_preprocess.py``, ``COMPRESS_PAD_TO`` = 4)
IMAGE_TOKEN_MARGIN = 3
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
            f"{model.source}: o_groups {caches.o_groups} is not divisible by it: such a split is not verified",
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
        vision_n_heads=f.integer("vision_n_heads", default=16, minimum=1),
        vision_widths=(
            ("vision_dim", f.integer("vision_dim", default=1024, minimum=1)),
            ("vision_inter_dim", f.integer("vision_inter_dim", default=2816, minimum=1)),
            ("hidden_size", f.integer("hidden_size", minimum=1)),
        ),
        vision_max_n_token=f.integer("vision_max_n_token", default=384, minimum=1),
        vision_keys_absent=tuple(k for k in VISION_KEYS if f.get(k) is None),
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


def forward_config(config: Mapping[str, Any]) -> Mapping[str, Any]:
    """The ``forward_config`` hook (``registry.Family``): a config with a tower
    (``vision_n_layers`` above 0, its ViT's keys flat on the top level) as one whose image encoder
    the profile run encodes first (a ``deepseek_v4_vision`` ``image_encoder_config``, images only:
    ``get_supported_mm_limits``), which the budget does not bound; ``config`` itself otherwise."""
    layers = config.get("vision_n_layers")
    if isinstance(layers, int) and not isinstance(layers, bool) and layers > 0:
        return {**config, "image_encoder_config": {"model_type": "deepseek_v4_vision"}}
    return config


def served_architecture(model: ModelGeometry, version: str) -> str:
    """The architecture vLLM ``version`` serves ``model`` as (what its ``Resolved architecture``
    line names): :data:`WRAPPER` for a ``DeepseekV4ForCausalLM`` config with ``vision_n_layers > 0``
    on :data:`WRAPPER_RELEASES` (``DeepseekV4ModelArchConfigConvertor``), else the declared one."""
    caches = extra_of(model, DeepseekV4Caches)
    if (
        model.architecture == "DeepseekV4ForCausalLM"
        and caches is not None
        and caches.vision_n_layers > 0
        and version in WRAPPER_RELEASES
    ):
        return WRAPPER
    return model.architecture


def images_allowed(args: EngineArgs) -> bool:
    """Whether the engine takes images (``MultiModalConfig.get_limit_per_prompt("image") > 0``):
    not with ``--language-model-only`` nor an image limit of 0 in ``--limit-mm-per-prompt``."""
    if args.language_model_only:
        return False
    return dict(args.limit_mm_per_prompt or ()).get("image", 1) != 0


def check_wrapper(caches: DeepseekV4Caches, args: EngineArgs, architecture: str) -> None:
    """What the wrapper's engine start refuses beyond the text model's, where it builds its tower
    (``vision_n_layers > 0`` and images allowed: :func:`images_allowed`).

    * On :data:`VISION_KEYS_REQUIRED` the config class defines none of :data:`VISION_KEYS`: the
      tower reads them from the file (AttributeError for one it lacks).
    * Chunked multimodal input is forced off (``CudaPlatform.check_and_update_config``: an
      mm-prefix model), so ``compute_mm_encoder_budget`` refuses a batch of fewer tokens than one
      image's (``vision_max_n_token + 3``): ValueError when the scheduler is built.
    * ``DeepseekV4VisionAttention`` / ``DeepseekV4VisionMLP`` / ``DeepseekV4Aligner`` split
      their projections over the tensor-parallel ranks when TP divides ``vision_n_heads``
      (``is_vit_use_data_parallel``; else every rank keeps them whole): ``vision_dim``,
      ``vision_inter_dim`` and ``hidden_size`` must then divide too (the linear layers assert).

    :raises InputError: each refusal, in vLLM's words."""
    if caches.vision_n_layers == 0 or not images_allowed(args):
        return
    if args.vllm_version in VISION_KEYS_REQUIRED and caches.vision_keys_absent:
        key = caches.vision_keys_absent[0]
        raise InputError(
            "config.json",
            key,
            f"{architecture}: missing: vLLM {args.vllm_version} reads deepseek_v4 configs with transformers' "
            f"DeepseekV4Config, which does not define the vision tower's keys (AttributeError: 'DeepseekV4Config' "
            f"object has no attribute '{key}')",
        )
    per_image = caches.vision_max_n_token + IMAGE_TOKEN_MARGIN
    batch = args.resolved_max_num_batched_tokens()
    if per_image > batch:
        raise InputError(
            "--max-num-batched-tokens",
            str(batch),
            f"{architecture}: vLLM {args.vllm_version} refuses it when the scheduler is built (ValueError: Chunked MM "
            f"input disabled but max_tokens_per_mm_item ({per_image}) is larger than max_num_batched_tokens ({batch}))",
        )
    tp = args.tensor_parallel_size
    if caches.vision_n_heads % tp:
        return
    for key, width in caches.vision_widths:
        if width % tp:
            raise InputError(
                "--tensor-parallel-size",
                str(tp),
                f"{architecture}: {key} {width} is not divisible by it: vLLM's DeepseekV4ViT / DeepseekV4Aligner "
                f"split it over the ranks with the tower's {caches.vision_n_heads} heads (AssertionError)",
            )


def engine_args(model: ModelGeometry, args: EngineArgs) -> EngineArgs:
    """DeepSeek-V4's layers choose their attention class themselves (``nvidia/model.py``
    ``_select_dsv4_attn_cls``): FlashMLA's, with the fp8_ds_mla cache, for any other backend name
    on every CUDA GPU but SM 12.x (SM 8.0 and 9.0 checked against vLLM 0.28.0's engine start);
    they store any fp8 KV cache as fp8_ds_mla (``_resolve_dsv4_kv_cache_dtype``).

    :raises InputError: what :func:`check_wrapper` refuses (the wrapper, or a config with a vision
        tower on :data:`WRAPPER_RELEASES`); FlashInfer's DeepSeek-V4 attention (named, or SM 12.x's
        default), which is not modelled; the hidden-state drafter on :data:`HIDDEN_STATES_REFUSED` (vLLM's
        StrictDataclassClassValidationError).
    """
    caches = extra_of(model, DeepseekV4Caches)
    if caches is None:
        return args
    if model.architecture == WRAPPER or args.vllm_version in WRAPPER_RELEASES:
        check_wrapper(caches, args, WRAPPER)
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
