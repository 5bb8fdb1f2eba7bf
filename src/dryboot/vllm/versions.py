"""vLLM versions as tables of behaviour switches, not copies of code.

Each :class:`VersionRules` names the rules that changed between vLLM releases
(``docs/kv-geometry-rules.md`` section 6). 0.28.0 is the baseline and the default; later entries
flip switches. Rule modules read switches; they never compare version strings.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from functools import lru_cache

from dryboot.errors import InputError
from dryboot.vllm import DATA


@dataclass(frozen=True)
class VersionRules:
    """Behaviour switches of one vLLM version.

    :param version: the vLLM version these switches describe.
    :param hybrid_prefix_caching_default: prefix caching is on by default for hybrid models
        (0.28.0+; 0.27.1 keeps it opt-in: ``engine/arg_utils.py``
        ``_set_default_chunked_prefill_and_prefix_caching_args``).
    :param mamba_default_all: with prefix caching on and no ``--mamba-cache-mode``, the mode
        becomes ``all`` for models supporting mamba prefix caching (0.27.1,
        ``model_executor/models/config.py`` ``MambaModelConfig``); ``align`` from 0.28.0.
    :param kernel_block_stride_alignment: a backend whose kernel blocks are all fixed sizes
        records the largest as the spec's ``block_stride_alignment`` (``MultipleOf(n)``,
        ``v1/worker/utils.py`` ``customize_attention_spec``; 0.32.0, 0.33.0), which spec equality
        compares: modelled for MiniMax-M3's backends; ``False``: no such record (0.27.1-0.31.0;
        0.31.0's specs carry the field, set by MLA backends only). Recorded: MiniMax-M3's
        pipeline-parallel stage layouts (``data/pipeline/minimax-m3/``).
    :param pad_requires_block_stride: ``unify`` pads an attention page only when the backend
        indexes KV by block stride (0.28); from 0.29 any non-MLA attention may pad.
    :param reserve_null_block: the memory check and auto-fit plan against the budget minus one
        pool block, the null block (0.29+: ``v1/core/kv_cache_utils.py`` ``get_kv_cache_configs``,
        ``check_memory``; 0.33: ``v1/core/kv_cache_planning.py``).
    :param mm_prefix_composites: a multimodal-prefix LM's layers on SM 10.x try the Triton image-mask /
        FlashInfer causal composite (``TRITON_FLASHINFER``, 64-token kernel blocks, head sizes 256
        and 512) before FlashInfer, and on SM 9.x the Triton image-mask / FlashAttention causal composite
        (``TRITON_FLASH_ATTN``, same head sizes, FlashAttention's kernel blocks) before FlashAttention
        (0.30+: ``platforms/cuda.py`` ``_get_backend_priorities``).
    :param composite_causal_fa3: the SM 9.x Triton image-mask / FlashAttention causal composite
        (``TRITON_FLASH_ATTN``, tried first for a multimodal-prefix LM's layers on SM 9.x under
        ``mm_prefix_composites``) takes a causal route on FlashAttention 3 or 4 (0.31+:
        ``v1/attention/backends/triton_flash_attn.py`` ``_FABackend``); ``False``: FlashAttention 4 only
        (0.30.0's ``_FA4Backend``: a head-256 layer without Gemma-4's forced FA4 goes to Triton).
    :param sliding_int4_unpacked: a sliding-window layer's ``int4_per_token_head`` page holds one
        byte per element (0.27.1: ``SlidingWindowSpec.real_page_size_bytes`` overrides
        ``AttentionSpec``'s without its int4 halving; the per-token-head scales are still added),
        recorded on Apertus's tiny config (``data/release-architectures/vllm-0.27.1.json``).
    :param sliding_window_start: where sliding-window layers start their block: ``smallest``
        kernel block (0.28, 0.29: ``unify`` scales them) or ``largest-fitting`` kernel block
        whose page fits ``sw_bytes_per_token * primary_block`` (0.30+).
    :param mamba_mode_all: whether ``--mamba-cache-mode all`` exists (removed in 0.32).
    :param mamba2_align_pages: pages one request holds per Mamba2 group in ``align`` mode,
        before speculative pages (2 until 0.31; 3 from 0.32: one prefill checkpoint).
    :param gdn_align_sm90: on SM90 the Gated DeltaNet align block (0.33: 64), or ``None``:
        FlashInfer GDN prefill checkpoints round the hybrid block to a multiple of it and add a
        checkpoint page per GDN group (0.33 ``platforms/interface.py``
        ``_align_hybrid_block_size``, ``v1/attention/backends/gdn_attn.py``
        ``FLASHINFER_GDN_CHECKPOINT_ALIGNMENT``, ``v1/kv_cache_interface.py`` ``MambaSpec``).
    :param async_limits_v1_runner_only: the speculative-method and
        ``disable_padded_drafter_batch`` limits on async scheduling hold only under the V1 model
        runner; the V2 runner (the default on a Triton host unless the method is ``suffix`` or
        ``custom_class``) runs async with every method (0.33: ``config/vllm.py``
        ``VllmConfig.__post_init__``, ``_get_v2_model_runner_unsupported_features``). Before
        0.33 they hold under either runner. Async doubles the in-flight tokens a sliding-window
        request holds (``VllmConfig.max_in_flight_tokens``).
    :param float_kv_dtype_must_match: an explicit ``--kv-cache-dtype float16``/``bfloat16`` other
        than the model dtype is refused (0.33: ``config/vllm.py``
        ``VllmConfig._reject_mismatched_float_kv_cache``); before, the KV cache takes it.
    :param qwen3_next_hf_config_class: Qwen3-Next configs are read by transformers'
        ``Qwen3NextConfig``, which honours ``full_attention_interval`` (0.32+: vLLM no longer
        bundles ``transformers_utils/configs/qwen3_next.py``, whose class put full attention on
        every 4th layer whatever the config said).
    :param drafting_slots_per_seq: the scheduler's token budget is ``max_num_batched_tokens``
        minus the drafter's new slots per sequence (``num_speculative_tokens - 1`` for the
        parallel-drafting DFlash/DSpark, 1 for ``draft_model``) times ``max_num_seqs``, and a
        budget <= 0 is refused (0.27.1: ``config/vllm.py`` ``_set_max_num_scheduled_tokens``,
        ``config/speculative.py`` ``max_num_new_slots_for_drafting``); from 0.28 the slots are
        counted once, not per sequence.
    :param async_default_skips_draft_model: left to its default, async scheduling is turned off for
        ``draft_model`` speculative decoding ("Async scheduling not supported with draft_model-based
        speculative decoding and will be disabled") although an explicit ``--async-scheduling`` accepts
        it (0.27.1: ``config/vllm.py`` ``VllmConfig.__post_init__``'s default branch lists EAGLE, MTP,
        DFlash, ngram-GPU and DSpark only); from 0.28 both branches accept it.
    :param gemma4_global_kv_heads_required: Gemma-4 full-attention layers with
        ``attention_k_eq_v`` take ``num_global_key_value_heads`` as is, and the model fails to build
        when the config leaves it unset (0.27.1: ``model_executor/models/gemma4.py``
        ``Gemma4DecoderLayer``: ``TypeError`` comparing ``None`` with the TP size); from 0.28 the
        per-layer config falls back to ``num_key_value_heads``.
    :param capacity_log_split: "GPU KV cache size: N tokens" and "Maximum concurrency for N tokens
        per request: Xx" are two log lines (0.27.1: ``v1/core/kv_cache_utils.py``
        ``get_kv_cache_configs``); one line from 0.28.
    :param autofit_log_kv_memory: the auto-fit line names the KV cache memory ("fits in available
        KV cache memory (X GiB GPU)"; 0.32+: ``_auto_fit_max_model_len``), not "available GPU memory";
        X is the budget less the null block's bytes (``check_memory``), what the checks see.
    :param block_size_log_backends: phase 1 takes a block every attention backend addresses
        (``Platform._preferred_block_size_for_backends``) and its line names them all, "for A/B
        backend(s)." (0.31+: ``platforms/interface.py`` ``update_block_size_for_backend``); before, the
        first attention layer's backend's preferred block alone (``_find_non_ssm_backend``).
    :param mamba_cache_mode_ignored: ``--mamba-cache-mode`` has no effect (a deprecation warning);
        the mode follows ``--enable-prefix-caching`` (0.33: ``engine/arg_utils.py``
        ``create_engine_config`` no longer passes it to ``CacheConfig``).
    :param mamba_all_deprecated: ``--mamba-cache-mode all`` logs a deprecation warning (0.30,
        0.31: ``config/cache.py`` ``CacheConfig._validate_mamba_cache_mode``).
    :param fa4_fp8_block: on SM90 an fp8 KV cache with head size 512 is served by FlashAttention 4,
        whose kernel reads 64-token pages (0.31+: ``v1/attention/backends/flash_attn.py``
        ``_get_sm90_fa4_fp8_kv_block_size``), or ``None``.
    :param fa4_hd256_block: FlashAttention on SM 10.x (and SM 11.x where FA4 is forced) runs a layer of
        head size 256 on FA4's dedicated head-256 kernel, whose pages are this many tokens (0.29+:
        ``v1/attention/backends/fa_utils.py`` ``uses_fa4_hd256_kernel``, ``FA4_HD256_PAGE_SIZE``; asked
        with the model's head size, ``flash_attn.py`` ``_get_fa4_hd256_block_size``), or ``None``.
    :param fa4_hd256_layer_blocks: a layer's own spec asks those pages too (0.31+:
        ``get_supported_kernel_block_sizes(kv_cache_spec)``, read without the engine's config, so
        none of the model's fallbacks applies): a head-256 sliding-window layer starts at them; before,
        asked without a config, it gets FlashAttention's 16-multiples.
    :param fa_quantized_mm_prefix_sm90: FlashAttention refuses a quantized KV cache (fp8, per-token-head,
        nvfp4) of a multimodal-prefix LM on SM 9.0 ("SM90 FP8 KV with mm_prefix requires Triton"), so
        its head-512 fp8 layers are served by the Triton/FlashAttention composite
        (``TRITON_FLASH_ATTN``, FlashAttention 4's 64-token pages) unless a ``--block-size`` those
        pages do not divide precludes it, and Triton serves every layer (0.31+: ``flash_attn.py``
        ``FlashAttentionBackend.supports_combination``; ``platforms/cuda.py``'s "precluded" warning).
    :param mimo_v2_cache_config: MiMo-V2-Flash's attention layers are built with the cache config
        (0.32+: ``mimo_v2.py`` passes ``cache_config``, its ``sliding_window`` cleared), so
        ``--kv-cache-dtype`` applies to them; before, they keep the model dtype.
    :param v2_runner_v1_methods: the V2 model runner is the default for every model, and these
        speculative methods keep the V1 runner (0.29+: ``VllmConfig.use_v2_model_runner``,
        ``_get_v2_model_runner_unsupported_features``); ``None``: V2 only for the default-V2
        architectures and dense models (0.27.1, 0.28.0). It matters with pipeline parallelism:
        async scheduling keeps PP + 1 batches in flight on V2, PP on V1.
    :param v2_runner_lacks_mamba_all: the V2 model runner does not support ``--mamba-cache-mode all``,
        which then keeps the V1 runner (0.30, 0.31: ``_get_v2_model_runner_unsupported_features``).
    :param v1_runner_refuses: what the V1 model runner refuses, of what dryboot reads
        (``_validate_v1_model_runner``, "Model Runner V1 does not support: ..."): ``dspark`` (0.29+),
        ``mixed_dflash`` (a DFlash drafter mixing sliding and full layers, 0.29+), ``dflash2`` (0.29,
        0.30). (0.31+'s "pipeline parallelism with async scheduling" is not raised where dryboot's
        inputs reach V1: the oracle serves ``--mamba-cache-mode all -pp 2`` and ``ngram_gpu -pp 2``.)
    :param pp_draft_models: a drafter with layers (MTP, EAGLE, DFlash) runs under pipeline
        parallelism, on the last stage (0.30+); before, its draft model config fails
        ``verify_with_parallel_config`` (no ``SupportsPP``).
    :param hidden_state_min_page: the groups' blocks are scaled up until the common page holds one
        token of an ``extract_hidden_states`` cache layer (0.30+: ``_ensure_min_page_size``);
        before, vLLM asserts when it does not fit.
    :param flashinfer_nvfp4_sm90: FlashInfer serves an ``nvfp4`` KV cache on SM90 through its FA2
        path (0.32+: ``v1/attention/backends/flashinfer.py`` ``_nvfp4_kv_on_fa2``); before, only
        on SM100 with TRT-LLM attention.
    :param mamba_align_state_with_spec: every hybrid model class passes the speculative tokens to
        its ``get_mamba_state_shape_from_config``, so the hybrid alignment sizes the attention block
        to the state the layers keep (0.32+: ``granitemoehybrid.py``, ``falcon_h1.py``,
        ``zamba2.py``); before, those three left the speculative rows out.
    :param hidden_state_block_divides: the hidden-state cache layer's block is the largest divisor
        of the other groups' GCD block that fits the common page (0.28+); 0.27.1 takes as many
        tokens as fit the page, ``common_page // per-token bytes`` (``get_kv_cache_groups``).
    :param unknown_kv_cache_dtypes: ``--kv-cache-dtype`` values the release's ``CacheDType`` lacks
        (0.27.1: ``nvfp4_4over6``): its CLI parser refuses them.
    :param short_conv_spec_rows: a ShortConv (LFM2) layer's state keeps the speculative tokens'
        convolution rows (0.29+: ``MambaStateShapeCalculator.short_conv_state_shape(num_spec)``),
        while LFM2's ``get_mamba_state_shape_from_config`` still leaves them out, so the hybrid
        alignment sizes the block to the smaller state.
    :param hybrid_full_attention_types: ``ModelConfig.is_hybrid`` counts a config whose
        ``layer_types`` are all ``"full_attention"`` (not only ``"attention"``) as no hybrid
        (0.29+): an ``IsHybrid`` class whose config class keeps ``layer_types`` and whose layers
        are all attention (Bailing-V2.5 with every layer MLA, Qwen3-Next / Qwen3.5 text, Jamba,
        NemotronH, LFM2, Granite-4 without a state layer) gets no mamba cache mode nor hybrid
        block alignment; 0.27.1-0.28.0 align it to the mamba page, except where the class names
        its attention layers ``"attention"`` (``legacy_layer_type_names``)
        (:func:`dryboot.vllm.config.resolve.is_hybrid`).
    :param legacy_layer_type_names: the release's transformers (0.27.1: 5.10.4) keeps the legacy
        ``layer_types`` names of Granite-4 and NemotronH (``"attention"``, ``"mamba"``); later ones
        map them to ``"full_attention"`` / ``"linear_attention"`` (``remap_legacy_layer_types``), so
        0.27.1 counts such a model without state layers as no hybrid and 0.28.0 as one.
    :param pp_text_model_named: the model classes (by architecture) that name their language model's
        architecture when they build it from the text config (``with_hf_config(text_config,
        architectures=[...])``; 0.30+: ``qwen3_vl.py``, ``qwen3_vl_moe.py``, and Cosmos-3, a
        Qwen3-VL subclass), so that a text config without ``architectures`` builds under pipeline
        parallelism; before, the text config's ``VllmConfig`` validation (which checks
        ``SupportsPP`` under PP > 1) fails "No model architectures are specified"
        (:data:`dryboot.vllm.distributed.UNNAMED_TEXT_CONFIG_PP`).
    :param pp_submodel_unvalidated: a ``with_hf_config`` view (a wrapper's language model or tower
        config) skips ``VllmConfig`` validation (0.33: ``ModelConfig.is_submodel_config``), so
        pipeline parallelism no longer fails on the view's architecture (none named, or a tower class
        without ``SupportsPP``: MOSS-Transcribe-Diarize's Whisper tower).
    :param pp_tower_view_builds: an encoder tower's ``with_hf_config`` view whose config names no
        architecture vLLM registers (MOSS-Transcribe-Diarize's Whisper audio config) passes the
        pipeline-parallel check (0.30+, recorded on its engine start: ``data/pipeline/``); before,
        "Pipeline parallelism is not supported for this model".
    :param unverified_architectures: architectures dryboot plans for other releases but cannot check
        against this one's engine start (0.31+: Kimi-Linear's model class loads CuTe DSL kernels
        (``cutlass``) when built, which the CPU oracle cannot import), or whose engine start there
        differs from 0.28.0's in ways not modelled (:data:`UNVERIFIED_REASONS`): refused by name.
    :param sparse_mla_fp8_e4m3_sm90: the release ships ``FLASHINFER_MLA_SPARSE_SM90`` (0.30+:
        ``v1/attention/backends/mla/flashinfer_mla_sparse_sm90.py``; last of the SM 9.x sparse MLA
        priorities, first for a 512 head), so an ``fp8_e4m3`` KV cache on a sparse MLA model (what
        ``auto`` becomes for a ModelOpt checkpoint with an FP8 KV cache) is served on SM90, as plain
        fp8 rows of the head (:data:`~dryboot.vllm.backends.FLASHINFER_MLA_SPARSE_SM90`; recorded:
        ``tests/fidelity/data/sm90-sparse-mla/``); before, no sparse MLA backend takes it (vLLM
        refuses: no valid attention backend) and the name is unknown.
    :param fp8_moe_block_refine: a fused MoE whose TP shard of fp8 weight blocks is partial is
        served with its block scales refined to a finer block (0.29+: ``fused_moe/oracle/fp8.py``
        ``refine_fp8_moe_block_shape``); 0.28 refuses it (``Fp8MoEMethod.create_weights``).
    :param modelopt_mixed_nested: the release names a ModelOpt config's nested
        ``quantization.quant_algo`` MIXED_PRECISION (``hf_quant_config.json``'s form) ``modelopt_mixed``
        (0.33.0: ``transformers_utils/model_arch_config_convertor.py``
        ``_normalize_quantization_config``); ``False``: it raises "Unknown ModelOpt quant algo"
        (0.27.1-0.32.0 recorded by the oracle: ``quant-recorded-modelopt-<release>.json``).
    :param hf_config_class_architectures: architectures whose config the release reads with
        transformers' own config class, vLLM's (with its defaults) being gone (0.31.0+: Mellum, recorded
        on 0.31.0-0.33.0, served by the Transformers backend from 0.32: ``dense.HF_CLASS_DECODERS``;
        0.32+: LongCat-Flash, ``models/longcat_flash.py``, OLMo-Hybrid, ``models/olmo_hybrid.py``;
        0.33.0: Step-3.5, ``models/step3p5.py``,
        AFMoE and Hunyuan V3, ``models/dense.py`` ``verify_release`` refuses the fields left unset).
    :param longcat_hidden_layers_field: LongCat-Flash's model class builds
        ``FlashConfig(**hf_config.__dict__).num_hidden_layers`` decoder layers where the transformers
        the release pins (0.31.0: <5.18, 5.17.0 recorded; 0.27.1's environment: 5.10.4) gives
        ``LongcatFlashConfig`` a ``num_hidden_layers`` field of its own (config.json's, else 56)
        beside ``num_layers``: a checkpoint of ``num_layers``
        layers is then refused unless the two agree (``models/deepseek.py``
        :func:`~dryboot.vllm.models.deepseek.check_longcat_layers`); ``False``: ``num_hidden_layers`` is
        ``num_layers`` (a property of transformers' class from 5.19, left out of ``__dict__``: 0.29/0.30
        recorded; vLLM's own ``FlashConfig`` no longer used: 0.32+).
    :param transformers_backend_vllm_attention: the Transformers modeling backend builds each decoder
        layer's ``q_proj`` / ``k_proj`` / ``v_proj`` as one ``QKVParallelLinear`` and its attention
        as vLLM's ``Attention`` (four float32 scale buffers), beside transformers' own rotary
        buffers (``inv_freq`` / ``original_inv_freq``), and no bias on the LM head (0.30+, recorded
        on the meta device: ``tests/fidelity/data/weights/recorded-0.30.0-sweep.json``); ``False``:
        three projections and no scale buffers (0.27.1-0.29.0; 0.29.0 recorded too:
        ``recorded-0.29.0-backend.json``).
    :param transformers_backend_fuses_biased_qkv: the backend fuses q/k/v projections that carry a
        bias too (0.31.0-0.33.0, recorded: StarCoder2; 0.32.0 Jais2 too); ``False``: those stay
        three ``q_proj`` / ``k_proj`` / ``v_proj`` allocations (0.30.0 recorded).
    :param laguna_ropes_by_layer_type: Laguna's config is transformers' ``LagunaConfig``, which
        fills an absent ``rope_parameters`` per layer type (``full_attention``: theta 500000,
        ``partial_rotary_factor`` 0.5; ``sliding_attention``: theta 10000, 1.0), so ``laguna.py``
        builds one rotary table per layer type of the stage (0.31.0-0.33.0, recorded); ``False``:
        one table over the whole head (0.30.0 recorded).
    :param moe_gate_model_dtype: the ``model_type`` of each model class whose MoE router is
        ``GateLinear`` (its weight in the model dtype, the float32 only in its output) where the
        release before built an ``nn.Linear`` in float32 (0.31+: Sarvam-M MLA's ``sarvam.py``,
        recorded on the meta device on 0.31.0, 0.32.0 and 0.33.0:
        ``tests/fidelity/data/weights/recorded-<release>-remote.json``).
    :param input_norm_towers: wrappers whose vision tower builds the device-side input
        normalization (``FusedInputNorm``: float32 weight and bias ``[3]``) that Qwen2.5-VL's
        already has (0.32.0, recorded: GLM-4.1V, GLM-4.5V, GLM-OCR; 0.33.0, recorded: those and
        EXAONE-4.5).
    :param hunyuan_transformers_backend: Hunyuan V1 (dense and MoE) is served by the Transformers
        backend, whose attention needs ``head_dim`` (0.29+; ``models/hunyuan.py``); so is HunYuan-VL
        (``TransformersMultiModalForCausalLM`` over transformers' HunYuanVL model: its KV cache
        planned, its weights sized as that backend builds them,
        ``model_executor/models/hunyuan_vision.py``).
    :param backend_splits_encoder_qkv: the Transformers backend's multimodal path fuses an encoder's
        q/k/v into one ``QKVParallelLinear`` of its heads, so TP must divide them (0.28+: Emu3's VQ-VAE
        attention, ``dense.BACKEND_TOWER_HEADS``; 0.27.1's fuser cuts it into heads of the text
        model's head size instead, so TP need not divide the encoder's heads: recorded, its weights
        in ``model_executor/models/emu3.py``).
    :param backend_text_attention_whole: the Transformers backend's multimodal path leaves a text
        model's q/k/v / o projections unfused (0.28.0-0.30.0; 0.27.1 and 0.31+ fuse them into one
        ``QKVParallelLinear``; its causal path likewise keeps an attention without a TP plan whole on
        every rank, HunYuan V1's, and on 0.30.0 splits a fused ``qkv_proj``'s key / value rows over TP
        where it exceeds the KV heads, 0.31+ replicating KV heads instead: ``compose.backend_layout``,
        recorded on 0.29.0-0.33.0): three ``q_proj`` / ``k_proj`` / ``v_proj`` and ``o_proj``, whole on every
        TP rank where the text model has no TP plan (Emu3's, ``model_executor/models/emu3.py``), split by
        the plan where it has one (VibeVoice-ASR's Qwen2, ``vibevoice_asr.py``); recorded,
        ``tests/fidelity/data/weights/recorded-<release>-emu3.json`` / ``-vibevoice-asr.json``.
    :param hunyuan_vl_whole_tower: the Transformers backend no longer splits HunYuan-VL's vision
        attention heads across tensor-parallel ranks (0.31+: the vision tower's q/k/v stay three
        replicated linears, TP 8 over 4 vision heads served; 0.29 / 0.30 fuse them into a
        ``QKVParallelLinear`` of the vision heads, ``fusers/qkv.py``, whose ``divide`` fails:
        ``AssertionError: 4 is not divisible by 8``; recorded in
        ``tests/fidelity/data/release-architectures/``); the same releases fuse its text attention
        into a split ``QKVParallelLinear`` where 0.29 / 0.30 keep q/k/v/o whole on every rank
        (weights recorded: ``tests/fidelity/test_weights_hunyuan_vl.py``).
    :param engine_block_all_groups: the engine's block (``cache_config.block_size``, what the
        engine start leaves set) is the smallest block of every KV cache group (0.27.1-0.29.0,
        ``v1/engine/core.py`` ``_initialize_kv_caches``); ``False``: of the prefix-cacheable groups
        only (0.30.0+: a circular-buffer group, one page a request, opts out). Recorded: Qwen4-Exp's
        QSA rings on 0.29.0 (engine block 4 beside a 48-token cache block) and 0.30.0 (48).
    :param glm_moe_dsa_drops_index_keys: the release's transformers ``GlmMoeDsaConfig`` consumes
        ``index_topk_freq`` / ``index_topk_pattern`` (0.27.1, transformers 5.10), so vLLM's IndexCache
        rule never sees them and every GLM-5 layer builds its sparse-attention indexer.
    :param dcp_backends: the standard attention backends valid with ``-dcp`` > 1 (0.30+:
        ``AttentionBackend.validate_configuration``'s "DCP not supported", from each impl's
        ``supports_dcp``: FlashAttention and FlashInfer); ``None``: any (0.27.1-0.29.0).
    :param attention_range_scalars: every attention layer (``Attention``, ``MLAAttention``) creates
        three float32 scalars ``q_range`` / ``k_range`` / ``v_range`` for ``calc_kv_scales``
        (0.27.1 ``layers/attention/attention.py`` ``set_default_quant_scales``; gone in 0.28),
        under the loader's device context: three more 512-byte blocks per layer as built.
    :param pp_towers_first_stage: a multimodal wrapper's encoder towers (what its class builds under
        ``_mark_tower_model``) are built on the first pipeline stage only under the V2 model runner
        (0.33.0: ``interfaces.py`` ``_mark_tower_model``, recorded on the meta device); ``False``: on
        every stage (0.27.1-0.32.0 recorded).
    :param limit_max_model_len_to_draft: on the V2 model runner, a drafter other than a draft
        model whose RoPE types do not all only size the table (YaRN...) lowers the target's
        ``max_model_len`` to the draft's (``VllmConfig._limit_max_model_len_to_draft``, 0.33:
        recorded with TorchSpec's Kimi EAGLE-3 heads; 0.30 has no such step).
    :param yarn_max_len_prescaled: ``ModelConfig``'s derived maximum length applies no RoPE
        ``factor`` for ``yarn`` / ``deepseek_yarn`` / ``deepseek_llama_scaling`` (their
        ``max_position_embeddings`` is taken as already scaled; 0.30+, read in 0.30.0's and
        0.33.0's ``config/model.py``); before, a YaRN config's length is
        ``original_max_position_embeddings x factor``.
    :param deepseek_eagle3_yarn_only: an MLA EAGLE-3 head's decoder layer (``deepseek_eagle3.py``)
        rewrites its rope as ``deepseek_yarn`` whenever the config has ``rope_scaling`` (which
        transformers 5 always fills), so a head without YaRN's ``factor`` fails to build
        (``KeyError: 'factor'``; 0.27.1, recorded; 0.28 dropped the rewrite).
    :param sparse_mla_pool_row_aligned: a sparse MLA backend that reads its cache as flat rows
        (``FLASHINFER_MLA_SPARSE``; ``FLASHMLA_SPARSE`` unless its cache is a ``ds_mla`` layout off
        SM 10.x) sets its spec's ``block_stride_alignment`` to its bytes per token, and the pool's
        bytes per block (every layer's page, the indexer's included, summed) are rounded up to a
        multiple of it (0.31.0: ``mla_attention.py`` ``MLAAttention.get_kv_cache_spec``,
        ``v1/core/kv_cache_utils.py`` ``_get_kv_cache_bytes_per_block``); 0.32 pads each layer's
        own page instead, which a whole number of rows already is (no change), and 0.30 sets none.
    :param sparse_mla_index_groups: sparse MLA layers share a ``SparseMLAIndexGroup`` (one per layer
        that builds an indexer) whose top-k workspace is allocated with the model (0.30+:
        ``v1/attention/backends/mla/index_group.py`` ``SparseMLAIndexGroupBuilder.register_layer``;
        :func:`dryboot.vllm.model_executor.model_loader.weights.sparse_mla_index_group_bytes`).
    :param sparse_mla_index_group_request_ids: each ``SparseMLAIndexGroup`` also allocates an int32
        ``request_ids`` ``[rows]`` (0.30.0 only; gone in 0.31).
    :param flash_attn_mla_sparse_cu_seqlens: ``FlashAttnMLASparseImpl`` (``FLASH_ATTN_MLA_SPARSE``,
        SM 9.x) allocates a ``cu_seqlens_q_buffer`` per layer in ``__init__`` with the model (0.31+:
        ``v1/attention/backends/mla/flashattn_mla_sparse.py``); 0.30.0 builds it per call in
        ``forward_mqa``.
    :param flashmla_sparse_prefill_buffers: ``FlashMLASparseImpl.__init__`` reserves the prefill
        query / output buffers in the worker's workspace too (0.31+: ``flashmla_sparse.py``).
    :param flashmla_sparse_padded_query: with a bfloat16 cache ``FlashMLASparseImpl`` pads its
        ``q_concat`` heads up to the prefill kernel's 64 (0.29+: ``flashmla_sparse.py``, SM 9.x).
    :param flashmla_sparse_long_context_factor: the sparse MLA prefill workspace factor falls from 5
        to 2 past 262,144 tokens (0.32+: ``sparse_mla_prefill_workspace_factor``, resolved in
        ``VllmConfig.__post_init__``).
    :param kda_full_rank_gate: KDA layers with Kimi-K3's full-rank gate
        (``linear_attn_config.use_full_rank_gate``) are ``KimiK3DeltaAttention``
        (``models/kimi_k3/nvidia/kda.py``), planned (Kimi-K3's tiny config recorded on every release
        0.27.1-0.33.0); ``False``: refused as not verified.
    :param kda_prefill_checkpoints: ``KimiK3DeltaAttention.get_kv_cache_spec`` gives its MambaSpec one
        prefill checkpoint block where its prefill backend is FlashKDA (0.29.0+, recorded); before (0.27.1,
        0.28.0, recorded), none: the layer keeps the base MambaSpec.
    :param kda_ssm_dtype_flag: ``MambaStateDtypeCalculator.kda_state_dtype`` takes
        ``--mamba-ssm-cache-dtype`` (auto: float32; float32 or bfloat16; another value a ValueError)
        for the KDA recurrent state vLLM sizes the hybrid block from (0.30.0+, recorded on 0.30.0 and
        0.30.0-0.33.0: Kimi-Linear's float32 layer under bfloat16 is padded to that page, and fails
        planning where it outgrows it); before, float32 always.
    :param muse_glimmer_layer_types: MuseGlimmer's sliding layers are the ``sliding_attention``
        entries of ``layer_types``, its config read by transformers' ``MuseGlimmerTextConfig``
        (0.33.0: ``muse_glimmer.py`` ``MuseGlimmerAttention``); ``False``: the RoPE layers,
        ``no_rope_layers[i] == 1``, its config read by vLLM's own class (0.28.0-0.30.0 recorded).
    :param hy_v4_dense_layers: HY V4 builds every layer dense MLA whatever ``layer_types`` says
        (0.29.0, 0.30.0: their transformers, 5.19 / 5.24, renames ``deepseek_sparse_attention`` to
        ``indexed_attention`` when the config is read, which their ``HYV4MLAAttention``'s sparse
        layer types lack); recorded, KV cache and weights (``models/hy_v4.py``).
    :param hy_v4_indexed_layer_type: HY V4's config validation takes ``indexed_attention`` as a
        layer type, a sparse one (0.32.0+; 0.31.0's transformers refuses the config, recorded).
    :param empty_stage_after_memory_check: a pipeline stage of no KV cache layer fails only after
        ``get_kv_cache_configs``' auto-fit and memory check over the other stages, which skip it
        (0.27.1, 0.28.0: ``group_size > 0`` asserted in ``get_kv_cache_config_from_groups``; 0.32.0:
        a division by its empty group there); 0.29-0.31 (a bare assert) and 0.33.0 (the division)
        fail on it before the memory check; with ``--num-gpu-blocks-override`` or an auto-fit
        length every release fails on it first (recorded: ``test_releases`` ``pp3-empty*``).
    :param flashinfer_sinks_sm90: ``FlashInferBackend.supports_sink`` takes SM 9.0 (exactly) with
        TRT-LLM's XQA decode kernel (``supports_trtllm_attention(is_prefill=False)``, flashinfer-cubin),
        as SM 12.x (0.30.0+; recorded: the backend matrix's ``cubin`` arm on the H100 / H200,
        ``tests/test_vllm_flashinfer_sinks.py``, and Flint with FLASHINFER named on an H100 on 0.33.0,
        ``tests/fidelity/test_flint.py``); before, family 100 / 120 only.
    :param flashinfer_sinks_sm120: ``FlashInferBackend.supports_sink`` takes the SM 12.x family
        (XQA decode, flashinfer-cubin; 0.28.0+). 0.27.1 takes family 100 only: FLASHINFER named for a
        model with sinks on an RTX 5090 is refused (the backend matrix's ``cubin`` arm,
        ``tests/test_vllm_flashinfer_sinks.py``), and no float32 sinks copy is kept
        (:func:`dryboot.vllm.model_executor.model_loader.weights.flashinfer_sinks`).
    """

    version: str
    hybrid_prefix_caching_default: bool = True
    mamba_default_all: bool = False
    pad_requires_block_stride: bool = True
    kernel_block_stride_alignment: bool = False
    reserve_null_block: bool = False
    sliding_window_start: str = "smallest"
    sliding_int4_unpacked: bool = False
    mm_prefix_composites: bool = False
    composite_causal_fa3: bool = False
    dcp_backends: frozenset[str] | None = None
    mamba_mode_all: bool = True
    mamba2_align_pages: int = 2
    gdn_align_sm90: int | None = None
    async_limits_v1_runner_only: bool = False
    float_kv_dtype_must_match: bool = False
    qwen3_next_hf_config_class: bool = False
    drafting_slots_per_seq: bool = False
    async_default_skips_draft_model: bool = False
    gemma4_global_kv_heads_required: bool = False
    capacity_log_split: bool = False
    autofit_log_kv_memory: bool = False
    block_size_log_backends: bool = False
    mamba_cache_mode_ignored: bool = False
    mamba_all_deprecated: bool = False
    fa4_fp8_block: int | None = None
    fa4_hd256_block: int | None = None
    fa4_hd256_layer_blocks: bool = False
    fa_quantized_mm_prefix_sm90: bool = False
    mimo_v2_cache_config: bool = False
    v2_runner_v1_methods: frozenset[str] | None = None
    v2_runner_lacks_mamba_all: bool = False
    v1_runner_refuses: frozenset[str] = frozenset()
    pp_draft_models: bool = False
    pp_text_model_named: frozenset[str] = frozenset()
    pp_submodel_unvalidated: bool = False
    pp_tower_view_builds: bool = False
    hidden_state_min_page: bool = False
    flashinfer_nvfp4_sm90: bool = False
    mamba_align_state_with_spec: bool = False
    hidden_state_block_divides: bool = True
    short_conv_spec_rows: bool = False
    hybrid_full_attention_types: bool = False
    legacy_layer_type_names: bool = False
    unverified_architectures: frozenset[str] = frozenset()
    unknown_kv_cache_dtypes: frozenset[str] = frozenset()
    glm_moe_dsa_drops_index_keys: bool = False
    engine_block_all_groups: bool = True
    deepseek_eagle3_yarn_only: bool = False
    limit_max_model_len_to_draft: bool = False
    yarn_max_len_prescaled: bool = False
    hf_config_class_architectures: frozenset[str] = frozenset()
    longcat_hidden_layers_field: bool = False
    hunyuan_transformers_backend: bool = False
    transformers_backend_vllm_attention: bool = False
    transformers_backend_fuses_biased_qkv: bool = False
    laguna_ropes_by_layer_type: bool = False
    input_norm_towers: frozenset[str] = frozenset()
    moe_gate_model_dtype: frozenset[str] = frozenset()
    attention_range_scalars: bool = False
    modelopt_mixed_nested: bool = False
    sparse_mla_fp8_e4m3_sm90: bool = False
    fp8_moe_block_refine: bool = False
    pp_towers_first_stage: bool = False
    muse_glimmer_layer_types: bool = False
    sparse_mla_pool_row_aligned: bool = False
    hunyuan_vl_whole_tower: bool = False
    backend_text_attention_whole: bool = False
    backend_splits_encoder_qkv: bool = True
    sparse_mla_index_groups: bool = False
    sparse_mla_index_group_request_ids: bool = False
    flash_attn_mla_sparse_cu_seqlens: bool = False
    flashmla_sparse_prefill_buffers: bool = False
    flashmla_sparse_padded_query: bool = False
    flashmla_sparse_long_context_factor: bool = False
    kda_full_rank_gate: bool = False
    kda_prefill_checkpoints: bool = True
    kda_ssm_dtype_flag: bool = False
    hy_v4_dense_layers: bool = False
    hy_v4_indexed_layer_type: bool = False
    flashinfer_sinks_sm90: bool = False
    empty_stage_after_memory_check: bool = False
    flashinfer_sinks_sm120: bool = True


#: architectures 0.29's registry dropped (``_PREVIOUSLY_SUPPORTED_MODELS``: vLLM refuses them by name)
_REMOVED_IN_029 = frozenset({"RWForCausalLM", "Fairseq2LlamaForCausalLM", "StableLMEpochForCausalLM"})


def _removed(architecture: str) -> str:
    return f"vLLM refuses it: {architecture} was supported in vLLM until v0.28.0, and is not supported anymore"


#: Why an architecture of ``unverified_architectures`` is refused on a release, where the reason is
#: not the GPU kernel libraries its model class needs (checked with each release's oracle).
UNVERIFIED_REASONS: dict[tuple[str, str], str] = {
    (
        "0.27.1",
        "MiniCPM3ForCausalLM",
    ): "the transformers it ships has no minicpm3 config class: vLLM refuses the config",
    ("0.27.1", "MiMoV2FlashForCausalLM"): (
        "the transformers it ships has no mimo_v2_flash config class: vLLM refuses the config"
    ),
    ("0.27.1", "HunYuanVLForConditionalGeneration"): (
        'vLLM 0.27.1 fails to inspect its model class ("failed to be inspected", recorded): vLLM refuses it'
    ),
    **{(v, a): _removed(a) for v in ("0.29.0", "0.30.0", "0.31.0", "0.32.0", "0.33.0") for a in _REMOVED_IN_029},
    ("0.30.0", "MiniCPMV4_7ForConditionalGeneration"): (
        "its registry lacks it (0.32+: minicpmv4_7.py) and resolves it to the Transformers modeling backend "
        "(transformers' MiniCPMV4_7ForConditionalGeneration), whose engine start loads the checkpoint's "
        "tokenizer (ValueError without it, recorded on 0.30.0): not modelled"
    ),
}


@lru_cache(maxsize=8)
def known_model_types(version: str) -> frozenset[str]:
    """The ``model_type`` values release ``version`` reads without remote code: transformers'
    config classes (``CONFIG_MAPPING_NAMES`` of the transformers its fidelity venv holds) and vLLM's
    own (``transformers_utils/config.py`` ``_CONFIG_REGISTRY``); ``data/known-model-types.json``.
    Empty for a release the table does not hold (nothing refused)."""
    table = json.loads((DATA / "known-model-types.json").read_text(encoding="utf-8"))
    release = table["releases"].get(version)
    return frozenset(table["common"]) | frozenset(release["more"]) if release else frozenset()


def unverified_reason(version: str, architecture: str) -> str:
    """Why ``architecture`` is not planned for ``version`` (one of its ``unverified_architectures``)."""
    return UNVERIFIED_REASONS.get(
        (version, architecture), "its model class needs GPU kernel libraries to be built, which the CPU oracle lacks"
    )


_V0271 = VersionRules(
    "0.27.1",
    empty_stage_after_memory_check=True,
    flashinfer_sinks_sm120=False,
    backend_splits_encoder_qkv=False,
    glm_moe_dsa_drops_index_keys=True,
    deepseek_eagle3_yarn_only=True,
    unverified_architectures=frozenset(
        {
            "MiniCPM3ForCausalLM",
            "MiMoV2FlashForCausalLM",
            "HunYuanVLForConditionalGeneration",
        }
    ),
    # its boot environment's transformers (5.10.4): LongcatFlashConfig.num_hidden_layers is a field
    longcat_hidden_layers_field=True,
    hidden_state_block_divides=False,
    unknown_kv_cache_dtypes=frozenset({"nvfp4_4over6"}),
    hybrid_prefix_caching_default=False,
    mamba_default_all=True,
    drafting_slots_per_seq=True,
    async_default_skips_draft_model=True,
    gemma4_global_kv_heads_required=True,
    capacity_log_split=True,
    attention_range_scalars=True,
    sliding_int4_unpacked=True,
    kda_full_rank_gate=True,
    kda_prefill_checkpoints=False,
    # transformers 5.10.4: Granite-4's and NemotronH's layer_types keep "attention" / "mamba"
    legacy_layer_type_names=True,
)
# Kimi-K3's KimiK3DeltaAttention: its MambaSpec holds no prefill checkpoint block before 0.29
_V028 = VersionRules(
    "0.28.0",
    kda_full_rank_gate=True,
    kda_prefill_checkpoints=False,
    backend_text_attention_whole=True,
    empty_stage_after_memory_check=True,
)
# each later release: the one before it, with what changed
_V029 = replace(
    _V028,
    version="0.29.0",
    empty_stage_after_memory_check=False,
    fa4_hd256_block=128,
    v1_runner_refuses=frozenset({"dspark", "mixed_dflash", "dflash2"}),
    flashmla_sparse_padded_query=True,
    # HunYuan-VL planned through the Transformers modeling backend (hunyuan_transformers_backend)
    unverified_architectures=_REMOVED_IN_029,
    # Kimi-K3's KDA layers' MambaSpec gains the FlashKDA prefill checkpoint block (kimi_k3/nvidia/kda.py
    # get_kv_cache_spec)
    kda_prefill_checkpoints=True,
    hunyuan_transformers_backend=True,
    hy_v4_dense_layers=True,
    short_conv_spec_rows=True,
    hybrid_full_attention_types=True,
    fp8_moe_block_refine=True,
    pad_requires_block_stride=False,
    reserve_null_block=True,
    # speculative methods that keep the V1 model runner (0.29+)
    v2_runner_v1_methods=frozenset(
        {"ngram", "ngram_gpu", "suffix", "medusa", "mlp_speculator", "draft_model", "custom_class"}
    ),
)
_V030 = replace(
    _V029,
    version="0.30.0",
    v2_runner_lacks_mamba_all=True,
    engine_block_all_groups=False,
    # its registry has no MiniCPM-V 4.7 (0.32+) but resolves it to the Transformers modeling backend
    unverified_architectures=_V029.unverified_architectures | {"MiniCPMV4_7ForConditionalGeneration"},
    transformers_backend_vllm_attention=True,
    yarn_max_len_prescaled=True,
    sliding_window_start="largest-fitting",
    mm_prefix_composites=True,
    mamba_all_deprecated=True,
    pp_draft_models=True,
    pp_tower_view_builds=True,
    pp_text_model_named=frozenset(
        {
            "Qwen3VLForConditionalGeneration",
            "Qwen3VLMoeForConditionalGeneration",
            "Cosmos3ForConditionalGeneration",
            "Cosmos3EdgeForConditionalGeneration",
        }
    ),
    hidden_state_min_page=True,
    sparse_mla_fp8_e4m3_sm90=True,
    flashinfer_sinks_sm90=True,
    sparse_mla_index_groups=True,
    sparse_mla_index_group_request_ids=True,
    dcp_backends=frozenset({"FLASH_ATTN", "FLASHINFER"}),
    kda_ssm_dtype_flag=True,
)
_V031 = replace(
    _V030,
    version="0.31.0",
    backend_text_attention_whole=False,
    v1_runner_refuses=frozenset({"dspark", "mixed_dflash"}),
    hy_v4_dense_layers=False,
    # Kimi-Linear builds on 0.31+'s oracle with its GEMM-AR module stood in (engine_start.py)
    unverified_architectures=_REMOVED_IN_029,
    block_size_log_backends=True,
    fa4_fp8_block=64,
    fa4_hd256_layer_blocks=True,
    fa_quantized_mm_prefix_sm90=True,
    composite_causal_fa3=True,
    moe_gate_model_dtype=frozenset({"sarvam_mla"}),
    v2_runner_v1_methods=frozenset({"ngram", "ngram_gpu", "suffix", "medusa", "mlp_speculator", "custom_class"}),
    sparse_mla_pool_row_aligned=True,
    sparse_mla_index_group_request_ids=False,
    flash_attn_mla_sparse_cu_seqlens=True,
    flashmla_sparse_prefill_buffers=True,
    hunyuan_vl_whole_tower=True,
    laguna_ropes_by_layer_type=True,
    transformers_backend_fuses_biased_qkv=True,
    # no mellum entry in vLLM's config registry from 0.31: transformers' MellumConfig reads the file
    hf_config_class_architectures=frozenset({"MellumForCausalLM"}),
    # transformers <5.18: LongcatFlashConfig.num_hidden_layers is a field (default 56), which
    # longcat_flash.py's FlashConfig(**hf_config.__dict__) takes as its layer count
    longcat_hidden_layers_field=True,
)
_V032 = replace(
    _V031,
    version="0.32.0",
    empty_stage_after_memory_check=True,
    v2_runner_lacks_mamba_all=False,
    hy_v4_indexed_layer_type=True,
    sparse_mla_pool_row_aligned=False,
    flashmla_sparse_long_context_factor=True,
    kernel_block_stride_alignment=True,
    input_norm_towers=frozenset(
        {"Glm4vForConditionalGeneration", "Glm4vMoeForConditionalGeneration", "GlmOcrForConditionalGeneration"}
    ),
    mamba_align_state_with_spec=True,
    mimo_v2_cache_config=True,
    flashinfer_nvfp4_sm90=True,
    mamba_mode_all=False,
    mamba_all_deprecated=False,
    mamba2_align_pages=3,
    qwen3_next_hf_config_class=True,
    # longcat_flash.py imports transformers' LongcatFlashConfig (vLLM's FlashConfig is gone); vLLM's
    # OlmoHybridConfig is gone too (transformers' defaults rope_parameters: models/olmo_hybrid.py)
    hf_config_class_architectures=_V031.hf_config_class_architectures
    | {"LongcatFlashForCausalLM", "OlmoHybridForCausalLM"},
    longcat_hidden_layers_field=False,
    autofit_log_kv_memory=True,
    v2_runner_v1_methods=frozenset({"suffix", "medusa", "mlp_speculator", "custom_class"}),
)
_V033 = replace(
    _V032,
    version="0.33.0",
    empty_stage_after_memory_check=False,
    input_norm_towers=_V032.input_norm_towers | {"Exaone4_5_ForConditionalGeneration"},
    modelopt_mixed_nested=True,
    muse_glimmer_layer_types=True,
    # Step-3.5: _CONFIG_REGISTRY maps step3p5 to transformers' Step3p7TextConfig
    hf_config_class_architectures=_V032.hf_config_class_architectures
    | {"AfmoeForCausalLM", "HYV3ForCausalLM", "Step3p5ForCausalLM"},
    limit_max_model_len_to_draft=True,
    mamba_cache_mode_ignored=True,
    pp_submodel_unvalidated=True,
    gdn_align_sm90=64,
    async_limits_v1_runner_only=True,
    float_kv_dtype_must_match=True,
    v2_runner_v1_methods=frozenset({"suffix", "custom_class"}),
    pp_towers_first_stage=True,
)

#: vLLM versions whose rules are checked against vLLM itself (``tests/fidelity``): at least 99.5%
#: of 2,000 harness cases agree with that release's own engine start
#: (tests/fidelity/data/releases/HARNESS.md, the merged harness of session 3: 0.27.1 1,991, 0.28.0 and
#: 0.29.0 1,999, 0.30.0-0.33.0 1,997 of 2,000 seed-0 cases).
VERIFIED_VERSIONS = frozenset({"0.27.1", "0.28.0", "0.29.0", "0.30.0", "0.31.0", "0.32.0", "0.33.0"})

#: Known versions, oldest first. Only :data:`VERIFIED_VERSIONS` are verified against vLLM itself.
VERSIONS: dict[str, VersionRules] = {r.version: r for r in (_V0271, _V028, _V029, _V030, _V031, _V032, _V033)}
DEFAULT_VERSION = "0.28.0"


def version_key(version: str) -> tuple[int, ...]:
    """A release's ordering key (``"0.31.2"`` -> ``(0, 31, 2)``; at most three parts).

    :raises ValueError: a part that is not an integer."""
    return tuple(int(p) for p in version.split(".")[:3])


def installed_vllm_version(source: str = "--vllm-version") -> str:
    """``--vllm-version auto``: the vLLM installed in this Python environment, read from its
    package metadata (``importlib.metadata``; vLLM is not imported). A local suffix
    (``0.33.0+cu129``) is dropped.

    :raises InputError: when no vLLM is installed.
    """
    from importlib import metadata  # at call: only --vllm-version auto reads it (35-65 ms of start-up)

    try:
        found = metadata.version("vllm")
    except metadata.PackageNotFoundError:
        raise InputError(source, "auto", "no vLLM is installed in this environment") from None
    return found.split("+")[0]


def resolve_version(text: str, source: str = "--vllm-version") -> str:
    """``auto`` -> :func:`installed_vllm_version`; any other text unchanged (stripped)."""
    text = text.strip()
    return installed_vllm_version(source) if text.lower() == "auto" else text


@lru_cache(maxsize=64)
def rules_for(version: str, source: str = "--vllm-version") -> VersionRules:
    """The switches in force for ``version`` (``'0.31'``, ``'0.31.2'``...).

    A version between table entries takes the newest entry not after it (0.31.2 -> the 0.31.0
    rules, 0.34.1 -> the 0.33.0 rules).

    :raises InputError: for a malformed version or one older than the oldest entry (0.27.1).
    """
    text = resolve_version(version, source)
    try:
        key = version_key(text if text.count(".") >= 2 else text + ".0")
    except ValueError:
        raise InputError(source, text, "expected a version like 0.28.0") from None
    chosen: VersionRules | None = None
    for rules in VERSIONS.values():
        if version_key(rules.version) <= key:
            chosen = rules
    if chosen is None:
        raise InputError(source, text, f"dryboot models vLLM {next(iter(VERSIONS))} and later")
    return chosen
