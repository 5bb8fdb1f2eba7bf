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
from dataclasses import dataclass
from typing import Any

from dryboot.errors import InputError, missing_field
from dryboot.vllm.backends import AttentionBackend
from dryboot.vllm.config.hf import (
    ConfigFields,
    DeepseekV4Caches,
    FamilyExtra,
    LayerKind,
    ModelGeometry,
    extra_of,
)
from dryboot.vllm.config.resolve import EngineConfig, uses_v2_model_runner
from dryboot.vllm.distributed import pp_stage_ranges
from dryboot.vllm.engine_args import EngineArgs
from dryboot.vllm.kv_cache_interface import AttentionSpec
from dryboot.vllm.kv_cache_utils.packed import dsv4_spec
from dryboot.vllm.kv_cache_utils.repeat_packed import POLICY, PackedLayers, group_specs
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
    """``DeepseekV4Config``'s one cache-relevant default (``DeepseekV41Config`` defines none: the
    text config's keys are set as given)."""
    if f.root.get("model_type") == "deepseek_v41":
        return {}
    return {"max_position_embeddings": 1048576}


def verify(model: ModelGeometry, tensor_parallel_size: int) -> None:
    """:raises InputError: query heads that do not split over the ranks (vLLM's
    ``DeepseekV4Attention`` asserts it) or output groups that do not (not verified)."""
    caches: DeepseekV4Caches | DeepseekV41Caches | None = extra_of(model, DeepseekV4Caches) or extra_of(
        model, DeepseekV41Caches
    )
    assert caches is not None
    tp = tensor_parallel_size
    if caches.num_attention_heads % tp:
        raise InputError(
            "--tensor-parallel-size",
            str(tp),
            f"{model.source}: num_attention_heads {caches.num_attention_heads} is not divisible by it "
            "(vLLM's DeepseekV4Attention asserts n_heads % tp_size == 0)",
        )
    if caches.o_groups % tp and isinstance(caches, DeepseekV4Caches):
        # DeepSeek-V4.1 at TP 8 on 4 groups: served, its caches unchanged (recorded on 0.33.0)
        raise InputError(
            "--tensor-parallel-size",
            str(tp),
            f"{model.source}: o_groups {caches.o_groups} is not divisible by it: such a split is not verified",
        )


def read(f: ConfigFields, architecture: str) -> ModelGeometry:
    """:raises InputError: a missing field the cache reads, a ``compress_ratios`` list shorter
    than the layers, or a ratio other than 0, 1, 4 and 128 (vLLM's compressor asserts); DeepSeek-V4.1
    (:data:`V41`): what :func:`read_v41` refuses."""
    if architecture == V41:
        return read_v41(f, architecture)
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
    ``_select_dsv4_attn_cls``, whatever other backend is named): FlashMLA's on every CUDA GPU but
    SM 12.x, FlashInfer's SM120 layers there (``packed.attention_name``); both store any fp8 KV cache as
    the same fp8_ds_mla row (``_resolve_dsv4_kv_cache_dtype``), so the caches do not depend on the GPU
    (checked against every release's engine start, ``tests/fidelity/test_deepseek_v4_gpus.py``).
    ``FLASHINFER_MLA_SPARSE_DSV4`` named on SM 10.x picks FlashInfer's TRT-LLM-gen layers, which store
    the plain row of the KV cache dtype (bfloat16 for ``auto``, on every release) with 512-byte pages.

    :raises InputError: what :func:`check_wrapper` refuses (the wrapper, or a config with a vision
        tower on :data:`WRAPPER_RELEASES`); the hidden-state drafter on :data:`HIDDEN_STATES_REFUSED`
        (vLLM's StrictDataclassClassValidationError); the ``FLASHINFER_MLA_SPARSE`` names vLLM refuses
        (ValueError); ``FLASHINFER_MLA_SPARSE_DSV4`` off SM 10.x and 12.x, or on SM 10.x with
        ``--kv-cache-dtype fp8_ds_mla`` or ``--no-flashinfer-cubin`` (not verified); FlashMLA named on
        SM 12.x (not verified); what :func:`check_attention_heads` refuses.
        ``FLASHINFER_MLA_SPARSE_DSV4`` named on SM 10.x (FlashInfer's TRT-LLM-gen layers, the plain
        row: ``packed.row_layout``) stays in the args.
    """
    v41 = extra_of(model, DeepseekV41Caches)
    if v41 is not None:
        return engine_args_v41(v41, model, args)
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
    sm12 = args.device.capability[0] == 12
    named = args.attention_backend
    if named is not None and named.startswith("FLASHINFER_MLA_SPARSE") and named != SM120_NAMED:
        raise InputError(
            "--attention-backend",
            named,
            f"{model.architecture}: vLLM refuses it (ValueError: {named} is not a DeepSeek V4 attention backend. Use "
            f"{SM120_NAMED} for DeepSeek V4 FlashInfer sparse MLA.)",
        )
    plain = named == SM120_NAMED and not sm12
    if plain and args.device.capability[0] != 10:
        raise InputError(
            "--attention-backend",
            named,
            f"{model.architecture}: FlashInfer's DeepSeek-V4 attention (TRT-LLM-gen, the plain row) off SM 10.x / 12.x "
            "is not verified",
        )
    if plain and not args.flashinfer_cubin:
        raise InputError(
            "--no-flashinfer-cubin",
            None,
            f"{model.architecture}: FlashInfer's DeepSeek-V4 attention named on SM 10.x runs TRT-LLM-gen kernels; "
            "without flashinfer-cubin its engine start is not verified",
        )
    if plain and args.kv_cache_dtype == "fp8_ds_mla":
        raise InputError(
            "--kv-cache-dtype",
            args.kv_cache_dtype,
            f"{model.architecture}: FlashInfer's DeepSeek-V4 attention named on SM 10.x stores the plain row; with "
            "fp8_ds_mla named its specs take FlashMLA's row, which is not verified",
        )
    if sm12 and named in FLASHMLA_NAMED:
        raise InputError(
            "--attention-backend",
            named,
            f"{model.architecture}: FlashMLA's DeepSeek-V4 layers named on SM 12.x (vLLM builds them; its kernels are "
            "built for SM 9.0 / 10.x): not verified",
        )
    check_attention_heads(caches.num_attention_heads, caches.sliding_window, args, flashinfer=plain)
    if named is not None and not plain:
        # the plain row keeps the name: the packed planner reads it (packed.row_layout)
        args = args.evolve(attention_backend=None)
    if args.kv_cache_dtype == "fp8_ds_mla":
        args = args.evolve(kv_cache_dtype="fp8")
    return args


#: the backend name that picks FlashInfer's DeepSeek-V4 attention (``_select_dsv4_attn_cls``: its SM120
#: class on SM 12.x, the TRT-LLM-gen class elsewhere); the other ``FLASHINFER_MLA_SPARSE`` names are refused
SM120_NAMED = "FLASHINFER_MLA_SPARSE_DSV4"
#: the backend names that pick FlashMLA's DeepSeek-V4 attention on any GPU
FLASHMLA_NAMED = frozenset({"FLASHMLA_SPARSE", "FLASHMLA_SPARSE_DSV4"})
#: the query-head counts FlashInfer's sparse MLA kernels take (``flashinfer_sparse.py``
#: ``_SPARSE_MLA_SUPPORTED_Q_HEADS``): the SM120 layers pad a rank's heads up to the next one
SM120_Q_HEADS = (8, 16, 32, 64, 128)
#: releases whose SM120 layers check, as they are built, that the pinned FlashInfer ships a DeepSeek-V4
#: decode specialization for their (padded heads, top-k) pair (``has_flashinfer_sparse_mla_sm120_config``:
#: ``(heads, top_k) in flashinfer.mla._sparse_mla_sm120._DECODE_DSV4_DISPATCH``; top-k is the sliding window
#: without a non-causal drafter), with the top-k values that table pairs with every padded head count;
#: ``None``: FlashInfer 0.7's table is an envelope (1-128 heads, any top-k) that every padded pair is inside.
#: 0.27.1 has no such check (its FlashInfer, 0.6.16.post3, falls back off its table)
SM120_DECODE_TOPKS: Mapping[str, frozenset[int] | None] = {
    "0.28.0": frozenset({128, 512, 1024}),  # FlashInfer 0.6.16.post3
    "0.29.0": frozenset({128, 192, 256, 512, 1024}),  # 0.6.18
    "0.30.0": frozenset({128, 192, 256, 512, 1024}),  # 0.6.18.post1
    "0.31.0": None,  # 0.7.0.post1
    "0.32.0": None,  # 0.7.0.post1
    "0.33.0": None,  # 0.7.2.post1
}


#: FlashInfer's TRT-LLM-gen DeepSeek-V4 attention (``DeepseekV4FlashInferMLASparseBackend``): the layers'
#: backend where :data:`SM120_NAMED` is named on SM 10.x
FLASHINFER_TRTLLM = AttentionBackend(SM120_NAMED, (), False, is_mla=True)


def handed_backend(model: ModelGeometry, args: EngineArgs, requested: str | None) -> AttentionBackend | None:
    """The ``handed_backend`` hook (``registry.Family``): :data:`FLASHINFER_TRTLLM` where
    :data:`SM120_NAMED` is named (``requested``) on SM 10.x for DeepSeek-V4 (``_select_dsv4_attn_cls``:
    ``DeepseekV4FlashInferMLAAttention``, whose plain-row caches the packed planner lays out), FlashInfer's
    V4.1 layers where :data:`V41_FLASHINFER_NAME` is (:func:`engine_args_v41` keeps it), ``None``
    otherwise (:func:`engine_args` and :func:`engine_args_v41` clear every other name they let through)."""
    if requested == SM120_NAMED and args.device.capability[0] == 10 and extra_of(model, DeepseekV4Caches):
        return FLASHINFER_TRTLLM
    if requested == V41_FLASHINFER_NAME and args.device.capability[0] == 10 and extra_of(model, DeepseekV41Caches):
        # DeepSeek-V4.1's FlashInfer layers named on SM 10.x (engine_args_v41 keeps the name for them)
        return v41_attention(args.device.capability, flashinfer=True)
    return None


def handed_on_every_gpu(model: ModelGeometry) -> bool:
    """:func:`handed_backend`'s choice was read from vLLM on SM 10.x (``test_deepseek_v4_gpus.py``,
    ``test_deepseek_v41.py``)."""
    return extra_of(model, DeepseekV4Caches) is not None or extra_of(model, DeepseekV41Caches) is not None


def check_attention_heads(num_heads: int, window: int, args: EngineArgs, flashinfer: bool = False) -> None:
    """What the DeepSeek-V4 / V4.1 attention layers refuse of a rank's query heads
    (``num_heads / tp``) and of their sliding ``window`` (tokens) as they are built: more than 128
    heads (``get_padded_num_q_heads``: FlashMLA's FP8 decode kernel takes 64 or 128, FlashInfer's
    :data:`SM120_Q_HEADS`, its layers on SM 12.x or named elsewhere: ``flashinfer``), and on SM 12.x
    a (padded heads, window) pair the pinned FlashInfer has no decode specialization for
    (:func:`check_sm120_decode`).

    :raises InputError: each, in vLLM's words (ValueError / RuntimeError)."""
    local = num_heads // args.tensor_parallel_size
    sm12 = args.device.capability[0] == 12 or flashinfer
    if local > 128:
        words = (
            f"DeepseekV4 FlashInfer MLA Sparse does not support {local} heads (sparse MLA kernel requires h_q in "
            "{8, 16, 32, 64, 128})."
            if sm12
            else f"DeepseekV4 FlashMLA does not support {local} heads (FP8 decode kernel requires h_q in {{64, 128}})."
        )
        raise InputError(
            "--tensor-parallel-size", str(args.tensor_parallel_size), f"vLLM refuses it (ValueError: {words})"
        )
    check_sm120_decode(local, window, args)


def check_sm120_decode(local_heads: int, window: int, args: EngineArgs) -> None:
    """On SM 12.x, what the DeepSeek-V4 / V4.1 SM120 layers refuse of a rank's query heads
    (``local_heads``, at most 128) and their sliding ``window`` (tokens, the decode top-k without a
    non-causal drafter) as they are built: a (padded heads, window) pair the release's pinned FlashInfer
    has no decode specialization for (:data:`SM120_DECODE_TOPKS`); nothing off SM 12.x.

    :raises InputError: that pair, in vLLM's words (RuntimeError)."""
    topks = SM120_DECODE_TOPKS.get(args.vllm_version)
    if args.device.capability[0] != 12 or topks is None or window in topks:
        return
    padded = next(h for h in SM120_Q_HEADS if local_heads <= h)
    raise InputError(
        "--gpu",
        args.device.name,
        f"vLLM {args.vllm_version} refuses it (RuntimeError: FLASHINFER_MLA_SPARSE_DSV4 on SM120 requires a FlashInfer "
        f"DSV4 sparse MLA decode specialization for (num_q_heads={padded}, top_k={window}). Install a FlashInfer "
        "build containing flashinfer-ai/flashinfer#4380.)",
    )


def kv_cache_layout(model: ModelGeometry) -> str:
    """DeepSeek-V4's caches take the packed groups (:mod:`dryboot.vllm.kv_cache_utils.packed`),
    DeepSeek-V4.1's vLLM 0.33.0's repeat-pattern packing (:func:`packed_layers`)."""
    if extra_of(model, DeepseekV41Caches) is not None:
        return POLICY
    return "packed" if extra_of(model, DeepseekV4Caches) is not None else "grouped"


def backend_assumption(model: ModelGeometry) -> str | None:
    """``vllm/models/deepseek_v4/nvidia/model.py`` ``_select_dsv4_attn_cls``: FlashMLA's layers on
    every CUDA GPU but SM 12.x, FlashInfer's SM120 ones there (DeepSeek-V4.1 on SM 10.x: FlashMLA's
    with the MXFP8 record where mega attention declines);
    ``FLASHINFER_MLA_SPARSE_DSV4`` named on SM 10.x: FlashInfer's TRT-LLM-gen layers, the plain row."""
    if extra_of(model, DeepseekV41Caches) is not None:
        return (
            "DeepSeek-V4.1's layers choose their own attention (FlashMLA's sparse layers, FlashInfer's on SM 12.x, "
            "with the fp8_ds_mla V4 record; on SM 10.x FlashMLA's with the V4.1 MXFP8 record where FlashMLA's mega "
            "attention declines the topology)"
        )
    if extra_of(model, DeepseekV4Caches) is None:
        return None
    return (
        "DeepSeek-V4's layers choose their own attention (FlashMLA on every CUDA GPU but SM 12.x, FlashInfer's "
        "SM120 layers there; both with the fp8_ds_mla cache; FLASHINFER_MLA_SPARSE_DSV4 named on SM 10.x: "
        "FlashInfer's TRT-LLM-gen layers with the plain row of the KV cache dtype), whatever other "
        "--attention-backend is named"
    )


# --------------------------------------------------------------------------- DeepSeek-V4.1

#: DeepSeek-V4.1's entry point (``vllm/models/deepseek_v41``, vLLM 0.30.0+): a multimodal wrapper
#: (``nvidia/vl_model.py``) whose language model, ``DeepseekV41LLMForCausalLM``, is built on the
#: config itself (``DeepseekV41Config`` flattens ``text_config`` onto the top level)
V41 = "DeepseekV41ForCausalLM"
#: releases whose engine start verified DeepSeek-V4.1's caches (``tests/fidelity/test_deepseek_v41.py``)
V41_RELEASES = frozenset({"0.30.0", "0.31.0", "0.32.0", "0.33.0"})
#: compress ratios ``DeepseekV4Attention`` builds (0: sliding window only)
V41_RATIOS = frozenset({0, 1, 2})
#: the ``--kv-cache-dtype`` values the packed layout takes (``_resolve_dsv4_kv_cache_dtype``: ``auto``
#: and ``fp8`` resolve to the kernel's record, ``fp8_ds_mla`` on SM 9.0)
V41_KV_DTYPES = frozenset({"auto", "fp8", "fp8_ds_mla"})
#: releases whose ``_resolve_dsv4_kv_cache_dtype`` takes every ``fp8`` name (``fp8_e4m3``, ``fp8_e5m2``...)
V41_ANY_FP8 = frozenset({"0.30.0"})
#: the GPU generations whose records are modelled (recorded on 0.33.0): the V4 record (584 bytes a
#: token, pages aligned to 576), FlashMLA's sparse layers (FlashInfer's SM120 ones on SM 12.x); SM 10.x
#: (every minor: :data:`V41_MXFP8_MAJOR`) stores the V4.1 MXFP8 record (:func:`v41_record`)
V41_CAPABILITIES = frozenset({(8, 0), (8, 9), (9, 0), (12, 0)})
#: the GPU generation storing DeepSeek-V4.1's MXFP8 record (``_use_v41_mxfp8_kv_record``:
#: ``is_device_capability_family(100)``): 528 bytes a token (512 fp8 values, RoPE included, then 16
#: UE8M0 scales), pages aligned to 512 bytes
V41_MXFP8_MAJOR = 10
V41_MXFP8_ROW = 528
V41_MXFP8_ALIGNMENT = 512
#: releases whose sliding-window cache aligns the block stride to the lcm of the sliding-window and
#: compressed records where they are the MXFP8 ones (``packed_block_stride_alignment``)
V41_RECORD_STRIDE = frozenset({"0.33.0"})
#: releases whose ``_select_dsv4_attn_cls`` takes FlashMLA's mega attention on SM 10.x, no backend
#: named, where ``DeepseekV4MegaAttnAttention.is_available_for`` (the build's kernel and the topology:
#: :func:`v41_mega_topology`); 0.30.0 has none (FlashMLA's sparse layers)
V41_MEGA_RELEASES = frozenset({"0.31.0", "0.32.0", "0.33.0"})
#: heads a ``wo_a`` group the mega-attention kernel takes (``fused_layout.WV_GROUP_SIZE``)
V41_WV_GROUP_SIZE = 8
#: releases whose engine start was recorded on GPUs other than SM 9.0 (the others: SM 9.0 only; 0.31.0 and
#: 0.32.0 recorded in issue 37: the same answers as 0.33.0; 0.30.0 too, where on SM 12.x FlashInfer 0.6.18.post1,
#: the wheel's pin, lacks the SM120 decode specialization of some (heads, window) pairs: :func:`check_sm120_decode`)
V41_OTHER_GPU_RELEASES = frozenset({"0.30.0", "0.31.0", "0.32.0", "0.33.0"})
#: releases whose ``DeepseekV4Model`` replays the layers after the last KV source on the trailing
#: window (``decoder_replay_layers.py``), asserting that source's ratio is at most 1
V41_REPLAY_RELEASES = frozenset({"0.32.0", "0.33.0"})
#: releases that align the block stride to the backends' kernel-block pages
#: (``get_block_stride_alignment``; before them the groups' widest pages alone)
V41_KERNEL_ALIGNED = frozenset({"0.32.0", "0.33.0"})
#: releases whose sliding-window caches replay a bounded window on a prefix-cache hit
#: (``swa_bounded_replay``, on by default, the V2 model runner only): they then take no part in
#: prefix caching (``prefix_replay_tokens``), so the hash block (the engine's global block) is the
#: cache block; otherwise (0.30.0, or the V1 runner) it is the smallest block of the groups taking
#: part, theirs (the scheduler's stays the cache block)
V41_BOUNDED_REPLAY = frozenset({"0.31.0", "0.32.0", "0.33.0"})
#: cache blocks recorded against vLLM 0.33.0's engine start
V41_VERIFIED_BLOCKS = frozenset({16, 32, 64, 128, 256})
#: tokens per block of the sliding-window cache (``DeepseekV4SWACache(block_size=32)``)
V41_SWA_BLOCK = 32
#: the V4 record of the ``fp8_ds_mla`` layout (bytes a token) and its page alignment on SM 9.0
V41_ROW = 584
V41_ALIGNMENT = 576
#: the backends beside the attention's that vLLM names choosing the block, the compressor's last
#: where a ratio-2 layer keeps a ring
V41_BACKENDS = ("DEEPSEEK_SPARSE_SWA", "DEEPSEEK_V41_INDEXER")
V41_RING_BACKEND = "CompressorBackend"


def v41_kernel_block(capability: tuple[int, int]) -> int:
    """The sparse MLA and indexer backends' kernel block (tokens; ``get_supported_kernel_block_sizes``:
    64 on SM 9.0, else 128), which is also the cache block by default ("Setting kv cache block size
    to ..."); a larger cache block aligns the block stride to their pages at that many tokens."""
    return 64 if capability == (9, 0) else 128


def v41_record(capability: tuple[int, int]) -> tuple[int, int]:
    """(bytes a token, page alignment in bytes) of the sliding-window and compressed records
    (``DeepseekV4Attention.__init__``: ``swa_bytes_per_token``, ``kv_page_alignment``): the MXFP8
    record on SM 10.x (528, 512), the V4 record elsewhere (584, 576)."""
    if capability[0] == V41_MXFP8_MAJOR:
        return V41_MXFP8_ROW, V41_MXFP8_ALIGNMENT
    return V41_ROW, V41_ALIGNMENT


def v41_mega_topology(heads: int, o_groups: int, tp: int) -> bool:
    """Whether FlashMLA's mega attention takes the topology (``DeepseekV4MegaAttnAttention.is_available_for``
    less the build check): heads and output groups split evenly over ``tp`` ranks, the local
    heads a multiple of :data:`V41_WV_GROUP_SIZE` and exactly that many a local group."""
    if heads % tp or o_groups % tp:
        return False
    local_heads, local_groups = heads // tp, o_groups // tp
    if not local_groups or local_heads % V41_WV_GROUP_SIZE:
        return False
    return local_heads // local_groups == V41_WV_GROUP_SIZE


def v41_attention(capability: tuple[int, int], flashinfer: bool = False) -> AttentionBackend:
    """The attention backend the layers take (``_select_dsv4_attn_cls``): FlashInfer's SM120 sparse MLA
    on SM 12.x, FlashMLA's elsewhere (on SM 10.x where mega attention declines: :func:`engine_args_v41`);
    ``flashinfer``: FlashInfer's DeepSeek-V4 layers named (TRT-LLM-gen on SM 10.x)."""
    name = "FLASHINFER_MLA_SPARSE_DSV41" if capability[0] == 12 or flashinfer else "FLASHMLA_SPARSE_DSV41"
    return AttentionBackend(name, (), False, is_mla=True)


@dataclass(frozen=True)
class DeepseekV41Caches(FamilyExtra):
    """What DeepSeek-V4.1's layers cache (``vllm/models/deepseek_v41/attention.py``).

    Every backbone layer keeps a sliding-window cache. Compressed caches live on the KV source
    layers only (``kv_source_layer_ids``): a source of ratio 1 or 2 keeps its compressed MLA cache,
    its indexer's key cache where it is an index source too, and at ratio 2 its compressor's ring;
    a later compressed layer reads the caches of the last source at or below it (KV sharing: it
    adds none of its own), and so do the decoder-replay layers after the last source.

    :param compress_ratios: per backbone layer, 0, 1 or 2.
    :param kv_sources: the backbone KV source layers, ascending.
    :param index_sources: the backbone index source layers, ascending.
    :param head_dim: the latent row (elements; 512).
    :param index_head_dim: the indexer head (elements; 128).
    :param sliding_window: every layer's window (tokens).
    :param num_attention_heads: query heads (split by tensor parallelism).
    :param o_groups: output projection groups.
    :param replay_cut: the last entry of ``kv_source_layer_ids`` (``DeepseekV4Model``'s decoder-replay
        cut, :data:`V41_REPLAY_RELEASES`).
    """

    compress_ratios: tuple[int, ...]
    kv_sources: tuple[int, ...]
    index_sources: tuple[int, ...]
    head_dim: int
    index_head_dim: int
    sliding_window: int
    num_attention_heads: int
    o_groups: int
    replay_cut: int = -1


def _int_list(f: ConfigFields, key: str) -> tuple[int, ...]:
    raw = f.get(key)
    if raw is None:
        return ()
    if not isinstance(raw, list) or not all(isinstance(x, int) and not isinstance(x, bool) for x in raw):
        raise InputError(f.source, f.where(key), "must be a list of layer indices")
    return tuple(raw)


def _v41_sources(f: ConfigFields, ratios: tuple[int, ...]) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """(KV sources, index sources) of the backbone, after what ``DeepseekV4Attention`` and
    ``DeepseekV4Model`` refuse of them.

    :raises InputError: each refusal, in vLLM's words where it names one."""
    n = len(ratios)
    kv_all, index_all = _int_list(f, "kv_source_layer_ids"), _int_list(f, "index_source_layer_ids")
    if not kv_all:
        raise InputError(
            f.source,
            f.where("kv_source_layer_ids"),
            f"{missing_field('')} vLLM's DeepseekV4Model takes its last entry as the decoder-replay cut (ValueError: "
            "max() arg is an empty sequence)".strip(),
        )
    for i, r in enumerate(ratios):
        if r and not index_all:
            raise InputError(
                f.source,
                f.where("index_source_layer_ids"),
                "ValueError: DeepSeek V4.1 requires kv_source_layer_ids / index_source_layer_ids in the config for "
                f"compressed layers (layer {i} has compress_ratio={r}).",
            )
        if r and (not any(s <= i for s in kv_all) or not any(s <= i for s in index_all)):
            raise InputError(
                f.source,
                f.where("kv_source_layer_ids"),
                f"layer {i} (compress ratio {r}) has no KV or index source at or below it: vLLM's DeepseekV4Attention "
                "fails (ValueError: max() arg is an empty sequence)",
            )
    kv = tuple(sorted({s for s in kv_all if 0 <= s < n}))
    index = tuple(sorted({s for s in index_all if 0 <= s < n}))
    for s in kv:
        if ratios[s] == 0:
            raise InputError(
                f.source,
                f.where("kv_source_layer_ids"),
                f"layer {s} is a KV source of compress ratio 0: vLLM refuses (NotImplementedError: DeepSeek V4.1 "
                "compressor supports compress_ratio 1 (full-length compressed cache) and 2; got 0.)",
            )
    for s in index:
        if ratios[s] == 0:
            raise InputError(
                f.source,
                f.where("index_source_layer_ids"),
                f"layer {s} is an index source of compress ratio 0 (no KV source: vLLM's AssertionError)",
            )
        owner = max(k for k in kv_all if k <= s)
        if owner not in index:
            raise InputError(
                f.source,
                f.where("index_source_layer_ids"),
                f"layer {s}'s indexer reads the key cache of its KV source, layer {owner}, which is no index source: "
                f"vLLM refuses (NotImplementedError: Indexer K cache source ...layers.{owner}.attn.indexer.k_cache "
                "not found on this rank)",
            )
    return kv, index


def read_v41(f: ConfigFields, architecture: str) -> ModelGeometry:
    """DeepSeek-V4.1's geometry (``DeepseekV41Config``: ``text_config``'s keys, read flat).

    :raises InputError: a missing field the caches read; compress ratios other than 0, 1 and 2
        (vLLM's ValueError), or a list shorter than the layers (not verified); what
        :func:`_v41_sources` refuses; Engram layers (``engram_layer_ids``: not verified offline,
        vLLM loads the tokenizer at engine start to build the n-gram hash's compressed vocabulary);
        a latent, rope or indexer width other than 512 / 64 / 128 (the compressor asserts; not
        verified)."""
    n = num_layers(f)
    raw = f.get("compress_ratios")
    if not isinstance(raw, list) or len(raw) < n or not all(isinstance(r, int) for r in raw[:n]):
        raise InputError(
            f.source,
            f.where("compress_ratios"),
            f"needs an integer per layer ({n}): a missing entry is a sliding-window layer to vLLM, not verified",
        )
    ratios = tuple(int(r) for r in raw[:n])
    for i, r in enumerate(ratios):
        if r not in V41_RATIOS:
            raise InputError(
                f.source,
                f.where("compress_ratios"),
                f"ValueError: DeepSeek V4.1 layer {i} has compress_ratio={r}; only 0 (sliding window), 1 and 2 are "
                "supported.",
            )
    kv, index = _v41_sources(f, ratios)
    if _int_list(f, "engram_layer_ids"):
        raise InputError(
            f.source,
            f.where("engram_layer_ids"),
            f"{architecture}'s Engram layers are not verified: vLLM's engine start loads the tokenizer "
            "(NgramHashState: engram_compressed_vocab_size checked against its compressed vocabulary) and places the "
            "n-gram tables on the device, which the CPU oracle cannot follow; they add no KV cache (the tables are "
            "weights, the hash's slot cache a model-runner-v1 tensor)",
        )
    for key in ("head_dim", "index_head_dim", "sliding_window", "num_attention_heads", "o_groups", "qk_rope_head_dim"):
        if f.get(key) is None:
            raise InputError(f.source, f.where(key), missing_field("vLLM's DeepseekV4 layers read it"))
    for key, width in (("head_dim", 512), ("qk_rope_head_dim", 64), ("index_head_dim", 128)):
        if f.integer(key) != width:
            raise InputError(
                f.source,
                f.where(key),
                f"{f.get(key)}: DeepSeek-V4.1's caches are modelled at the {width}-wide {key} its compressor "
                "asserts / its checkpoints use only",
            )
    heads = f.integer("num_attention_heads")
    caches = DeepseekV41Caches(
        compress_ratios=ratios,
        kv_sources=kv,
        index_sources=index,
        head_dim=f.integer("head_dim"),
        index_head_dim=f.integer("index_head_dim"),
        sliding_window=f.integer("sliding_window"),
        num_attention_heads=heads,
        o_groups=f.integer("o_groups"),
        replay_cut=max(_int_list(f, "kv_source_layer_ids")),
    )
    return geometry(
        f,
        architecture,
        "deepseek_v4",
        (LayerKind.DSV4_SWA,) * n,
        heads=(heads, 1, caches.head_dim),
        head_dim_v=0,
        num_mtp_layers=f.integer("num_nextn_predict_layers", default=0, minimum=0),
        mtp_kind=LayerKind.DSV4_SWA,
        family_extra=caches,
    )


def _refuse_dtype(arch: str, dtype: str, version: str, capability: tuple[int, int] = (9, 0)) -> None:
    """:raises InputError: a ``--kv-cache-dtype`` the V4.1 layers refuse (vLLM's words): on
    :data:`V41_ANY_FP8` any ``fp8`` name is taken as the ``fp8_ds_mla`` record."""
    if dtype in V41_KV_DTYPES or (version in V41_ANY_FP8 and dtype.startswith("fp8")):
        return
    if version in V41_ANY_FP8 and not dtype.startswith("nvfp4"):
        raise InputError(
            "--kv-cache-dtype",
            dtype,
            f"{arch}: vLLM {version} refuses it (ValueError: DeepseekV4 fp8_ds_mla layout only supports fp8 kv-cache, "
            f"got {dtype})",
        )
    if dtype == "nvfp4_ds_mla" and capability[0] == V41_MXFP8_MAJOR:
        raise InputError(
            "--kv-cache-dtype",
            dtype,
            f"{arch}: the NVFP4 compressed record on SM 10.x (FlashMLA's mega attention's) is not modelled",
        )
    if dtype == "nvfp4_ds_mla":
        words = "nvfp4_ds_mla needs the V4.1 KV records, which FlashMLA decodes only on SM100."
    elif dtype.startswith("nvfp4"):
        words = "nvfp4 KV cache is not supported with MLA (Multi-head Latent Attention) backends."
    else:
        words = (
            f"DeepseekV4 packed KV layouts only support fp8 kv-cache, got {dtype}. Please set `--kv-cache-dtype fp8` "
            "or select a backend that supports bfloat16 KV cache."
        )
    raise InputError("--kv-cache-dtype", dtype, f"{arch}: vLLM refuses it (ValueError: {words})")


def engine_args_v41(caches: DeepseekV41Caches, model: ModelGeometry, args: EngineArgs) -> EngineArgs:
    """What DeepSeek-V4.1's engine start takes of the flags (vLLM 0.33.0): the layers' own sparse
    attention (:func:`v41_attention`) with the ``fp8_ds_mla`` record whatever fp8 name is given.

    :raises InputError: the classic MTP drafter (vLLM's ValidationError: V4.1 ships DSpark stages),
        any drafter but n-gram (not verified), a GPU outside :data:`V41_CAPABILITIES`, a named
        attention backend, context parallelism (not verified), a KV cache dtype the layers refuse."""
    arch = model.architecture
    method = args.speculative_method
    if method == "mtp":
        raise InputError(
            "--speculative-config",
            method,
            f"{arch}: vLLM refuses it (ValidationError: DeepSeek V4.1 has no classic-MTP draft: its checkpoints ship "
            "DSpark stages under mtp.*; use speculative method 'dspark')",
        )
    if method == "extract_hidden_states" and args.disable_padded_drafter_batch:
        # what vLLM refuses first, whatever the model (recorded on 0.30.0-0.33.0)
        raise InputError(
            "--speculative-config",
            "disable_padded_drafter_batch",
            "disable_padded_drafter_batch is not supported with extract_hidden_states method",
        )
    if method is not None and method != "ngram":
        raise InputError(
            "--speculative-config", method, f"{arch}: only the n-gram drafter is verified beside its caches"
        )
    cap = args.device.capability
    named = v41_named_choice(arch, args)
    if cap not in V41_CAPABILITIES and cap[0] != V41_MXFP8_MAJOR:
        raise InputError(
            "--gpu",
            args.device.name,
            f"{arch}: on SM {cap[0]}.{cap[1]} vLLM was not recorded serving it; SM "
            f"{', '.join(f'{a}.{b}' for a, b in sorted(V41_CAPABILITIES))} and 10.x are modelled",
        )
    if named is not None and cap[0] != V41_MXFP8_MAJOR:
        raise InputError(
            "--attention-backend", args.attention_backend, f"{arch}: a named backend off SM 10.x is not verified"
        )
    if named == V41_MEGA:
        _refuse_mega_named(caches, args)
    if (
        named in (None, V41_DEFAULT)
        and cap[0] == V41_MXFP8_MAJOR
        and args.vllm_version in V41_MEGA_RELEASES
        and v41_mega_topology(caches.num_attention_heads, caches.o_groups, args.tensor_parallel_size)
    ):
        raise InputError(
            "--gpu",
            args.device.name,
            f"{arch}: on SM 10.x with {caches.num_attention_heads} heads in {caches.o_groups} output groups at TP "
            f"{args.tensor_parallel_size}, vLLM {args.vllm_version} picks FlashMLA's mega attention where its build "
            "has the kernel (NVFP4 compressed records, 288 bytes a token): not modelled (the CPU oracle's build "
            "lacks it)",
        )
    if cap != (9, 0) and args.vllm_version not in V41_OTHER_GPU_RELEASES:
        raise InputError(
            "--gpu",
            args.device.name,
            f"{arch}: vLLM {args.vllm_version}'s engine start is verified on SM 9.0 only (other GPUs on "
            f"{', '.join(sorted(V41_OTHER_GPU_RELEASES))})",
        )
    flashinfer = named == V41_FLASHINFER
    check_attention_heads(caches.num_attention_heads, caches.sliding_window, args, flashinfer=flashinfer)
    if args.decode_context_parallel_size > 1:
        raise InputError(
            "--decode-context-parallel-size", str(args.decode_context_parallel_size), f"{arch}: not verified"
        )
    dtype = args.kv_cache_dtype or "auto"
    if flashinfer:
        if dtype != "auto":
            raise InputError(
                "--kv-cache-dtype",
                dtype,
                f"{arch}: FlashInfer's DeepSeek-V4 attention named on SM 10.x is verified with the plain bfloat16 "
                "row of --kv-cache-dtype auto only",
            )
        # the plain row keeps the name: packed_layers reads it
        return args.evolve(attention_backend=V41_FLASHINFER_NAME)
    _refuse_dtype(arch, dtype, args.vllm_version, cap)
    args = args.evolve(attention_backend=None)
    return args.evolve(kv_cache_dtype="fp8") if dtype.startswith("fp8_") else args


#: what ``_select_dsv4_attn_cls`` makes of a named backend (0.30.0-0.33.0): FlashMLA's layers, FlashInfer's
#: DeepSeek-V4 layers (TRT-LLM-gen on SM 10.x), mega attention (0.31+), or the default choice
V41_FLASHMLA, V41_FLASHINFER, V41_MEGA, V41_DEFAULT = "flashmla", "flashinfer", "mega", "default"
#: the names ``_select_dsv4_attn_cls`` maps to a layer class (the rest fall through to the default choice)
V41_NAMED: Mapping[str, str] = {
    "FLASHMLA_SPARSE": V41_FLASHMLA,
    "FLASHMLA_SPARSE_DSV4": V41_FLASHMLA,
    "FLASHMLA_SPARSE_DSV41": V41_FLASHMLA,
    "FLASHINFER_MLA_SPARSE_DSV4": V41_FLASHINFER,
    "FLASHINFER_MLA_SPARSE_DSV41": V41_FLASHINFER,
    "FLASHMLA_MEGA_ATTN_DSV41": V41_MEGA,
}
#: the generic sparse FlashInfer names ``_select_dsv4_attn_cls`` refuses
V41_REFUSED_NAMED = frozenset({"FLASHINFER_MLA_SPARSE", "FLASHINFER_MLA_SPARSE_SM120"})
#: bytes FlashInfer's sparse DeepSeek-V4 layers align every page to (the sliding-window, compressed and
#: indexer specs' ``alignment`` off the ``fp8_ds_mla`` layout: "512B for FlashInfer sparse")
V41_FLASHINFER_ALIGNMENT = 512
#: the name the FlashInfer layers keep in the args for :func:`packed_layers`
V41_FLASHINFER_NAME = "FLASHINFER_MLA_SPARSE_DSV41"
#: releases whose ``AttentionBackendEnum`` has ``FLASHMLA_MEGA_ATTN_DSV41``
V41_MEGA_NAMED_RELEASES = frozenset({"0.31.0", "0.32.0", "0.33.0"})
#: name prefixes of other platforms' backends (not verified on a CUDA GPU)
_OTHER_PLATFORMS = ("ROCM_", "XPU_", "CPU_", "AMX_", "HPC_")


def v41_named_choice(arch: str, args: EngineArgs) -> str | None:
    """What DeepSeek-V4.1's layers make of ``--attention-backend`` (``nvidia/model.py``
    ``_select_dsv4_attn_cls``, 0.30.0-0.33.0): ``None`` where none is named; :data:`V41_FLASHMLA`,
    :data:`V41_FLASHINFER` or :data:`V41_MEGA` for the names :data:`V41_NAMED` maps; :data:`V41_DEFAULT`
    for any other CUDA name (the layers' own choice, as with none: recorded on SM 10.x for FLASH_ATTN,
    FLASHMLA and TRITON_MLA).

    :raises InputError: the names vLLM refuses (:data:`V41_REFUSED_NAMED`, its ValueError); the mega
        attention's name on a release without it; another platform's backend (not verified)."""
    named = args.attention_backend
    if named is None:
        return None
    if named in V41_REFUSED_NAMED:
        raise InputError(
            "--attention-backend",
            named,
            f"{arch}: vLLM refuses it (ValueError: {named} is not a DeepSeek V4.1 attention backend. Use "
            "FLASHINFER_MLA_SPARSE_DSV41 for DeepSeek V4.1 FlashInfer sparse MLA.)",
        )
    choice = V41_NAMED.get(named, V41_DEFAULT)
    if choice == V41_MEGA and args.vllm_version not in V41_MEGA_NAMED_RELEASES:
        raise InputError(
            "--attention-backend",
            named,
            f"Unknown attention backend: '{named}' (vLLM {args.vllm_version}: FlashMLA's mega attention is 0.31.0+)",
        )
    if named.startswith(_OTHER_PLATFORMS):
        raise InputError("--attention-backend", named, f"{arch}: another platform's backend on CUDA is not verified")
    return choice


def _refuse_mega_named(caches: DeepseekV41Caches, args: EngineArgs) -> None:
    """Mega attention named (``DeepseekV4MegaAttnAttention``, taken whatever its ``is_available_for``):
    its ``__init__`` refuses a rank's heads that are not :data:`V41_WV_GROUP_SIZE` a ``wo_a`` group.

    :raises InputError: those refusals (vLLM's ValueError); a topology it takes (its NVFP4 compressed
        records are not modelled)."""
    tp = args.tensor_parallel_size
    local_heads, local_groups = caches.num_attention_heads // tp, caches.o_groups // tp
    prefix = "language_model.model.layers.0.attn"
    if local_heads % V41_WV_GROUP_SIZE:
        why = (
            f"{prefix}: mega attention needs the local head count ({local_heads}) to be a multiple of "
            f"{V41_WV_GROUP_SIZE}."
        )
    elif not local_groups or local_heads // local_groups != V41_WV_GROUP_SIZE:
        why = f"{prefix}: mega attention needs {V41_WV_GROUP_SIZE} heads per wo_a group."
    else:
        raise InputError(
            "--attention-backend",
            args.attention_backend,
            "FlashMLA's mega attention (NVFP4 compressed records, 288 bytes a token) is not modelled",
        )
    raise InputError("--attention-backend", args.attention_backend, f"vLLM refuses it (ValueError: {why})")


def v41_specs(
    caches: DeepseekV41Caches,
    block: int,
    num_speculative: int,
    capability: tuple[int, int] = (9, 0),
    kernel_aligned: bool = True,
    record_stride: bool = True,
    flashinfer: bool = False,
) -> dict[str, AttentionSpec]:
    """(layer name -> spec) of every cache, in vLLM's registration order
    (``language_model.model.layers.<i>.attn``...).

    Per layer: a KV source's compressed MLA cache (``.attn``: ``block`` tokens stored
    ``block / ratio``, :func:`v41_record` bytes each), then its indexer key cache where it is an index
    source (``.attn.indexer.k_cache``: ``index_head_dim + index_head_dim / 128 * 4`` uint8 bytes a
    stored token); every layer's sliding-window cache (``.attn.swa_cache``: :data:`V41_SWA_BLOCK`
    tokens, ``sliding_window``); a ratio-2 source's compressor ring
    (``.attn.compressor.state_cache``: ``max(8, next power of two >= num_speculative + 2)`` rows of
    ``2 * head_dim`` float32). Pages are aligned to :func:`v41_record`'s bytes but the ring's; the
    MLA and indexer caches' block strides to their kernel block on ``capability``
    (:func:`v41_kernel_block`: ``block_stride_alignment``) where ``kernel_aligned``
    (:data:`V41_KERNEL_ALIGNED`); on SM 10.x the sliding-window cache's block stride to whole
    records (``packed_block_stride_alignment``: :data:`V41_MXFP8_ROW` bytes) where ``record_stride``
    (:data:`V41_RECORD_STRIDE`). ``flashinfer``: FlashInfer's DeepSeek-V4 layers named on SM 10.x
    (``DeepseekV4FlashInferMLAAttention``, ``use_fp8_ds_mla_layout`` off): the sliding-window and compressed
    caches store the plain bfloat16 row (``head_dim`` values, 2 bytes each), every page aligned to
    :data:`V41_FLASHINFER_ALIGNMENT` bytes, no record stride."""
    kernel = v41_kernel_block(capability) if kernel_aligned else None
    attention = v41_attention(capability, flashinfer).name
    row, alignment = (2 * caches.head_dim, V41_FLASHINFER_ALIGNMENT) if flashinfer else v41_record(capability)
    # 0.33.0's MXFP8 records: the block stride holds whole rows of both records (one width here)
    swa_stride = row if record_stride and capability[0] == V41_MXFP8_MAJOR and not flashinfer else None

    def spec(kind: LayerKind, blk: int, head: int, content: int, dtype: str, **kw: Any) -> AttentionSpec:
        backend = V41_RING_BACKEND if kind is LayerKind.DSV41_RING else attention
        return dsv4_spec(kind, blk, head, content, dtype, **{"backend": backend, "alignment": None, **kw})

    index_row = caches.index_head_dim + caches.index_head_dim // 128 * 4
    ring_rows = max(8, 1 << (num_speculative + 1).bit_length())
    state = 2 * caches.head_dim
    out: dict[str, AttentionSpec] = {}
    for i, r in enumerate(caches.compress_ratios):
        p = f"language_model.model.layers.{i}.attn"
        source = i in caches.kv_sources
        if source:
            out[p] = spec(
                LayerKind.DSV4_MLA,
                block,
                caches.head_dim,
                row,
                "uint8",
                compress_ratio=r,
                alignment=alignment,
                block_stride_alignment=kernel,
            )
            if i in caches.index_sources:
                out[f"{p}.indexer.k_cache"] = spec(
                    LayerKind.DSV4_INDEXER,
                    block,
                    index_row,
                    index_row,
                    "uint8",
                    compress_ratio=r,
                    alignment=alignment,
                    block_stride_alignment=kernel,
                )
        out[f"{p}.swa_cache"] = spec(
            LayerKind.DSV4_SWA,
            V41_SWA_BLOCK,
            caches.head_dim,
            row,
            "uint8",
            sliding_window=caches.sliding_window,
            alignment=alignment,
            block_stride_bytes=swa_stride,
        )
        if source and r == 2:
            out[f"{p}.compressor.state_cache"] = spec(LayerKind.DSV41_RING, ring_rows, state, state * 4, "float32")
    return out


def v41_stages(
    caches: DeepseekV41Caches, specs: dict[str, AttentionSpec], args: EngineArgs
) -> list[frozenset[str]] | None:
    """The cache layers each pipeline stage's worker builds (``get_pp_indices``), or ``None``
    without pipeline parallelism.

    :raises InputError: a compressed layer whose KV source another stage holds (vLLM's
        NotImplementedError), or a stage without an indexer key cache (its worker's KV cache layouts
        are not verified)."""
    pp = args.pipeline_parallel_size
    if pp <= 1:
        return None
    ranges = pp_stage_ranges(len(caches.compress_ratios), pp, args.pp_layer_partition)
    for r in ranges:
        for i in r:
            if caches.compress_ratios[i] and i not in caches.kv_sources:
                src = max(s for s in caches.kv_sources if s <= i)
                if src not in r:
                    raise InputError(
                        "--pipeline-parallel-size",
                        str(pp),
                        f"layer {i} reads layer {src}'s compressed caches on another stage: vLLM refuses "
                        f"(NotImplementedError: Compressed-KV source language_model.model.layers.{src}.attn not found "
                        "on this rank; PP splits inside a v4.1 kv-sharing group are not supported.)",
                    )
    stages = [frozenset(n for n in specs if int(n.split(".")[3]) in r) for r in ranges]
    without = [s for s, st in enumerate(stages) if not any(n.endswith(".indexer.k_cache") for n in st)]
    if without:
        raise InputError(
            "--pipeline-parallel-size",
            str(pp),
            f"stage(s) {without} hold no indexer key cache: their workers' KV cache layouts are not verified",
        )
    return stages


def packed_layers(cfg: EngineConfig, log: list[str]) -> PackedLayers:
    """DeepSeek-V4.1's caches for the repeat-packed planner (vLLM 0.33.0's
    ``_get_packed_kv_cache_groups``): the block, every cache's spec (:func:`v41_specs`), the groups
    and the pipeline stages' layers; logs vLLM's block-size line when the block is the default.

    :raises InputError: a release outside :data:`V41_RELEASES`, a block outside
        :data:`V41_VERIFIED_BLOCKS` (not verified), what :func:`v41_stages` refuses."""
    model, args, version = cfg.model, cfg.args, cfg.rules.version
    caches = extra_of(model, DeepseekV41Caches)
    assert caches is not None
    if version not in V41_RELEASES:
        raise InputError(
            "--vllm-version",
            version,
            f"{model.architecture}'s caches on vLLM {version} are not modelled: verified on "
            f"{', '.join(sorted(V41_RELEASES))} only",
        )
    cap = args.device.capability
    block = args.block_size or v41_kernel_block(cap)
    if block not in V41_VERIFIED_BLOCKS:
        raise InputError(
            "--block-size",
            str(block),
            f"{model.architecture}: blocks {sorted(V41_VERIFIED_BLOCKS)} are verified against vLLM {version}; this one "
            "is not modelled",
        )
    n = len(caches.compress_ratios)
    if version in V41_REPLAY_RELEASES and caches.replay_cut < n - 1 and caches.compress_ratios[caches.replay_cut] > 1:
        raise InputError(
            "--model",
            model.source,
            f"{model.architecture}: the last KV source, layer {caches.replay_cut}, has compress ratio "
            f"{caches.compress_ratios[caches.replay_cut]} and layers follow it: vLLM {version}'s decoder replay "
            "asserts a ratio of at most 1 there (AssertionError)",
        )
    spec_tokens = args.num_speculative_tokens if args.speculative_method else 0
    # FlashInfer's layers named on SM 10.x (engine_args_v41 keeps the name for them)
    flashinfer = args.attention_backend == V41_FLASHINFER_NAME and cap[0] == V41_MXFP8_MAJOR
    specs = v41_specs(
        caches, block, spec_tokens, cap, version in V41_KERNEL_ALIGNED, version in V41_RECORD_STRIDE, flashinfer
    )
    stages = v41_stages(caches, specs, args)
    if args.block_size is None:
        names = [
            v41_attention(cap, flashinfer).name,
            *V41_BACKENDS,
            *([V41_RING_BACKEND] if 2 in (caches.compress_ratios[s] for s in caches.kv_sources) else []),
        ]
        log.append(f"Setting kv cache block size to {block} for {'/'.join(names)} backend(s).")
    # without bounded replay the sliding-window caches take part in prefix caching: the smallest block of
    # the groups that do (the ring's does not) is the hash block
    replay = version in V41_BOUNDED_REPLAY and uses_v2_model_runner(model, args, cfg.drafter, cfg.rules)
    hash_block = None if replay else min(block, V41_SWA_BLOCK)
    return PackedLayers(
        specs,
        group_specs(specs),
        stages,
        block,
        v41_attention(cap, flashinfer),
        "auto" if flashinfer else "fp8_ds_mla",
        len(specs),
        hash_block,
    )
