"""What vLLM allocates for a model's weights on one rank (``Model loading took X GiB``).

Mirrors what vLLM 0.28.0's model classes build in ``__init__`` (``initialize_model`` under the
model dtype), layer by layer, on one tensor-parallel rank of one pipeline stage:

* ``VocabParallelEmbedding`` / ``ParallelLMHead`` (``layers/vocab_parallel_embedding.py``): rows
  padded to a multiple of 64 (``pad_vocab_size``), then divided by TP; the LM head is the
  embedding itself under ``tie_word_embeddings`` (counted once).
* ``QKVParallelLinear`` (``layers/linear.py``): ``num_heads / TP`` query heads and
  ``max(1, num_kv_heads / TP)`` KV heads per rank (KV heads replicated below TP).
* ``MergedColumnParallelLinear`` / ``ColumnParallelLinear``: output divided by TP;
  ``RowParallelLinear``: input divided by TP, bias whole; ``ReplicatedLinear`` (MoE router),
  norms: whole.
* ``FusedMoE`` (``layers/fused_moe/layer.py``): ``w13`` ``[E_local, 2 I_local, H]`` and ``w2``
  ``[E_local, H, I_local]``, with ``I_local = I / TP`` (experts on every rank) or, under
  ``--enable-expert-parallel``, ``E_local = ceil(E / (TP x DP))`` on rank 0 and the whole ``I``.
* Pipeline stages: ``make_layers`` / ``get_pp_indices`` (``models/utils.py``; layers split evenly,
  the remainder to the last stages, or ``VLLM_PP_LAYER_PARTITION``), the embedding on the first
  stage, the final norm and LM head on the last.
* Buffers: the rotary ``cos_sin_cache`` ``[max_position_embeddings, rotary_dim]`` in the model
  dtype (one, shared by every layer through ``get_rope``'s cache), four float32 scalars per
  attention layer (``Attention._k_scale`` ...) and, under expert parallelism, each MoE layer's
  int32 expert map ``[E]``.
* Quantization layouts as each method's ``create_weights`` allocates them (before
  ``process_weights_after_loading``): :func:`linear_bytes` and :func:`experts_bytes`.

The figure is what the model holds after loading. vLLM 0.28.0's line (``DeviceMemoryProfiler``
around ``load_model``) reads ``torch.cuda.max_memory_allocated`` after ``reset_peak_memory_stats``
(``platforms/cuda.py`` ``get_current_memory_usage``): what stays allocated once
``process_weights_after_loading`` is done, not the loading peak. A kernel's repacking there
changes that layout per GPU: GPTQ, AWQ, AutoRound and compressed-tensors W4A16/W8A16 are modelled
as the chosen kernel leaves them (:mod:`dryboot.vllm.model_executor.layers.quantization`, the GPU
given through :class:`Parallel`); the others (MXFP4, compressed-tensors' other schemes, ...) are
refused by name (:data:`REFUSED_METHODS`).

The walk (:func:`_walk`) visits one rank's modules once; each module's bytes come from the
config's shapes and, given a checkpoint, from the checkpoint tensors that module loads.
Families beyond Llama-style layers: Qwen3-Next and Qwen3.5 (Gated DeltaNet mixers, gated
attention, shared experts; Qwen3.5's vision tower, ``--language-model-only``), Gemma-3 (rotary
tables per layer type; the SigLIP tower of its vision-language wrapper), GLM-4.5, DeepSeek MLA,
Nemotron-H and Granite-4.0-H (Mamba2 mixers). Every other modelled architecture is a family of
``model_executor/models/`` (:func:`families`), to which the walk dispatches.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Any, Protocol, TypedDict, Unpack

from dryboot.errors import InputError
from dryboot.vllm.backends import (
    AttentionSelectorConfig,
    backend_table,
    default_backend,
    flashinfer_kv_counter_bytes,
    sm120_sparse_reasons,
)
from dryboot.vllm.config.mm_encoder_tp import whole_tower
from dryboot.vllm.kv_cache_interface import LayerKind
from dryboot.vllm.lora.model_manager import LoRATensor
from dryboot.vllm.model_executor.kernels.linear.mixed_precision import MPLinearLayerConfig, choose_mp_linear_kernel
from dryboot.vllm.model_executor.layers.quantization import (
    QUANT_RULES,
    quant_rules,
    wna16_from_config,
)
from dryboot.vllm.model_executor.layers.quantization.auto_gptq import (
    WNA16,
    gptq_empty_read,
    wna16_experts_bytes,
    wna16_linear_bytes,
)
from dryboot.vllm.model_executor.layers.quantization.fused_moe import SCALED_EXPERTS_RELEASES, scaled_experts_bytes
from dryboot.vllm.model_executor.layers.quantization.modelopt import (
    ModelOptQuant,
    exclude_names,
    modelopt_experts_bytes,
    modelopt_linear_bytes,
    modelopt_mixed_from_config,
    modelopt_quant,
    text_model_name,
)
from dryboot.vllm.model_executor.layers.quantization.scaled_mm import (
    CUTLASS_FP8_PAD_FAILS,
    ScaledQuant,
    ScaledScheme,
    checkpoint_parts,
    ct_scaled_from_config,
    scaled_refusal,
)
from dryboot.vllm.model_executor.layers.quantization.utils.quant_utils import is_layer_excluded, is_layer_skipped
from dryboot.vllm.model_executor.model_loader.allocator import MIN_BLOCK, MIN_LARGE_ALLOC, ROUND_LARGE, SMALL_SIZE
from dryboot.vllm.model_executor.model_loader.load_order import DenseDecoder, Marlin4, load_surplus
from dryboot.vllm.model_executor.model_loader.safetensors import DTYPE_BYTES as ST_BYTES
from dryboot.vllm.models.common import MAX_LAYERS
from dryboot.vllm.models.registry import REGISTRY_RELEASES, is_draft_model, registry_file, release_registry_file
from dryboot.vllm.versions import known_model_types, rules_for

GiB = 1 << 30
#: vLLM's ``DEFAULT_VOCAB_PADDING_SIZE``
VOCAB_PADDING = 64
#: the CUDA caching allocator rounds every allocation up to 512 bytes (``kMinBlockSize``)
ALLOC_ROUND = MIN_BLOCK
#: the caching allocator's pools and segments (bytes): requests up to ``kSmallSize`` (1 MiB) come from
#: the small pool's 2 MiB segments; larger ones below ``kMinLargeAlloc`` (10 MiB) from 20 MiB segments
#: (``kLargeBuffer``); from 10 MiB on a request gets a segment of its size rounded up to ``kRoundLarge``
#: (2 MiB). A large-pool block is split (the request counts alone) only when the request is below
#: ``max_split_size`` and more than ``kSmallSize`` remains; otherwise the whole segment is allocated
#: (``DeviceCachingAllocator::should_split``, ``get_allocation_size``).
ALLOC_SMALL_SIZE = SMALL_SIZE
ALLOC_MIN_LARGE = MIN_LARGE_ALLOC
ALLOC_ROUND_LARGE = ROUND_LARGE
#: ``max_split_size_mb`` while vLLM loads the weights: ``Worker.load_model`` sets 20 (PyTorch's
#: smallest) inside ``_scoped_allocator_max_split`` (0.27.1-0.33 ``v1/worker/gpu_worker.py``)
LOAD_MAX_SPLIT = 20 << 20


def load_segment_bytes(nbytes: int, max_split: int = LOAD_MAX_SPLIT) -> int:
    """What ``torch.cuda.memory_allocated`` counts for one tensor of ``nbytes`` allocated while vLLM
    loads the weights (bytes): the request rounded to 512 bytes, or its whole 2 MiB-rounded segment
    where the allocator does not split it (a request of ``max_split`` or more, or one that leaves
    at most 1 MiB of its segment). Assumes a fresh segment (no cached block of the load is reused)
    and PyTorch's default segments: with ``PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True`` every
    block is split and the tensor counts alone. Where dryboot emits the load's allocation order
    (:func:`ordered_llama_load`), the replay of that order (:mod:`.allocator`) replaces this rule,
    freed blocks of the load reused included. E.g. Qwen3-32B's ``down_proj`` at TP 2 (5120 x 12800
    bf16, 125 MiB) counts 126 MiB."""
    size = -(-nbytes // ALLOC_ROUND) * ALLOC_ROUND
    if size < ALLOC_MIN_LARGE:  # the small pool, or a split 20 MiB segment
        return size
    segment = -(-size // ALLOC_ROUND_LARGE) * ALLOC_ROUND_LARGE
    if size >= max_split or segment - size <= ALLOC_SMALL_SIZE:
        return segment
    return size


#: blocks an attention layer holds beyond the one its 16 bytes of scale buffers are counted in:
#: the four float32 scalar buffers ``_q/_k/_v/_prob_scale`` are four blocks, and
#: ``set_default_quant_scales`` (``layers/attention/attention.py``) also creates ``_k_scale_cpu``
#: and ``_v_scale_cpu`` under the loader's device context, i.e. on the GPU: two more
ATTENTION_EXTRA_BLOCKS = 5
#: blocks of the three float32 ``q_range`` / ``k_range`` / ``v_range`` scalars of a release whose
#: attention layers create them (:attr:`dryboot.vllm.versions.VersionRules.attention_range_scalars`)
ATTENTION_RANGE_BLOCKS = 3


def attention_range_blocks(version: str) -> int:
    """:data:`ATTENTION_RANGE_BLOCKS` where vLLM ``version``'s attention layers create
    ``q/k/v_range`` on the GPU (0.27.1; releases before it, refused by :func:`rules_for`, created
    them in ``Attention.__init__`` too), else 0 (0.28.0+)."""
    try:
        rules = rules_for(version)
    except InputError:  # older than the oldest table entry
        return ATTENTION_RANGE_BLOCKS
    return ATTENTION_RANGE_BLOCKS if rules.attention_range_scalars else 0


DTYPE_BYTES = {"float32": 4, "float16": 2, "bfloat16": 2, "float": 4, "half": 2}

#: the decoder architectures whose layers this module builds (Llama-style: attention + MLP or MoE)
ARCHITECTURES = {
    "LlamaForCausalLM": "llama",
    "MistralForCausalLM": "llama",
    "Qwen2ForCausalLM": "qwen2",
    "Qwen3ForCausalLM": "qwen3",
    "Qwen3MoeForCausalLM": "qwen3_moe",
    "Qwen2MoeForCausalLM": "qwen2_moe",
    "MixtralForCausalLM": "mixtral",
    "Gemma2ForCausalLM": "gemma2",
    "Gemma3ForCausalLM": "gemma3",
    "Gemma3ForConditionalGeneration": "gemma3_mm",
    # rnj1.py builds Gemma-3's text modules (Gemma3TextConfig); its chunked_attention layers read
    # their own rope_parameters entry (:func:`_gemma3_rotary_tables`)
    "Rnj1ForCausalLM": "gemma3",
    "Qwen3NextForCausalLM": "qwen3_next",
    "Qwen3_5ForConditionalGeneration": "qwen3_5",
    "Qwen3_5MoeForConditionalGeneration": "qwen3_5_moe",
    "Qwen3_5ForCausalLM": "qwen3_5_text",
    "Qwen3_5MoeForCausalLM": "qwen3_5_moe_text",
    "DeepseekV2ForCausalLM": "deepseek_v2",
    "DeepseekV3ForCausalLM": "deepseek_v2",
    "DeepseekV32ForCausalLM": "deepseek_v2",
    "Glm4MoeLiteForCausalLM": "glm4_moe_lite",
    "Glm4MoeForCausalLM": "glm4_moe",
    "NemotronHForCausalLM": "nemotron_h",
    "GraniteMoeHybridForCausalLM": "granitemoehybrid",
}
#: families with multi-head latent attention (``deepseek_v2.py`` ``DeepseekV2MLAAttention``;
#: ``glm4_moe_lite.py`` reuses it)
MLA_FAMILIES = {"deepseek_v2", "glm4_moe_lite"}
#: releases whose Qwen3.5 wrappers cache the multimodal RoPE table over ``max_position_embeddings``
#: only (0.32+ ``qwen3_vl.py`` ``mrope_positions_factor``: 4 only with multimodal pruning, which
#: dryboot does not take; 0.27.1-0.31.0: always 4); checked by the ModelOpt cases (96 MiB for
#: Qwen3.6-35B-A3B)
MROPE_TOKEN_POSITIONS = {"0.32.0", "0.33.0"}
#: the key a wrapper's text config carries into this walk when vLLM builds its decoder layers as
#: ``qwen3_vl.py``'s ``Qwen3VLDecoderLayer`` (Qwen3-VL, Qwen3-VL-MoE and the classes over them):
#: their multimodal RoPE follows :data:`MROPE_TOKEN_POSITIONS` as the Qwen3.5 wrappers' does
QWEN3_VL_DECODER = "_qwen3_vl_decoder"
#: vision-language wrappers: the text model of ``text_config`` and a vision tower of
#: ``vision_config`` (``models/qwen3_5.py`` over ``qwen3_vl.py``'s ``Qwen3_VisionTransformer``)
VL_WRAPPERS = {"qwen3_5", "qwen3_5_moe", "gemma3_mm"}
#: the tower's modalities: ``--limit-mm-per-prompt`` 0 for all of them skips it (``_mark_tower_model``;
#: Gemma-3's tower takes images only)
TOWER_MODALITIES = ("image", "video")
TOWER_MODALITIES_OF = {"gemma3_mm": ("image",)}
#: Gemma-3 (``gemma3.py``; ``gemma3_mm.py`` wraps its ``Gemma3ForCausalLM``): four norms per layer,
#: q/k norms, the embedding scaled by a ``normalizer`` buffer, a tied head, one rotary table per
#: distinct rope of its layer types (sliding / full attention)
GEMMA3_FAMILIES = {"gemma3", "gemma3_mm"}
#: architectures of the Gemma-3 walk recorded unquantized and from the config alone (no quantized
#: layout nor checkpoint mapping recorded: refused by name)
GEMMA3_CONFIG_ONLY = {"Rnj1ForCausalLM"}
#: ``Gemma3TextConfig``'s defaults (transformers 5.x, the boot environment's), for what a
#: ``text_config`` leaves out
GEMMA3_TEXT_DEFAULTS: dict[str, Any] = {
    "vocab_size": 262_208,
    "hidden_size": 2304,
    "intermediate_size": 9216,
    "num_hidden_layers": 26,
    "num_attention_heads": 8,
    "num_key_value_heads": 4,
    "head_dim": 256,
    "max_position_embeddings": 131_072,
    "tie_word_embeddings": True,
    "attention_bias": False,
}
#: ``SiglipVisionConfig``'s defaults (transformers 5.x)
SIGLIP_VISION_DEFAULTS: dict[str, Any] = {
    "hidden_size": 768,
    "intermediate_size": 3072,
    "num_hidden_layers": 12,
    "num_attention_heads": 12,
    "num_channels": 3,
    "image_size": 224,
    "patch_size": 16,
}
#: hybrid families whose linear-attention layers are Gated DeltaNet mixers
GDN_FAMILIES = {"qwen3_next", "qwen3_5", "qwen3_5_moe", "qwen3_5_text", "qwen3_5_moe_text"}
#: the text-only Qwen3.5 / 3.6 models (``Qwen3_5ForCausalLM``, ``Qwen3_5MoeForCausalLM``: one
#: ``Qwen3_5ForCausalLMBase`` whose decoder layers take a dense MLP or a sparse MoE block from the
#: config's model type): vLLM's ``Qwen3_5ForCausalLMConfig`` gives both one-dimensional positions
TEXT_ONLY_QWEN3_5 = {"qwen3_5_text", "qwen3_5_moe_text"}
#: dense hybrid families checked quantized (GPTQ, AWQ, AutoRound, compressed-tensors W4A16/W8A16,
#: W8A8 and NVFP4, ModelOpt): the text-only Qwen3.5 (``Qwen3_5ForCausalLM``, what an AutoRound
#: export of Qwen3.5/3.6 declares) and its vision-language wrapper (the tower left unquantized by
#: the checkpoint's ignore list)
DENSE_HYBRIDS = {"qwen3_5_text", "qwen3_5"}
#: the families whose weight-only integer (GPTQ / AWQ / AutoRound / compressed-tensors W4A16)
#: MoE experts are checked against vLLM (``quant_cases_moe.py``); Qwen2-MoE's attention and shared
#: expert too (its router and shared-expert gate are built unquantized), though it is in
#: :data:`UNQUANTIZED_ONLY` for every other method; the Gated DeltaNet MoE hybrids (Qwen3-Next,
#: Qwen3.5 / 3.6 MoE: their router gate and shared-expert gate built with ``quant_config=None``,
#: their layers' linear attention and shared expert quantized as the dense hybrids'); GLM-4.5
#: (its float32 router unquantized, in :data:`UNQUANTIZED_ONLY` for the other methods) and the MLA
#: families (GLM-4.7-Flash, DeepSeek-V2 / V3: :func:`_mla_attention`'s dequantized ``kv_b_proj``)
WNA16_MOE_FAMILIES = {
    "qwen3_moe",
    "mixtral",
    "qwen2_moe",
    "qwen3_next",
    "qwen3_5_moe",
    "qwen3_5_moe_text",
    "glm4_moe",
    *MLA_FAMILIES,
}
#: the families whose W8A8 / NVFP4 layouts after loading are checked against vLLM (dense
#: decoders; their MoE experts are refused by name)
SCALED_FAMILIES = {"llama", "qwen2", "qwen3", "nemotron_h", *DENSE_HYBRIDS, *GEMMA3_FAMILIES}
#: releases whose quantized Gemma-3 layouts are checked against vLLM (quant-recorded-*-fam.json)
GEMMA3_QUANT_RELEASES = ("0.27.1", "0.28.0", "0.29.0", "0.30.0", "0.31.0", "0.32.0", "0.33.0")
#: families checked under ModelOpt after loading, NVFP4 experts included: the dense decoders,
#: Qwen3-MoE (nvidia/Qwen3-30B-A3B-NVFP4), DeepSeek-V2 / V3's MLA + MoE (nvidia/DeepSeek-V3.1-NVFP4,
#: nvidia/DeepSeek-V3-0324-NVFP4; Kimi-K2.5's text model too), the Qwen3.5 MoE wrapper under
#: uniform NVFP4 (nvidia/Qwen3.5-122B-A10B-NVFP4: its tower excluded) and, under MIXED_PRECISION,
#: the Qwen3.5 / 3.6 MoE hybrid with its vision tower (nvidia/Qwen3.6-35B-A3B-NVFP4)
MODELOPT_FAMILIES = {"llama", "qwen2", "qwen3", "qwen3_moe", "deepseek_v2", "qwen3_5_moe"}
MODELOPT_MIXED_FAMILIES = {*MODELOPT_FAMILIES, "qwen3_5", "qwen3_5_moe", "nemotron_h"}

#: families whose pipeline stages are checked against vLLM (embedding on the first stage, final
#: norm and LM head on the last; a tied head on a later stage holds its own copy)
PP_FAMILIES = {
    "llama",
    "qwen2",
    "qwen3",
    "qwen3_moe",
    "qwen2_moe",
    "mixtral",
    "gemma2",
    "nemotron_h",
    "glm4_moe",
    "granitemoehybrid",
    *GEMMA3_FAMILIES,
    *GDN_FAMILIES,
    *MLA_FAMILIES,
}
#: families whose model class builds the embedding / the LM head / the final norm on every
#: pipeline stage, not only the first / last (0.28.0: no ``PPMissingLayer`` around them in
#: ``qwen3_moe.py``, ``mixtral.py``, ``gemma2.py``, ``gemma3.py``, ``qwen3_next.py``; ``qwen3_5.py``:
#: the embedding only; only the decoder layers split; a vision tower is on every stage)
NORM_ON_EVERY_STAGE = {
    "qwen3_moe",
    "qwen2_moe",
    "mixtral",
    "gemma2",
    "nemotron_h",
    "granitemoehybrid",
    *GEMMA3_FAMILIES,
}
#: the LM head: also Qwen3-Next's; the embedding: also every Gated DeltaNet family's
HEAD_ON_EVERY_STAGE = {*NORM_ON_EVERY_STAGE, "qwen3_next"}
EMBED_ON_EVERY_STAGE = {*NORM_ON_EVERY_STAGE, *GDN_FAMILIES}
#: families with one expert block per layer (``num_experts``, ``moe_intermediate_size``) or all
#: layers (Mixtral's ``num_local_experts``)
MOE_FAMILIES = {
    "qwen3_moe",
    "qwen2_moe",
    "mixtral",
    "qwen3_next",
    "qwen3_5_moe",
    "qwen3_5_moe_text",
    "glm4_moe",
    *MLA_FAMILIES,
}
#: families whose MoE blocks are DeepSeek-style: dense layers below ``first_k_dense_replace``, a
#: sigmoid gate with a float32 ``e_score_correction_bias``, ``n_shared_experts`` shared experts
#: (``glm4_moe.py`` ``Glm4MoE``: its gate an ``nn.Linear`` in float32)
DEEPSEEK_MOE_FAMILIES = {"glm4_moe", *MLA_FAMILIES}
GLM_MOE_FAMILIES = {"glm4_moe", "glm4_moe_lite"}
#: families with a shared expert beside the routed ones (``shared_expert_intermediate_size``)
SHARED_EXPERT_FAMILIES = {"qwen3_next", "qwen3_5_moe", "qwen3_5_moe_text", "qwen2_moe"}
#: families whose layouts are checked unquantized only (a quantized checkpoint is refused)
UNQUANTIZED_ONLY = {
    *(GDN_FAMILIES - DENSE_HYBRIDS),
    "glm4_moe",
    "qwen2_moe",
    "granitemoehybrid",
}
#: families whose checkpoint tensor names are not mapped (headers refused; the config's figure
#: is ``--load-format dummy``)
CONFIG_ONLY = {*VL_WRAPPERS, *TEXT_ONLY_QWEN3_5, "nemotron_h", "granitemoehybrid"}
#: ``GraniteMoeHybridConfig``'s defaults (transformers 5.x) for what a config leaves out, beyond
#: those the geometry reads (:data:`dryboot.vllm.models.granitemoehybrid.CONFIG_DEFAULTS`)
GRANITE_HYBRID_WEIGHT_DEFAULTS: dict[str, Any] = {
    "vocab_size": 32000,
    "intermediate_size": 11008,
    "tie_word_embeddings": False,
    "attention_bias": False,
    "num_local_experts": 8,
    "shared_intermediate_size": 1024,
    "position_embedding_type": None,
    "mamba_conv_bias": True,
    "mamba_proj_bias": False,
}

#: quantization methods whose loading vLLM 0.28.0 ends with a repacking whose peak and final
#: layout this module does not model (refused rather than guessed)
REFUSED_METHODS = {
    "mxfp4": "MXFP4 outside gpt-oss, DeepSeek-V4 and Kimi-K3 (vLLM's Mxfp4MoEMethod, padded per MoE backend: "
    "fused_moe/oracle/mxfp4.py) is not modelled",
    "bitsandbytes": "bitsandbytes layouts are not modelled",
    "gguf": "GGUF checkpoints are not modelled",
}


class MissingTensor(InputError):
    """A checkpoint that lacks a tensor its config implies: bad input (exit 2), never a weights
    figure the report states as not modelled."""


@dataclass(frozen=True)
class Quant:
    """The weight layout a checkpoint's quantization config asks for.

    ``method``: ``None`` (unquantized), ``"fp8"`` (vLLM's ``Fp8Config``), ``"modelopt"`` (ModelOpt
    FP8 per tensor) or ``"modelopt_fp4"`` (ModelOpt NVFP4). ``block``: fp8's ``weight_block_size``
    (``None``: one scale per tensor). ``static_input``: fp8 ``activation_scheme == "static"``.
    ``ignored``: module names left unquantized (ModelOpt ``exclude_modules`` / ``ignore``).
    """

    method: str | None = None
    block: tuple[int, int] | None = None
    static_input: bool = False
    ignored: tuple[str, ...] = ()
    group_size: int = 16
    #: GPTQ / AWQ / AutoRound: the weight-only integer scheme and the GPU serving it
    #: (:mod:`dryboot.vllm.model_executor.layers.quantization`)
    wna16: WNA16 | None = None
    #: W8A8 int8 / fp8 and NVFP4 after loading, on a named GPU
    #: (:mod:`dryboot.vllm.model_executor.layers.quantization.scaled_mm`)
    scaled: ScaledQuant | None = None
    #: bytes of one fp8 block scale: float32, or 1 where vLLM keeps e8m0 scales
    #: (``Fp8Config.is_scale_e8m0``: DeepSeek-V4's ``deepseek_v4_fp8`` with fp4 experts)
    block_scale_bytes: int = 4


@dataclass(frozen=True)
class Parallel:
    """One rank's place: ``tp`` ranks per stage, ``pp`` stages (this is stage ``pp_rank``),
    ``dp`` data-parallel ranks, ``expert_parallel`` (``--enable-expert-parallel``)."""

    tp: int = 1
    pp: int = 1
    pp_rank: int = 0
    dp: int = 1
    expert_parallel: bool = False
    pp_partition: tuple[int, ...] | None = None
    #: the GPU this rank runs on, where the layout depends on it (GPTQ/AWQ kernels): compute
    #: capability (major, minor) and multiprocessors (``None``: unknown)
    capability: tuple[int, int] | None = None
    sm_count: int | None = None
    #: the vLLM release serving it, where layouts differ by release (GPTQ/AWQ)
    vllm_version: str = "0.28.0"
    #: ``--kv-cache-dtype`` (``auto``: the checkpoint's own), where it picks an attention backend
    #: that allocates with the weights (FlashInfer's KV counter: :func:`_flashinfer_attention`)
    kv_cache_dtype: str = "auto"
    #: ``--attention-backend`` (``None``: vLLM's own choice for the GPU and KV cache dtype,
    #: :func:`_flashinfer_attention`), where it allocates with the weights (FlashInfer's KV counter)
    attention_backend: str | None = None
    #: ``--mm-encoder-tp-mode``: ``data`` builds a supporting class's tower whole on every TP rank
    #: (:func:`dryboot.vllm.config.mm_encoder_tp.whole_tower`)
    mm_encoder_tp_mode: str = "weights"
    #: ``--engram-config``'s ``cpu_offload`` (vLLM's default: true): Qwen4-Exp's PLE n-gram tables in pinned
    #: host memory (``Qwen4ExpPLEPinnedHostEmbedding``) rather than on the device
    engram_cpu_offload: bool = True
    #: the scheduler's ``max_num_seqs`` (``None``: not given), which sizes a sparse-MLA model's
    #: index-group workspace from 0.30.0 (:func:`sparse_mla_index_group_bytes`)
    max_num_seqs: int | None = None
    #: ``--speculative-config``'s ``num_speculative_tokens`` (0: none): a verification request's
    #: query length, 1 + it, sizes the same workspace
    num_speculative_tokens: int = 0
    #: whether ``flashinfer-cubin`` is installed (``--flashinfer-cubin``; vLLM's images: yes): without it
    #: FlashInfer's TRT-LLM attention is unusable offline, so FlashInfer takes no attention sinks
    #: (``FlashInferBackend.supports_sink``; :func:`_flashinfer_attention`)
    flashinfer_cubin: bool = True


@dataclass
class RankWeights:
    """What one rank allocates: ``param_bytes`` and ``buffer_bytes`` as tensors' sizes,
    ``allocated_bytes`` with each tensor rounded to the CUDA allocator's 512-byte blocks
    (the meta-device figure the fidelity oracle checks), ``by_kind``: parameter bytes per weight
    kind; ``source``: how the shapes were obtained; ``notes``: what the figure leaves out;
    ``load_segment_bytes``: what the allocator counts on top of ``allocated_bytes`` while vLLM
    loads (whole segments of the tensors it does not split: :func:`load_segment_bytes`), so
    ``loaded_bytes`` is ``Model loading took``."""

    param_bytes: int = 0
    buffer_bytes: int = 0
    allocated_bytes: int = 0
    by_kind: dict[str, int] = field(default_factory=dict)
    source: str = "config"
    notes: list[str] = field(default_factory=list)
    load_segment_bytes: int = 0
    lora_bytes: int = 0
    #: the walk asked whether vLLM 0.33.0's FlashInfer KV counter is built with it
    #: (:func:`_flashinfer_counter`); a walk that did not is refused where it would be
    #: (:func:`unmodelled_flashinfer_counter`)
    counter_checked: bool = False

    def add_lora(self, tensors: Iterable[LoRATensor]) -> None:
        """``--enable-lora``'s stacks and punica buffers (:func:`dryboot.vllm.lora.model_manager.lora_tensors`):
        allocated inside ``load_model``'s profiler, so part of ``Model loading took``;
        ``lora_bytes`` is their share of ``loaded_bytes`` (blocks and segments included)."""
        for t in tensors:
            before = self.loaded_bytes
            self.add("lora", t.nbytes, buffer=True)
            self.lora_bytes += self.loaded_bytes - before

    def add(self, kind: str, nbytes: int, *, buffer: bool = False) -> None:
        if buffer:
            self.buffer_bytes += nbytes
        else:
            self.param_bytes += nbytes
            self.by_kind[kind] = self.by_kind.get(kind, 0) + nbytes
        rounded = -(-nbytes // ALLOC_ROUND) * ALLOC_ROUND
        self.allocated_bytes += rounded
        self.load_segment_bytes += load_segment_bytes(nbytes) - rounded

    @property
    def total_bytes(self) -> int:
        return self.param_bytes + self.buffer_bytes

    @property
    def loaded_bytes(self) -> int:
        """``Model loading took`` in bytes: ``DeviceMemoryProfiler``'s allocated bytes after
        ``load_model`` less before it, the allocator's unsplit segments included."""
        return self.allocated_bytes + self.load_segment_bytes

    @property
    def gib(self) -> float:
        """``Model loading took`` as vLLM computes it (bytes / 2**30), from allocated blocks."""
        return self.loaded_bytes / GiB

    def log_line(self) -> str:
        """vLLM's line (``gpu_model_runner.py`` ``load_model``), with its two decimals."""
        return f"Model loading took {self.gib:.2f} GiB memory"


def _divide(n: int, d: int, what: str) -> int:
    if n % d:
        raise InputError("--tensor-parallel-size", None, f"{what} ({n}) is not divisible by {d}")
    return n // d


def padded_vocab_per_rank(vocab: int, tp: int, what: str = "the padded vocabulary") -> int:
    """Rows of a vocabulary-parallel embedding or head one rank holds: ``vocab`` padded to
    :data:`VOCAB_PADDING` (vLLM's ``pad_vocab_size``), divided over ``tp`` ranks.

    :raises InputError: ``tp`` does not divide the padded size (``what`` names it)."""
    return _divide(-(-vocab // VOCAB_PADDING) * VOCAB_PADDING, tp, what)


def dense_mlp_sizes(h: int, inter: int, tp: int, what: str = "intermediate_size", *, merged: bool = True) -> list[int]:
    """A gated MLP's tensors per rank, in elements: ``gate_up_proj`` ``[2 x inter / TP, h]`` and
    ``down_proj`` ``[h, inter / TP]`` (``MergedColumnParallelLinear``, ``RowParallelLinear``), or
    with ``merged=False`` separate ``gate_proj`` and ``up_proj`` ``[inter / TP, h]`` each.

    :raises InputError: ``inter`` (field ``what``) not divisible by TP."""
    i_r = _divide(inter, tp, what)
    return [2 * i_r * h, h * i_r] if merged else [i_r * h, i_r * h, h * i_r]


def kv_heads_per_rank(nkv: int, tp: int, field: str = "num_key_value_heads") -> int:
    """KV heads one rank holds (vLLM's ``QKVParallelLinear``): ``nkv / tp`` when there are at
    least ``tp`` heads, else one head replicated over ``tp / nkv`` ranks.

    :raises InputError: ``tp`` does not divide ``nkv``, or ``nkv`` does not divide ``tp``
        (``field``: the config's name for ``nkv``)."""
    if nkv >= tp:
        return _divide(nkv, tp, field)
    _divide(tp, nkv, f"the tensor parallel size over {field}")
    return 1


def _modelopt_producer(qc: Mapping[str, Any]) -> bool:
    """Whether vLLM reads a nested ``quantization`` object as ModelOpt's
    (``ModelArchConfigConvertor._normalize_quantization_config``, 0.27.1-0.33.0): ``producer.name``
    modelopt, or the legacy ``quantization.modelopt_quant_config``. Without either (the stripped
    ``hf_quant_config.json`` copies of the published Nemotron-3 Super / Ultra FP8 and NVFP4
    checkpoints) the config has no ``quant_method`` and vLLM builds the model unquantized."""
    producer = qc.get("producer")
    inner = qc.get("quantization")
    legacy = isinstance(inner, Mapping) and "modelopt_quant_config" in inner
    return (isinstance(producer, Mapping) and producer.get("name") == "modelopt") or legacy


def quant_from_config(config: Mapping[str, Any], hf_quant: Mapping[str, Any] | None) -> Quant:
    """The layout vLLM 0.28.0 builds for a config: ``config.json``'s ``quantization_config``, else
    ``hf_quant_config.json`` (``transformers_utils/config.py``: ModelOpt <= 0.29 wrote it there).

    :raises InputError: a quantization method in :data:`REFUSED_METHODS` or unknown.
    """
    qc = config.get("quantization_config")
    if qc is None:
        qc = hf_quant
    if not isinstance(qc, Mapping):
        return Quant()
    method = qc.get("quant_method")
    algo = None
    ignored: tuple[str, ...] = ()
    if isinstance(qc.get("quantization"), Mapping) and _modelopt_producer(qc):  # ModelOpt's hf_quant_config.json
        inner = qc["quantization"]
        algo = inner.get("quant_algo")
        ignored = tuple(str(x) for x in inner.get("exclude_modules") or ())
        method = method or "modelopt"
        missing = [k for k in ("group_size", "kv_cache_quant_algo", "exclude_modules") if k not in inner]
        if "NVFP4" in str(algo).upper() and missing:
            # ModelOptNvFp4Config._from_config (0.27.1-0.33.0): vLLM refuses the nested form without them
            raise InputError(
                "hf_quant_config.json",
                "quantization",
                f"NVFP4 quantization requires the following fields: {missing} (vLLM refuses it)",
            )
    elif method == "modelopt":
        algo = qc.get("quant_algo")
        ignored = tuple(str(x) for x in qc.get("ignore") or qc.get("exclude_modules") or ())
    if method is None:
        # no quant_method: vLLM 0.28.0 builds the model unquantized (recorded by the oracle)
        return Quant()
    method = str(method).lower()
    wna16 = wna16_from_config(method, qc)
    if wna16 is not None:
        return Quant(method, wna16=wna16)
    if method == "compressed-tensors" and mxfp4_rewritten(config, qc):
        raise InputError(
            "quantization_config",
            "format",
            "mxfp4-pack-quantized: vLLM 0.27.1-0.33.0 serve Kimi-K3's compressed-tensors MXFP4 experts as "
            f"quant_method mxfp4 (KimiK3ForConditionalGenerationConfig), and {REFUSED_METHODS['mxfp4']}",
        )
    if method == "compressed-tensors":
        return Quant(method, scaled=ct_scaled_from_config(qc))
    if method in REFUSED_METHODS:
        raise InputError("quantization_config", "quant_method", f"{method}: {REFUSED_METHODS[method]}")
    if method == "fp8":
        block = qc.get("weight_block_size")
        return Quant(
            "fp8",
            tuple(int(b) for b in block) if block else None,  # type: ignore[arg-type]
            static_input=qc.get("activation_scheme") == "static",
            ignored=tuple(str(x) for x in qc.get("ignored_layers") or qc.get("modules_to_not_convert") or ()),
        )
    if method in ("modelopt", "modelopt_mixed") and str(algo).upper() == "MIXED_PRECISION":
        return Quant("modelopt_mixed", scaled=_modelopt_mixed(qc, ignored, hf_quant))
    if method == "modelopt" and str(algo).upper() == "FP8":
        return Quant("modelopt", ignored=ignored)
    if method in ("modelopt", "modelopt_fp4") and str(algo).upper() == "NVFP4":
        group = qc.get("group_size") or (qc.get("quantization") or {}).get("group_size") or 16
        return Quant("modelopt_fp4", ignored=ignored, group_size=int(group))
    raise InputError("quantization_config", "quant_method", f"{method} ({algo}) is not modelled")


def mxfp4_rewritten(config: Mapping[str, Any], qc: Any) -> bool:
    """Whether vLLM's config hook rewrites the compressed-tensors config ``qc`` to ``quant_method``
    ``mxfp4`` before it is resolved (``models/config.py`` ``KimiK3ForConditionalGenerationConfig``,
    0.27.1-0.33.0: a Kimi-K3 checkpoint whose ``format`` is ``mxfp4-pack-quantized``; ``Mxfp4Config``
    then quantizes the routed experts only). The Kimi-K3 family's walk sizes it
    (:mod:`dryboot.vllm.model_executor.models.kimi_linear`); every other reader refuses it."""
    archs = config.get("architectures")
    kimi_k3 = isinstance(archs, list) and "KimiK3ForConditionalGeneration" in archs
    return (
        kimi_k3
        and isinstance(qc, Mapping)
        and qc.get("quant_method") == "compressed-tensors"
        and qc.get("format") == "mxfp4-pack-quantized"
    )


def _modelopt_mixed(
    qc: Mapping[str, Any], ignored: tuple[str, ...], hf_quant: Mapping[str, Any] | None
) -> ModelOptQuant:
    """The MIXED_PRECISION layout of ``qc``; a ``config.json`` ``quantization_config`` without the
    per-layer ``quantized_layers`` map takes the whole config from ``hf_quant_config.json``
    (``hf_quant``) instead, as vLLM does (0.27.1-0.33.0 ``model_loader/weight_utils.py``
    ``get_quant_config``: for ``modelopt_mixed`` it falls through to the file-based loading).

    :raises InputError: no map in either file (vLLM refuses it), or a bad entry (named)."""
    if "quantized_layers" not in qc and "quantization" not in qc and isinstance(hf_quant, Mapping):
        inner = hf_quant.get("quantization")
        source = inner if isinstance(inner, Mapping) else hf_quant
        excluded = source.get("exclude_modules") or source.get("ignore") or ()
        return modelopt_mixed_from_config(hf_quant, tuple(str(x) for x in excluded))
    return modelopt_mixed_from_config(qc, ignored)


def _layers_quantized_alike(quant: Quant) -> bool:
    """Whether every decoder layer's linear layers take the same method: no weight-only integer
    scheme (those are chosen per layer name) and no ignore-list entry that can tell one decoder
    layer from another (:func:`layer_specific_entry`), in the config's list (plain fp8, ModelOpt)
    or the post-load layout's (compressed-tensors ``ignore``: a ``re:`` pattern on one layer)."""
    if quant.wna16 is not None or quant.method == "modelopt_mixed":
        return False
    entries = (*quant.ignored, *(quant.scaled.ignore if quant.scaled is not None else ()))
    return not any(layer_specific_entry(i) for i in entries)


def layer_specific_entry(entry: str) -> bool:
    """Whether an ignore-list entry may match some decoder layers and not others: it names
    ``layers``, holds a digit (a layer index), is a ``re:`` pattern, or holds ``?`` / ``[``
    (``fnmatch``'s one-character wildcards). ``lm_head``, ``mtp*``, ``model.visual*`` do not."""
    return entry.startswith("re:") or "layers" in entry or any(c.isdigit() or c in "?[" for c in entry)


def _is_ignored(quant: Quant, name: str) -> bool:
    """Whether the config of plain fp8 or ModelOpt (without a GPU: the layout vLLM creates) leaves
    vLLM's layer ``name`` unquantized, by the method's own matching: ``Fp8Config``'s
    ``modules_to_not_convert`` / ``ignored_layers`` by exact name (``is_layer_skipped``: a fused
    layer by its own name or all its shards; a prefix such as ``model.layers.0.mlp`` names no
    layer), ModelOpt's ``exclude_modules`` by ``is_layer_excluded`` (substrings, wildcards)
    (:mod:`dryboot.vllm.model_executor.layers.quantization.utils.quant_utils`). Other methods
    carry their lists in their own layouts (:class:`ScaledQuant`, :class:`WNA16`).

    :raises InputError: some but not all shards of a fused layer named (vLLM refuses it)."""
    if not quant.ignored:
        return False
    if quant.method == "fp8":
        return is_layer_skipped(name, quant.ignored)
    if quant.method in ("modelopt", "modelopt_fp4"):
        return is_layer_excluded(name, exclude_names(quant.ignored))
    return False


def linear_bytes(
    quant: Quant,
    k: int,
    parts: tuple[int, ...],
    act_bytes: int,
    *,
    tp: int = 1,
    split: str = "column",
    mismatch_allowed: bool = True,
) -> list[tuple[str, int]]:
    """The tensors one linear layer's quant method creates on a rank: ``k`` input features and
    output ``parts`` (a merged layer's logical shards, per rank), as (kind, bytes).
    ``mismatch_allowed``: a column-parallel layer of several parts with one off the block skips
    vLLM's block check (``Fp8Config``'s ``weight_block_size``, read by ``linear.py``
    ``_maybe_allow_fp8_block_shape_mismatch``); ``False`` for compressed-tensors' fp8 blocks, whose
    config has no such attribute, so every such layer is checked.

    Unquantized: ``[sum(parts), k]`` in the model dtype. fp8 (``Fp8LinearMethod``): fp8 weight
    plus, with ``weight_block_size`` ``[bn, bk]``, float32 ``weight_scale_inv``
    ``[ceil(N / bn), ceil(k / bk)]`` (e8m0 under ``block_scale_bytes`` 1), else
    one float32 ``weight_scale`` (and ``input_scale`` when static) per part. ModelOpt FP8: fp8
    weight, float32 ``weight_scale`` and ``input_scale`` per part. ModelOpt NVFP4: uint8 weight
    ``[N, k / 2]``, fp8 ``weight_scale`` ``[N, k / 16]``, float32 ``weight_scale_2`` and
    ``input_scale`` per part.

    ``split``: how the layer divides over ``tp`` ranks: ``column`` (output), ``row`` (input),
    ``replicated``; fp8 blocks are validated as ``fp8_utils.validate_fp8_block_shape`` does: a
    row-split input must divide by ``bk``; a column-split layer's every part, or a merged layer's
    parts but the last, by ``bn``.

    :raises InputError: vLLM's own refusal of a block size that does not divide the shard.
    """
    n = sum(parts)
    if quant.method is None:
        return [("weight", n * k * act_bytes)]
    if quant.method == "fp8":
        if quant.block is None:
            out = [("weight", n * k), ("scale", 4 * len(parts))]
            if quant.static_input:
                out.append(("scale", 4 * len(parts)))
            return out
        bn, bk = quant.block
        split_out = tp > 1 and split == "column"
        # a column-parallel layer of several parts (QKVParallelLinear, MergedColumnParallelLinear)
        # with any part off the block skips vLLM's check (linear.py
        # _maybe_allow_fp8_block_shape_mismatch, 0.27.1-0.33.0): the check never refuses it
        skipped = mismatch_allowed and split == "column" and len(parts) > 1
        checked = () if skipped else parts if split_out else parts[:-1]
        for p in checked:
            if p % bn:
                raise InputError(
                    "--tensor-parallel-size",
                    None,
                    f"an fp8 weight's output size per rank ({p}) is not divisible by weight_block_size n = {bn} "
                    "(vLLM refuses this TP size)",
                )
        if k % bk and tp > 1 and split == "row":
            raise InputError(
                "--tensor-parallel-size",
                None,
                f"an fp8 weight's input size per rank ({k}) is not divisible by weight_block_size k = {bk}",
            )
        return [("weight", n * k), ("scale", quant.block_scale_bytes * math.ceil(n / bn) * math.ceil(k / bk))]
    if quant.method == "modelopt":
        return [("weight", n * k), ("scale", 4 * len(parts)), ("scale", 4 * len(parts))]
    if quant.method == "modelopt_fp4":
        g = quant.group_size
        return [("weight", n * k // 2), ("scale", n * k // g), ("scale", 4 * len(parts)), ("scale", 4 * len(parts))]
    raise AssertionError(quant.method)  # pragma: no cover - quant_from_config refuses the rest


def experts_bytes(quant: Quant, e: int, h: int, i: int, act_bytes: int) -> list[tuple[str, int]]:
    """The tensors a ``FusedMoE`` layer's quant method creates on a rank: ``e`` local experts,
    hidden ``h``, intermediate ``i`` per rank; ``w13`` ``[e, 2i, h]`` and ``w2`` ``[e, h, i]``.

    fp8 block: float32 ``w13_weight_scale_inv`` ``[e, ceil(2i / bn), ceil(h / bk)]`` and ``w2``'s
    ``[e, ceil(h / bn), ceil(i / bk)]`` (``i`` must divide by ``bn``: vLLM's refusal). ModelOpt
    NVFP4 (``ModelOptNvFp4FusedMoE``): packed uint8 weights, fp8 group scales, float32
    ``w13_weight_scale_2`` / ``w13_input_scale`` ``[e, 2]`` and ``w2``'s ``[e]``.
    """
    w13, w2 = e * 2 * i * h, e * h * i
    if quant.scaled is not None:
        raise InputError(
            "quantization_config",
            "quant_method",
            f"{quant.method} W8A8/NVFP4 MoE experts after loading (per-backend shuffles and padding) are not modelled",
        )
    if quant.wna16 is not None:
        raise InputError("quantization_config", "quant_method", f"{quant.method} MoE experts are not modelled")
    if quant.method is None:
        return [("experts", w13 * act_bytes), ("experts", w2 * act_bytes)]
    # the float32 per-expert scalars: w13's [e, 2] and w2's [e]
    pair = [("scale", 4 * e * 2), ("scale", 4 * e)]
    if quant.method == "fp8":
        if quant.block is None:
            return [("experts", w13), ("experts", w2), *pair, *(pair if quant.static_input else [])]
        bn, bk = quant.block
        if (2 * i) % bn or i % bn:
            raise InputError(
                "--tensor-parallel-size",
                None,
                f"the experts' gate/up output size per rank ({2 * i}) is not divisible by weight_block_size n = {bn} "
                "(vLLM refuses this TP size)",
            )
        return [
            ("experts", w13),
            ("experts", w2),
            ("scale", 4 * e * math.ceil(2 * i / bn) * math.ceil(h / bk)),
            ("scale", 4 * e * math.ceil(h / bn) * math.ceil(i / bk)),
        ]
    if quant.method == "modelopt":
        return [("experts", w13), ("experts", w2), *pair, *pair]
    if quant.method == "modelopt_fp4":
        g = quant.group_size
        return [("experts", w13 // 2), ("experts", w2 // 2), ("scale", w13 // g), ("scale", w2 // g), *pair, *pair]
    raise AssertionError(quant.method)  # pragma: no cover


def pp_layers(num_layers: int, par: Parallel) -> range:
    """The decoder layers of stage ``pp_rank`` (``vllm/distributed/utils.py::get_pp_indices``):
    ``VLLM_PP_LAYER_PARTITION`` when given, else ``num_layers // pp`` each, the remainder one layer
    each to the stages before the last, from the second-to-last backwards."""
    if par.pp_partition is not None:
        if len(par.pp_partition) != par.pp or sum(par.pp_partition) != num_layers:
            raise InputError(
                "VLLM_PP_LAYER_PARTITION", None, f"does not split {num_layers} layers into {par.pp} stages"
            )
        start = sum(par.pp_partition[: par.pp_rank])
        return range(start, start + par.pp_partition[par.pp_rank])
    per = num_layers // par.pp
    extra = num_layers % par.pp
    sizes = [per] * par.pp
    for i in range(2, extra + 2):
        sizes[par.pp - i] += 1
    start = sum(sizes[: par.pp_rank])
    return range(start, start + sizes[par.pp_rank])


def _counts_layers(key: str) -> bool:
    """Whether ``key`` counts layers or blocks (``num_hidden_layers``, a tower's ``depth``...): the
    walks build one entry per layer, so such a count is bounded like the geometry's."""
    return key == "depth" or key.endswith(("layers", "blocks", "layers_enc", "layers_per_stack"))


def _int(config: Mapping[str, Any], key: str, default: int | None = None) -> int:
    """The non-negative integer ``config[key]`` (``default`` where absent).

    :raises InputError: missing or not a non-negative integer; a layer or block count above
        :data:`~dryboot.vllm.models.common.MAX_LAYERS`."""
    v = config.get(key, default)
    if type(v) is not int or v < 0:
        raise InputError("config.json", key, f"missing or not a non-negative integer ({v!r})")
    if v > MAX_LAYERS and _counts_layers(key):
        raise InputError("config.json", key, f"{v:,} is more layers than dryboot plans ({MAX_LAYERS:,})")
    return v


def model_dtype_name(config: Mapping[str, Any], dtype: str = "auto") -> str:
    """The model dtype's name (``--dtype``; ``auto``: the config's ``torch_dtype`` / ``dtype``,
    float32 checkpoints served as bfloat16 as vLLM 0.28 does), e.g. ``bfloat16``.

    :raises InputError: a dtype dryboot does not model."""
    name = dtype if dtype != "auto" else str(config.get("torch_dtype") or config.get("dtype") or "bfloat16")
    name = name.replace("torch.", "")
    if name == "float32" and dtype == "auto":
        name = "bfloat16"
    if name not in DTYPE_BYTES:
        if dtype != "auto":
            raise InputError("--dtype", None, f"{name!r} is not a model dtype dryboot models")
        field = "torch_dtype" if config.get("torch_dtype") else "dtype"
        raise InputError("config.json", field, f"{name!r} is not a model dtype dryboot models")
    return name


def model_dtype_bytes(config: Mapping[str, Any], dtype: str = "auto") -> int:
    """Bytes per element of the model dtype (:func:`model_dtype_name`)."""
    return DTYPE_BYTES[model_dtype_name(config, dtype)]


#: checkpoint tensors vLLM's loaders skip (``load_weights``: rotary tables some exporters save)
SKIPPED_SUFFIXES = ("rotary_emb.inv_freq", "rotary_emb.cos_cached", "rotary_emb.sin_cached")
#: per-part scalars vLLM keeps whole on every rank (per-tensor fp8 / ModelOpt scales)
SCALAR_SUFFIXES = ("weight_scale_2", "input_scale", "k_scale", "v_scale", "q_scale", "prob_scale")
#: the attention layer's own scales: a checkpoint's copies load into ``Attention``'s parameters
ATTENTION_SCALES = ("k_scale", "v_scale", "q_scale", "prob_scale")
_FLOAT = ("BF16", "F16", "F32")


class _Checkpoint:
    """The checkpoint source of the walk: a checkpoint's tensors grouped by module (the name
    up to its last dot), each taken at most once by the module of vLLM's that loads it, sharded
    as that module shards it. What no module takes is refused by name (:meth:`leftover`)."""

    def __init__(self, tensors: Mapping[str, Any], tp: int, ab: int, nkv: int) -> None:
        self.tp, self.ab, self.nkv = tp, ab, nkv
        self.modules: dict[str, list[tuple[str, str, Any]]] = {}
        for name, t in tensors.items():
            prefix, _, suffix = name.rpartition(".")
            self.modules.setdefault(prefix, []).append((suffix, name, t))
        self.taken: set[str] = set()
        self.tensors = tensors
        self.names = tensors.keys()

    def take(
        self, prefix: str, mode: str, label: str, *, count: bool = True, elem: int | None = None
    ) -> list[tuple[str, int]]:
        """The bytes on this rank of module ``prefix``'s tensors, as (kind, bytes) labelled
        ``label`` (``scale`` for scales, ``bias`` for a linear layer's bias). ``mode``: how vLLM
        shards them: ``column`` (output rows / TP), ``row`` (input columns / TP, bias whole),
        ``kv`` (one KV head's rows: KV heads replicated below TP), ``vocab`` (rows padded to 64,
        then / TP), ``whole``. ``count=False``: taken (loaded elsewhere or on no rank), not counted.
        ``prefix`` may also name one tensor (a module's own parameter, e.g. ``linear_attn.A_log``);
        ``elem``: bytes per element of vLLM's parameter (default: the model dtype for floats)."""
        out: list[tuple[str, int]] = []
        group = list(self.modules.get(prefix, ()))
        if prefix in self.tensors:
            group.append((prefix.rpartition(".")[2], prefix, self.tensors[prefix]))
        for suffix, name, t in group:
            if name in self.taken or (mode == "attention scales" and suffix not in ATTENTION_SCALES):
                continue  # each tensor is taken once (a parameter named alone before its module)
            self.taken.add(name)
            if not count or mode == "attention scales" or suffix in ATTENTION_SCALES:
                continue  # the attention layer's own scale parameters are counted by the walk
            shape = list(t.shape)
            nbytes: float = self.ab if t.dtype in _FLOAT and "scale" not in suffix else ST_BYTES[t.dtype]
            if elem is not None:
                nbytes = elem
            if suffix in SCALAR_SUFFIXES or not shape:
                pass
            elif mode == "column":
                _shard(shape, 0, self.tp, name)
            elif mode == "kv":
                shape[0] //= self.nkv
            elif mode == "row" and suffix != "bias" and len(shape) > 1:
                _shard(shape, 1, self.tp, name)
            elif mode == "vocab":
                shape[0] = -(-shape[0] // VOCAB_PADDING) * VOCAB_PADDING // self.tp
            if "scale" in suffix:
                kind = "scale"
            elif suffix == "bias" and label in ("attention", "mlp"):
                kind = "bias"
            else:
                kind = label
            out.append((kind, math.ceil(math.prod(shape) * nbytes)))
        return out

    def require(self, prefixes: Iterable[str]) -> None:
        """Refuse a module the config implies of which the checkpoint holds no tensor (a module
        is a tensor's name up to its last dot, or one tensor's name): the headers' sum would
        leave out what vLLM allocates for it (vLLM's loader refuses a checkpoint that leaves a
        parameter uninitialized, except those of layers with a quantization method).

        :raises MissingTensor: naming the first missing module.
        """
        for prefix in prefixes:
            if prefix not in self.modules and prefix not in self.tensors:
                raise MissingTensor(
                    "safetensors headers",
                    prefix,
                    "no such tensor, though the config implies it: the checkpoint does not hold the config's "
                    "model (or is cut)",
                )

    def leftover(self, layers: range, n_experts: int) -> None:
        """Refuse, by name, the first tensor no module of this rank's walk took (tensors of
        another stage's layers and the rotary tables vLLM skips are left aside)."""
        for name in self.names:
            if name in self.taken or name.endswith(SKIPPED_SUFFIXES):
                continue
            parts = name.split(".")
            if name.startswith("model.layers.") and parts[2].isdigit() and int(parts[2]) not in layers:
                continue
            if "experts" in parts[:-1]:
                idx = parts[parts.index("experts") + 1]
                if not idx.isdigit():
                    raise InputError(name, None, "fused expert tensors are not sharded by dryboot yet")
                if int(idx) >= n_experts:
                    raise InputError(name, None, f"expert {idx} beyond the config's {n_experts}")
            raise InputError(name, None, "a weight kind dryboot does not shard")


def _shard(shape: list[int], axis: int, tp: int, name: str) -> None:
    if shape[axis] % tp:
        raise InputError(name, None, f"dimension {shape[axis]} not divisible by the tensor parallel size {tp}")
    shape[axis] //= tp


class _Walk:
    """One rank's layers, visited once; each module's bytes come from the config's shapes (the
    layout vLLM allocates, always computed: it carries vLLM's refusals and the allocator's
    rounding) and, given a checkpoint, from the checkpoint's own tensors."""

    def __init__(self, ckpt: _Checkpoint | None, vllm_version: str = "0.28.0") -> None:
        #: blocks each attention layer holds beyond its 16 bytes of scale buffers, as built
        #: (:data:`ATTENTION_EXTRA_BLOCKS`, with the release's ``q/k/v_range`` scalars)
        self.range_blocks = attention_range_blocks(vllm_version)
        self.attention_blocks = ATTENTION_EXTRA_BLOCKS + self.range_blocks
        self.ref = RankWeights(source="config")
        self.ckpt = ckpt
        self.out = RankWeights(source="checkpoint headers") if ckpt is not None else self.ref
        self._layers: dict[Hashable, tuple[tuple[int, int, int, int, tuple[tuple[str, int], ...]], bool]] = {}

    def module(
        self,
        entries: list[tuple[str, int]],
        label: str,
        hf: tuple[tuple[str, str] | tuple[str, str, int], ...] = (),
        *,
        present: bool = True,
    ) -> None:
        """A module of vLLM's: ``entries`` (kind, bytes) of its tensors by the config (kind
        ``weight`` is labelled ``label``), ``hf``: the checkpoint modules (prefix, shard mode)
        it loads, with the bytes per element vLLM's parameter holds when not the model dtype
        (``A_log``: float32). ``present=False``: not on this rank (the checkpoint's tensors are taken, not
        counted)."""
        if present:
            for kind, b in entries:
                self.ref.add(label if kind == "weight" else kind, b)
        if self.ckpt is not None:
            if present and entries:
                self.ckpt.require(prefix for prefix, mode, *_ in hf if mode != "attention scales")
            for prefix, mode, *elem in hf:
                for kind, b in self.ckpt.take(prefix, mode, label, count=present, elem=elem[0] if elem else None):
                    self.out.add(kind, b)

    def own(self, kind: str, nbytes: int, *, buffer: bool = False) -> None:
        """What vLLM builds that no checkpoint holds (attention scale parameters, buffers)."""
        self.ref.add(kind, nbytes, buffer=buffer)
        if self.ckpt is not None and not buffer:
            self.out.add(kind, nbytes)

    def ends(self, par: Parallel, vocab_r: int, h: int, ab: int) -> None:
        """A decoder's ends built whole per rank (``VocabParallelEmbedding`` on the first stage;
        the untied ``ParallelLMHead`` and the final norm on the last): ``vocab_r`` padded rows
        per rank of ``h`` elements, ``ab`` bytes each."""
        if par.pp_rank == 0:
            self.own("embedding", vocab_r * h * ab)
        if par.pp_rank == par.pp - 1:
            self.own("lm_head", vocab_r * h * ab)
            self.own("norm", h * ab)

    def attention_layer(self, sizes: Iterable[int], ab: int) -> None:
        """One decoder layer's tensors of ``sizes`` elements each in ``ab`` bytes (norms,
        projections, MLP), then its ``Attention``'s scale parameters and buffers
        (``set_default_quant_scales``: 16 bytes and :attr:`attention_blocks` blocks)."""
        for n in sizes:
            self.own("weight", n * ab)
        self.own("attention scales", 16, buffer=True)
        self.ref.allocated_bytes += self.attention_blocks * ALLOC_ROUND

    def experts(self, e: int, h: int, inter: int, par: Parallel, ab: int, what: str) -> None:
        """An unquantized ``FusedMoE`` layer's experts on the rank (:func:`experts_per_rank`,
        :func:`experts_bytes`: ``w13`` / ``w2`` over hidden ``h``; ``inter``: the config's
        ``what``) and, under expert parallelism, its int32 expert map ``[e]`` (a buffer).

        :raises InputError: ``inter`` TP does not divide."""
        e_r, i_r = experts_per_rank(e, inter, par.tp, par, what)
        for kind, nbytes in experts_bytes(Quant(), e_r, h, i_r, ab):
            self.own(kind, nbytes)
        if par.expert_parallel:
            self.own("expert map", 4 * e, buffer=True)

    def layer(self, kind: Hashable, build: Callable[[], bool]) -> bool:
        """One decoder layer: ``build()`` adds its modules and says whether it holds attention.
        A layer of a ``kind`` (not ``None``) this walk built before adds what that one added,
        without building it again: without a checkpoint a layer's bytes follow from the config's
        shapes, so layers of one kind add the same (48 MoE layers: one built, 47 added)."""
        if kind is None or self.ckpt is not None:
            return build()
        r = self.ref
        seen = self._layers.get(kind)
        if seen is not None:
            (param, buffer, allocated, segments, kinds), attention = seen
            r.param_bytes += param
            r.buffer_bytes += buffer
            r.allocated_bytes += allocated
            r.load_segment_bytes += segments
            for k, b in kinds:
                r.by_kind[k] = r.by_kind.get(k, 0) + b
            return attention
        before = (r.param_bytes, r.buffer_bytes, r.allocated_bytes, r.load_segment_bytes, dict(r.by_kind))
        attention = build()
        kinds = tuple((k, b - before[4].get(k, 0)) for k, b in r.by_kind.items())
        added = (
            r.param_bytes - before[0],
            r.buffer_bytes - before[1],
            r.allocated_bytes - before[2],
            r.load_segment_bytes - before[3],
            kinds,
        )
        self._layers[kind] = (added, attention)
        return attention

    def result(self) -> RankWeights:
        if self.ckpt is None:
            return self.ref
        out = self.out
        out.buffer_bytes = self.ref.buffer_bytes
        # vLLM allocates merged parameters (qkv, gate_up, w13): the allocator's rounding is the
        # config layout's, applied to the checkpoint's bytes
        out.allocated_bytes = out.param_bytes + (self.ref.allocated_bytes - self.ref.param_bytes)
        out.load_segment_bytes = self.ref.load_segment_bytes
        out.counter_checked = self.ref.counter_checked
        return out


def rank_weights(
    config: Mapping[str, Any],
    par: Parallel,
    *,
    hf_quant: Mapping[str, Any] | None = None,
    dtype: str = "auto",
    language_model_only: bool = False,
    limit_mm_per_prompt: Mapping[str, int] | None = None,
    max_num_batched_tokens: int | None = None,
    tensors: Mapping[str, Any] | None = None,
    max_model_len: int | None = None,
    image_norm_channels: int = 0,
) -> RankWeights:
    """What one rank allocates for the model of ``config`` (a ``config.json`` dict).
    ``max_num_batched_tokens``: the scheduler's, for a model that allocates a buffer of that many
    rows with its weights (DeepSeek-V3.2's top-k indices; refused without it).
    ``max_model_len``: the engine's, for a model whose rotary table spans it (Cohere Compass's
    text layers; refused without it).
    ``language_model_only`` (``--language-model-only``) or ``limit_mm_per_prompt`` 0 for every
    modality of a tower (``--limit-mm-per-prompt``): a vision-language model without its tower.
    ``tensors``: a checkpoint's own tensors, sharded by the same walk
    (:func:`checkpoint_rank_weights`).
    ``image_norm_channels``: the checkpoint's device-side image normalization, for a tower that
    builds it (:class:`WalkArgs`; ``model_loader/loader.py`` ``image_norm_channels`` reads it).

    :raises InputError: an architecture outside :data:`ARCHITECTURES` (named), a quantization
        method not modelled, or a TP size vLLM refuses (heads, vocab or blocks not divisible).
    """
    return _guarded(
        config,
        par,
        hf_quant,
        dtype,
        tensors,
        _no_tower(config, language_model_only, limit_mm_per_prompt),
        max_num_batched_tokens,
        frozenset(m for m, n in (limit_mm_per_prompt or {}).items() if n == 0),
        max_model_len,
        image_norm_channels,
    )


class RankOptions(TypedDict, total=False):
    """The keyword options of :func:`rank_weights`, which :func:`checkpoint_rank_weights` takes too."""

    hf_quant: Mapping[str, Any] | None
    dtype: str
    language_model_only: bool
    limit_mm_per_prompt: Mapping[str, int] | None
    max_num_batched_tokens: int | None
    max_model_len: int | None
    image_norm_channels: int


def checkpoint_rank_weights(
    tensors: Mapping[str, Any], config: Mapping[str, Any], par: Parallel, **options: Unpack[RankOptions]
) -> RankWeights:
    """What one rank allocates, from a checkpoint's own tensors (names, dtypes, shapes of its
    safetensors headers) sharded by the rules of :func:`rank_weights` (the same walk), plus
    what vLLM builds that no checkpoint holds (the rotary table, the attention layers' scale
    parameters and buffers). ``tensors``: name -> object with ``dtype`` (safetensors name),
    ``shape``.

    Unquantized tensors are counted in the model dtype (vLLM copies into parameters of that
    dtype); fp8/uint8 weights and float32 scales keep theirs. The LM head is skipped under
    ``tie_word_embeddings`` (vLLM ties it to the embedding and skips ``lm_head.*``).

    :raises InputError: a tensor whose kind this module does not shard (named), or what
        :func:`rank_weights` refuses for the config.
    """
    return rank_weights(config, par, tensors=tensors, **options)


#: architecture -> {release: what differs}: releases whose model class builds other weights than
#: dryboot's family (found against that release's own model class on the meta device,
#: ``tests/fidelity/data/weights/recorded-<release>-sweep.json``), refused by name until modelled.
#: (LongCat-Flash on 0.31.0, 56 layers built from the 2-layer tiny config, is read as that release
#: reads it: ``longcat_flash.walk``, switch ``longcat_hidden_layers_field``; the timm wrappers are
#: recorded in each release's ``-mm`` boot environment.) Kimi-K3 (0.27.1-0.33.0) is recorded on every
#: release that serves it. HY V4's KV cache and weights are recorded on 0.29.0-0.33.0 (0.29.0 /
#: 0.30.0: every layer dense MLA).
RELEASE_UNCHECKED: dict[str, dict[str, str]] = {
    "Glm5NextForCausalLM": {
        v: "its own Glm5NextTextConfig leaves layer_types unset, so every layer is built MLA (no KDA layer); "
        "not recorded"
        for v in ("0.30.0", "0.31.0")
    },
}


#: releases whose Transformers modeling backend every modelled family's walk follows (recorded for
#: every modelled architecture: ``recorded-<release>-sweep.json``; 0.27.1 / 0.28.0 by
#: ``recorded-<release>.json``; 0.29.0 by ``recorded-0.29.0-backend.json``, every flag set of the
#: backend's architectures' tiny configs)
TRANSFORMERS_BACKEND_CHECKED = ("0.27.1", "0.28.0", "0.29.0", "0.30.0", "0.31.0", "0.32.0", "0.33.0")
#: of those, the releases whose backend the families model for architectures 0.28.0 serves with a
#: class of its own (``compose.on_backend``, ``compose.backend_layout``)
TRANSFORMERS_BACKEND_SWEPT = ("0.29.0", "0.30.0", "0.31.0", "0.32.0", "0.33.0")
#: architectures whose family sizes the Transformers backend of a release beyond those, as that
#: release builds it (recorded: HunYuan-VL on 0.29.0, ``recorded-0.29.0-hunyuan-vl.json``)
TRANSFORMERS_BACKEND_OWN: dict[str, tuple[str, ...]] = {"HunYuanVLForConditionalGeneration": ("0.29.0",)}


def release_guard(config: Mapping[str, Any], version: str) -> None:
    """Refuse an architecture that release ``version``'s registry does not list, that it serves
    through its Transformers modeling backend on a release whose backend is not checked
    (:data:`TRANSFORMERS_BACKEND_CHECKED`), or whose weights on that release are not checked
    (:data:`RELEASE_UNCHECKED`), or whose ``model_type`` the transformers it pins does not know
    when the config names no config class of its own (``auto_map``). Mirrors vLLM's
    ``ModelRegistry`` lookup (``registry.py``) per release. Releases without a shipped registry
    table are left to the family's own checks.

    :raises InputError: named, as above.
    """
    archs = config.get("architectures")
    arch = archs[0] if isinstance(archs, list) and archs and isinstance(archs[0], str) else None
    if arch is None or version not in REGISTRY_RELEASES:
        return
    if registry_file(arch) is None and arch not in modelled_architectures():
        # not in 0.28.0's registry: a planned one (MiniCPM-V 4.7) is still looked up per release
        return
    if (why := RELEASE_UNCHECKED.get(arch, {}).get(version)) is not None:
        raise InputError("--vllm-version", version, f"{arch}'s weights on this release are not modelled ({why})")
    kind, auto_map = config.get("model_type"), config.get("auto_map")
    known = known_model_types(version)
    if (
        known
        and isinstance(kind, str)
        and kind not in known
        and not (isinstance(auto_map, dict) and "AutoConfig" in auto_map)
    ):
        # the transformers the release pins has no config class for it (0.31-0.33: EXAONE, InternLM3,
        # IQuest-Coder, Sarvam-M MLA): only the checkpoint's own code (auto_map, --trust-remote-code)
        # reads it, and the model class then allocates what its config's values say
        raise InputError(
            "model_type",
            kind,
            f"vLLM {version}: the checkpoint has model type `{kind}` but Transformers does not recognize this "
            "architecture (its own config class, auto_map with --trust-remote-code, is needed)",
        )
    own = release_registry_file(arch, version)
    if own is None:
        raise InputError("--vllm-version", version, f"vLLM {version}'s registry has no {arch}")
    if str(registry_file(arch)).startswith("transformers") and version not in TRANSFORMERS_BACKEND_CHECKED:
        # the backend's modules differ by release: 0.30.0's and 0.33.0's fuse q/k/v and build vLLM's
        # Attention (its scale buffers), which 0.28.0's did not (the families' backend layouts)
        raise InputError(
            "--vllm-version",
            version,
            f"{arch} is served by the Transformers modeling backend; its weights are checked on "
            f"{' / '.join(TRANSFORMERS_BACKEND_CHECKED)} only",
        )
    if (
        own.startswith("transformers")
        and not str(registry_file(arch)).startswith("transformers")
        and version not in TRANSFORMERS_BACKEND_SWEPT
        and version not in TRANSFORMERS_BACKEND_OWN.get(arch, ())
    ):
        raise InputError(
            "--vllm-version",
            version,
            f"vLLM {version} serves {arch} through its Transformers modeling backend (its weights there: not modelled)",
        )


def _guarded(*args: Any) -> RankWeights:
    """:func:`_walk`, with a config field of an unexpected type or value (a list where a number
    belongs, a float count, ...) refused in one line like every other refusal."""
    release_guard(args[0], args[1].vllm_version)
    try:
        w = _walk(*args)
    except InputError:
        raise
    except (TypeError, ValueError, KeyError, IndexError, ZeroDivisionError, OverflowError, AttributeError) as e:
        raise InputError(
            "config.json", None, f"a field has an unexpected type or value ({type(e).__name__}: {e})"[:200]
        ) from None
    figures = [w.param_bytes, w.allocated_bytes, *w.by_kind.values()]
    if any(type(v) is not int or v < 0 for v in figures):
        # a float or negative size read without a check by a family's walk (the hostile-config
        # property test's Zamba2 intermediate_size -1.0): no byte count vLLM would build
        raise InputError("config.json", None, "a size field is not a non-negative whole number")
    if w.param_bytes == 0:
        # vLLM builds zero-width layers for a zero size (a family module's walk reads hidden_size
        # as any other size); no checkpoint is such a model
        raise InputError("config.json", "hidden_size", "the sizes describe a model with no weights (a zero width)")
    return w


@dataclass(frozen=True)
class WalkArgs:
    """What the walk was asked besides the config and the rank (see :func:`rank_weights`)."""

    hf_quant: Mapping[str, Any] | None
    dtype: str
    tensors: Mapping[str, Any] | None
    no_tower: bool
    max_num_batched_tokens: int | None
    #: the modalities ``--limit-mm-per-prompt`` sets to 0 (a wrapper with one tower per modality
    #: drops each tower whose modalities are all in it, as vLLM's ``_mark_tower_model`` does)
    zero_modalities: frozenset[str] = frozenset()
    #: the engine's ``max_model_len`` where given (a rotary table spanning it: Cohere Compass)
    max_model_len: int | None = None
    #: the channels of the checkpoint's device-side image normalization (vLLM's
    #: ``build_mm_input_norm``: a ``FusedMMInputNorm`` of ``[channels]`` weight and bias buffers where
    #: the processor config's rescale / normalization is not the identity); 0: none (no processor
    #: config in the directory, or an identity one)
    image_norm_channels: int = 0


class ComposedFamily(Protocol):
    """A family of ``model_executor/models/`` built on this walk (``compose.Family``)."""

    @property
    def modalities(self) -> tuple[str, ...]: ...

    def walk(self, config: Mapping[str, Any], par: Parallel, args: WalkArgs) -> RankWeights: ...


#: the families of ``model_executor/models/`` (architecture -> family): that package registers
#: them when it is imported (``model_loader/loader.py`` imports it), so this module imports none
#: of them (they import this module)
_COMPOSED: dict[str, ComposedFamily] = {}


def register_families(found: Mapping[str, ComposedFamily]) -> None:
    """Add ``model_executor/models/``'s families (called by that package at import)."""
    _COMPOSED.update(found)


#: planned architectures whose weights are refused, with the reason naming the one vLLM module
#: that is not sized (``model_executor/models/``' ``UNSIZED``, registered with the families)
_UNSIZED: dict[str, str] = {}


def register_unsized(found: Mapping[str, str]) -> None:
    """Add ``model_executor/models/``' named refusals (architecture -> reason)."""
    _UNSIZED.update(found)


def drafter_head_refusal(arch: str) -> str | None:
    """Why a drafter head given as ``--model`` has no weights of its own (``None``: ``arch`` is
    no drafter head: not among vLLM 0.28.0's speculative-decoding models). vLLM's class for it
    reads ``speculative_config.draft_model_config`` while it is built, absent for a target, so
    vLLM fails to load it as one."""
    if not is_draft_model(arch):
        return None
    return (
        f"{arch} is a drafter head: vLLM builds it only as the --speculative-config model of its target "
        "(as --model its class reads the absent speculative config and fails to load); its weights are "
        "counted there, with its target"
    )


def families() -> Mapping[str, ComposedFamily]:
    """The registered families of ``model_executor/models/`` (architecture -> family)."""
    return _COMPOSED


def modelled_architectures() -> set[str]:
    """Every architecture whose weights are modelled: this module's and :func:`families`'."""
    return {*ARCHITECTURES, *families()}


def _no_tower(config: Mapping[str, Any], language_model_only: bool, limits: Mapping[str, int] | None) -> bool:
    archs = config.get("architectures")
    arch = archs[0] if isinstance(archs, list) and archs else None
    composed = families().get(str(arch))
    modalities: tuple[str, ...] = TOWER_MODALITIES_OF.get(ARCHITECTURES.get(str(arch), ""), TOWER_MODALITIES)
    if composed is not None:
        modalities = composed.modalities
    return language_model_only or (limits is not None and all(limits.get(m, 1) == 0 for m in modalities))


def _walk(
    config: Mapping[str, Any],
    par: Parallel,
    hf_quant: Mapping[str, Any] | None,
    dtype: str,
    tensors: Mapping[str, Any] | None,
    no_tower: bool = False,
    max_num_batched_tokens: int | None = None,
    zero_modalities: frozenset[str] = frozenset(),
    max_model_len: int | None = None,
    image_norm_channels: int = 0,
) -> RankWeights:
    archs = config.get("architectures") or []
    arch = archs[0] if isinstance(archs, list) and archs else None
    family = ARCHITECTURES.get(str(arch))
    if family == "qwen3_5_text" and config.get("model_type") == "qwen3_5_moe_text":
        # qwen3_5.py Qwen3_5DecoderLayer: the MLP follows the model type, a sparse MoE block here
        family = "qwen3_5_moe_text"
    if family is None:
        composed = families().get(str(arch))
        if composed is not None:  # a family of models/: a wrapper composing this walk, an alias
            args = WalkArgs(
                hf_quant,
                dtype,
                tensors,
                no_tower,
                max_num_batched_tokens,
                zero_modalities,
                max_model_len,
                image_norm_channels,
            )
            return composed.walk(config, par, args)
        if str(arch) in _UNSIZED:
            raise InputError(
                "config.json", "architectures", f"weights of {arch} are not modelled: {_UNSIZED[str(arch)]}"
            )
        if (why := drafter_head_refusal(str(arch))) is not None:
            raise InputError("config.json", "architectures", why)
        raise InputError(
            "config.json",
            "architectures",
            f"weights of {arch} are not modelled: "
            + (f"vLLM's {where} is not sized" if (where := registry_file(str(arch))) else "not in vLLM's registry"),
        )
    if par.pp > 1 and family not in PP_FAMILIES:
        raise InputError(
            "--pipeline-parallel-size",
            None,
            f"the pipeline stages of {arch} are not modelled (its model class places embedding and head differently)",
        )
    if tensors is not None and (family in CONFIG_ONLY or arch in GEMMA3_CONFIG_ONLY):
        raise InputError(
            "safetensors headers",
            None,
            f"the checkpoint tensors of {arch} are not mapped yet (--load-format dummy: the figure from the config)",
        )
    if family in MLA_FAMILIES and "index_topk" in config:
        _refuse_sm120_sparse(config, par, str(arch))
    quant = _on_gpu(quant_from_config(config, hf_quant), par, family)
    if arch in GEMMA3_CONFIG_ONLY and quant.method is not None:
        raise InputError(
            "quantization_config", "quant_method", f"{quant.method} {arch} layouts are not modelled (unquantized only)"
        )
    vision: Mapping[str, Any] | None = None
    if family in VL_WRAPPERS:
        text = config.get("text_config")
        vision = None if no_tower else config.get("vision_config")
        if family == "gemma3_mm":  # Gemma3Config: both sub-configs default (gemma3_mm.py builds them)
            text = {} if text is None else text
            vision = None if no_tower else (config.get("vision_config") or {})
        if not isinstance(text, Mapping) or not (no_tower or isinstance(vision, Mapping)):
            raise InputError("config.json", "text_config", f"{arch} needs text_config and vision_config objects")
        if family == "gemma3_mm":  # the language model's own Gemma3TextConfig ties its head
            config = dict(text)
        else:
            config = {"tie_word_embeddings": config.get("tie_word_embeddings", False), **text}
    if family in GEMMA3_FAMILIES:
        config = {**GEMMA3_TEXT_DEFAULTS, **config}
    if family == "granitemoehybrid":
        # at call: only a Granite-4.0-H config reads the geometry's defaults of its config class
        from dryboot.vllm.models.granitemoehybrid import CONFIG_DEFAULTS

        config = {**CONFIG_DEFAULTS, **GRANITE_HYBRID_WEIGHT_DEFAULTS, **config}
        if config.get("num_key_value_heads") is None:
            config["num_key_value_heads"] = config["num_attention_heads"]
    if family == "glm4_moe":  # Glm4MoeAttention: rope_parameters.setdefault("partial_rotary_factor", 0.5)
        config = {"partial_rotary_factor": 0.5, **config}
    if family == "qwen3_next":  # Qwen3NextConfig: partial_rotary_factor defaults to 0.25
        config = {"partial_rotary_factor": 0.25, **config}
    if family in TEXT_ONLY_QWEN3_5:
        # models/config.py Qwen3_5ForCausalLMConfig: a text-only Qwen3.5 has one-dimensional
        # positions; the M-RoPE fields are dropped (a plain rotary table, not four times as long)
        rope = config.get("rope_parameters")
        if isinstance(rope, Mapping):
            rope = {k: v for k, v in rope.items() if k not in ("mrope_section", "mrope_interleaved")}
            config = {**config, "rope_parameters": rope}
    mixed_ok = (quant.method == "modelopt_mixed" and family in MODELOPT_MIXED_FAMILIES) or (
        isinstance(quant.scaled, ModelOptQuant) and family in MODELOPT_FAMILIES
    )
    wna16_moe_ok = quant.wna16 is not None and family in WNA16_MOE_FAMILIES
    fp8_ok = quant.method == "fp8" and quant.scaled is not None  # plain fp8's families: _fp8_post_load
    fp8_ok = fp8_ok or _ct_next(quant, family, config)
    if quant.method is not None and family in UNQUANTIZED_ONLY and not mixed_ok and not wna16_moe_ok and not fp8_ok:
        raise InputError(
            "quantization_config", "quant_method", f"{quant.method} {arch} layouts are not modelled (unquantized only)"
        )
    if (
        quant.scaled is not None
        and family not in SCALED_FAMILIES
        and not mixed_ok
        and not _ct_moe(quant, family)
        and not fp8_ok
    ):
        raise InputError(
            "quantization_config",
            "quant_method",
            f"{quant.method} W8A8/NVFP4 layouts after loading are checked for "
            f"{', '.join(sorted(SCALED_FAMILIES))} only, not {arch}",
        )
    # the dense hybrids and Gemma-3 are checked under the weight-only integer and compressed-tensors
    # layouts (and the Qwen3.5 wrapper under MIXED_PRECISION), not fp8 or uniform ModelOpt
    unchecked = quant.wna16 is None and (quant.scaled is None or isinstance(quant.scaled, ModelOptQuant))
    if family == "nemotron_h" and not mixed_ok and quant.method is not None and quant.scaled is None:
        raise InputError(
            "quantization_config",
            "quant_method",
            f"{quant.method} {arch} layouts are not modelled (unquantized, compressed-tensors W8A8 and ModelOpt "
            "MIXED_PRECISION only)",
        )
    if family in DENSE_HYBRIDS | GEMMA3_FAMILIES and not mixed_ok and quant.method is not None and unchecked:
        raise InputError(
            "quantization_config",
            "quant_method",
            f"{quant.method} {arch} layouts are not modelled (unquantized, GPTQ, AWQ, AutoRound and "
            "compressed-tensors only)",
        )
    if family in GEMMA3_FAMILIES and quant.method is not None and par.vllm_version not in GEMMA3_QUANT_RELEASES:
        raise InputError(
            "quantization_config",
            "quant_method",
            f"quantized {arch} layouts after loading are checked on vLLM {', '.join(GEMMA3_QUANT_RELEASES)} only "
            f"(this plan: {par.vllm_version})",
        )
    ab = model_dtype_bytes(config, dtype)
    tp = par.tp
    h = _int(config, "hidden_size")
    if h == 0:
        # vLLM builds zero-width layers (no weights at all); no checkpoint is such a model
        raise InputError("config.json", "hidden_size", "must be a positive integer (0: a model with no weights)")
    # NemotronHConfig derives num_hidden_layers from its layer list (the published Nemotron-3 Ultra
    # configs give the list alone)
    n_layers = len(_nemotron_pattern(config)) if family == "nemotron_h" else _int(config, "num_hidden_layers")
    nq = _int(config, "num_attention_heads")
    nkv = _int(config, "num_key_value_heads", nq)
    # DeepSeek-V2 without MLA (DeepseekAttention) sizes its heads from hidden_size alone
    mha = family in MLA_FAMILIES and deepseek_mha(config)
    hd = h // nq if mha else config.get("head_dim") or h // nq
    if type(hd) is not int:
        raise InputError("config.json", "head_dim", "not an integer")
    vocab = _int(config, "vocab_size")
    tied = bool(config.get("tie_word_embeddings", family == "gemma2"))
    nq_r = _divide(nq, tp, "num_attention_heads")
    nkv_r = nkv // tp if nkv >= tp else 1
    if nkv >= tp:
        _divide(nkv, tp, "num_key_value_heads")
    else:
        _divide(tp, nkv, "the tensor parallel size over num_key_value_heads")
    vocab_r = padded_vocab_per_rank(vocab, tp)
    moe = family in MOE_FAMILIES
    n_experts = _int(config, _EXPERTS_KEY.get(family, "num_experts")) if moe else 0
    if family in ("qwen3_moe", "qwen2_moe"):  # Qwen3MoeSparseMoeBlock, Qwen2MoeSparseMoeBlock
        refuse_tp_above_experts(tp, n_experts)
    ckpt = _Checkpoint(tensors, tp, ab, nkv) if tensors is not None else None
    w = _Walk(ckpt, par.vllm_version)
    first, last = par.pp_rank == 0, par.pp_rank == par.pp - 1
    has_embed = first or family in EMBED_ON_EVERY_STAGE
    has_head = last or family in HEAD_ON_EVERY_STAGE
    emb = [("weight", vocab_r * h * ab)]
    if tied and has_head and not has_embed:
        # a tied head on a later stage than the embedding holds its own copy of it
        w.module(emb, "lm_head", (("model.embed_tokens", "vocab"),))
    else:
        w.module(emb, "embedding", (("model.embed_tokens", "vocab"),), present=has_embed)
    head = emb
    if quant.wna16 is not None and quant.wna16.head_scheme() is not None:
        if tied:
            raise InputError(
                "quantization_config",
                "extra_config.lm_head",
                "a quantized LM head tied to the embedding is not modelled",
            )
        # INC serves the ParallelLMHead with the layer's weight-only method (Marlin / Machete)
        head = _linear(quant, "lm_head", h, (vocab_r,), ab, tp=tp)
    if isinstance(quant.scaled, ModelOptQuant) and quant.scaled.algo is None and quant.scaled.algo_of("lm_head"):
        if tied:
            raise InputError(
                "quantization_config", "quantized_layers.lm_head", "a quantized LM head tied to the embedding"
            )
        # MIXED_PRECISION names the head: vLLM gives the ParallelLMHead the layer's method
        head = _linear(quant, "lm_head", h, (vocab_r,), ab, tp=tp)
    w.module(head, "lm_head", (("lm_head", "vocab"),), present=has_head and not tied)
    w.module([("weight", h * ab)], "norm", (("model.norm", "whole"),), present=last or family in NORM_ON_EVERY_STAGE)
    if family == "nemotron_h":
        pattern = _nemotron_pattern(config)
        layers = pp_layers(len(pattern), par)
        for li in layers:
            _nemotron_h_layer(w, config, quant, par, li, h, ab)
        if any(pattern[li] == "*" for li in layers):
            # (the "1 MiB at TP 1 not identified" once refused on SM 8.x: this counter)
            fp8_kv = modelopt_fp8_kv_cache(config, hf_quant)
            _flashinfer_counter(w, quant, par, fp8_kv, max_num_batched_tokens, nq_r, hd)
        return w.result()
    if family == "granitemoehybrid":
        if par.expert_parallel and not _int(config, "num_local_experts"):
            raise InputError(
                "--enable-expert-parallel", None, f"{arch} has no experts (num_local_experts 0): vLLM refuses it"
            )
        layers = pp_layers(n_layers, par)
        attention = [li for li in layers if _granite_layer(w, config, par, li, h, ab)]
        if attention and config.get("position_embedding_type") == "rope":
            w.own("rotary", _rotary_bytes(config, h // nq, ab), buffer=True)
        return w.result()
    # Qwen2-MoE's QKV always has a bias (qwen2_moe.py), whatever the config says
    attn_bias = family == "qwen2_moe" or bool(config.get("attention_bias", family == "qwen2"))
    o_bias = bool(config.get("attention_bias", False)) and family == "llama"
    kv_mode = "kv" if nkv < tp else "column"
    layers = pp_layers(n_layers, par)
    if family in GLM_MOE_FAMILIES and not any(_is_moe_layer(config, family, li) for li in layers):
        # Glm4MoeForCausalLM.__init__ (and Glm4MoeLite's) looks up a MoE layer of its stage
        raise InputError(
            "--pipeline-parallel-size", None, "a stage without MoE layers: vLLM refuses it (No Glm4MoE layer found)"
        )

    def decoder_layer(li: int) -> bool:
        """Layer ``li``'s modules; whether it holds an attention layer."""
        prefix = f"model.layers.{li}"
        att = f"{prefix}.self_attn"
        norms = ["input_layernorm", "post_attention_layernorm"]
        if family == "gemma2" or family in GEMMA3_FAMILIES:
            norms += ["pre_feedforward_layernorm", "post_feedforward_layernorm"]
        w.module([("weight", h * ab)] * len(norms), "norm", tuple((f"{prefix}.{n}", "whole") for n in norms))
        if moe and _is_moe_layer(config, family, li):
            _moe_layer(w, config, family, quant, par, prefix, h, n_experts, ab)
        else:
            inter = _int(config, "intermediate_size")
            _mlp(w, quant, f"{prefix}.mlp", h, _divide(inter, tp, "intermediate_size"), ab, tp)
        if family in MLA_FAMILIES and not mha:
            _mla_attention(w, config, quant, tp, att, h, ab)
            if "index_topk" in config:
                _indexer(w, config, quant, li, f"{att}.indexer", h, ab)
            return True
        if family in GDN_FAMILIES and _layer_type(config, li) == "linear_attention":
            _gated_delta_net(w, config, quant, tp, f"{prefix}.linear_attn", h, ab)
            return False
        # attention: QKVParallelLinear + RowParallelLinear (Qwen3-Next: the query doubled by its
        # output gate)
        q_mult = 2 if family in GDN_FAMILIES and config.get("attn_output_gate", True) else 1
        qkv_parts = (q_mult * nq_r * hd, nkv_r * hd, nkv_r * hd)
        # a QKV layer whose KV heads are replicated is not split evenly (validated as merged)
        entries = _linear(
            quant, f"{att}.qkv_proj", h, qkv_parts, ab, tp=tp, split="column" if nkv >= tp else "", bias=attn_bias
        )
        w.module(
            entries, "attention", ((f"{att}.q_proj", "column"), (f"{att}.k_proj", kv_mode), (f"{att}.v_proj", kv_mode))
        )
        entries = _linear(quant, f"{att}.o_proj", nq_r * hd, (h,), ab, tp=tp, split="row", bias=o_bias)
        w.module(entries, "attention", ((f"{att}.o_proj", "row"),))
        w.module([], "attention", ((att, "attention scales"),))
        if quant.method is not None and quant.wna16 is None and quant.scaled is None:
            # Attention's q/k/v/prob scale parameters (BaseKVCacheMethod), as built: the layouts
            # after loading (quant.scaled) have them deleted (the KV cache is not quantized)
            for _ in range(4):  # Attention's q/k/v/prob scale parameters (BaseKVCacheMethod)
                w.own("scale", ab)
        qk_norm = family == "glm4_moe" and bool(config.get("use_qk_norm", False))
        if qk_norm or family in ("qwen3", "qwen3_moe", *GDN_FAMILIES, *GEMMA3_FAMILIES):
            w.module([("weight", hd * ab)] * 2, "norm", ((f"{att}.q_norm", "whole"), (f"{att}.k_norm", "whole")))
        w.own("attention scales", 16, buffer=True)  # _q/_k/_v/_prob_scale float32 scalars
        w.ref.allocated_bytes += (w.attention_blocks - _post_load_host_blocks(quant, w.range_blocks)) * ALLOC_ROUND
        return True

    # without a checkpoint, a per-name quantization rule or DeepSeek-V3.2's per-layer indexer, the
    # layers differ only in these decisions: each kind is built once and repeated (_Walk.layer)
    alike = tensors is None and _layers_quantized_alike(quant)
    alike = alike and not (family in MLA_FAMILIES and "index_topk" in config)

    def layer_kind(li: int) -> Hashable:
        if not alike:
            return None
        try:
            return (moe and _is_moe_layer(config, family, li), family in GDN_FAMILIES and _layer_type(config, li))
        except Exception:  # built, to refuse in the layer's own order
            return None

    n_attention = sum(w.layer(layer_kind(li), partial(decoder_layer, li)) for li in layers)
    if n_attention and family in GEMMA3_FAMILIES:
        for nbytes in _gemma3_rotary_tables(config, layers, hd, ab):
            w.own("rotary", nbytes, buffer=True)
    elif n_attention:
        rope_dim = _int(config, "qk_rope_head_dim") if family in MLA_FAMILIES and not mha else hd
        token_mrope = family in VL_WRAPPERS or bool(config.get(QWEN3_VL_DECODER))
        factor = 1 if token_mrope and par.vllm_version in MROPE_TOKEN_POSITIONS else 4
        rope_b = 4 if deepseek_v32_fp32_rope(config, str(arch), par.vllm_version, rope_dim, ab) else ab
        w.own("rotary", _rotary_bytes(config, rope_dim, rope_b, mrope_factor=factor), buffer=True)
        if "index_topk" in config and family in MLA_FAMILIES:
            if isinstance(quant.scaled, ModelOptQuant):
                _modelopt_sparse_mla_kv(par, modelopt_fp8_kv_cache(config, hf_quant))
            indexed = any(has_indexer(config, li) for li in layers)
            if indexed and not config.get("indexer_rope_interleave", False):
                # the indexer's rotary is NeoX-style, the MLA's not: get_rope caches a second table
                w.own("rotary", _rotary_bytes(config, rope_dim, rope_b), buffer=True)
            if max_num_batched_tokens is None:
                raise InputError(
                    "--max-num-batched-tokens",
                    None,
                    f"{arch} allocates its top-k indices buffer (max_num_batched_tokens x index_topk int32) with "
                    "the weights: give max_num_batched_tokens",
                )
            # DeepseekV2Model.__init__: one int32 [max_num_batched_tokens, index_topk] on the device
            w.own("topk indices", 4 * max_num_batched_tokens * _int(config, "index_topk"), buffer=True)
            groups = index_groups(config, layers)
            mla_head = _int(config, "kv_lora_rank") + _int(config, "qk_rope_head_dim")
            fp8_kv = modelopt_fp8_kv_cache(config, hf_quant)
            cu_seqlens = flash_attn_mla_sparse_cu_seqlens_bytes(
                max_num_batched_tokens, par, mla_head, ab, fp8_kv, str(arch), _int(config, "kv_lora_rank")
            )
            for _ in range(n_attention if cu_seqlens else 0):
                w.own("sparse MLA cu_seqlens", cu_seqlens, buffer=True)
            if n_attention and flashmla_sparse_serves(par, mla_head, ab, fp8_kv):
                quantized = par.kv_cache_dtype in FLASHMLA_SPARSE_KV_DTYPES
                if max_model_len is None and quantized:
                    raise InputError(
                        "--max-model-len",
                        None,
                        f"{arch} with an fp8 KV cache on SM 9.x reserves FLASHMLA_SPARSE's prefill workspace "
                        "(5 x max_model_len rows) with the weights: give max_model_len",
                    )
                if dtype in ("float16", "half", "fp16") or (dtype == "auto" and config.get("torch_dtype") == "float16"):
                    raise InputError(
                        "--dtype",
                        None,
                        f"{arch} in float16 under FLASHMLA_SPARSE on SM 9.x: vLLM refuses it (FLASHMLA_SPARSE "
                        "serves bfloat16 only; no other backend takes an fp8 cache: No valid attention backend found)",
                    )
                workspace = flashmla_sparse_workspace_bytes(
                    max_num_batched_tokens,
                    max_model_len or 0,
                    _int(config, "num_attention_heads") // par.tp,
                    _int(config, "kv_lora_rank"),
                    _int(config, "qk_rope_head_dim"),
                    par.vllm_version,
                    quantized=quantized,
                )
                w.own("FLASHMLA_SPARSE workspace", workspace, buffer=True)
            if groups and rules_for(par.vllm_version).sparse_mla_index_groups:
                if par.max_num_seqs is None:
                    raise InputError(
                        "--max-num-seqs",
                        None,
                        f"{arch} allocates its sparse-MLA index groups' top-k workspace (min(max_num_batched_tokens, "
                        "max_num_seqs x query length) rows) with the weights: give max_num_seqs",
                    )
                rows = min(max_num_batched_tokens, par.max_num_seqs * (1 + par.num_speculative_tokens))
                for nbytes in sparse_mla_index_group_bytes(rows, _int(config, "index_topk"), par.vllm_version):
                    for _ in range(groups):
                        w.own("index groups", nbytes, buffer=True)
    if n_attention and not (family in MLA_FAMILIES and not mha):
        fp8_kv = modelopt_fp8_kv_cache(config, hf_quant)
        _flashinfer_counter(w, quant, par, fp8_kv, max_num_batched_tokens, nq_r, hd)
    else:  # MLA layers build no FlashInferImpl (FlashInfer-MLA's counter: on the first decode)
        w.ref.counter_checked = True
    if vision is not None:
        _refuse_quantized_tower(quant, family, str(arch))
    if vision is not None and family == "gemma3_mm":
        _siglip_vision_tower(w, {**SIGLIP_VISION_DEFAULTS, **vision}, h, tp, ab)
    elif vision is not None:
        # --mm-encoder-tp-mode data: Qwen3.5's tower unsharded on every TP rank
        whole = whole_tower(str(arch), par.mm_encoder_tp_mode, par.vllm_version)
        _qwen3_vision_tower(w, vision, 1 if whole else tp, ab)
    if family == "gemma2" or family in GEMMA3_FAMILIES:
        w.own("normalizer", ab, buffer=True)
    if ckpt is not None:
        ckpt.leftover(layers, n_experts)
    out = w.result()
    order = ordered_llama_load(config, str(arch), quant, par, ab, vocab_r)
    if order is not None:
        _replay_load(out, order)
    return out


#: the releases whose load order :mod:`.load_order` emits (vLLM 0.28.0's model classes, Marlin's
#: post-load step and the ``max_split_size_mb`` 20 scope of the load)
ORDERED_LOAD_RELEASES = ("0.28.0",)


def ordered_llama_load(
    config: Mapping[str, Any], arch: str, quant: Quant, par: Parallel, ab: int, vocab_r: int
) -> DenseDecoder | None:
    """The geometry whose load's allocation order dryboot emits (:func:`.load_order.load_events`),
    or ``None`` where it does not and the per-tensor rule (:func:`load_segment_bytes`) stays:
    ``LlamaForCausalLM`` on vLLM 0.28.0 at TP 1 without pipeline stages, in 16 bits, a
    ``default`` / ``llama3`` rotary table over the whole head, no projection biases, served by AWQ
    4-bit with zero points through Marlin on every layer (a GPU of known SM count), the LM head in
    the model dtype; or by symmetric GPTQ 4-bit without act-order (the release's ``g_idx``
    parameter built) likewise. (Unquantized layers are emitted by :func:`.load_order.load_events`
    and checked against vLLM's trace, but not applied here: the corpus's bf16 Llama-3.1-8B boot is
    0.15.1's, logged 14.99, where 0.28.0's order gives 15.00.)"""
    if arch != "LlamaForCausalLM" or par.vllm_version not in ORDERED_LOAD_RELEASES:
        return None
    if par.tp != 1 or par.pp != 1 or ab != 2:
        return None
    if config.get("attention_bias") or config.get("mlp_bias"):
        return None
    rope = config.get("rope_parameters") or config.get("rope_scaling") or {}
    if not isinstance(rope, Mapping) or str(rope.get("rope_type", rope.get("type", "default"))) not in (
        "default",
        "llama3",
    ):
        return None
    if float(config.get("partial_rotary_factor", rope.get("partial_rotary_factor", 1.0))) != 1.0:
        return None
    q = quant.wna16
    if q is None or quant.method not in ("awq", "gptq") or q.packing != quant.method or quant.scaled is not None:
        return None
    if q.head_scheme() is not None or q.sm_count is None or q.desc_act or not q.g_idx_param:
        return None
    h, inter = _int(config, "hidden_size"), _int(config, "intermediate_size")
    nq = _int(config, "num_attention_heads")
    nkv = _int(config, "num_key_value_heads", nq)
    hd = config.get("head_dim") or h // nq
    linears = {
        "self_attn.qkv_proj": (h, (nq + 2 * nkv) * hd),
        "self_attn.o_proj": (nq * hd, h),
        "mlp.gate_up_proj": (h, 2 * inter),
        "mlp.down_proj": (inter, h),
    }
    scheme = q.scheme
    awq = q.packing == "awq"
    if scheme.bits != 4 or scheme.sym == awq or scheme.group_size <= 0:  # AWQ: zero points; GPTQ: symmetric
        return None
    for li in range(_int(config, "num_hidden_layers")):
        for name, (k, _) in linears.items():
            if q.layer_scheme(f"model.layers.{li}.{name}") != scheme or k % scheme.group_size:
                return None
    for k, n in linears.values():
        c = MPLinearLayerConfig(
            k=k, n=n, full_k=k, bits=4, zero_points=awq, group_size=scheme.group_size, has_g_idx=False, act_bytes=ab
        )
        try:
            kernel = choose_mp_linear_kernel(c, q.capability, allspark=q.allspark, humming=q.humming)
        except InputError:
            return None
        if kernel != "MarlinLinearKernel" or n % 64 or k % 128:  # Marlin's tiles: no padding
            return None
    return DenseDecoder(
        vocab_rows=vocab_r,
        hidden=h,
        layers=_int(config, "num_hidden_layers"),
        qkv=(nq + 2 * nkv) * hd,
        o_in=nq * hd,
        inter=inter,
        act_bytes=ab,
        tied=bool(config.get("tie_word_embeddings", False)),
        positions=_int(config, "max_position_embeddings"),
        rotary_dim=hd,
        quant=Marlin4(q.packing, scheme.group_size, q.sm_count),
    )


def _replay_load(out: RankWeights, order: DenseDecoder) -> None:
    """``out``'s surplus over its tensors' blocks from the load replayed in vLLM's order
    (:func:`.load_order.load_surplus` under :data:`LOAD_MAX_SPLIT`) instead of the per-tensor
    rule, where the replayed tensors are the walk's own to the byte (otherwise ``out`` is left
    as it is: the emitted order does not describe this layout)."""
    allocated, tensors = load_surplus(order, LOAD_MAX_SPLIT)
    if tensors == out.allocated_bytes:
        out.load_segment_bytes = allocated - tensors


def _moe_layer(
    w: _Walk,
    config: Mapping[str, Any],
    family: str,
    quant: Quant,
    par: Parallel,
    prefix: str,
    h: int,
    e: int,
    ab: int,
) -> None:
    """A ``FusedMoE`` block: the router (``ReplicatedLinear``, unquantized) and the experts (one
    checkpoint module per expert and projection, fused into ``w13`` / ``w2``)."""
    mix = family == "mixtral"
    base = f"{prefix}.block_sparse_moe" if mix else f"{prefix}.mlp"
    inter = _int(config, "intermediate_size" if mix else "moe_intermediate_size")
    glm = family in GLM_MOE_FAMILIES
    if glm or (family == "deepseek_v2" and config.get("topk_method") == "noaux_tc"):  # float32 [E] on the gate
        w.module([("weight", 4 * e)], "router", ((f"{base}.gate.e_score_correction_bias", "whole", 4),))
    # GLM's gate is an nn.Linear in float32 (glm4_moe.py); the others' in the model dtype, as is a
    # GateLinear's (Sarvam-M MLA's, walked as GLM's, on 0.31+: VersionRules.moe_gate_model_dtype)
    rules = rules_for(par.vllm_version)
    router = 4 if glm and config.get("model_type") not in rules.moe_gate_model_dtype else ab
    if quant.wna16 is not None and family not in WNA16_MOE_FAMILIES:
        raise InputError(
            "quantization_config", "quant_method", f"{quant.method} MoE experts of {family} are not modelled"
        )
    if (quant.wna16 is not None and family == "qwen3_moe") or _ct_moe(quant, family):
        # Qwen3-MoE's gate, a ReplicatedLinear, takes the quant method unless skipped / ignored
        # (Mixtral's is built with quant_config=None: unquantized, below)
        w.module(_linear(quant, f"{base}.gate", h, (e,), ab, split=""), "router", ((f"{base}.gate", "whole"),))
    else:
        w.module([("weight", e * h * router)], "router", ((f"{base}.gate", "whole", router),))
    if family in DEEPSEEK_MOE_FAMILIES:
        n_shared = _int(config, "n_shared_experts", 0) if config.get("n_shared_experts") is not None else 0
        if n_shared:  # DeepseekV2MLP of moe_intermediate_size x n_shared_experts, TP-sharded
            i_s = _divide(inter * int(n_shared), par.tp, "the shared experts' intermediate size")
            _mlp(w, quant, f"{base}.shared_experts", h, i_s, ab, par.tp)
    shared = _int(config, "shared_expert_intermediate_size", 0) if family in SHARED_EXPERT_FAMILIES else 0
    if shared or family == "qwen2_moe":
        # Qwen3-Next's shared expert: its gate (ReplicatedLinear [1, H]) and a TP-sharded MLP
        # (Qwen2-MoE builds the gate even without a shared expert)
        w.module([("weight", h * ab)], "router", ((f"{base}.shared_expert_gate", "whole"),))
    if shared:
        _mlp(
            w, quant, f"{base}.shared_expert", h, _divide(shared, par.tp, "shared_expert_intermediate_size"), ab, par.tp
        )
    if par.expert_parallel:
        ep = par.tp * par.dp
        e_r, i_r = _local_experts(e, ep), inter
    else:
        e_r, i_r = e, _divide(inter, par.tp, "the experts' intermediate size")
    gate, up, down = ("w1", "w3", "w2") if mix else ("gate_proj", "up_proj", "down_proj")
    col, row = ("whole", "whole") if par.expert_parallel else ("column", "row")
    if quant.wna16 is not None:
        w.module(wna16_experts_bytes(quant.wna16, f"{base}.experts", e_r, h, i_r, ab), "experts")
    elif isinstance(quant.scaled, ModelOptQuant) and quant.scaled.experts_excluded(f"{base}.experts"):
        w.module(experts_bytes(Quant(), e_r, h, i_r, ab), "experts")  # excluded: UnquantizedFusedMoEMethod
    elif isinstance(quant.scaled, ModelOptQuant):
        # MOE_FAMILIES' experts: SiLU-gated, no SwiGLU limit (FlashInfer TRT-LLM on SM 10.x, 0.27-0.33;
        # expert parallelism recorded too: quant-recorded-trtllm-<release>.json)
        plain = config.get("hidden_act", "silu") == "silu"
        w.module(modelopt_experts_bytes(quant.scaled, f"{base}.experts", e_r, h, i_r, plain_swiglu=plain), "experts")
    elif quant.scaled is not None and (
        _ct_moe(quant, family) or quant.method == "fp8" or _ct_next(quant, family, config)
    ):
        ex = f"{base}.experts"
        scheme = quant.scaled.layer_scheme(ex, tuple(f"{ex}.0.{p}" for p in (gate, up, down)))
        if scheme is None:  # ignored experts: UnquantizedFusedMoEMethod
            w.module(experts_bytes(Quant(), e_r, h, i_r, ab), "experts")
        else:
            if quant.method == "fp8" and scheme.block is not None:
                _fp8_moe_block_check(i_r, scheme.block, par.tp)
            w.module(scaled_experts_bytes(quant.scaled, scheme, e_r, h, i_r, ab), "experts")
    else:
        # ModelOpt leaves experts its exclude_modules name unquantized (a DeepSeek MTP layer's,
        # model.layers.61*: recorded)
        ignored = quant.method in ("modelopt", "modelopt_fp4") and _is_ignored(quant, f"{base}.experts")
        w.module(experts_bytes(Quant() if ignored else quant, e_r, h, i_r, ab), "experts")
    for j in range(e) if w.ckpt is not None else ():  # the checkpoint's own tensors, per expert
        ex = f"{base}.experts.{j}"
        # under expert parallelism rank 0 holds the first E / EP experts
        w.module([], "experts", ((f"{ex}.{gate}", col), (f"{ex}.{up}", col), (f"{ex}.{down}", row)), present=j < e_r)
    if par.expert_parallel:
        w.own("expert map", 4 * e, buffer=True)  # int32 global -> local expert index


def _fp8_moe_block_check(i_r: int, block: tuple[int, int], tp: int) -> None:
    """Plain fp8 block experts (``Fp8MoEMethod.create_weights``): the experts' intermediate size per
    rank ``i_r`` must divide by the block's ``bn`` (gate / up outputs) and, under TP, by its ``bk``
    (down's input). vLLM 0.27.1 and 0.28.0 refuse it (``ValueError``: not divisible by weight
    quantization block_n / block_k); 0.29.0+ may refine the block scales to the shard
    (``refine_fp8_moe_block_shape``), whose layout is not modelled: refused either way.

    :raises InputError: a size the block does not divide (named)."""
    bn, bk = block
    if i_r % bn or (tp > 1 and i_r % bk):
        raise InputError(
            "--tensor-parallel-size",
            None,
            f"fp8 [{bn}, {bk}] block MoE experts: their intermediate size per rank ({i_r}) is not divisible by "
            f"the block (vLLM 0.27.1 / 0.28.0 refuse it; later releases refine the block scales, not modelled)",
        )


def modelopt_fp8_kv_cache(config: Mapping[str, Any], hf_quant: Mapping[str, Any] | None) -> bool:
    """A ModelOpt checkpoint declaring an fp8 KV cache: ``kv_cache_quant_algo`` FP8 (in
    ``quantization_config`` or ``hf_quant_config.json``'s ``quantization``) or an 8-bit float
    ``kv_cache_scheme``, which ``--kv-cache-dtype auto`` serves as ``fp8_e4m3``."""
    qc = config.get("quantization_config")
    if not isinstance(qc, Mapping):
        qc = hf_quant if isinstance(hf_quant, Mapping) else {}
    inner = qc.get("quantization")
    for q in (inner if isinstance(inner, Mapping) else {}, qc):
        if str(q.get("kv_cache_quant_algo") or "").upper() == "FP8":
            return True
        scheme = q.get("kv_cache_scheme")
        if isinstance(scheme, Mapping) and scheme.get("type") == "float" and scheme.get("num_bits") == 8:
            return True
    return False


#: the backends whose attention layers build ``FlashInferImpl`` (0.33.0): FlashInfer's own and the
#: Triton / FlashInfer composite of a multimodal-prefix LM on SM 10.x (its causal half,
#: ``composite.py`` ``CompositeAttentionImpl``)
FLASHINFER_IMPL_BACKENDS = frozenset({"FLASHINFER", "TRITON_FLASHINFER"})


def _flashinfer_attention(
    par: Parallel, head_size: int, fp8_kv: bool = False, mm_prefix: bool = False, has_sinks: bool = False
) -> bool:
    """Whether vLLM 0.33.0 builds FlashInfer attention layers (``FlashInferImpl``, whose shared
    multi-CTA KV counter is allocated in ``__init__`` while the model is built, on any GPU and KV
    cache dtype: :func:`flashinfer_kv_counter_bytes`; no earlier release allocates it, 0.27.1-0.32.0
    read; FlashInfer-MLA allocates its own on the first decode, not with the weights) for a model
    of non-MLA attention layers of ``head_size``: ``par.attention_backend`` where named, else
    vLLM's choice (:func:`~dryboot.vllm.backends.default_backend`) for the GPU and KV cache dtype,
    ``--kv-cache-dtype`` (``par.kv_cache_dtype``) or, under ``auto``, a ModelOpt checkpoint's fp8
    KV cache (``fp8_kv``: :func:`modelopt_fp8_kv_cache` of a ModelOpt checkpoint). So: SM 10.x (FlashInfer leads its
    priorities; recorded: B200), SM 8.x / 12.x with an fp8 cache (FlashAttention 2 takes none;
    recorded: nvidia/Qwen3.6-27B-NVFP4 on RTX 3090 / 4090), ``--attention-backend FLASHINFER``
    anywhere; SM 9.0 keeps FlashAttention. Quantized checkpoints alike (recorded: GPTQ / AWQ /
    AutoRound, compressed-tensors and ModelOpt on B200 and RTX 5090, ``quant-recorded-bw33-*``).
    The selector config asked here holds the head
    size, KV cache dtype and GPU only: a layer FlashInfer refuses for another reason (attention
    sinks without ``flashinfer-cubin``) is taken as FlashInfer's (not recorded). ``mm_prefix``: a
    multimodal-prefix LM's layers (``ModelConfig.is_mm_prefix_lm``), which FlashInfer does not
    serve: the Triton / FlashInfer composite where its head sizes allow, else FlashAttention
    (recorded: Moondream 3's 64 on B200, no counter). ``has_sinks``: layers with attention sinks
    (FlashInfer takes them on SM 10.x / 12.x with ``flashinfer-cubin``, ``par.flashinfer_cubin``;
    without it vLLM's choice is another backend, recorded: gpt-oss on B200 / RTX 5090)."""
    if par.vllm_version != "0.33.0":
        return False
    return _flashinfer_chosen(par, head_size, fp8_kv, mm_prefix, has_sinks)


def _flashinfer_chosen(
    par: Parallel, head_size: int, fp8_kv: bool = False, mm_prefix: bool = False, has_sinks: bool = False
) -> bool:
    """Whether vLLM's attention selection gives layers of ``head_size`` to FlashInfer on the
    rank's GPU (any release: :func:`_flashinfer_attention` without its release check; the
    arguments as there). ``False`` without a GPU."""
    if par.capability is None:
        return False
    if par.attention_backend is not None:
        return par.attention_backend in FLASHINFER_IMPL_BACKENDS
    if has_sinks and not par.flashinfer_cubin:
        return False
    kv = "fp8" if par.kv_cache_dtype == "auto" and fp8_kv else par.kv_cache_dtype
    major = par.capability[0]
    layer = AttentionSelectorConfig(
        head_size,
        kv,
        has_sinks=has_sinks,
        capability=par.capability,
        mm_prefix=mm_prefix,
        mm_prefix_composites=mm_prefix,
        flashinfer_sinks_sm90=True,  # 0.33.0's rule (VersionRules.flashinfer_sinks_sm90)
    )
    try:
        chosen = default_backend(layer, False, backend_table(major in (8, 9, 12), major == 10))
    except ValueError:  # no backend serves it: vLLM refuses before any weight (refused elsewhere)
        return False
    return chosen in FLASHINFER_IMPL_BACKENDS


def flashinfer_sinks(par: Parallel, head_size: int) -> bool:
    """Whether vLLM serves a model's attention layers with sinks of ``head_size`` through
    FlashInfer (:func:`_flashinfer_chosen` with sinks: on SM 10.x / 12.x with ``flashinfer-cubin``,
    ``par.flashinfer_cubin``, assumed installed as on vLLM's images; SM 12.x from 0.28.0,
    :attr:`~dryboot.vllm.versions.VersionRules.flashinfer_sinks_sm120`), whose
    ``FlashInferImpl.process_weights_after_loading`` (every release 0.27.1-0.33.0) keeps a float32
    copy of each layer's sinks (``[heads per rank]``) beside the model's own (recorded: gpt-oss on
    B200 and RTX 5090 with ``VLLM_HAS_FLASHINFER_CUBIN``, ``quant-recorded-<release>-mxfp4.json``,
    0.27.1-0.33.0)."""
    if (
        par.capability is not None
        and par.capability[0] == 12
        and not rules_for(par.vllm_version).flashinfer_sinks_sm120
    ):
        return False
    return _flashinfer_chosen(par, head_size, has_sinks=True)


def _flashinfer_counter(
    w: _Walk,
    quant: Quant,
    par: Parallel,
    fp8_kv: bool,
    max_num_batched_tokens: int | None,
    heads: int,
    head_size: int,
) -> None:
    """FlashInfer's multi-CTA KV counter where vLLM builds FlashInfer attention
    (:func:`_flashinfer_attention`, layers of ``head_size``): one per process, shared by every
    attention layer of the rank (``heads``: its query heads), :func:`flashinfer_kv_counter_bytes`.

    :raises InputError: ``max_num_batched_tokens`` not given (it sizes the counter)."""
    w.ref.counter_checked = True
    if not _flashinfer_attention(par, head_size, isinstance(quant.scaled, ModelOptQuant) and fp8_kv):
        return
    w.own("attention counter", _counter_bytes(par, max_num_batched_tokens, heads))


def _counter_bytes(par: Parallel, max_num_batched_tokens: int | None, heads: int) -> int:
    """:func:`flashinfer_kv_counter_bytes` of a FlashInfer layer of ``heads`` query heads per rank.

    :raises InputError: ``max_num_batched_tokens`` not given (it sizes the counter)."""
    if max_num_batched_tokens is None:
        raise InputError(
            "--max-num-batched-tokens",
            None,
            f"vLLM {par.vllm_version}'s FlashInfer attention allocates its multi-CTA KV counter "
            "(max_num_batched_tokens x query heads int32) with the weights: give max_num_batched_tokens",
        )
    return flashinfer_kv_counter_bytes(max_num_batched_tokens, heads, par.sm_count or 0)


def flashinfer_counter_layers(
    rank: RankWeights,
    par: Parallel,
    max_num_batched_tokens: int | None,
    layers: Iterable[tuple[int, int, bool]],
    *,
    fp8_kv: bool = False,
    mm_prefix: bool = False,
) -> None:
    """FlashInfer's multi-CTA KV counter for a family whose walk lists its own attention layers:
    ``layers``, each a layer's (query heads per rank, head size, attention sinks) in the order vLLM builds them,
    only the layers that go through vLLM's backend selection (a layer that pins its own backend
    or is MLA builds no ``FlashInferImpl``: left out; an empty ``layers`` says the family has
    none). vLLM 0.33.0's ``_get_multi_ctas_kv_counter_buffer`` keeps one buffer and allocates a
    new one whenever a layer needs more than it holds; the earlier layers keep theirs, so each
    growth adds :func:`flashinfer_kv_counter_bytes` of that layer (uniform layers: one buffer).
    Marks ``rank`` as having asked (``counter_checked``, see :func:`unmodelled_flashinfer_counter`).
    ``fp8_kv``, ``mm_prefix``: as :func:`_flashinfer_attention`.

    :raises InputError: a FlashInfer layer and ``max_num_batched_tokens`` not given (it sizes the
        counter)."""
    rank.counter_checked = True
    held = 0
    for heads, head_size, sinks in layers:
        if not _flashinfer_attention(par, head_size, fp8_kv, mm_prefix, sinks):
            continue
        need = _counter_bytes(par, max_num_batched_tokens, heads)
        if need > held:
            rank.add("attention counter", need)
            held = need


def unmodelled_flashinfer_counter(
    config: Mapping[str, Any], par: Parallel, rank: RankWeights, fp8_kv: bool = False
) -> str | None:
    """Why a rank's figure cannot be given: its family's walk does not ask about FlashInfer's KV
    counter (``rank.counter_checked`` false) while vLLM 0.33.0 would build FlashInfer attention for
    the model's attention layers (:func:`_flashinfer_attention`, head size from the text config's
    ``head_dim`` or hidden size / heads: ``num_attention_heads``, GPT-2's ``n_head`` / ``n_embd``,
    Whisper's ``decoder_attention_heads`` / ``d_model``), on SM 10.x or under a named backend or KV
    cache dtype, or a ModelOpt checkpoint's fp8 KV cache (``fp8_kv``: :func:`modelopt_fp8_kv_cache`,
    which ``--kv-cache-dtype auto`` resolves to fp8). ``None``: no such gap (the walk asked, no
    attention heads in the config, MLA attention (``kv_lora_rank``), a sparse-attention indexer
    (``index_topk``), another backend). Attention sinks are not read here (off SM 10.x the
    default is taken as FlashAttention's, which serves no sinks on SM 12.x): every family whose
    layers vLLM 0.33.0 builds with sinks asks in its own walk (:func:`flashinfer_counter_layers`
    with each layer's sinks) or is refused by name before a figure."""
    if rank.counter_checked or par.vllm_version != "0.33.0" or par.capability is None:
        return None
    chosen_default = par.attention_backend is None and par.kv_cache_dtype == "auto" and not fp8_kv
    if config.get("index_topk") or (par.capability[0] != 10 and chosen_default):
        # sparse attention (an indexer) has backends of its own; off SM 10.x vLLM's own choice is
        # FlashInfer only for a head size FlashAttention refuses, which such families serve on
        # their own backends (DeepSeek-V4's 512: recorded without a counter on SM 8.x)
        return None
    text = config.get("text_config") if isinstance(config.get("text_config"), Mapping) else config
    assert isinstance(text, Mapping)
    heads = next((text[k] for k in ("num_attention_heads", "n_head", "decoder_attention_heads") if k in text), None)
    hidden = text.get("hidden_size", text.get("n_embd", text.get("d_model")))
    if text.get("kv_lora_rank") or config.get("kv_lora_rank"):
        return None
    head_size: Any = text.get("head_dim")
    if heads is None:
        heads, head_size = _class_default_heads(config)
    if not isinstance(heads, int) or heads <= 0:
        return None
    head_size = head_size or (hidden // heads if isinstance(hidden, int) else 0)
    if not isinstance(head_size, int) or not _flashinfer_attention(par, head_size, fp8_kv):
        return None
    sm = f"{par.capability[0]}.{par.capability[1]}"
    return (
        f"on SM {sm} vLLM {par.vllm_version}'s FlashInfer attention allocates a shared multi-CTA KV counter while "
        f"loading; not modelled for {text.get('model_type') or config.get('model_type')} (name another "
        "--attention-backend, or another release)"
    )


def _class_default_heads(config: Mapping[str, Any]) -> tuple[int | None, int | None]:
    """(query heads, head size) of a config whose (text) config leaves its head count to its
    config class's default, as vLLM's model takes them: the model's geometry, read with its
    family's config-class defaults
    (:func:`~dryboot.vllm.transformers_utils.config.geometry_from_config`; Gemma-3n's
    ``Gemma3nTextConfig`` gives 8 heads of 256). ``(None, None)``: no geometry (the config is
    refused where the plan reads it)."""
    # at call: the config reader imports the model families, whose walks import this module
    from dryboot.vllm.transformers_utils.config import geometry_from_config

    try:
        model = geometry_from_config(dict(config))
    except InputError:
        return None, None
    full = model.attention(LayerKind.FULL)
    return model.num_attention_heads or None, full.head_dim or None


def _ct_moe(quant: Quant, family: str) -> bool:
    """compressed-tensors W8A8 / NVFP4 experts of a Qwen3-MoE model (the family whose experts are
    checked, :mod:`dryboot.vllm.model_executor.layers.quantization.fused_moe`)."""
    return quant.scaled is not None and quant.method in ("compressed-tensors", "fp8") and family == "qwen3_moe"


#: model types walked as Qwen3-Next whose compressed-tensors W8A8 / NVFP4 layouts after loading are
#: recorded (Qwen4-Exp's plain layout: tests/fidelity/quant_cases_qwen4exp.py); Qwen3-Next's own are not
CT_SCALED_NEXT_MODEL_TYPES = frozenset({"qwen4_exp", "qwen4_exp_text"})


def _ct_next(quant: Quant, family: str, config: Mapping[str, Any]) -> bool:
    """compressed-tensors W8A8 / NVFP4 on a model walked as Qwen3-Next whose layout after loading
    is recorded (:data:`CT_SCALED_NEXT_MODEL_TYPES`): its Gated DeltaNet, attention, shared-expert
    and routed-expert layers as the dense and Qwen3-MoE families' are."""
    return (
        quant.scaled is not None
        and quant.method == "compressed-tensors"
        and family == "qwen3_next"
        and config.get("model_type") in CT_SCALED_NEXT_MODEL_TYPES
    )


def _local_experts(e: int, ep: int) -> int:
    """The experts rank 0 holds under expert parallelism (``fused_moe/expert_map_manager.py``
    ``determine_expert_map``, ``linear`` placement): ``E // EP``, one more on the first ``E % EP``
    ranks, so ``ceil(E / EP)`` on rank 0 (uneven splits are served)."""
    return -(-e // ep)


def refuse_tp_above_experts(tp: int, e: int) -> None:
    """vLLM's MoE blocks that split every expert over TP refuse more ranks than experts.

    :raises InputError: ``tp`` above ``e``."""
    if tp > e:
        raise InputError(
            "--tensor-parallel-size", None, f"{tp} is greater than the number of experts {e} (vLLM refuses it)"
        )


def experts_per_rank(e: int, inter: int, tp: int, par: Parallel, what: str) -> tuple[int, int]:
    """Experts and intermediate size one rank holds of a fused MoE layer of ``e`` experts of
    intermediate size ``inter``: under expert parallelism :func:`_local_experts` of ``tp * dp``
    ranks at full width, else every expert with ``inter`` split over ``tp`` (vLLM's ``FusedMoE``).

    :raises InputError: ``tp`` does not divide ``inter`` (``what`` names it)."""
    if par.expert_parallel:
        return _local_experts(e, tp * par.dp), inter
    return e, _divide(inter, tp, what)


def _mlp(w: _Walk, quant: Quant, mlp: str, h: int, i_r: int, ab: int, tp: int = 1) -> None:
    """A gated MLP: ``gate_up_proj`` (MergedColumnParallelLinear ``[2 I / TP, H]``) and
    ``down_proj`` (RowParallelLinear ``[H, I / TP]``)."""
    w.module(
        _linear(quant, f"{mlp}.gate_up_proj", h, (i_r, i_r), ab, tp=tp),
        "mlp",
        ((f"{mlp}.gate_proj", "column"), (f"{mlp}.up_proj", "column")),
    )
    w.module(
        _linear(quant, f"{mlp}.down_proj", i_r, (h,), ab, tp=tp, split="row"), "mlp", ((f"{mlp}.down_proj", "row"),)
    )


def deepseek_v32_fp32_rope(config: Mapping[str, Any], arch: str, version: str, rope_dim: int, ab: int) -> bool:
    """Whether the rotary tables stay float32: the architecture served by the release's
    ``vllm/models/deepseek_v32/`` package (0.29+ registry: DeepSeek-V3.2, GLM-5) with a YaRN rope
    (``DeepseekScalingRotaryEmbedding``), a 16-bit model dtype and a rotary head of 64, 128, 256 or
    512: the embedding keeps its float32 cache for FlashInfer's rope kernel (``use_flashinfer``),
    enabled under that package (recorded on 0.30.0 / 0.33.0 with the faked H200 and FlashInfer
    installed; DeepSeek-V3 with YaRN under ``deepseek_v2.py`` keeps the model dtype)."""
    rope = config.get("rope_parameters") or config.get("rope_scaling") or {}
    kind = str(rope.get("rope_type", rope.get("type", "default"))) if isinstance(rope, Mapping) else "default"
    return (
        release_registry_file(arch, version) == "vllm.models.deepseek_v32.py"
        and kind in ("yarn", "deepseek_yarn")
        and ab == 2
        and rope_dim in (64, 128, 256, 512)
    )


def _rotary_bytes(config: Mapping[str, Any], hd: int, ab: int, *, mrope_factor: int = 4) -> int:
    """The rotary table ``cos_sin_cache`` ``[positions, rotary_dim]`` in the model dtype, one
    for every attention layer (``get_rope``'s cache): ``rotary_dim = head_dim x
    partial_rotary_factor``; multimodal RoPE (``mrope_section``, ``MRotaryEmbedding``) caches
    ``mrope_factor`` (four) times ``max_position_embeddings`` (``rotary_embedding/mrope.py``); YaRN
    ``original_max_position_embeddings x factor``; ``default``, ``llama3`` and ``dynamic`` with a
    ``factor`` (``DynamicNTKScalingRotaryEmbedding``, ``dynamic_ntk_scaling_rope.py``: the factor
    changes the base, not the table's length) ``max_position_embeddings``.

    :raises InputError: a multimodal RoPE with a scaling type other than ``default``, or a
        rope type whose table is not modelled (named)."""
    rope = config.get("rope_parameters") or config.get("rope_scaling") or {}
    if not isinstance(rope, Mapping):
        rope = {}
    partial = config.get("partial_rotary_factor", rope.get("partial_rotary_factor", 1.0))
    positions = _int(config, "max_position_embeddings")
    kind = str(rope.get("rope_type", rope.get("type", "default")))
    if "mrope_section" in rope:
        if kind != "default":
            raise InputError("config.json", "rope_parameters", "a scaled multimodal RoPE table is not modelled")
        positions *= mrope_factor
    elif kind in ("yarn", "deepseek_yarn"):
        # YaRN tables span original_max_position_embeddings x factor (yarn_scaling_rope.py,
        # deepseek_scaling_rope.py)
        positions = int(_int(rope, "original_max_position_embeddings") * float(rope.get("factor", 1)))
    elif kind not in ("default", "llama3") and not (kind == "dynamic" and "factor" in rope and "alpha" not in rope):
        raise InputError("config.json", "rope_scaling", f"the rotary table of rope type {kind!r} is not modelled")
    return positions * int(hd * float(partial)) * ab


def _qwen3_vision_tower(w: _Walk, v: Mapping[str, Any], tp: int, ab: int) -> None:
    """Qwen3-VL's vision transformer (``qwen3_vl.py`` ``Qwen3_VisionTransformer``), in the model
    dtype, sharded by TP (``mm_encoder_tp_mode`` ``weights``): the Conv3d patch embedding
    ``[D, C, T, P, P]`` + bias, the position embedding ``[N, D]``, per block two LayerNorms (weight
    and bias), ``attn.qkv`` (QKVParallelLinear ``[3 D / TP, D]`` + bias), ``attn.proj``
    (RowParallelLinear, bias whole), ``mlp.linear_fc1`` / ``linear_fc2`` (column / row, with
    biases); the merger (and each deepstack merger: its LayerNorm over the merged width) with
    ``linear_fc1`` ``[M / TP, M]`` and ``linear_fc2`` ``[out, M / TP]``, ``M = D x merge^2``; the
    rotary table ``[8192, head_dim / 2]``."""
    d = _int(v, "hidden_size")
    heads = _int(v, "num_heads")
    inter = _int(v, "intermediate_size")
    _divide(heads, tp, "the vision tower's num_heads")
    i_r = _divide(inter, tp, "the vision tower's intermediate_size")
    p, t, c = _int(v, "patch_size"), _int(v, "temporal_patch_size"), _int(v, "in_channels", 3)
    out = _int(v, "out_hidden_size")
    m = d * _int(v, "spatial_merge_size") ** 2
    m_r = _divide(m, tp, "the vision merger's width")
    deepstack = v.get("deepstack_visual_indexes") or []
    # element counts, one per tensor (each is its own allocation)
    tensors = [d * c * t * p * p, d, _int(v, "num_position_embeddings") * d]
    block = [d, d, d, d, (3 * d // tp) * d, 3 * d // tp, d * (d // tp), d, i_r * d, i_r, d * i_r, d]
    tensors += block * _int(v, "depth")
    merger = [m_r * m, m_r, out * m_r, out]
    tensors += [d, d, *merger]
    for _ in deepstack:
        tensors += [m, m, *merger]
    for n in tensors:
        w.own("vision", n * ab)
    w.own("rotary", 8192 * (d // heads // 2) * ab, buffer=True)


#: one linear layer of each kind in a wrapper's vision tower, as vLLM names it (``gemma3_mm.py``:
#: ``vision_tower`` over ``siglip.py``; ``qwen3_5.py``: ``visual`` over ``qwen3_vl.py``)
TOWER_LINEARS = {
    "gemma3_mm": tuple(
        f"vision_tower.vision_model.encoder.layers.0.{m}"
        for m in ("self_attn.qkv_proj", "self_attn.out_proj", "mlp.fc1", "mlp.fc2")
    ),
    "qwen3_5": (
        *(f"visual.blocks.0.{m}" for m in ("attn.qkv", "attn.proj", "mlp.linear_fc1", "mlp.linear_fc2")),
        "visual.merger.linear_fc1",
        "visual.merger.linear_fc2",
    ),
}
TOWER_LINEARS["qwen3_5_moe"] = TOWER_LINEARS["qwen3_5"]


def _refuse_quantized_tower(quant: Quant, family: str, arch: str) -> None:
    """A quantized checkpoint's vision tower is sized in the model dtype: its linear layers must be
    left unquantized by the config (compressed-tensors ``ignore``, AWQ ``modules_to_not_convert``,
    GPTQ's quantized modules, ModelOpt's per-layer map), as in the checkpoints checked.

    :raises InputError: a tower linear layer the config quantizes (named)."""
    if quant.method is None:
        return
    for name in TOWER_LINEARS.get(family, ()):
        if quant.scaled is not None:
            quantized = quant.scaled.layer_scheme(name, checkpoint_parts(name)) is not None
        elif quant.wna16 is not None:
            quantized = quant.wna16.layer_scheme(name) is not None
        else:
            quantized = not _is_ignored(quant, name)
        if quantized:
            raise InputError(
                "quantization_config",
                "ignore",
                f"{arch}'s vision tower quantized ({name}): a quantized tower is not modelled "
                "(leave it unquantized: --language-model-only, or a checkpoint whose ignore list names it)",
            )


def _siglip_vision_tower(w: _Walk, v: Mapping[str, Any], text_h: int, tp: int, ab: int) -> None:
    """Gemma-3's SigLIP tower (``siglip.py`` ``SiglipVisionModel``, no pooling head) and projector
    (``gemma3_mm.py`` ``Gemma3MultiModalProjector``), in the model dtype, sharded by TP: the Conv2d
    patch embedding ``[D, C, P, P]`` + bias, the position embedding ``[N, D]`` (``N = (image /
    patch)^2``) and its int64 ``position_ids`` buffer ``[1, N]``; per layer two LayerNorms (weight,
    bias), ``qkv_proj`` (``[3 D / TP, D]`` + bias), ``out_proj`` (``[D, D / TP]``, bias whole),
    ``fc1`` (``[I / TP, D]`` + bias), ``fc2`` (``[D, I / TP]``, bias whole); the post LayerNorm; the
    projector's ``mm_input_projection_weight`` ``[D, H_text]`` and ``mm_soft_emb_norm`` ``[D]``.

    :raises InputError: heads or intermediate size that TP does not divide."""
    d, inter, heads = _int(v, "hidden_size"), _int(v, "intermediate_size"), _int(v, "num_attention_heads")
    _divide(heads, tp, "the vision tower's num_attention_heads")
    i_r = _divide(inter, tp, "the vision tower's intermediate_size")
    d_r = _divide(d, tp, "the vision tower's hidden_size")
    p, c = _int(v, "patch_size"), _int(v, "num_channels")
    n = (_int(v, "image_size") // p) ** 2
    tensors = [d * c * p * p, d, n * d]
    layer = [d, d, 3 * d_r * d, 3 * d_r, d * d_r, d, d, d, i_r * d, i_r, d * i_r, d]
    tensors += layer * _int(v, "num_hidden_layers")
    tensors += [d, d, d * text_h, d]
    for count in tensors:
        w.own("vision", count * ab)
    w.own("vision", 8 * n, buffer=True)


def _gemma3_layer_type(config: Mapping[str, Any], li: int) -> str:
    """``layer_types[li]``, else ``Gemma3TextConfig``'s: full attention every
    ``sliding_window_pattern`` (6) layers, sliding between."""
    types = config.get("layer_types")
    if isinstance(types, list) and li < len(types):
        return str(types[li])
    pattern = config.get("sliding_window_pattern", config.get("_sliding_window_pattern", 6))
    return "sliding_attention" if (li + 1) % _int({"p": pattern}, "p") else "full_attention"


def _gemma3_rotary_tables(config: Mapping[str, Any], layers: range, hd: int, ab: int) -> list[int]:
    """The rotary tables of a Gemma-3 stage: one per distinct rope of its layers' types
    (``get_rope``'s cache): full attention the config's rope (``rope_scaling``, ``rope_theta``),
    sliding attention ``default`` at ``rope_local_base_freq``, any other type (RNJ-1's
    ``chunked_attention``) its own entry of the per-layer-type ``rope_parameters``;
    ``[positions, head_dim]`` in the model dtype, ``positions`` = ``max_position_embeddings``
    (``linear``: times its factor, ``linear_scaling_rope.py``).

    :raises InputError: a rope type whose table is not modelled (named); a layer type without its
        entry in the per-layer-type mapping (vLLM passes the whole mapping to ``get_rope``)."""
    params = config.get("rope_parameters")
    per_type: dict[str, Mapping[str, Any]] = {}
    if isinstance(params, Mapping) and {"full_attention", "sliding_attention"} & set(params):
        for t in ("full_attention", "sliding_attention"):
            per_type[t] = params.get(t) or {"rope_type": "default"}
        per_type.update({t: v for t, v in params.items() if t not in per_type and isinstance(v, Mapping)})
    else:
        scaling = config.get("rope_scaling") or {}
        if not isinstance(scaling, Mapping):
            raise InputError("config.json", "rope_scaling", "not an object")
        per_type["full_attention"] = {"rope_theta": config.get("rope_theta", 1_000_000.0), **scaling}
        per_type["sliding_attention"] = {
            "rope_type": "default",
            "rope_theta": config.get("rope_local_base_freq", 10_000.0),
        }
    positions = _int(config, "max_position_embeddings")
    tables: dict[tuple[str, float, float], int] = {}
    for li in layers:
        layer_type = _gemma3_layer_type(config, li)
        if layer_type not in per_type:
            raise InputError(
                "config.json",
                "rope_parameters",
                f"TypeError: unhashable type: 'dict' (layer {li}'s {layer_type!r} has no entry of its own: vLLM "
                "passes the whole per-layer-type rope_parameters to get_rope)",
            )
        rope = per_type[layer_type]
        kind = str(rope.get("rope_type", rope.get("type", "default")))
        factor = float(rope.get("factor", 1.0))
        key = (kind, float(rope.get("rope_theta", 10_000.0)), factor)
        if kind == "default":
            tables[key] = positions * hd * ab
        elif kind == "linear":
            tables[key] = int(positions * factor) * hd * ab
        else:
            raise InputError("config.json", "rope_scaling", f"the rotary table of rope type {kind!r} is not modelled")
    return list(tables.values())


def _layer_type(config: Mapping[str, Any], li: int) -> str:
    """``layer_types[li]``, else vLLM's config default: full attention every
    ``full_attention_interval`` (4) layers, linear attention between
    (``transformers_utils/configs/qwen3_next.py``)."""
    types = config.get("layer_types")
    if isinstance(types, list) and li < len(types):
        return str(types[li])
    interval = _int(config, "full_attention_interval", 4) or 4
    return "linear_attention" if (li + 1) % interval else "full_attention"


def _gated_delta_net(w: _Walk, config: Mapping[str, Any], quant: Quant, tp: int, gdn: str, h: int, ab: int) -> None:
    """A Gated DeltaNet mixer (``layers/mamba/gdn/qwen_gdn_linear_attn.py``): ``in_proj_qkvz``
    ``[(2 Dk + 2 Dv) / TP, H]`` and ``in_proj_ba`` ``[2 Hv / TP, H]`` (MergedColumnParallelLinear),
    ``conv1d`` ``[(2 Dk + Dv) / TP, 1, K]``, ``dt_bias`` ``[Hv / TP]`` (model dtype), ``A_log``
    ``[Hv / TP]`` (float32), the gated norm ``[dv]`` and ``out_proj`` ``[H, Dv / TP]``, with
    ``Dk = Hk x dk`` and ``Dv = Hv x dv``.

    Quantized (weight-only integer layouts): ``in_proj_qkvz``, ``in_proj_ba`` and ``out_proj``
    take the layer's quant method (``conv1d`` has none); ``in_proj_ba`` is then replicated,
    ``[2 Hv, H]`` whole on every rank (``maybe_disable_tp``: vLLM keeps it above Marlin's minimum
    output width on CUDA for the GPTQ, AWQ and INC methods)."""
    nk_r = _divide(_int(config, "linear_num_key_heads"), tp, "linear_num_key_heads")
    nv_r = _divide(_int(config, "linear_num_value_heads"), tp, "linear_num_value_heads")
    dk, dv = _int(config, "linear_key_head_dim"), _int(config, "linear_value_head_dim")
    kd, vd = nk_r * dk, nv_r * dv
    kernel = _int(config, "linear_conv_kernel_dim")
    entries = _linear(quant, f"{gdn}.in_proj_qkvz", h, (kd, kd, vd, vd), ab, tp=tp)
    w.module(entries, "linear attention", ((f"{gdn}.in_proj_qkvz", "column"),))
    if quant.wna16 is not None and quant.wna16.packing != "ct":
        ba = _linear(quant, f"{gdn}.in_proj_ba", h, (nv_r * tp, nv_r * tp), ab)
    else:
        ba = _linear(quant, f"{gdn}.in_proj_ba", h, (nv_r, nv_r), ab, tp=tp)
    w.module(ba, "linear attention", ((f"{gdn}.in_proj_ba", "column"),))
    w.module([("weight", (2 * kd + vd) * kernel * ab)], "linear attention", ((f"{gdn}.conv1d", "column"),))
    w.module([("weight", nv_r * ab)], "linear attention", ((f"{gdn}.dt_bias", "column"),))
    w.module([("weight", nv_r * 4)], "linear attention", ((f"{gdn}.A_log", "column", 4),))
    w.module([("weight", dv * ab)], "norm", ((f"{gdn}.norm", "whole"),))
    entries = _linear(quant, f"{gdn}.out_proj", vd, (h,), ab, tp=tp, split="row")
    w.module(entries, "linear attention", ((f"{gdn}.out_proj", "row"),))


#: the config key of the routed experts' count per family (default ``num_experts``)
_EXPERTS_KEY = {
    "mixtral": "num_local_experts",
    "deepseek_v2": "n_routed_experts",
    "glm4_moe_lite": "n_routed_experts",
    "glm4_moe": "n_routed_experts",
}


def deepseek_mha(config: Mapping[str, Any]) -> bool:
    """Whether ``DeepseekV2DecoderLayer`` builds plain attention (``DeepseekAttention``: a
    ``qkv_proj`` / ``o_proj`` pair over ``hidden_size // num_attention_heads``-wide heads, full
    rotary) instead of MLA: ``qk_nope_head_dim = qk_rope_head_dim = 0``."""
    return config.get("qk_nope_head_dim") == 0 and config.get("qk_rope_head_dim") == 0


def _refuse_modelopt_quantized(quant: Quant, prefix: str, what: str) -> None:
    """Refuse layer ``prefix`` where a ModelOpt checkpoint quantizes it (not in its
    ``exclude_modules``) and dryboot models it only unquantized, as the published checkpoints
    leave it; ``what`` names the layer and says why (after "a ModelOpt-quantized").

    :raises InputError: such a quantized layer (named)."""
    if isinstance(quant.scaled, ModelOptQuant) and quant.scaled.layer_scheme(prefix, (prefix,)) is not None:
        raise InputError("quantization_config", "exclude_modules", f"a ModelOpt-quantized {what}")


def _mla_attention(
    w: _Walk,
    config: Mapping[str, Any],
    quant: Quant,
    tp: int,
    att: str,
    h: int,
    ab: int,
    *,
    input_size: int | None = None,
) -> None:
    """Multi-head latent attention (``DeepseekV2MLAAttention``): with ``q_lora_rank``, the
    replicated ``fused_qkv_a_proj`` ``[q_lora + kv_lora + rope, in]`` (checkpoint ``q_a_proj`` +
    ``kv_a_proj_with_mqa``), ``q_a_layernorm`` and ``q_b_proj`` (column ``[heads / TP x
    (nope + rope), q_lora]``); without, ``q_proj`` (column ``[heads / TP x (nope + rope), in]``) and
    the replicated ``kv_a_proj_with_mqa``; then ``kv_a_layernorm`` ``[kv_lora]``, ``kv_b_proj``
    (column ``[heads / TP x (nope + v), kv_lora]``; quantized, its dequantized copy after loading),
    ``o_proj`` (row ``[H, heads / TP x v]``) and the attention layer's four float32 scale buffers.
    ``in``: ``input_size`` (an EAGLE-3 head's first layer reads ``2 H``: ``deepseek_eagle3.py``),
    else ``H``."""
    k_in = h if input_size is None else input_size
    heads_r = _divide(_int(config, "num_attention_heads"), tp, "num_attention_heads")
    nope, rope, v = _int(config, "qk_nope_head_dim"), _int(config, "qk_rope_head_dim"), _int(config, "v_head_dim")
    kv_lora = _int(config, "kv_lora_rank")
    q_lora = config.get("q_lora_rank")
    if q_lora is not None:
        q_lora = _int(config, "q_lora_rank")
        w.module(
            _linear(quant, f"{att}.fused_qkv_a_proj", k_in, (q_lora, kv_lora + rope), ab, tp=tp, split="replicated"),
            "attention",
            ((f"{att}.q_a_proj", "whole"), (f"{att}.kv_a_proj_with_mqa", "whole")),
        )
        w.module([("weight", q_lora * ab)], "norm", ((f"{att}.q_a_layernorm", "whole"),))
        w.module(
            _linear(quant, f"{att}.q_b_proj", q_lora, (heads_r * (nope + rope),), ab, tp=tp),
            "attention",
            ((f"{att}.q_b_proj", "column"),),
        )
    else:
        w.module(
            _linear(quant, f"{att}.q_proj", k_in, (heads_r * (nope + rope),), ab, tp=tp),
            "attention",
            ((f"{att}.q_proj", "column"),),
        )
        w.module(
            _linear(quant, f"{att}.kv_a_proj_with_mqa", k_in, (kv_lora + rope,), ab, tp=tp, split="replicated"),
            "attention",
            ((f"{att}.kv_a_proj_with_mqa", "whole"),),
        )
    w.module([("weight", kv_lora * ab)], "norm", ((f"{att}.kv_a_layernorm", "whole"),))
    w.module(
        _linear(quant, f"{att}.kv_b_proj", kv_lora, (heads_r * (nope + v),), ab, tp=tp),
        "attention",
        ((f"{att}.kv_b_proj", "column"),),
    )
    kv_b = f"{att}.kv_b_proj"
    # MLAAttention.process_weights_after_loading dequantizes a quantized kv_b_proj; the published
    # NVFP4 checkpoints (DeepSeek-V3 / V3.1, Kimi-K2.5) exclude it: not recorded
    _refuse_modelopt_quantized(quant, kv_b, f"MLA kv_b_proj ({kv_b}: dequantized after loading) is not modelled")
    if quant.wna16 is not None and quant.wna16.layer_scheme(f"{att}.kv_b_proj") is not None:
        # MLAAttention.process_weights_after_loading: a quantized kv_b_proj is dequantized (the
        # layer applied to an identity, get_and_maybe_dequant_weights) into one [kv_lora,
        # heads / TP x (nope + v)] tensor in the model dtype, kept as W_UK_T / W_UV (views)
        w.own("attention", kv_lora * heads_r * (nope + v) * ab)
    w.module(
        _linear(quant, f"{att}.o_proj", heads_r * v, (h,), ab, tp=tp, split="row"),
        "attention",
        ((f"{att}.o_proj", "row"),),
    )
    w.module([], "attention", ((att, "attention scales"),))
    if quant.method in ("modelopt", "modelopt_fp4") and not isinstance(quant.scaled, ModelOptQuant):
        # ModelOpt's KV-cache scale parameters reach MLA layers too (modelopt.py get_quant_method:
        # Attention or MLAAttention); fp8's only plain Attention (fp8.py). After loading (a GPU
        # named: the layout after the post-load step) ModelOptKVCacheMethod deletes the four
        # (kv_cache.py BaseKVCacheMethod.process_weights_after_loading; recorded: DeepSeek-V3 NVFP4)
        for _ in range(4):
            w.own("scale", ab)
    w.own("attention scales", 16, buffer=True)
    if quant.method == "fp8" and quant.scaled is not None:  # plain fp8 after loading (_fp8_post_load)
        if "index_topk" in config and quant.scaled.capability < 90:
            # vLLM's attention selector finds no sparse MLA backend there (recorded: DeepSeek-V3.2 on SM 8.9)
            raise InputError(
                "--gpu",
                None,
                "fp8 weights after loading of a sparse-attention MLA model (its indexer): vLLM has no sparse MLA "
                "backend below SM 9.0 (No valid attention backend found)",
            )
        # MLAAttention.process_weights_after_loading: kv_b_proj dequantized into W_UK_T / W_UV in
        # the model dtype (the fp8 kv_b_proj stays); the layer's two CPU scale scalars and the
        # release's q/k/v_range (0.27.1: attention_range_blocks) leave the GPU
        w.own("weight", heads_r * (nope + v) * kv_lora * ab)
        w.ref.allocated_bytes += (w.attention_blocks - 2 - w.range_blocks) * ALLOC_ROUND
        return
    # MLAAttention.process_weights_after_loading resets the default scales as Attention's does
    # (checked for the weight-only integer layouts, which the oracle runs after loading)
    host = _post_load_host_blocks(quant, w.range_blocks) if quant.wna16 is not None else 0
    w.ref.allocated_bytes += (w.attention_blocks - host) * ALLOC_ROUND


#: ``layers_block_type`` entries as ``hybrid_override_pattern`` symbols (``NemotronHConfig``)
_NEMOTRON_BLOCKS = {
    "mamba": "M",
    "linear_attention": "M",
    "attention": "*",
    "full_attention": "*",
    "mlp": "-",
    "moe": "E",
}


def _nemotron_pattern(config: Mapping[str, Any]) -> str:
    """``hybrid_override_pattern``, or the one the ``layers_block_type`` list gives (which wins,
    as ``NemotronHConfig`` reads it)."""
    types = config.get("layers_block_type")
    if isinstance(types, list) and types and all(isinstance(t, str) and t in _NEMOTRON_BLOCKS for t in types):
        return "".join(_NEMOTRON_BLOCKS[t] for t in types)
    pattern = config.get("hybrid_override_pattern")
    if not isinstance(pattern, str) or not pattern or set(pattern) - set("ME*-"):
        raise InputError("config.json", "hybrid_override_pattern", "missing or not a string of M, E, * and -")
    return pattern


def _nemotron_h_layer(
    w: _Walk, config: Mapping[str, Any], quant: Quant, par: Parallel, li: int, h: int, ab: int
) -> None:
    """One Nemotron-H layer (``nemotron_h.py``) of ``hybrid_override_pattern``: its norm, then
    ``M`` a Mamba2 mixer (``layers/mamba/mamba_mixer2.py``: ``in_proj`` ``[(2 I + 2 G N + Hm) /
    TP, H]``, ``conv1d`` ``[(I + 2 G N) / TP, K]`` + bias, ``A`` (float32), ``D``, ``dt_bias``
    ``[Hm / TP]``, the gated norm ``[I / TP]``, ``out_proj`` ``[H, I / TP]``; ``conv_weights`` is a
    view, no memory), ``*`` attention without rotary, ``-`` a non-gated MLP (``up_proj`` /
    ``down_proj``), ``E`` a MoE block: gate, float32 ``e_score_correction_bias``, a non-gated
    shared expert and non-gated experts (``w13`` ``[E, I / TP, H]``). Under ModelOpt
    (MIXED_PRECISION: ``in_proj`` / ``out_proj`` FP8, experts and shared experts W4A16 NVFP4 in
    nvidia/NVIDIA-Nemotron-3.5-Lightning-30B-A3B-NVFP4) each linear layer takes the algorithm its
    name ``model.layers.N.mixer.*`` resolves to, the experts :func:`modelopt_experts_bytes`
    (non-gated). A latent MoE (``moe_latent_size`` ``L``) adds the replicated ``fc1_latent_proj``
    ``[L, H]`` and ``fc2_latent_proj`` ``[H, L]`` (biases under ``mlp_bias``), its routed experts
    ``L`` wide (``w13`` ``[E, I / TP, L]``); the gate and the shared expert stay ``H`` wide.

    Under ModelOpt the latent projections take the algorithm their names resolve to.

    :raises InputError: groups TP does not divide."""
    tp = par.tp
    kind = _nemotron_pattern(config)[li]
    w.own("norm", h * ab)
    bias = bool(config.get("mlp_bias", False))
    mixer = f"model.layers.{li}.mixer"
    mo = quant if quant.scaled is not None else None
    if kind == "M":
        nh = _int(config, "mamba_num_heads")
        _mamba2_mixer(
            w,
            h,
            nh,
            nh * _int(config, "mamba_head_dim"),
            _int(config, "n_groups"),
            _int(config, "ssm_state_size"),
            _int(config, "conv_kernel"),
            tp,
            ab,
            bias=bool(config.get("use_bias", False)),
            conv_bias=bool(config.get("use_conv_bias", True)),
            quant=mo,
            prefix=mixer,
        )
    elif kind == "*":
        nq, nkv = _int(config, "num_attention_heads"), _int(config, "num_key_value_heads")
        hd = int(config.get("head_dim") or h // nq)
        nq_r = _divide(nq, tp, "num_attention_heads")
        nkv_r = _divide(nkv, tp, "num_key_value_heads") if nkv >= tp else 1
        if mo is None:
            w.own("attention", (nq_r + 2 * nkv_r) * hd * h * ab)
            w.own("attention", h * nq_r * hd * ab)
        else:
            for name, k, parts in (
                (f"{mixer}.qkv_proj", h, (nq_r * hd, nkv_r * hd, nkv_r * hd)),
                (f"{mixer}.o_proj", nq_r * hd, (h,)),
            ):
                w.module(_linear(mo, name, k, parts, ab, tp=tp), "attention")
        w.own("attention scales", 16, buffer=True)
        w.ref.allocated_bytes += (
            w.attention_blocks - (_post_load_host_blocks(mo, w.range_blocks) if mo else 0)
        ) * ALLOC_ROUND
    elif kind == "-":
        i_r = _divide(_int(config, "intermediate_size"), tp, "intermediate_size")
        _nemotron_mlp(w, h, i_r, bias, ab, mo, f"{mixer}")
    else:
        latent = config.get("moe_latent_size")
        e = _int(config, "n_routed_experts")
        # GateLinear(force_fp32_compute): a float32 weight unless SM 9.0 / 10.x serve it in
        # specialized kernels (an unknown GPU: the model dtype, as the oracle's default GPU)
        cap = par.capability
        w.own("router", e * h * (4 if cap is not None and cap != (9, 0) and cap[0] != 10 else ab))
        w.own("router", 4 * e)
        shared = _int(config, "moe_shared_expert_intermediate_size", 0) * _int(config, "n_shared_experts", 0)
        if shared:
            i_s = _divide(shared, tp, "the shared experts' intermediate size")
            _nemotron_mlp(w, h, i_s, bias, ab, mo, f"{mixer}.shared_experts")
        inter = _int(config, "moe_intermediate_size")
        e_r, i_r = experts_per_rank(e, inter, tp, par, "the experts' intermediate size")
        moe_h = h
        if latent is not None:
            # latent MoE: the routed experts work in moe_latent_size, between two replicated
            # projections fc1_latent_proj [L, H] and fc2_latent_proj [H, L] (biases: mlp_bias)
            moe_h = _int(config, "moe_latent_size")
            if mo is None:
                for n in (moe_h * h, *([moe_h] if bias else []), h * moe_h, *([h] if bias else [])):
                    w.own("latent projections", n * ab)
            else:  # ModelOpt: each as its name resolves (ReplicatedLinear with the model's quant_config)
                for name, k, n in (("fc1_latent_proj", h, moe_h), ("fc2_latent_proj", moe_h, h)):
                    w.module(_linear(mo, f"{mixer}.{name}", k, (n,), ab, split="replicated"), "latent projections")
                    if bias:
                        w.own("latent projections", n * ab)
        if mo is not None:
            if not isinstance(mo.scaled, ModelOptQuant):
                raise InputError(
                    "quantization_config", "quant_method", f"{quant.method} MoE experts of nemotron_h are not modelled"
                )
            w.module(modelopt_experts_bytes(mo.scaled, f"{mixer}.experts", e_r, moe_h, i_r, gated=False), "experts")
        else:
            w.own("experts", e_r * i_r * moe_h * ab)  # non-gated: w13 [E, I, H] (H: the latent size)
            w.own("experts", e_r * moe_h * i_r * ab)  # w2 [E, H, I]
        if par.expert_parallel:
            w.own("expert map", 4 * e, buffer=True)


def mamba2_split(
    nh: int, inter: int, g: int, n: int, tp: int, inter_field: str = "the Mamba2 intermediate size"
) -> tuple[int, int, int, int]:
    """A Mamba2 mixer's extents on one rank (``layers/mamba/mamba_mixer2.py`` ``MambaMixer2``):
    heads ``nh / TP``, intermediate ``inter / TP``, ``in_proj``'s rows ``(2 I + 2 G N + Hm) / TP``
    and ``conv1d``'s ``(I + 2 G N) / TP``, ``g`` groups of state ``n``; a single group that TP does
    not divide is replicated to one per rank (``extra_groups_for_head_shards``: ``G = TP``).

    :raises InputError: more than one group and TP does not divide them; heads or ``inter`` TP
        does not divide (``inter_field`` names it)."""
    if g % tp:
        if g != 1:
            raise InputError(
                "--tensor-parallel-size", None, f"Mamba2 n_groups ({g}) not divisible by {tp} (vLLM refuses it)"
            )
        g = tp
    nh_r = _divide(nh, tp, "the Mamba2 heads")
    i_r, gn_r = _divide(inter, tp, inter_field), g * n // tp
    return nh_r, i_r, 2 * i_r + 2 * gn_r + nh_r, i_r + 2 * gn_r


def _mamba2_mixer(
    w: _Walk,
    h: int,
    nh: int,
    inter: int,
    g: int,
    n: int,
    k: int,
    tp: int,
    ab: int,
    *,
    bias: bool,
    conv_bias: bool,
    quant: Quant | None = None,
    prefix: str = "",
) -> None:
    """A Mamba2 mixer (``layers/mamba/mamba_mixer2.py`` ``MambaMixer2``), ``inter`` wide with ``nh``
    heads, ``g`` groups of state ``n``, conv kernel ``k``: ``in_proj`` ``[(2 I + 2 G N + Hm) / TP,
    H]``, ``conv1d`` ``[(I + 2 G N) / TP, K]`` (+ bias), ``A`` (float32), ``D``, ``dt_bias`` ``[Hm /
    TP]``, the gated norm ``[I / TP]``, ``out_proj`` ``[H, I / TP]`` (``conv_weights`` is a view, no
    memory). A single group that TP does not divide is replicated to one per rank
    (``extra_groups_for_head_shards``: ``G = TP``).

    :raises InputError: more than one group and TP does not divide them; heads TP does not divide."""
    merged = g % tp == 0  # in_proj a MergedColumnParallelLinear of five parts, else one column
    nh_r, i_r, proj, conv = mamba2_split(nh, inter, g, n, tp)
    gn_r = (proj - 2 * i_r - nh_r) // 2
    if quant is not None:  # ModelOpt: in_proj / out_proj as their names resolve (conv1d never quantized)
        parts = (i_r, i_r, gn_r, gn_r, nh_r) if merged else (proj,)
        w.module(_linear(quant, f"{prefix}.in_proj", h, parts, ab, tp=tp), "mamba")
        w.module(_linear(quant, f"{prefix}.out_proj", i_r, (h,), ab, tp=tp, split="row"), "mamba")
        rest = [conv * k, *([conv] if conv_bias else []), nh_r, nh_r, i_r]
        for count in [*([proj] if bias else []), *rest, *([h] if bias else [])]:
            w.own("mamba", count * ab)
        w.own("mamba", nh_r * 4)  # A, float32
        return
    sizes = [proj * h, *([proj] if bias else []), conv * k, *([conv] if conv_bias else [])]
    sizes += [nh_r, nh_r, i_r, h * i_r, *([h] if bias else [])]  # D, dt_bias, norm, out_proj
    for count in sizes:
        w.own("mamba", count * ab)
    w.own("mamba", nh_r * 4)  # A, float32


def _granite_layer(w: _Walk, config: Mapping[str, Any], par: Parallel, li: int, h: int, ab: int) -> bool:
    """One Granite-4 layer (``granitemoehybrid.py``) of ``layer_types``: two norms, a Mamba2 mixer
    (``mamba`` / ``linear_attention``: ``intermediate = mamba_expand x H``) or attention (``attention``
    / ``full_attention``: ``head_dim = H / heads``, biases under ``attention_bias``, no rotary unless
    ``position_embedding_type`` is ``rope``), then, with ``num_local_experts``, the MoE block
    (``granitemoe.py`` ``GraniteMoeMoE``: gate ``[E, H]``, ``w13`` / ``w2``) and, with
    ``shared_intermediate_size``, the shared MLP (``input_linear`` ``[2 S / TP, H]``,
    ``output_linear`` ``[H, S / TP]``). Returns whether it is an attention layer.

    :raises InputError: a layer type not modelled (named), sizes TP does not divide."""
    tp = par.tp
    types = config.get("layer_types")
    if not isinstance(types, list):
        types = ["linear_attention"] * _int(config, "num_hidden_layers")
    kind = str(types[li]) if li < len(types) else ""
    for _ in range(2):
        w.own("norm", h * ab)
    if kind in ("mamba", "linear_attention"):
        nh, inter = _int(config, "mamba_n_heads"), _int(config, "mamba_expand") * h
        _mamba2_mixer(
            w,
            h,
            nh,
            inter,
            _int(config, "mamba_n_groups"),
            _int(config, "mamba_d_state"),
            _int(config, "mamba_d_conv"),
            tp,
            ab,
            bias=bool(config.get("mamba_proj_bias")),
            conv_bias=bool(config.get("mamba_conv_bias")),
        )
    elif kind in ("attention", "full_attention"):
        nq, nkv = _int(config, "num_attention_heads"), _int(config, "num_key_value_heads")
        hd = h // nq
        nq_r = _divide(nq, tp, "num_attention_heads")
        nkv_r = _divide(nkv, tp, "num_key_value_heads") if nkv >= tp else 1
        bias = bool(config.get("attention_bias"))
        w.own("attention", (nq_r + 2 * nkv_r) * hd * h * ab)
        if bias:
            w.own("bias", (nq_r + 2 * nkv_r) * hd * ab)
        w.own("attention", h * nq_r * hd * ab)
        if bias:
            w.own("bias", h * ab)
        w.own("attention scales", 16, buffer=True)
        w.ref.allocated_bytes += w.attention_blocks * ALLOC_ROUND
    else:
        raise InputError("config.json", "layer_types", f"Granite-4 layer type {kind!r} is not modelled")
    e = _int(config, "num_local_experts")
    if e:
        inter = _int(config, "intermediate_size")
        w.own("router", e * h * ab)
        e_r, i_r = experts_per_rank(e, inter, tp, par, "the experts' intermediate size")
        for kind_bytes in experts_bytes(Quant(), e_r, h, i_r, ab):
            w.own(*kind_bytes)
        if par.expert_parallel:
            w.own("expert map", 4 * e, buffer=True)
    shared = _int(config, "shared_intermediate_size")
    if shared:
        s_r = _divide(shared, tp, "shared_intermediate_size")
        w.own("mlp", 2 * s_r * h * ab)
        w.own("mlp", h * s_r * ab)
    return kind in ("attention", "full_attention")


def _nemotron_mlp(
    w: _Walk, h: int, i_r: int, bias: bool, ab: int, quant: Quant | None = None, prefix: str = ""
) -> None:
    """A non-gated MLP: ``up_proj`` (column ``[I / TP, H]``) and ``down_proj`` (row ``[H, I / TP]``),
    with their biases under ``mlp_bias``; under ModelOpt (``quant``) the two as ``prefix.up_proj`` /
    ``prefix.down_proj`` resolve."""
    if quant is not None:
        w.module(_linear(quant, f"{prefix}.up_proj", h, (i_r,), ab), "mlp")
        w.module(_linear(quant, f"{prefix}.down_proj", i_r, (h,), ab, split="row"), "mlp")
        for n in (*([i_r] if bias else []), *([h] if bias else [])):
            w.own("mlp", n * ab)
        return
    for n in (i_r * h, *([i_r] if bias else []), h * i_r, *([h] if bias else [])):
        w.own("mlp", n * ab)


#: the releases whose ModelOpt sparse-attention MLA layouts are recorded (``quant_cases_nvfp4smla.py``;
#: 0.29.0 not recorded, refused by name; 0.32.0's and 0.33.0's NVFP4 layers and experts go through Humming on
#: SM 9.0, recorded there: on the H200), with the GPU architectures (major) recorded on each: SM 9.0, SM 12.0
#: on 0.28.0 (CUTLASS NVFP4 layers, the fp8_e4m3 cache taken as fp8_ds_mla by FLASHINFER_MLA_SPARSE_SM120), and
#: SM 10.0 on each (FlashInfer's NVFP4 layers and TRT-LLM experts, FLASHINFER_MLA_SPARSE and the MLA prefill
#: backend's workspace: ``loader.mla_prefill_workspace``)
MODELOPT_SPARSE_MLA_RELEASES = {
    "0.28.0": (9, 10, 12),
    "0.30.0": (9, 10),
    "0.31.0": (9, 10),
    "0.32.0": (9, 10),
    "0.33.0": (9, 10),
}


def _modelopt_sparse_mla_kv(par: Parallel, fp8_kv: bool) -> None:
    """A ModelOpt checkpoint of a sparse-attention MLA model (DeepSeek-V3.2, GLM-5 NVFP4: the MLA
    projections and the indexer excluded, so the walk's layers are the unquantized ones) is checked
    with a bfloat16 KV cache (``auto`` without ``kv_cache_quant_algo``, or ``--kv-cache-dtype
    bfloat16``) and under ``auto`` with the published checkpoints' ``kv_cache_quant_algo: FP8``
    (``fp8_e4m3``), whose layers hold the same (recorded: ``quant_cases_nvfp4smla.py``). On SM 9.x
    no sparse MLA backend of vLLM 0.27.1-0.29.0 serves ``fp8_e4m3`` (the selector: "No valid
    attention backend found"; FLASHMLA_SPARSE and FLASH_ATTN_MLA_SPARSE refuse the dtype); 0.30.0+
    serve it through ``FLASHINFER_MLA_SPARSE_SM90``, which allocates nothing with the model
    (:func:`sm90_sparse_mla_backend`; recorded on 0.30.0 and 0.31.0, where a bfloat16 cache's
    FLASH_ATTN_MLA_SPARSE layers hold their ``cu_seqlens_q``; its cache, plain fp8 rows, ``plan``
    models: :data:`~dryboot.vllm.backends.FLASHINFER_MLA_SPARSE_SM90`).

    :raises InputError: that ``fp8_e4m3`` cache on SM 9.x before 0.30.0 (vLLM refuses it), another
        named KV cache dtype (not recorded), a GPU below SM 9.0 (no sparse MLA backend: vLLM refuses
        it), SM 12.x but on 0.28.0 (not recorded), a release outside :data:`MODELOPT_SPARSE_MLA_RELEASES`."""
    if par.vllm_version not in MODELOPT_SPARSE_MLA_RELEASES:
        raise InputError(
            "quantization_config",
            "quant_method",
            "ModelOpt weights after loading of a sparse-attention MLA model are checked on vLLM "
            f"{', '.join(MODELOPT_SPARSE_MLA_RELEASES)} only (this plan: {par.vllm_version})",
        )
    majors = MODELOPT_SPARSE_MLA_RELEASES.get(par.vllm_version, (9,))
    if par.capability is not None and par.capability[0] not in majors:
        cap = f"SM {par.capability[0]}.{par.capability[1]}"
        raise InputError(
            "--gpu",
            None,
            f"{cap}: vLLM has no sparse MLA backend below SM 9.0 (No valid attention backend found)"
            if par.capability < (9, 0)
            else f"ModelOpt weights after loading of a sparse-attention MLA model on {cap} with vLLM "
            f"{par.vllm_version} are not recorded (checked on SM 9.0 and 10.0, and SM 12.0 on 0.28.0)",
        )
    sm9 = par.capability is not None and par.capability[0] == 9
    if par.kv_cache_dtype == "auto" and fp8_kv and sm9 and not rules_for(par.vllm_version).sparse_mla_fp8_e4m3_sm90:
        raise InputError(
            "--kv-cache-dtype",
            None,
            "this ModelOpt checkpoint's kv_cache_quant_algo FP8 asks for an fp8_e4m3 KV cache on a sparse MLA "
            f"model, which no sparse MLA backend of vLLM {par.vllm_version} serves on SM 9.x: vLLM refuses it (No "
            "valid attention backend found); --kv-cache-dtype bfloat16 is modelled",
        )
    if par.kv_cache_dtype not in ("auto", "bfloat16"):
        raise InputError(
            "--kv-cache-dtype",
            None,
            f"ModelOpt weights after loading of a sparse-attention MLA model with a {par.kv_cache_dtype} KV cache "
            "are not recorded (checked with bfloat16 and the checkpoint's fp8_e4m3)",
        )


def _indexer(w: _Walk, config: Mapping[str, Any], quant: Quant, li: int, ix: str, h: int, ab: int) -> None:
    """DeepSeek-V3.2's sparse-attention indexer (``deepseek_v2.py`` ``Indexer``), replicated on
    every rank: ``wq_b`` (ReplicatedLinear ``[n_heads x head_dim, q_lora]``, quantized),
    ``wk_weights_proj`` (``[head_dim + n_heads, H]``, unquantized), ``k_norm`` (LayerNorm, float32
    weight and bias ``[head_dim]``). Layers the IndexCache pattern skips have none
    (:func:`has_indexer`)."""
    if not has_indexer(config, li):
        return
    heads, hd = _int(config, "index_n_heads"), _int(config, "index_head_dim")
    q_lora = _int(config, "q_lora_rank")
    wq_b = f"{ix}.wq_b"
    # the published NVFP4 checkpoints exclude the indexer (``indexer*``; recorded: nvfp4smla)
    _refuse_modelopt_quantized(quant, wq_b, f"sparse-attention indexer ({wq_b}) is not recorded")
    w.module(
        _linear(quant, wq_b, q_lora, (heads * hd,), ab, split="replicated"),
        "indexer",
        ((wq_b, "whole"),),
    )
    w.module([("weight", (hd + heads) * h * ab)], "indexer", ((f"{ix}.wk", "whole"), (f"{ix}.weights_proj", "whole")))
    w.module([("weight", hd * 4), ("weight", hd * 4)], "norm", ((f"{ix}.k_norm", "whole", 4),))


def q_lora_mla_sizes(h: int, heads_r: int, nope: int, rope: int, v: int, q_lora: int, kv_lora: int) -> tuple[int, ...]:
    """Elements of a q-LoRA MLA attention's unquantized weights on one rank (``deepseek_v2.py``
    ``DeepseekV2MLAAttention`` and the layers built like it): the replicated ``fused_qkv_a_proj``
    ``[q_lora + kv_lora + rope, H]``, ``q_a_layernorm`` ``[q_lora]``, ``q_b_proj`` ``[heads / TP x
    (nope + rope), q_lora]``, ``kv_a_layernorm`` ``[kv_lora]``, ``kv_b_proj`` ``[heads / TP x (nope + v),
    kv_lora]`` and ``o_proj`` ``[H, heads / TP x v]`` (``heads_r``: the heads of one rank)."""
    return (
        (q_lora + kv_lora + rope) * h,
        q_lora,
        heads_r * (nope + rope) * q_lora,
        kv_lora,
        heads_r * (nope + v) * kv_lora,
        h * heads_r * v,
    )


#: the KV cache dtypes ``FLASH_ATTN_MLA_SPARSE`` serves (``supported_kv_cache_dtypes``; ``auto``: the
#: model's 16-bit dtype)
FLASH_ATTN_MLA_SPARSE_KV_DTYPES = ("auto", "float16", "bfloat16")
#: the KV cache dtypes ``FLASHINFER_MLA_SPARSE_SM90`` serves (``supported_kv_cache_dtypes``)
FLASHINFER_MLA_SPARSE_SM90_KV_DTYPES = ("auto", "bfloat16", "fp8", "fp8_e4m3")
#: the sparse MLA backends vLLM can serve on SM 9.x (``supports_compute_capability``)
SM90_SPARSE_MLA_BACKENDS = ("FLASH_ATTN_MLA_SPARSE", "FLASHMLA_SPARSE", "FLASHINFER_MLA_SPARSE_SM90")
#: the releases whose SM 9.x sparse MLA choice beyond ``FLASH_ATTN_MLA_SPARSE`` and an ``fp8`` cache's
#: ``FLASHMLA_SPARSE`` is recorded (a named ``--attention-backend``, an ``fp8_e4m3`` cache:
#: ``quant-recorded-sparsemla-<version>.json``, the tiny stand-in's named-backend rows); other
#: releases refuse those by name
SM90_SPARSE_MLA_CHOICE_RELEASES = ("0.27.1", "0.28.0", "0.29.0", "0.30.0", "0.31.0", "0.32.0", "0.33.0")


def _sm90_sparse_kv_dtype(par: Parallel, fp8_kv: bool) -> str:
    """The KV cache dtype vLLM's selector sees: ``--kv-cache-dtype``, or under ``auto`` a ModelOpt
    checkpoint's own ``fp8_e4m3`` (``fp8_kv``)."""
    return "fp8_e4m3" if fp8_kv and par.kv_cache_dtype == "auto" else par.kv_cache_dtype


def _sm90_sparse_mla_rejects(
    backend: str, par: Parallel, head_size: int, dtype_bytes: int, kv: str, kv_lora_rank: int = 512
) -> str | None:
    """Why ``backend`` does not serve a sparse MLA model on SM 9.x (``None``: it does), after its
    ``supported_dtypes`` / ``supported_kv_cache_dtypes`` / ``get_supported_head_sizes`` and
    ``supports_combination`` (``FLASHINFER_MLA_SPARSE_SM90``: ``kv_lora_rank`` 512 and a rope of 0 or
    64, i.e. a 512 or 576 head; a NoPE 512 head, ``kv_lora_rank`` 512, is refused before this)."""
    if backend == "FLASH_ATTN_MLA_SPARSE":
        if kv not in FLASH_ATTN_MLA_SPARSE_KV_DTYPES:
            return f"FLASH_ATTN_MLA_SPARSE takes a float16 / bfloat16 KV cache, not {kv}"
        return None if dtype_bytes == 2 else "FLASH_ATTN_MLA_SPARSE takes a float16 / bfloat16 model"
    if backend == "FLASHMLA_SPARSE":
        if kv not in ("auto", "bfloat16", *FLASHMLA_SPARSE_KV_DTYPES):
            return f"FLASHMLA_SPARSE takes a bfloat16 or fp8_ds_mla KV cache, not {kv}"
        if head_size != 576:
            return f"FLASHMLA_SPARSE takes a 576 MLA head, not {head_size}"
        return None if dtype_bytes == 2 else "FLASHMLA_SPARSE takes a bfloat16 model"
    if not rules_for(par.vllm_version).sparse_mla_fp8_e4m3_sm90:  # the release that brought the backend
        return f"vLLM {par.vllm_version} has no FLASHINFER_MLA_SPARSE_SM90"
    if kv not in FLASHINFER_MLA_SPARSE_SM90_KV_DTYPES:
        return f"FLASHINFER_MLA_SPARSE_SM90 takes a bfloat16 or fp8 KV cache, not {kv}"
    if kv_lora_rank != 512 or head_size not in (512, 576):
        return f"FLASHINFER_MLA_SPARSE_SM90 requires kv_lora_rank=512 (not {kv_lora_rank}, head {head_size})"
    return None if dtype_bytes == 2 else "FLASHINFER_MLA_SPARSE_SM90 takes a bfloat16 model"


def sm90_sparse_mla_backend(
    par: Parallel,
    head_size: int,
    dtype_bytes: int,
    fp8_kv: bool = False,
    arch: str = "the model",
    kv_lora_rank: int = 512,
) -> str | None:
    """The sparse MLA backend vLLM serves a sparse MLA model with on SM 9.x (``None`` off SM 9.x):
    a named ``--attention-backend`` where it takes the model (``Selected backend ... is not valid``
    otherwise, an unknown name before it exists), else the first of ``platforms/cuda.py``'s SM 9.x
    sparse priorities that does (:func:`_sm90_sparse_mla_rejects`): ``FLASH_ATTN_MLA_SPARSE``,
    ``FLASHMLA_SPARSE``, and from 0.30.0 ``FLASHINFER_MLA_SPARSE_SM90`` (first for a 512 head: it
    takes a NoPE one, ``kv_lora_rank`` 512, refused as not recorded; another 512 head falls through to
    ``FLASH_ATTN_MLA_SPARSE``, recorded with ``kv_lora_rank`` 448). ``dtype_bytes``: the model
    dtype's; ``fp8_kv``: a ModelOpt checkpoint's own fp8 cache (``fp8_e4m3`` under ``auto``). What
    each allocates with the model: :func:`flash_attn_mla_sparse_cu_seqlens_bytes`,
    :func:`flashmla_sparse_workspace_bytes`; ``FLASHINFER_MLA_SPARSE_SM90`` nothing (its
    ``_SM90State`` is the metadata builder's, built with the KV cache).

    :raises InputError: a combination vLLM refuses (named), a NoPE 512 MLA head, a choice beyond the
        default ``FLASH_ATTN_MLA_SPARSE`` / ``fp8`` ``FLASHMLA_SPARSE`` on a release outside
        :data:`SM90_SPARSE_MLA_CHOICE_RELEASES` (not recorded)."""
    if par.capability is None or par.capability[0] != 9:
        return None
    kv = _sm90_sparse_kv_dtype(par, fp8_kv)
    where = f"{arch} on SM 9.x with vLLM {par.vllm_version}"
    named = par.attention_backend
    if named is not None and named not in SM90_SPARSE_MLA_BACKENDS:
        why = "sparse not supported" if "SPARSE" not in named else "compute capability not supported"
        raise InputError(
            "--attention-backend",
            None,
            f"{where}: vLLM refuses --attention-backend {named} (Selected backend is not valid: {why})",
        )
    if head_size == 512 and kv_lora_rank == 512 and named != "FLASH_ATTN_MLA_SPARSE":
        raise InputError(
            "--gpu",
            None,
            f"{where} and a 512 NoPE MLA head (kv_lora_rank 512, no rope): vLLM serves its sparse MLA layers "
            "with another backend than FLASH_ATTN_MLA_SPARSE, whose allocations with the model are not modelled",
        )
    if named is not None:
        reason = _sm90_sparse_mla_rejects(named, par, head_size, dtype_bytes, kv, kv_lora_rank)
        choice = named
    else:
        order = SM90_SPARSE_MLA_BACKENDS
        if head_size == 512:  # platforms/cuda.py: FLASHINFER_MLA_SPARSE_SM90 first for it
            order = (order[2], *order[:2])
        rejects = partial(_sm90_sparse_mla_rejects, par=par, head_size=head_size, dtype_bytes=dtype_bytes, kv=kv)
        choice = next((b for b in order if rejects(b, kv_lora_rank=kv_lora_rank) is None), "")
        reason = None if choice else "No valid attention backend found"
    default = choice == "FLASH_ATTN_MLA_SPARSE" or (
        choice == "FLASHMLA_SPARSE" and named is None and kv in FLASHMLA_SPARSE_KV_DTYPES
    )
    if not default and par.vllm_version not in SM90_SPARSE_MLA_CHOICE_RELEASES:
        flag = "--attention-backend" if named is not None else "--kv-cache-dtype"
        given = f"--attention-backend {named}" if named is not None else f"--kv-cache-dtype {kv}"
        raise InputError(
            flag,
            None,
            f"{where} and {given}: its sparse MLA backend choice is recorded on vLLM "
            f"{', '.join(SM90_SPARSE_MLA_CHOICE_RELEASES)} only (another backend than FLASH_ATTN_MLA_SPARSE, "
            "whose allocations with the model are not modelled there)",
        )
    if reason is not None:
        flag = "--attention-backend" if named is not None else "--kv-cache-dtype"
        raise InputError(
            flag if dtype_bytes == 2 else "--dtype",
            None,
            f"{where}: vLLM refuses it ("
            + (f"Selected backend {named} is not valid: {reason}" if named is not None else reason)
            + ")",
        )
    return choice


def flash_attn_mla_sparse_cu_seqlens_bytes(
    max_num_batched_tokens: int,
    par: Parallel,
    head_size: int,
    dtype_bytes: int,
    fp8_kv: bool = False,
    arch: str = "the model",
    kv_lora_rank: int = 512,
) -> int:
    """Bytes of the int32 ``cu_seqlens_q_buffer`` ``[max_num_batched_tokens + 1]`` (an ``arange`` over
    the model's top-k indices buffer's rows) each sparse MLA layer's ``FlashAttnMLASparseImpl``
    allocates in ``__init__`` from vLLM 0.31.0 (``v1/attention/backends/mla/flashattn_mla_sparse.py``;
    0.30.0 built it per call in ``forward_mqa``); 0 before 0.31.0, off SM 9.x (the backend's
    ``supports_compute_capability``) and where another backend serves (:func:`sm90_sparse_mla_backend`:
    ``FLASHMLA_SPARSE``'s workspace is :func:`flashmla_sparse_workspace_bytes`,
    ``FLASHINFER_MLA_SPARSE_SM90`` allocates nothing with the model). ``dtype_bytes``: the model
    dtype's; ``fp8_kv``: a ModelOpt checkpoint's own fp8 cache.

    :raises InputError: where :func:`sm90_sparse_mla_backend` refuses."""
    if sm90_sparse_mla_backend(par, head_size, dtype_bytes, fp8_kv, arch, kv_lora_rank) != "FLASH_ATTN_MLA_SPARSE":
        return 0
    rules = rules_for(par.vllm_version)
    if not rules.flash_attn_mla_sparse_cu_seqlens:
        return 0
    return 4 * (max_num_batched_tokens + 1)


#: the ``--kv-cache-dtype`` values ``FLASHMLA_SPARSE`` takes as its ``fp8_ds_mla`` cache (``fp8``: its alias)
FLASHMLA_SPARSE_KV_DTYPES = ("fp8", "fp8_ds_mla")


def flashmla_sparse_serves(par: Parallel, head_size: int, dtype_bytes: int, fp8_kv: bool = False) -> bool:
    """Whether vLLM serves a sparse MLA model on SM 9.x with ``FLASHMLA_SPARSE`` and dryboot models
    its workspace (:func:`flashmla_sparse_workspace_bytes`): an ``fp8`` / ``fp8_ds_mla`` cache given
    by ``--kv-cache-dtype`` (not a checkpoint's ``fp8_kv``) with no other backend named, or
    ``--attention-backend FLASHMLA_SPARSE`` with a bfloat16 cache; a 16-bit model dtype
    (``dtype_bytes``) and a 576 MLA head (``head_size``: its ``get_supported_head_sizes``; 0.33.0's
    NoPE 512 is refused before this). Never raises (the walk's refusals:
    :func:`sm90_sparse_mla_backend`)."""
    if par.capability is None or par.capability[0] != 9:
        return False
    kv = _sm90_sparse_kv_dtype(par, fp8_kv)
    if _sm90_sparse_mla_rejects("FLASHMLA_SPARSE", par, head_size, dtype_bytes, kv) is not None:
        return False
    if par.attention_backend is not None:
        return par.attention_backend == "FLASHMLA_SPARSE"
    # unnamed: FLASH_ATTN_MLA_SPARSE comes first and takes every 16-bit cache (a 576 head: no reordering)
    return _sm90_sparse_mla_rejects("FLASH_ATTN_MLA_SPARSE", par, head_size, dtype_bytes, kv) is not None


def flashmla_sparse_workspace_bytes(
    max_num_batched_tokens: int,
    max_model_len: int,
    heads: int,
    kv_lora_rank: int,
    qk_rope_head_dim: int,
    vllm_version: str,
    quantized: bool = True,
) -> int:
    """Bytes of the worker's workspace (``v1/worker/workspace.py``: one uint8 buffer, grown to the
    largest request, each part rounded up to 256 bytes) after the sparse MLA layers'
    ``FlashMLASparseImpl.__init__`` reserve theirs (every layer asks the same, so the workspace holds
    one request). The bf16 parts, ``T`` = ``max_num_batched_tokens``, ``H`` = ``heads`` (one rank's),
    ``D`` = ``kv_lora_rank + qk_rope_head_dim``, ``L`` = ``kv_lora_rank``, ``H64``: ``H`` rounded up
    to 64, the Hopper prefill padding. With an ``fp8_ds_mla`` cache (``quantized``): ``q_concat``
    ``[T, H, D]`` and the prefill workspace ``[factor x max_model_len, D]`` (factor 5; from 0.32.0 2
    past 262,144 tokens: switch ``flashmla_sparse_long_context_factor``); from 0.31.0 also ``[T, H64, D]``,
    ``[T, H64, L]`` and ``[T, H, L]`` (``flashmla_sparse_prefill_buffers``). With a bfloat16 cache
    (``--attention-backend FLASHMLA_SPARSE``): ``q_concat`` alone, ``[T, H, D]``, from 0.29.0
    ``[T, H64, D]`` (``flashmla_sparse_padded_query``). Without prefill or decode context parallelism
    (not modelled)."""
    d = kv_lora_rank + qk_rope_head_dim
    h64 = -(-heads // 64) * 64
    rules = rules_for(vllm_version)
    if not quantized:
        padded = rules.flashmla_sparse_padded_query
        return -(-2 * max_num_batched_tokens * (h64 if padded else heads) * d // 256) * 256
    factor = 2 if rules.flashmla_sparse_long_context_factor and max_model_len > 256 * 1024 else 5
    shapes = [(max_num_batched_tokens, heads, d), (factor * max_model_len, d)]
    if rules.flashmla_sparse_prefill_buffers:
        shapes += [(max_num_batched_tokens, h64, d), (max_num_batched_tokens, h64, kv_lora_rank)]
        shapes += [(max_num_batched_tokens, heads, kv_lora_rank)]
    return sum(-(-2 * math.prod(shape) // 256) * 256 for shape in shapes)


def _refuse_sm120_sparse(config: Mapping[str, Any], par: Parallel, arch: str) -> None:
    """Refuse a sparse MLA model on SM 12.x that vLLM's only sparse backend there
    (``FlashInferMLASparseSM120Backend.supports_combination``) does not take: an ``index_topk``
    other than 2,048 (vLLM: "No valid attention backend found"), before any other refusal.

    :raises InputError: such a model on SM 12.x (named)."""
    if par.capability is None or par.capability[0] != 12:
        return
    reasons = sm120_sparse_reasons(True, config.get("index_topk"))
    if reasons:
        raise InputError(
            "config.json",
            "index_topk",
            f"{arch} on SM 12.x: vLLM finds no sparse MLA backend (No valid attention backend found: {reasons[0]})",
        )


def index_groups(config: Mapping[str, Any], layers: Iterable[int]) -> int:
    """How many ``SparseMLAIndexGroup`` one stage's sparse MLA layers ``layers`` open (vLLM's
    ``SparseMLAIndexGroupBuilder.register_layer``, ``v1/attention/backends/mla/index_group.py``,
    0.30.0+): a new group at each layer that builds an indexer (:func:`has_indexer`), and at the
    stage's first layer when it builds none (its builder has no group yet)."""
    n = 0
    for i, li in enumerate(layers):
        if has_indexer(config, li) or i == 0:
            n += 1
    return n


def sparse_mla_index_group_bytes(rows: int, topk: int, vllm_version: str) -> tuple[int, ...]:
    """The tensors, in bytes, one ``SparseMLAIndexGroup`` allocates with the model (vLLM's
    ``SparseMLAIndexGroupBuilder.register_layer``, 0.30.0+): ``physical_topk_indices`` int32
    ``[rows + 1, index_topk]``, ``valid_topk_counts`` int32 ``[rows + 1]`` and, in 0.30.0 only,
    ``request_ids`` int32 ``[rows]``; ``rows``: ``get_sparse_mla_index_group_max_rows``, the smaller of
    ``max_num_batched_tokens`` and ``max_num_seqs`` x (1 + ``num_speculative_tokens``). Empty before
    0.30.0 (switches ``sparse_mla_index_groups`` and ``sparse_mla_index_group_request_ids``)."""
    rules = rules_for(vllm_version)
    if not rules.sparse_mla_index_groups:
        return ()
    out = (4 * (rows + 1) * topk, 4 * (rows + 1))
    return (*out, 4 * rows) if rules.sparse_mla_index_group_request_ids else out


def has_indexer(config: Mapping[str, Any], li: int) -> bool:
    """Whether layer ``li`` of a DeepSeek-V3.2-style model builds its indexer (``deepseek_v2.py``
    ``DeepseekV2MLAAttention``, IndexCache): under ``index_topk_pattern`` the layers not marked
    ``S``; else those with ``max(li - index_skip_topk_offset + 1, 0) % index_topk_freq == 0``
    (offset 2, frequency 1 by default: every layer). Layers past ``num_hidden_layers`` (MTP)
    always do.

    :raises InputError: a pattern that is not a string or list."""
    n = config.get("num_hidden_layers")
    if isinstance(n, int) and li >= n:
        return True
    pattern = config.get("index_topk_pattern")
    if pattern is None:
        freq = _int(config, "index_topk_freq", 1)
        offset = _int(config, "index_skip_topk_offset", 2)
        return max(li - offset + 1, 0) % freq == 0
    if not isinstance(pattern, (str, list)):
        raise InputError("config.json", "index_topk_pattern", "a string or list of F / S per layer")
    return not (0 <= li < len(pattern) and pattern[li] == "S")


def _is_moe_layer(config: Mapping[str, Any], family: str, li: int) -> bool:
    if family == "mixtral":
        return True
    if family in MLA_FAMILIES:
        freq = _int(config, "moe_layer_freq", 1) or 1
        return li >= _int(config, "first_k_dense_replace", 0) and li % freq == 0
    if family == "glm4_moe":
        return li >= _int(config, "first_k_dense_replace", 0)
    if li in (config.get("mlp_only_layers") or []):
        return False
    step = config.get("decoder_sparse_step", 1) or 1
    return bool(config.get("num_experts", 0)) and (li + 1) % int(step) == 0


def _linear(
    quant: Quant,
    name: str,
    k: int,
    parts: tuple[int, ...],
    ab: int,
    *,
    tp: int = 1,
    split: str = "column",
    bias: bool = False,
) -> list[tuple[str, int]]:
    """A linear layer's entries after loading; ``bias``: the layer's bias ``[n]`` is among them
    (a layer Humming serves pads it and keeps a ``zero_bias`` twin)."""
    plain = [("bias", sum(parts) * ab)] if bias else []
    if quant.scaled is not None:
        scheme = quant.scaled.layer_scheme(name, checkpoint_parts(name))
        if scheme is None:
            return linear_bytes(Quant(), k, parts, ab) + plain
        if quant.method == "fp8" and quant.block is not None:  # vLLM's block-shape check (validate_fp8_block_shape)
            linear_bytes(quant, k, parts, ab, tp=tp, split=split)
        elif scheme.kind == "fp8" and scheme.strategy == "block" and scheme.block is not None:
            # compressed-tensors' W8A8 fp8 blocks run the same check, every merged layer included
            linear_bytes(Quant("fp8", block=scheme.block), k, parts, ab, tp=tp, split=split, mismatch_allowed=False)
        return modelopt_linear_bytes(quant.scaled, scheme, k, parts, ab, bias=bias)
    if quant.wna16 is not None:
        out = wna16_linear_bytes(quant.wna16, name, k, parts, ab, tp=tp, split=split, bias=bias)
        return out if out is not None else linear_bytes(Quant(), k, parts, ab) + plain
    return linear_bytes(Quant() if _is_ignored(quant, name) else quant, k, parts, ab, tp=tp, split=split) + plain


def _post_load_host_blocks(quant: Quant, range_blocks: int) -> int:
    """Blocks an attention layer frees in ``process_weights_after_loading``: without quantized
    KV scales ``Attention.process_weights_after_loading`` calls ``set_default_quant_scales`` again,
    outside the loader's device context, so ``_k_scale_cpu`` / ``_v_scale_cpu`` (and the release's
    ``q/k/v_range``, ``range_blocks``) move to the host.
    Counted for the layouts checked after the post-load step (GPTQ/AWQ/AutoRound); the others'
    figures are checked as ``initialize_model`` builds them (two blocks more per layer), and
    a KV-cache method (compressed-tensors', ModelOpt's) keeps them (``fill_``)."""
    if isinstance(quant.scaled, ModelOptQuant) and not quant.scaled.kv_cache:
        # ModelOpt without a KV-cache algorithm gives Attention no method (MIXED_PRECISION checked)
        return 2 + range_blocks
    if isinstance(quant.scaled, ModelOptQuant):
        # ModelOptKVCacheMethod keeps them on the GPU (0.27.1 checked: NVFP4 MoE)
        return 0
    if quant.wna16 is None or quant.wna16.packing == "ct":
        # compressed-tensors' KV-cache method (on every attention layer) refills them in place
        return 0
    return 2 + range_blocks


def _on_gpu(quant: Quant, par: Parallel, family: str = "") -> Quant:
    """A weight-only integer, W8A8 or NVFP4 layout is the kernel's vLLM picks per GPU: the rank's
    GPU joins it. ModelOpt FP8 / NVFP4 without a GPU keep the layout vLLM creates (before its
    post-load step); with one, the layout after it.

    :raises InputError: no GPU given (the layout after loading depends on it)."""
    if quant.method in ("modelopt", "modelopt_fp4") and par.capability is not None:
        quant = replace(quant, scaled=modelopt_quant("FP8" if quant.method == "modelopt" else "NVFP4", quant.ignored))
    if quant.method == "fp8" and par.capability is not None:
        quant = replace(quant, scaled=_fp8_post_load(quant, par, family))
    if quant.scaled is not None:
        return _scaled_on_gpu(quant, quant.scaled, par, family)
    if quant.wna16 is None:
        return quant
    if par.capability is None:
        raise InputError(
            "quantization_config",
            "quant_method",
            f"{quant.method} weights are repacked for the kernel vLLM picks per GPU: name the GPU (--gpu)",
        )
    rules = quant_rules(par.vllm_version)
    if quant.wna16.desc_act and not rules.gptq_act_order:
        raise InputError(
            "quantization_config",
            "desc_act",
            f"vLLM {par.vllm_version} refuses GPTQ group activation ordering (desc_act=True)",
        )
    wna16 = gptq_empty_read(quant.wna16, par.vllm_version, rules.gptq_empty_read)
    sm = par.capability[0] * 10 + par.capability[1]
    return replace(
        quant,
        wna16=replace(
            wna16,
            capability=sm,
            sm_count=par.sm_count,
            allspark=rules.allspark,
            g_idx_param=rules.gptq_g_idx_param,
            layer_workspace=rules.marlin_layer_workspace,
            humming=sm in rules.humming_before_marlin,
            vllm_version=par.vllm_version,
        ),
    )


#: releases whose W8A8 / NVFP4 post-load layouts are recorded against vLLM (quant_cases_extra.py;
#: the MoE experts: quant_cases_moe.py, quant_cases_llama4.py)
SCALED_CHECKED_RELEASES = ("0.27.1", "0.28.0", "0.29.0", "0.30.0", "0.31.0", "0.32.0", "0.33.0")
#: the Gated DeltaNet hybrids whose plain fp8 ``[128, 128]`` block layout after loading is recorded
#: (quant_cases_fp8gdn.py: Qwen3-Next-80B-A3B-Instruct-FP8, Qwen3.5-27B / Qwen3.6-35B-A3B with Qwen's
#: fp8 block export): in_proj_qkvz / out_proj / attention / MLPs and experts as the dense and MoE
#: families', in_proj_ba and conv1d as the checkpoint's modules_to_not_convert leaves them; on
#: these releases and GPUs (SM 8.6 Marlin FP8 experts, 8.9, 9.0 DeepGEMM) only
FP8_GDN_FAMILIES = {"qwen3_next", "qwen3_5", "qwen3_5_moe"}
FP8_GDN_RELEASES = ("0.28.0", "0.30.0", "0.33.0")
FP8_GDN_CAPABILITIES = ((8, 6), (8, 9), (9, 0))
#: SM 12.0 / 12.1 (the block layers as loaded, as the public SM 12.x boots log them) on these
#: releases (0.33.0's there: not recorded, refused by name)
FP8_GDN_BLACKWELL_RELEASES = ("0.28.0", "0.30.0")
#: plain fp8 (``Fp8Config``) after loading, recorded against vLLM (quant_cases_fp8.py): the
#: releases and the families (Qwen3-32B-FP8, Qwen3-30B-A3B-FP8; llama / qwen2 build the same
#: linear layers as qwen3)
FP8_CHECKED_RELEASES = ("0.27.1", "0.28.0", "0.29.0", "0.30.0", "0.31.0", "0.32.0", "0.33.0")
FP8_CHECKED_FAMILIES = {
    "llama",
    "qwen2",
    "qwen3",
    "qwen3_moe",
    "glm4_moe",
    "minimax_m2",
    "gemma4",
    "mimo_v2_flash",
    *FP8_GDN_FAMILIES,
}
#: families of :data:`FP8_CHECKED_FAMILIES` recorded on fewer releases (GLM-4.5's block layers:
#: quant_cases_moe.py / quant_cases_fp8.py on 0.30.0 and 0.33.0, answered on 0.27.1 / 0.28.0 as
#: before; not recorded on 0.29.0 / 0.31.0 / 0.32.0)
FP8_FAMILY_RELEASES = {"glm4_moe": ("0.27.1", "0.28.0", "0.30.0", "0.33.0")}
#: families whose fp8 block layers on SM 10.x the oracle gives DeepGEMM in some runs and CUTLASS
#: in others (MiniMax-M2; its TP > 1 layout is recorded without P2P: ``models/minimax_m2.py``)
FP8_UNSTABLE_SM100_FAMILIES = {"minimax_m2"}
#: MLA families whose plain fp8 ``[bn, bk]`` layout after loading is recorded (DeepSeek-V3,
#: Kimi-K2: the dequantized ``kv_b_proj`` copies; quant_cases_fp8.py), on these releases and GPUs only. The
#: releases differ in how ``MLAAttention.process_weights_after_loading`` gets there, not in what
#: it leaves (recorded byte-identical on all seven): 0.29.0 onward first call the backend's own
#: ``process_weights_after_loading`` (a no-op for the CUDA MLA backends; only the CPU AMX backend
#: packs its own copies), 0.27.1 / 0.28.0 have no such hook; 0.31.0 to 0.33.0 dequantize through
#: ``split_kv_b_proj`` and set ``W_UK_T`` / ``W_UV`` with ``replace_parameter`` (views of the one
#: dequantized tensor, as before);
#: 0.27.1's attention layers build their ``q/k/v_range`` on the GPU (:func:`attention_range_blocks`),
#: which the post-load step moves to the host with the two CPU scale scalars
FP8_MLA_FAMILIES = {"deepseek_v2"}
FP8_MLA_RELEASES = ("0.27.1", "0.28.0", "0.29.0", "0.30.0", "0.31.0", "0.32.0", "0.33.0")
#: the GPUs (SM) on which :data:`FP8_MLA_RELEASES` are recorded: SM 8.6 (Marlin FP8 experts, the
#: dense block layers and kv_b_proj's copies as on SM 8.9), 8.9, 9.0 (DeepGEMM present) and 12.0 (as
#: the dense families', recorded without DeepGEMM; 0.33.0 there: not recorded, refused by name as
#: the dense families' blocks, :data:`FP8_BLOCK_SM12_RELEASES`). SM 10.x: the oracle's engine
#: start fails importing vLLM's CUTLASS MLA backend on every release (recorded as the rows'
#: error), so it stays refused
FP8_MLA_CAPABILITIES = ((8, 6), (8, 9), (9, 0), (12, 0))
#: releases whose plain fp8 block layers on SM 10.x (DeepGEMM, UE8M0 scales) are recorded
FP8_UE8M0_RELEASES = ("0.27.1", "0.28.0", "0.29.0", "0.30.0", "0.31.0", "0.32.0")
#: releases whose plain fp8 block layers on SM 12.x are recorded (0.33.0's there: the oracle
#: fails, DeepGEMM's scale transform for MiniMax-M2.5 and a fake-tensor error for Qwen3-32B-FP8)
FP8_BLOCK_SM12_RELEASES = ("0.27.1", "0.28.0", "0.29.0", "0.30.0", "0.31.0", "0.32.0")
#: releases whose per-tensor plain fp8 layers on SM 10.x / 12.x are recorded (SM 8.9 / 9.0: all;
#: 0.27.1 / 0.28.0's rows there were recorded before the oracle ran the requantization as a no-op).
#: 0.33.0's ``_POSSIBLE_FP8_KERNELS`` still put FlashInfer (static inputs) and CUTLASS (dynamic) ahead
#: of its new ``B12xTensorFP8ScaledMMLinearKernel``: 0.32.0's layout, plus FlashInfer attention's
#: KV counter on SM 10.x (recorded: B200, RTX 5090, GB10)
FP8_TENSOR_BLACKWELL_RELEASES = ("0.29.0", "0.30.0", "0.31.0", "0.32.0", "0.33.0")


def _fp8_mla_why(capability: tuple[int, int], blocks: bool) -> str:
    """Why an fp8 MLA layout outside :data:`FP8_MLA_CAPABILITIES` is refused (the suffix of the
    refusal): one scale per tensor is not recorded; on SM 10.x the oracle's engine start fails
    importing vLLM's CUTLASS MLA backend (it allocates a CUDA workspace when imported; the boot
    environment's torch has no CUDA): no figure of vLLM's to check against; elsewhere the GPU is not
    recorded."""
    if not blocks:
        return " (one scale per tensor: not recorded)"
    if 10 <= capability[0] < 11:
        return (
            " (SM 10.x: the engine start this is checked against cannot import vLLM's CUTLASS MLA backend "
            "there, so no figure is recorded)"
        )
    return " (not recorded)"


def _fp8_post_load(quant: Quant, par: Parallel, family: str) -> ScaledQuant:
    """Plain fp8 (vLLM's ``Fp8Config``: ``Fp8LinearMethod`` / ``Fp8MoEMethod``) on a named GPU: the
    W8A8 fp8 scheme its ``process_weights_after_loading`` leaves, the same kernels as
    compressed-tensors' fp8 (``init_fp8_linear_kernel``, ``fused_moe/oracle/fp8.py``): one
    ``Linear`` group, ``[bn, bk]`` blocks or one scale per tensor, ``ignored_layers`` unquantized.
    On SM 10.x the block layers take DeepGEMM's UE8M0 scales (``deep_gemm_ue8m0``).

    :raises InputError: a family, release or GPU whose fp8 layout after loading is not recorded
        (named): SM 11.x; blocks on SM 10.x outside :data:`FP8_UE8M0_RELEASES`, on SM 12.x outside
        :data:`FP8_BLOCK_SM12_RELEASES`; one scale per
        tensor on SM 10.x / 12.x outside :data:`FP8_TENSOR_BLACKWELL_RELEASES`; MiniMax-M2 on SM 10.x
        (:data:`FP8_UNSTABLE_SM100_FAMILIES`)."""
    where = f"{family or 'this architecture'} on vLLM {par.vllm_version}"
    assert par.capability is not None
    mla_unchecked = family in FP8_MLA_FAMILIES and (
        par.vllm_version not in FP8_MLA_RELEASES or par.capability not in FP8_MLA_CAPABILITIES or quant.block is None
    )
    if mla_unchecked:
        raise InputError(
            "quantization_config",
            "quant_method",
            f"fp8 weights after loading of {family} (MLA: kv_b_proj dequantized per attention backend) are checked "
            f"with [bn, bk] blocks on SM {' / '.join(f'{a}.{b}' for a, b in FP8_MLA_CAPABILITIES)} on vLLM "
            f"{', '.join(FP8_MLA_RELEASES)} only, not on SM {par.capability[0]}.{par.capability[1]} with vLLM "
            f"{par.vllm_version}" + _fp8_mla_why(par.capability, quant.block is not None),
        )
    releases = FP8_FAMILY_RELEASES.get(family, FP8_CHECKED_RELEASES)
    if family not in FP8_CHECKED_FAMILIES | FP8_MLA_FAMILIES or par.vllm_version not in releases:
        raise InputError(
            "quantization_config",
            "quant_method",
            f"fp8 weights after loading (repacked per GPU: Marlin FP8 below SM 8.9) are checked for "
            f"{', '.join(sorted(FP8_CHECKED_FAMILIES))} on vLLM {', '.join(releases)} only, not {where}",
        )
    gdn_checked = (par.vllm_version in FP8_GDN_RELEASES and par.capability in FP8_GDN_CAPABILITIES) or (
        par.vllm_version in FP8_GDN_BLACKWELL_RELEASES and par.capability in ((12, 0), (12, 1))
    )
    gdn_unchecked = family in FP8_GDN_FAMILIES and (not gdn_checked or quant.block is None)
    if gdn_unchecked:
        raise InputError(
            "quantization_config",
            "quant_method",
            f"fp8 weights after loading of {family} (Gated DeltaNet) are checked with [bn, bk] blocks on SM "
            f"8.6 / 8.9 / 9.0 on vLLM {', '.join(FP8_GDN_RELEASES)} and SM 12.x on vLLM "
            f"{', '.join(FP8_GDN_BLACKWELL_RELEASES)} only, not on SM "
            f"{par.capability[0]}.{par.capability[1]} with vLLM {par.vllm_version}"
            + ("" if quant.block is not None else " (one scale per tensor: not recorded)"),
        )
    sm = par.capability[0] * 10 + par.capability[1]
    if family in FP8_UNSTABLE_SM100_FAMILIES and 100 <= sm < 110:
        raise InputError(
            "--gpu",
            None,
            f"fp8 weights after loading of {family} on SM {par.capability[0]}.{par.capability[1]} are not modelled: "
            "the oracle gives its block linear layers DeepGEMM in some runs and CUTLASS in others",
        )
    if quant.block is None:
        blackwell_unrecorded = sm >= 100 and par.vllm_version not in FP8_TENSOR_BLACKWELL_RELEASES
        # below SM 8.9: Marlin FP8's weight-only repack where the release goes through it, CUTLASS's
        # layout on 0.29.0 / 0.30.0 (QuantRules.modelopt_fp8_marlin, ScaledQuant.fp8_marlin; recorded with
        # quant_fakes.meta_repeat_counts, quant_cases_fp8.py / quant_cases_gemma4.py)
        if 110 <= sm < 120 or blackwell_unrecorded:
            raise InputError(
                "quantization_config",
                "weight_block_size",
                f"fp8 with one scale per tensor on SM {par.capability[0]}.{par.capability[1]} with vLLM "
                f"{par.vllm_version} after loading is not modelled (SM 10.x / 12.x: recorded on vLLM "
                f"{', '.join(FP8_TENSOR_BLACKWELL_RELEASES)} only; SM 11.x: not recorded)",
            )
        # requantized to the fused layer's largest scale (values only), the weight transposed:
        # the scaled_mm.py per-tensor layout (CUTLASS / FlashInfer)
        scheme = ScaledScheme("fp8", "tensor", static_input=quant.static_input)
        return ScaledQuant(
            ((("Linear",), scheme),), ignore=fp8_ignored_names(quant.ignored, family), ignore_rule="fp8", plain_fp8=True
        )
    sm100_unrecorded = 100 <= sm < 110 and par.vllm_version not in FP8_UE8M0_RELEASES
    sm120_unrecorded = 120 <= sm < 130 and par.vllm_version not in FP8_BLOCK_SM12_RELEASES
    if 110 <= sm < 120 or sm100_unrecorded or sm120_unrecorded:
        raise InputError(
            "quantization_config",
            "weight_block_size",
            f"fp8 blocks on SM {par.capability[0]}.{par.capability[1]} with vLLM {par.vllm_version} after loading "
            f"are not recorded (DeepGEMM's UE8M0 layout: SM 10.x on vLLM {', '.join(FP8_UE8M0_RELEASES)}; SM 12.x on "
            f"vLLM {', '.join(FP8_BLOCK_SM12_RELEASES)})",
        )
    scheme = ScaledScheme("fp8", "block", quant.block)
    return ScaledQuant(
        ((("Linear",), scheme),),
        ignore=fp8_ignored_names(quant.ignored, family),
        ignore_rule="fp8",
        plain_fp8=True,
        deep_gemm_ue8m0=100 <= sm < 110,
    )


#: the wrappers whose plain fp8 ``modules_to_not_convert`` name the checkpoint's modules
#: (``model.language_model.layers.N``, ``model.visual.blocks.N``): vLLM maps them through the
#: model's ``hf_to_vllm_mapper`` (``Fp8Config.apply_vllm_mapper``) onto its layers' prefixes
FP8_WRAPPER_FAMILIES = {"qwen3_5", "qwen3_5_moe"}


def fp8_ignored_names(ignored: tuple[str, ...], family: str) -> tuple[str, ...]:
    """Plain fp8's ``modules_to_not_convert`` as dryboot's walk names the layers: a Qwen3.5 / 3.6
    wrapper's ``model.language_model.X`` is its text model's ``model.X`` and ``model.visual.X`` its
    tower's ``visual.X`` (``Qwen3_5ForConditionalGeneration.hf_to_vllm_mapper``); other families'
    names as written (their checkpoint names are vLLM's)."""
    if family not in FP8_WRAPPER_FAMILIES:
        return ignored
    tower = "model.visual."
    return tuple("visual." + i[len(tower) :] if i.startswith(tower) else text_model_name(i) for i in ignored)


def _scaled_on_gpu(quant: Quant, scaled: ScaledQuant, par: Parallel, family: str = "") -> Quant:
    """:func:`_on_gpu` for W8A8 / NVFP4: the GPU and the release's rules join the layout. ModelOpt MoE
    checkpoints on vLLM 0.33.0 are answered as on the earlier releases: what a process allocates once
    while the model is built (FlashInfer's multi-CTA KV counter) is modelled
    (:func:`_flashinfer_counter`) and the oracle records each case as a fresh process does
    (``engine_start._reset_per_process_caches``; recorded: ``quant-recorded-modelopt-0.33.0.json``,
    nvidia/Qwen3-30B-A3B-NVFP4 on SM 8.6 / 8.9 / 9.0 / 12.0).

    :raises InputError: no GPU, a release or GPU whose layout is not checked (named)."""
    if par.capability is None:
        raise InputError(
            "quantization_config",
            "quant_method",
            f"{quant.method} W8A8/NVFP4 weights are repacked for the kernel vLLM picks per GPU: name the GPU (--gpu)",
        )
    # MIXED_PRECISION, or a uniform ModelOpt NVFP4 MoE model: checked on the releases of modelopt_moe
    mixed = quant.method == "modelopt_mixed" or (quant.method == "modelopt_fp4" and family in MOE_FAMILIES)
    if mixed and not (par.vllm_version in QUANT_RULES and QUANT_RULES[par.vllm_version].modelopt_moe):
        raise InputError(
            "quantization_config",
            "quant_method",
            f"ModelOpt {'MIXED_PRECISION' if quant.method == 'modelopt_mixed' else 'MoE'} layouts after loading "
            "are checked on vLLM "
            f"{', '.join(v for v, r in QUANT_RULES.items() if r.modelopt_moe)} only (this plan: {par.vllm_version})",
        )
    checked = FP8_CHECKED_RELEASES if quant.method == "fp8" else SCALED_CHECKED_RELEASES
    if par.vllm_version not in checked and not mixed:
        raise InputError(
            "quantization_config",
            "quant_method",
            f"{quant.method} W8A8/NVFP4 layouts after loading are checked on vLLM "
            f"{', '.join(SCALED_CHECKED_RELEASES)} only (this plan: {par.vllm_version})",
        )
    rules = quant_rules(par.vllm_version)
    sm = par.capability[0] * 10 + par.capability[1]
    refused = scaled_refusal(scaled, sm, par.vllm_version)
    if refused:
        raise InputError("quantization_config", "config_groups", refused)
    # every release 0.27.1-0.33.0 serves compressed-tensors fp8 weight-only below SM 8.9 (its W8A16 fp8
    # scheme) with Humming ahead of Marlin (kernels/linear/__init__.py _POSSIBLE_WFP8A16_KERNELS;
    # humming-kernels is a requirement of every CUDA wheel)
    ct_fp8 = quant.method == "compressed-tensors" and any(s.kind == "fp8" for _, s in scaled.groups)
    humming_fp8 = rules.humming_wfp8a16_locks if ct_fp8 and sm < 89 else None
    scaled = replace(
        scaled,
        capability=sm,
        sm_count=par.sm_count,
        layer_workspace=rules.marlin_layer_workspace,
        humming=sm in rules.humming_before_marlin,
        humming_fp8=humming_fp8,
        experts_checked=par.vllm_version in SCALED_EXPERTS_RELEASES,
        cutlass_fp8_pad=par.vllm_version not in CUTLASS_FP8_PAD_FAILS,
        vllm_version=par.vllm_version,
        # plain fp8 and ModelOpt FP8 share the W8A8 fp8 kernel list (compressed-tensors fp8 goes weight-only
        # below SM 8.9 through its W8A16 list: humming_fp8)
        fp8_marlin=rules.modelopt_fp8_marlin or not (scaled.plain_fp8 or isinstance(scaled, ModelOptQuant)),
    )
    if isinstance(scaled, ModelOptQuant):
        scaled = replace(scaled, moe_checked=rules.modelopt_moe)
    return replace(quant, scaled=scaled)
