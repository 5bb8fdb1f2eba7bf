"""Why dryboot refuses each architecture of vLLM 0.28.0's registry that it does not plan.

Every refused row of ``dryboot plan --list-architectures`` (and of ``docs/architectures.md``)
names what the model does that dryboot does not model, or what teaching it would need. The
categories were assigned by reading each architecture's ``vllm/model_executor/models/`` file
(layer kinds it builds: Mamba/linear-attention mixers, MLA, chunked local attention,
cross-attention, cross-layer KV sharing) and its config class.
"""

from __future__ import annotations

TEXT = (
    "standard attention, not yet taught: needs its config reader (layers, KV heads, head size, windows) "
    "and a tiny-config verification"
)
MM = "multimodal wrapper: the reader of its language model and an end-to-end check are not yet taught"
PIXTRAL_IMPORT = (
    "multimodal wrapper, not verified: its vLLM 0.28.0 module imports pixtral.py, which imports "
    "PixtralRotaryEmbedding from transformers; transformers 5.24 (the fidelity venv's, inside vLLM's >=5.5.3 "
    "range) no longer has it, so the harness cannot build the model; not planned"
)
NEEDS_TIMM = (
    "multimodal wrapper, not verified: its vLLM model class needs timm (at import or to build its vision tower), "
    "absent from the fidelity venv; not planned"
)
NEEDS_TORCHAUDIO = (
    "multimodal wrapper, not verified: its vLLM module imports torchaudio, absent from the fidelity venv; not planned"
)
REMOTE_MM = (
    "multimodal wrapper whose config class is remote code (neither transformers nor vLLM's config registry has "
    "its model_type; --trust-remote-code and the checkpoint's Python files): not verifiable offline"
)
MM_CLA = (
    "multimodal wrapper of HunYuanDenseV1ForCausalLM / HunYuanMoEV1ForCausalLM, whose cross-layer attention "
    "(use_cla) dryboot does not model"
)
MM_MLA_SPARSE = (
    "multimodal wrapper of PanguEmbeddedForCausalLM (MLA with a sparse-attention indexer), which dryboot does not model"
)
MM_SPLIT_HEADS = (
    "multimodal wrapper of a MiMo-V2 language model (separate K and V head sizes, different heads for sliding "
    "and full layers), which dryboot does not model"
)
MM_DEEPSEEK_MHA = (
    "multimodal wrapper of DeepSeek-V2 without MLA (use_mla false, qk_nope_head_dim = qk_rope_head_dim = 0: "
    "plain multi-head attention), which dryboot's DeepSeek family (MLA only) does not read"
)
VOXTRAL = (
    "multimodal wrapper served by vLLM 0.28.0 from its Mistral-format checkpoint: voxtral.py reads audio "
    "encoder keys (downsample_factor, window_size...) that transformers' VoxtralEncoderConfig does not have, "
    "and builds its processor from the Mistral tokenizer; dryboot reads config.json only: not modelled"
)
ISAAC = (
    "multimodal wrapper whose model class builds its Qwen3 language model from the top-level config "
    "(IsaacConfig is itself a Qwen3Config) while vLLM's text config is text_config, and sizes its M-RoPE "
    "from the top-level head_dim: two configs for one model, not modelled"
)
STEP_TEXT = (
    "multimodal wrapper of a Step language model (Step3TextForCausalLM / Step3p5ForCausalLM) that dryboot "
    "does not plan yet (standard attention, not yet taught): refused with its language model"
)
HYBRID = (
    "hybrid: Mamba / linear-attention / short-convolution layers beside attention "
    "(this architecture's mixer is not modelled)"
)
ATTNFREE = "attention-free: a pure state-space model whose Mamba2 state is not modelled"
MLA = "MLA (multi-head latent attention) outside DeepSeek-V2/V3: its latent KV layout is not modelled"
MLA_SPARSE = "MLA with a sparse-attention indexer (an extra indexer KV cache per layer): not modelled"
XATTN = "encoder-decoder: the decoder's cross-attention KV over encoder outputs is not modelled"
KVSHARE = "cross-layer KV sharing (layers reading another layer's KV cache, kv_sharing_target_layer_name): not modelled"
CLA = "cross-layer attention (use_cla: every cla_share_factor-th layer keeps the KV the next ones reuse): not modelled"
FALCON = (
    "Falcon's rotary and ALiBi attention is built without the cache config (ignores --kv-cache-dtype and "
    "the model-level window): not modelled"
)
BLOOM_ALIBI = (
    "BLOOM's ALiBi slopes are computed as tensors on the model's device: vLLM cannot build it on the meta "
    "device, so it is not verified"
)
REMOTE = (
    "its config class is remote code (transformers has no such model_type; --trust-remote-code and the "
    "checkpoint's Python files): not verifiable offline"
)
META_DEVICE = (
    "vLLM 0.28.0 cannot build this model on the meta device (a layer computes tensors from data at "
    "construction), so the harness cannot verify it: not planned"
)
TP_CUDA = (
    "not verified: with tensor parallelism its per-layer QK norm builds CUDA-only communication, which the "
    "harness cannot construct offline; not planned"
)
NEEDS_CUDA = (
    "vLLM 0.28.0 needs CUDA to build this model (its MoE layer allocates on the GPU at construction), so "
    "the meta-device harness cannot verify it: not planned"
)
MPT_CONFIG = (
    "vLLM 0.28.0 cannot read an MPT config with the transformers it ships (MptAttentionConfig is not "
    "subscriptable): refused as vLLM refuses"
)
PER_LAYER_HEADS = (
    "per-layer block configs (nemotron_nas.py: KV heads per layer from n_heads_in_group, no-op attention "
    "layers): layers with different KV head counts are not modelled"
)
SPLIT_HEAD_SIZES = (
    "separate K and V head sizes (v_head_dim) and different heads for sliding and full layers "
    "(mimo_v2.py): not modelled"
)
LOOPED = "looped layers (each layer run loop_num times with its own KV cache and a loop window): not modelled"
NOFILE = "its vLLM module lives outside vllm/model_executor/models (vllm.models.*): not modelled"
POOLING = "embedding / pooling model: no generation KV cache to plan"
SPEC_MTP = (
    "MTP draft module: dryboot plans MTP only as the target's own layers (Qwen3-Next, Qwen3.5, DeepSeek-V3 "
    "with --speculative-config method mtp); this drafter's layers are not modelled"
)
SPEC_EAGLE = "EAGLE / EAGLE-3 draft model: its draft layers (and the target's hidden states they read) are not modelled"
SPEC_DFLASH = "DFlash-style drafter other than DFlashDraftModel: its draft layers are not modelled"
SPEC_DSPARK = "DSpark drafter: its draft layers are not modelled"
MEDUSA = "Medusa heads: the drafter keeps no KV cache of its own; Medusa proposing is not modelled"
EXTRACT = "hidden-state extraction drafter: not modelled"
SPEC_OTHER = "draft model: its draft layers are not modelled"

#: architecture -> why dryboot refuses it
REASONS: dict[str, str] = {
    "AXK1ForCausalLM": MLA_SPARSE,
    "AfmoeForCausalLM": TEXT,
    "ApertusForCausalLM": META_DEVICE,
    "ArcticForCausalLM": NEEDS_CUDA,
    "BailingMoeForCausalLM": TEXT,
    "BailingMoeV25MTPModel": SPEC_MTP,
    "BailingMoeV2ForCausalLM": TEXT,
    "BailingMoeV2_5ForCausalLM": HYBRID,
    "BailingMoeV3ForCausalLM": HYBRID,
    "BailingMoeV3MTPModel": SPEC_MTP,
    "BeeForConditionalGeneration": MM,
    "BloomForCausalLM": BLOOM_ALIBI,
    "Cohere2MoeForCausalLM": TEXT,
    "CohereAsrForConditionalGeneration": XATTN,
    "Cosmos3EdgeForConditionalGeneration": MM,
    "Cosmos3ForConditionalGeneration": MM,
    "CwmForCausalLM": TEXT,
    "DFlash2DraftModel": SPEC_DFLASH,
    "DFlashLagunaForCausalLM": SPEC_DFLASH,
    "DFlashMuseGlimmerAssistantModel": SPEC_DFLASH,
    "DSparkDraftModel": NOFILE,
    "DbrxForCausalLM": TEXT,
    "DeciLMForCausalLM": PER_LAYER_HEADS,
    "DeepSeekMTPModel": SPEC_MTP,
    "DeepSeekV4MTPModel": NOFILE,
    "DeepseekForCausalLM": REMOTE,
    "DeepseekV32ForCausalLM": MLA_SPARSE,
    "DeepseekV4ForCausalLM": NOFILE,
    "DeepseekVLV2ForCausalLM": NEEDS_TIMM,
    "DiffusionGemmaForBlockDiffusion": MM,
    "Dots3NoteForCausalLM": NOFILE,
    "Dots3NoteMTPModel": NOFILE,
    "DotsOCRForCausalLM": REMOTE_MM,
    "Eagle2_5_VLForConditionalGeneration": MM,
    "Eagle3DeepseekV2ForCausalLM": SPEC_EAGLE,
    "Eagle3DeepseekV3ForCausalLM": SPEC_EAGLE,
    "Eagle3LlamaForCausalLM": SPEC_EAGLE,
    "Eagle3MiniMaxM2ForCausalLM": SPEC_EAGLE,
    "Eagle3Qwen2_5vlForCausalLM": SPEC_EAGLE,
    "Eagle3Qwen3ForCausalLM": SPEC_EAGLE,
    "Eagle3Qwen3vlForCausalLM": SPEC_EAGLE,
    "EagleCohereForCausalLM": SPEC_EAGLE,
    "EagleDeepSeekMTPModel": SPEC_MTP,
    "EagleLlama4ForCausalLM": SPEC_EAGLE,
    "EagleLlamaForCausalLM": SPEC_EAGLE,
    "EagleMiniCPMForCausalLM": SPEC_EAGLE,
    "EagleMistralForCausalLM": SPEC_EAGLE,
    "EagleMistralLarge3ForCausalLM": SPEC_EAGLE,
    "Ernie4_5_VLMoeForConditionalGeneration": MM,
    "ErnieMTPModel": SPEC_MTP,
    "Exaone4_5_MTP": SPEC_MTP,
    "ExaoneMoeForCausalLM": TEXT,
    "ExaoneMoeMTP": SPEC_MTP,
    "ExtractHiddenStatesModel": EXTRACT,
    "Fairseq2LlamaForCausalLM": TEXT,
    "FalconForCausalLM": FALCON,
    "FalconH1ForCausalLM": HYBRID,
    "FireRedASR2ForConditionalGeneration": MM,
    "FireRedLIDForConditionalGeneration": XATTN,
    "FlexOlmoForCausalLM": TEXT,
    "FunASRForConditionalGeneration": MM,
    "Gemma3nForCausalLM": KVSHARE,
    "Gemma3nForConditionalGeneration": KVSHARE,
    "Gemma4DSparkModel": SPEC_DSPARK,
    "Gemma4MTPModel": KVSHARE,
    "Gemma4UnifiedForConditionalGeneration": MM,
    "Glm4MoeLiteForCausalLM": MLA,
    "Glm4MoeLiteMTPModel": SPEC_MTP,
    "Glm4MoeMTPModel": SPEC_MTP,
    "GlmMoeDsaForCausalLM": MLA_SPARSE,
    "GlmOcrMTPModel": SPEC_MTP,
    "Granite4VisionForConditionalGeneration": PIXTRAL_IMPORT,
    "GraniteMoeHybridForCausalLM": HYBRID,
    "GraniteMoeSharedForCausalLM": TEXT,
    "GritLM": POOLING,
    "H2OVLChatModel": REMOTE_MM,
    "HCXVisionForCausalLM": TEXT,
    "HCXVisionV2ForCausalLM": TEXT,
    "HYV3ForCausalLM": TEXT,
    "HYV3MTPModel": SPEC_MTP,
    "HfMoondream": MM,
    "HrmTextForCausalLM": TEXT,
    "HunYuanDenseV1ForCausalLM": CLA,
    "HunYuanMoEV1ForCausalLM": CLA,
    "HunYuanVLForConditionalGeneration": MM_CLA,
    "HyperCLOVAXForCausalLM": TEXT,
    "IQuestCoderForCausalLM": TEXT,
    "IQuestLoopCoderForCausalLM": LOOPED,
    "InklingForCausalLM": NOFILE,
    "InklingForConditionalGeneration": NOFILE,
    "InklingMTPModel": NOFILE,
    "InternLM2ForCausalLM": REMOTE,
    "InternLM3ForCausalLM": TEXT,
    "InternS1ForConditionalGeneration": REMOTE_MM,
    "InternS1ProForConditionalGeneration": REMOTE_MM,
    "InternS2MobiusForConditionalGeneration": MM,
    "InternS2MobiusMTP": SPEC_MTP,
    "InternS2PreviewForConditionalGeneration": MM,
    "InternVLChatModel": REMOTE_MM,
    "IsaacForConditionalGeneration": ISAAC,
    "Jais2ForCausalLM": TEXT,
    "K3DSparkModel": NOFILE,
    "KananaVForConditionalGeneration": NEEDS_TIMM,
    "KeyeForConditionalGeneration": REMOTE_MM,
    "KeyeVL1_5ForConditionalGeneration": REMOTE_MM,
    "KimiK3ForConditionalGeneration": NOFILE,
    "KimiK3MTPModel": NOFILE,
    "KimiLinearForCausalLM": NOFILE,
    "LLaMAForCausalLM": TEXT,
    "LagunaForCausalLM": TEXT,
    "Lfm2ForCausalLM": HYBRID,
    "Lfm2MoeForCausalLM": HYBRID,
    "Lfm2VlForConditionalGeneration": HYBRID,
    "LightOnOCRForConditionalGeneration": PIXTRAL_IMPORT,
    "LlamaForCausalLMEagle3": SPEC_EAGLE,
    "Llama_Nemotron_Nano_VL": REMOTE_MM,
    "LlavaForConditionalGeneration": PIXTRAL_IMPORT,
    "LlavaNextForConditionalGeneration": PIXTRAL_IMPORT,
    "LlavaNextVideoForConditionalGeneration": PIXTRAL_IMPORT,
    "LlavaOnevision2ForConditionalGeneration": MM,
    "LlavaOnevisionForConditionalGeneration": PIXTRAL_IMPORT,
    "LongCatFlashMTPModel": SPEC_MTP,
    "LongcatFlashForCausalLM": MLA,
    "LongcatFlashNgramForCausalLM": TEXT,
    "MPTForCausalLM": MPT_CONFIG,
    "Mamba2ForCausalLM": ATTNFREE,
    "MedusaModel": MEDUSA,
    "MellumForCausalLM": TEXT,
    "MiDashengLMModel": NEEDS_TORCHAUDIO,
    "MiMoForCausalLM": TEXT,
    "MiMoMTPModel": SPEC_MTP,
    "MiMoV2FlashForCausalLM": SPLIT_HEAD_SIZES,
    "MiMoV2ForCausalLM": SPLIT_HEAD_SIZES,
    "MiMoV2MTPModel": SPEC_MTP,
    "MiMoV2OmniForCausalLM": MM_SPLIT_HEADS,
    "MiMoV2OmniMTPModel": SPEC_MTP,
    "MiniCPM3ForCausalLM": MLA,
    "MiniCPMForCausalLM": REMOTE,
    "MiniCPMO": REMOTE_MM,
    "MiniCPMV": REMOTE_MM,
    "MiniCPMV4_6ForConditionalGeneration": HYBRID,
    "MiniMaxM2ForCausalLM": TP_CUDA,
    "MiniMaxM3MTP": NOFILE,
    "MiniMaxM3SparseForCausalLM": NOFILE,
    "MiniMaxM3SparseForConditionalGeneration": NOFILE,
    "Ministral3ForCausalLM": TEXT,
    "Mistral3ForConditionalGeneration": PIXTRAL_IMPORT,
    "Molmo2ForConditionalGeneration": MM,
    "MolmoForCausalLM": REMOTE_MM,
    "Moondream3ForCausalLM": MM,
    "MoonshotKimiaForCausalLM": MM,
    "MossAudioModel": MM,
    "MptForCausalLM": MPT_CONFIG,
    "MuseGlimmerAssistantModel": SPEC_DFLASH,
    "MuseGlimmerForCausalLM": TEXT,
    "MuseGlimmerForConditionalGeneration": MM,
    "NVLM_D": REMOTE_MM,
    "NemotronHMTPModel": SPEC_MTP,
    "NemotronHPuzzleForCausalLM": HYBRID,
    "NemotronH_Nano_Omni_Reasoning_V3": HYBRID,
    "NemotronH_Nano_VL_V2": HYBRID,
    "NemotronH_Super_Omni_Reasoning_V3": HYBRID,
    "NemotronParseForConditionalGeneration": XATTN,
    "OlmoHybridForCausalLM": HYBRID,
    "OpenCUAForConditionalGeneration": MM,
    "OpenPanguMTPModel": SPEC_MTP,
    "OpenPanguVLForConditionalGeneration": MM_MLA_SPARSE,
    "OpenVLAForActionPrediction": NEEDS_TIMM,
    "OrionForCausalLM": REMOTE,
    "Ovis2_5": REMOTE_MM,
    "Ovis2_6ForCausalLM": REMOTE_MM,
    "Ovis2_6_MoeForCausalLM": REMOTE_MM,
    "PEagleDraftModel": SPEC_EAGLE,
    "PanguEmbeddedForCausalLM": MLA_SPARSE,
    "PanguProMoEV2ForCausalLM": MLA_SPARSE,
    "PanguUltraMoEForCausalLM": MLA_SPARSE,
    "Param2MoEForCausalLM": TEXT,
    "PeagleLlamaForCausalLM": SPEC_EAGLE,
    "PeagleQwen3ForCausalLM": SPEC_EAGLE,
    "Phi3VForCausalLM": REMOTE_MM,
    "Phi4ForCausalLMV": PIXTRAL_IMPORT,
    "Phi4MMForCausalLM": REMOTE_MM,
    "PixtralForConditionalGeneration": PIXTRAL_IMPORT,
    "Plamo3ForCausalLM": TEXT,
    "Qwen3DSparkModel": SPEC_DSPARK,
    "Qwen3NextMTP": SPEC_MTP,
    "Qwen3_5ForCausalLM": HYBRID,
    "Qwen3_5MTP": SPEC_MTP,
    "Qwen3_5MoeForCausalLM": HYBRID,
    "Qwen3_5MoeMTP": SPEC_MTP,
    "RForConditionalGeneration": MM,
    "RWForCausalLM": FALCON,
    "Rnj1ForCausalLM": TEXT,
    "SarvamMLAForCausalLM": MLA_SPARSE,
    "SarvamMoEForCausalLM": MLA_SPARSE,
    "SkyworkR1VChatModel": REMOTE_MM,
    "SolarForCausalLM": REMOTE,
    "StableLMEpochForCausalLM": TEXT,
    "Step1ForCausalLM": TEXT,
    "Step3TextForCausalLM": TEXT,
    "Step3VLForConditionalGeneration": STEP_TEXT,
    "Step3p5ForCausalLM": TEXT,
    "Step3p5MTP": SPEC_MTP,
    "Step3p7ForConditionalGeneration": STEP_TEXT,
    "StepVLForConditionalGeneration": MM,
    "TeleChat2ForCausalLM": TEXT,
    "TeleChat3ForCausalLM": TEXT,
    "TeleFLMForCausalLM": REMOTE,
    "UnlimitedOCRForCausalLM": MM_DEEPSEEK_MHA,
    "VoxtralForConditionalGeneration": VOXTRAL,
    "VoxtralRealtimeGeneration": MM,
    "WhisperForConditionalGeneration": XATTN,
    "Zamba2ForCausalLM": HYBRID,
}


def reason(architecture: str) -> str:
    """Why ``architecture`` is refused (an architecture outside vLLM 0.28.0's registry: unknown)."""
    return REASONS.get(architecture, "not in vLLM 0.28.0's model registry")
