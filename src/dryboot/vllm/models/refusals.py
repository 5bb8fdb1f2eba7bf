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
MISTRAL_FORMAT = (
    "multimodal wrapper served from a Mistral-format checkpoint (params.json: pixtral.py reads the vision "
    "encoder's arguments from it); a Hugging Face-format Pixtral checkpoint declares the LLaVA wrapper "
    "(planned); dryboot reads config.json only: not modelled"
)


def own_text_model(what: str) -> str:
    """The reason for a wrapper whose language model is a class of its own, not one dryboot plans."""
    return f"multimodal wrapper whose language model is {what}, an architecture dryboot does not plan"


KANANA_V = (
    "multimodal wrapper whose config class is remote code: kakaocorp/kanana-1.5-v-3b-instruct says model_type "
    "'kanana-1.5-v' with its configuration in the checkpoint's own Python files (auto_map), in neither "
    "transformers nor vLLM's config registry, and kanana_v.py reads objects only that code builds "
    "(vision_config.encoder_hidden_size, projector_config, text_config.eos_token_id); timm, which it "
    "imports, is in `dryboot boot-env --with-mm-extras`: not verifiable offline"
)


def remote_config(builds: str, searched: str) -> str:
    """The reason for a wrapper whose config class is the checkpoint's own Python file (auto_map),
    in neither transformers nor vLLM's config registry, whose published file was not found to run
    vLLM's engine start on (issue 37: each searched for in public repositories and pages)."""
    return (
        f"multimodal wrapper whose config class is remote code ({builds}); {searched}, so vLLM's engine start "
        "with --trust-remote-code cannot be run offline on it: not verifiable"
    )


#: issue 37: what each wrapper's model class builds (0.27.1-0.33.0) and which published config files
#: were looked for (code index by path and by text, stored pages); where none was found verbatim
#: with its source, the wrapper stays refused
MINICPMV = remote_config(
    "model_type minicpmv; minicpmv.py builds its language model by config.version on the top-level config: "
    "2.0 MiniCPMForCausalLM, 2.5 and 4.0 LlamaForCausalLM, 2.6 Qwen2ForCausalLM, 4.5 Qwen3ForCausalLM",
    "the checkpoints' configuration_minicpm.py imports SiglipVisionConfig from their modeling_navit_siglip.py; "
    "only a modified copy was found (404805854/minicpmv2.6-onnx, absolute imports), not the published files",
)
MINICPMO = remote_config(
    "model_type minicpmo; minicpmo.py builds MiniCPM-V 2.6's (Qwen2ForCausalLM) or, by config.version, 4.5's "
    "(Qwen3ForCausalLM) language model on the top-level config, with a Whisper audio tower",
    "the published configuration_minicpm.py of openbmb/MiniCPM-o-2_6 / MiniCPM-o-4_5 (and their "
    "modeling_navit_siglip.py) was not found",
)
PHI3V = remote_config(
    "model_type phi3_v; phi3v.py builds LlamaForCausalLM on the top-level Phi3VConfig",
    "the checkpoints' configuration_phi3_v.py (microsoft/Phi-3-vision-128k-instruct, Phi-3.5-vision-instruct) "
    "was not found (only transformers' own phi3_v port)",
)
PHI4MM = remote_config(
    "model_type phi4mm; phi4mm.py builds its own LlamaModel on the top-level config with the vision and "
    "speech LoRA adapters",
    "microsoft/Phi-4-multimodal-instruct's configuration_phi4mm.py was not found",
)
PHI4SIGLIP = remote_config(
    "model_type phi4-siglip; phi4siglip.py builds Phi3ForCausalLM on the top-level config",
    "no published configuration file of a phi4-siglip checkpoint was found",
)
MOLMO = remote_config(
    "model_type molmo; molmo.py builds its own decoder layers (MolmoAttention, not a planned text model)",
    "allenai/Molmo-7B-D-0924's configuration_molmo.py was not found, and its layers would need a reader of their own",
)
OVIS2_5 = remote_config(
    "model_type ovis2_5; ovis2_5.py builds the architecture its llm_config names (Qwen3ForCausalLM in "
    "AIDC-AI/Ovis2.5-2B / -9B)",
    "the checkpoints' configuration_ovis2_5.py was not found; AIDC-AI/Ovis's ovis/model/configuration_ovis.py "
    "is the training package's class (model_type ovis), not the checkpoint's",
)
KEYE = remote_config(
    "model_type Keye; keye.py and keye_vl1_5.py build Qwen3ForCausalLM on the top-level config",
    "Kwai-Keye/Keye-VL-8B-Preview's and Keye-VL-1.5-8B's configuration_keye.py (Kwai-Keye/Keye holds none) "
    "were not found",
)
OPENCUA = remote_config(
    "model_type opencua; opencua.py builds Qwen2ForCausalLM on text_config",
    "xlang-ai/OpenCUA-7B's configuration_opencua.py was found only as copies no repository is named for "
    "(public code index), not with its source",
)
LLAVA_OV2 = remote_config(
    "llava_onevision2.py builds Qwen3ForCausalLM on text_config",
    "no published configuration file of a LLaVA-OneVision-2 checkpoint was found",
)
KIMI_AUDIO = remote_config(
    "model_type kimi_audio; kimi_audio.py builds Qwen2ForCausalLM on the top-level config beside its Whisper tower",
    "moonshotai/Kimi-Audio-7B-Instruct's configuration Python file was not found",
)
MOSS_AUDIO = remote_config(
    "model_type moss_audio; moss_audio.py builds its own MossQwen3ForCausalLM (a Qwen3ForCausalLM subclass) "
    "on language_config and its audio encoder's MossAudioAttention",
    "no published configuration file of a MOSS-Audio checkpoint was found",
)
VLLM_TESTS_ONLY = remote_config(
    "vLLM's own model tests load Bee, R and StepVL with trust_remote_code (bee.py and rvl.py are LLaVA-OneVision "
    "on text_config; step_vl.py reads vision_config.width, which vLLM's step3_vl config lacks)",
    "no published configuration file of theirs was found",
)


def remote_internvl(what: str, searched: str) -> str:
    """The reason for an InternVL-style wrapper (issue 37) whose checkpoint ships its config class
    (``auto_map``), left refused because that class's Python file was not found to verify it against
    vLLM's engine start: ``what`` it composes (read from its vLLM model file), ``searched`` what was
    looked for in the public GitHub index and found instead. internvl.py's chat class itself is planned
    (``tests/fidelity/data/remote-code/internvl_chat/``)."""
    return (
        f"multimodal wrapper whose config class is remote code: {what}; its checkpoint's config Python file "
        f"was not found ({searched}), so vLLM's engine start on it is not recorded: not verified"
    )


#: issue 37, session 25: the InternVL-style wrappers beside InternVLChatModel (planned), each read in
#: its vLLM 0.28.0 / 0.33.0 model file and looked for in the GitHub index (find_string / find_files /
#: search over code)
H2OVL = remote_internvl(
    "h2ovl.py's class is internvl.py's chat class with its own InternViT setup over llm_config (model_type h2ovl_chat)",
    "configuration_h2ovl_chat.py of h2oai/h2ovl-mississippi-*: only vLLM's former own H2OVLChatConfig, a subclass "
    "of its InternVLChatConfig, and copies of it",
)
NVLM_D = remote_internvl(
    "nvlm_d.py's class is internvl.py's chat class with 7 dummy InternViT heads and its own mlp1 over llm_config "
    "(model_type NVLM_D)",
    "configuration_nvlm_d.py of nvidia/NVLM-D-72B: only adaptations (vLLM's former transformers_utils/configs/"
    "nvlm_d.py, third-party rewrites reading text_config), not the checkpoint's file",
)
SKYWORK_R1V = remote_internvl(
    "skyworkr1v.py builds init_vllm_registered_model on text_config (llm_config) beside InternViT (model_type "
    "skywork_chat)",
    "class SkyworkChatConfig / configuration_skywork_chat.py: no hit",
)
LLAMA_NEMOTRON_VL = remote_internvl(
    "nemotron_vl.py builds init_vllm_registered_model on get_text_config() beside a SigLIP or RADIO tower (model_type "
    "Llama_Nemotron_Nano_VL)",
    'model_type = "Llama_Nemotron_Nano_VL": no hit',
)
EAGLE2_5_VL = remote_internvl(
    "eagle2_5_vl.py builds init_vllm_registered_model on text_config beside a SigLIP tower (model_type eagle_2_5_vl)",
    "third-party copies of an Eagle2_5_VLConfig, none naming the NVIDIA checkpoint's file and commit; not recorded",
)
INTERNS1 = remote_internvl(
    "interns1.py's class (planned under transformers' internvl layout) over text_config (model_type interns1, "
    "a Qwen3-MoE or Qwen3 text model)",
    "internlm/Intern-S1's configuration_interns1.py: only a transformers fork's copy with package-relative imports, "
    "not loadable as the checkpoint's code",
)
INTERNS1_PRO = remote_internvl(
    "interns1_pro.py's own InternS1ProMoeLLMForCausalLM (a Qwen3-MoE language model of its own) and Qwen3-VL's tower",
    'model_type = "interns1_pro": no hit',
)
INTERNS2_PREVIEW = remote_internvl(
    "interns2_preview.py's subclass of qwen3_5.py's Qwen3.5-MoE wrapper with Qwen3-VL's tower "
    "(model_type intern_s2_preview)",
    '"interns2_preview" / intern_s2_preview config code: only vLLM\'s registry lists',
)
INTERNS2_MOBIUS = remote_internvl(
    "interns2_mobius.py's own InternS2MobiusForCausalLM (Qwen3.5 layers beside Qwen3-Next attention)",
    "its config code: no hit; vLLM's own model tests load it with trust_remote_code",
)

MM_MLA_SPARSE = (
    "multimodal wrapper of PanguEmbeddedForCausalLM, itself refused (a remote-code config; MLA and "
    "sink-attention layers, no sparse-attention indexer)"
)
MM_SPLIT_HEADS = (
    "multimodal wrapper whose model class builds MiMo-V2-Flash's language model (mimo_v2.py) on its "
    "top-level config; that config's model_type is remote code (the published omni checkpoints, "
    "XiaomiMiMo/MiMo-V2.5 with its vision_config and audio_config, say mimo_v2 with an auto_map, which "
    "neither transformers nor vLLM ships; vLLM 0.28.0 and 0.33.0 refuse such a config without "
    "--trust-remote-code, recorded on a tiny config): not verifiable offline"
)
VOXTRAL = (
    "multimodal wrapper served by vLLM 0.28.0 from its Mistral-format checkpoint: voxtral.py reads audio "
    "encoder keys (downsample_factor, window_size...) that transformers' VoxtralEncoderConfig does not have, "
    "and builds its processor from the Mistral tokenizer; dryboot reads config.json only: not modelled"
)
STEP_TEXT = (
    "multimodal wrapper of a Step-3.5 language model (Step3p5ForCausalLM, built on text_config) that vLLM "
    "cannot build from a step3p7 config under the fidelity venvs' transformers (5.24 for vLLM 0.28.0, 5.20.2 "
    "for 0.33.0, each inside vLLM's range): transformers' Step3p7 config makes num_attention_heads a per-layer "
    "attribute and vLLM's reading of the global value fails while it resolves the config "
    "(AmbiguousGlobalPerLayerAttributeError, recorded on a tiny config on 0.28.0 and 0.33.0): not planned"
)
#: ERNIE_VL (issue 37): the published checkpoints' config.json (huggingface.co/baidu/ERNIE-4.5-VL-28B-A3B-PT,
#: baidu/ERNIE-4.5-VL-424B-A47B-PT, their -Base-PT) says model_type ernie4_5_moe_vl with an auto_map to the
#: checkpoint's configuration_ernie4_5_vl.py; transformers 5.x (every boot environment, 0.27.1..0.33.0)
#: ships only ernie4_5_vl_moe (text_config / vision_config nested: the layout of the 28B checkpoint's
#: refs/pr/10 revision), whose objects lack what ernie45_vl.py and ernie45_vl_moe.py read from the
#: top-level config (vision_config.embed_dim and mlp_ratio, pixel_hidden_size, spatial_conv_size,
#: moe_layer_start_index, im_patch_id, list-valued moe_num_experts). Recorded on tiny configs of both
#: layouts (wrapper_cases.py: ernie45-vl-remote, ernie45-vl-hf) on 0.28.0 and 0.33.0
ERNIE_VL = (
    "multimodal wrapper whose config class is remote code: the published checkpoints "
    "(baidu/ERNIE-4.5-VL-28B-A3B-PT, -424B-A47B-PT) say model_type ernie4_5_moe_vl with an auto_map, in neither "
    "transformers nor vLLM's config registry, and vLLM refuses it without --trust-remote-code; on transformers' "
    "own ernie4_5_vl_moe config class the model class reads keys that class lacks (vision_config.embed_dim, "
    "pixel_hidden_size, moe_layer_start_index, im_patch_id) and fails while it is built (AttributeError; both "
    "recorded on tiny configs on vLLM 0.28.0 and 0.33.0): not verifiable offline"
)
#: MOLMO2 (issue 37): the published checkpoints' config.json (huggingface.co/allenai/Molmo2-4B,
#: allenai/Molmo2-8B, allenai/Molmo2-O-7B) says model_type molmo2 with vit_config / adapter_config
#: (vit_layers) / text_config and an auto_map to the checkpoint's configuration_molmo2.py. The boot
#: environments whose transformers ships a molmo2 config class (5.20.2 and 5.24.0: vLLM 0.28.0, 0.29.0,
#: 0.30.0, 0.33.0) build it instead of the remote code; it files vit_config under vision_config (and
#: vit_layers as vision_feature_layer), and molmo2.py reads config.vit_config, so the model fails while it
#: is built on either layout (recorded on tiny configs, wrapper_cases.py molmo2-remote and molmo2-hf, on
#: 0.28.0 and 0.33.0). Where transformers has none (5.10.4, 5.17.0, 5.19.0: vLLM 0.27.1, 0.31.0, 0.32.0)
#: vLLM refuses the auto_map layout without --trust-remote-code (checked on 0.32.0, not recorded)
MOLMO2 = (
    "multimodal wrapper whose config class is remote code: the published checkpoints (allenai/Molmo2-4B, -8B, "
    "-O-7B) say model_type molmo2 with vit_config and an auto_map; where transformers ships its own molmo2 config "
    "class (vLLM 0.28.0-0.30.0, 0.33.0) that class files vit_config under vision_config and molmo2.py, reading "
    "config.vit_config, fails while the model is built (AttributeError, recorded on tiny configs of both layouts "
    "on vLLM 0.28.0 and 0.33.0); elsewhere (0.27.1, 0.31.0, 0.32.0) vLLM refuses the config without "
    "--trust-remote-code: not verifiable offline"
)
#: nano_nemotron_vl.py's NemotronH_Nano_VL_V2 class under its registry names (0.28.0 and 0.33.0)
NEMOTRON_VL = (
    "multimodal wrapper (nano_nemotron_vl.py's NemotronH_Nano_VL_V2 class) that builds NemotronHForCausalLM "
    "(planned) on its text config, not verified: the published Nemotron-Nano-VL-V2 checkpoints declare "
    "model_type NemotronH_Nano_VL_V2 (llm_config, an auto_map), a remote-code config class vLLM refuses without "
    "--trust-remote-code, and on transformers' nemotron_h_omni config class the model class reads the "
    "checkpoints' own keys (patch_size, norm_mean, norm_std...) that class does not define (AttributeError "
    "building it); both recorded on tiny configs on vLLM 0.28.0 and 0.33.0; its RADIO / Parakeet towers are "
    "not modelled: not planned"
)
HYBRID = (
    "hybrid: Mamba / linear-attention / short-convolution layers beside attention "
    "(this architecture's mixer is not modelled)"
)
ATTNFREE = "attention-free: a pure state-space model whose Mamba2 state is not modelled"
PANGU = (
    "its config class is remote code (transformers has no openPangu model_type; --trust-remote-code and the "
    "checkpoint's Python files): not verifiable offline. Its MLA layers (openpangu.py: no sparse-attention "
    "indexer) and sink-attention layers (param_sink_number) are not modelled"
)
#: the encoder-decoder classes that stay refused beside Whisper (whose cross-attention caches are planned)
#: (issue 37), each for what its engine start does on a tiny config (tests/fidelity/wrapper_cases.py)
COHERE_ASR = (
    "encoder-decoder (cohere_asr.py: a Conformer encoder, a decoder of self- and cross-attention layers read from "
    "the NeMo-style transf_decoder.config_dict): vLLM cannot build it on the meta device (its ConformerEncoder's "
    "ConvSubsampling takes int() of a length it computes as a tensor: Tensor.item() on the meta device, recorded "
    "on a tiny config on vLLM 0.28.0 and 0.33.0), so it is not verified, not planned"
)
FIRERED_LID = (
    "encoder-decoder (fireredlid.py: a Conformer encoder, a language-id decoder of self- and cross-attention "
    "layers, n_layers_lid_dec of them over n_head heads): vLLM cannot build it on the meta device (its decoder's "
    "positional embedding takes Tensor.item() on the meta device, recorded on a tiny config on vLLM 0.28.0), "
    "so it is not verified, not planned"
)
NEMOTRON_PARSE = (
    "encoder-decoder (nemotron_parse.py: a RADIO vision encoder, an MBart decoder whose layers cross-attend to "
    "it, read from config.encoder / config.decoder): its config class is remote code (model_type nemotron_parse, "
    "an auto_map: neither transformers nor vLLM ships one), which vLLM refuses without --trust-remote-code "
    "(recorded on a tiny config on vLLM 0.28.0 and 0.33.0): not verifiable offline"
)
BLOOM_ALIBI = (
    "BLOOM's ALiBi slopes are computed as tensors on the model's device: vLLM cannot build it on the meta "
    "device, so it is not verified"
)
#: issue 37: vLLM reads a remote-code config offline under --trust-remote-code when the checkpoint's
#: configuration_*.py sits beside config.json (recorded for InternLM2, MiniCPM, MiMo, Bailing, Bailing-V2,
#: TeleChat2 and Param2, which dryboot now plans: tests/fidelity/data/remote-code). The ones below: their
#: checkpoints' config class was searched for (GitHub mirrors of the checkpoints, the authors' repositories)
#: and not found verbatim
_REMOTE_HEAD = (
    "its config class is remote code ({what}: in neither transformers nor vLLM's config registry, 0.27.1-0.33.0); "
)
_REMOTE_TAIL = ", so no engine start of it was recorded: not verified offline"
ORION = (
    _REMOTE_HEAD.format(what="model_type orion, the Orion-14B checkpoints' configuration_orion.py")
    + "no verbatim copy of that file was found (OrionStarAI/Orion on GitHub ships none; the one copy found is an "
    "adapted one in vLLM's own repository, vllm/transformers_utils/configs/orion.py)" + _REMOTE_TAIL
)
SOLAR = (
    _REMOTE_HEAD.format(what="model_type solar, upstage/solar-pro-preview-instruct's configuration_solar.py")
    + "no verbatim copy of that file was found (the SolarConfig classes found sit inside other projects' modeling "
    "code, one with its own edits)" + _REMOTE_TAIL
)
TELECHAT3 = (
    _REMOTE_HEAD.format(what="model_type telechat3, the TeleChat3 checkpoints' configuration_telechat3.py")
    + "vLLM builds it as llama.py's LlamaForCausalLM, but the one copy of that file found names no repository or "
    "commit to cite (Tele-AI/TeleChat3 on GitHub ships none)" + _REMOTE_TAIL
)
TELEFLM = (
    _REMOTE_HEAD.format(what="the Tele-FLM / FLM-2 checkpoints' configuration_teleflm.py")
    + "no verbatim copy of that file was found (the one TeleFLMConfig found is FLM-Audio's, with audio fields "
    "added, in a fork of s3prl)" + _REMOTE_TAIL
)
DEEPSEEK_V1 = (
    "its config class is remote code (model_type deepseek, the deepseek-moe-16b checkpoints' "
    "configuration_deepseek.py: in neither transformers nor vLLM's config registry); deepseek_v2.py builds it as "
    "plain multi-head attention (DeepseekAttention: no qk_nope_head_dim / qk_rope_head_dim) beside MoE blocks, but "
    "no verbatim published copy of that config file was found (deepseek-ai/DeepSeek-MoE on GitHub ships none; the "
    "configuration_deepseek.py files found are DeepSeek-V2 / V3 classes or modified DeepseekConfig copies, e.g. "
    "inference engines' ports; the Hub's deepseek-ai/deepseek-moe-16b-base ships it, 10.2 kB, of which only page "
    "excerpts are reachable offline), so no engine start of it was recorded: not verified offline"
)
#: the architectures below stay refused after session 26's search for their checkpoints' config files
STEP1 = (
    "its config class is remote code (model_type step1, the Step-Audio checkpoints' configuration_step1.py, "
    "e.g. stepfun-ai/Step-Audio-EditX: in neither transformers nor vLLM 0.27.1-0.33.0's config registry) and no "
    "verbatim copy of it was found (stepfun-ai/Step-Audio and Step-Audio-EditX on GitHub ship none; the Step1Config "
    "classes found are modified copies inside modeling files or a later vLLM's own); besides, step1.py computes its "
    "ALiBi slopes as tensors and reads them back while it builds the model, which vLLM cannot do on the meta device "
    "(NotImplementedError: Cannot copy out of meta tensor, seen on 0.33.0 with a stand-in config class): not "
    "verified offline"
)
PLAMO3 = (
    "its config class is remote code (model_type plamo3, the pfnet/plamo-3-nict-* checkpoints' "
    "configuration_plamo3.py: in neither transformers nor vLLM 0.27.1-0.33.0's config registry; plamo3.py reads "
    "the interleaved_sliding_window, layer_types and rope_parameters that class derives from window_size and "
    "sliding_window_pattern); the three differing copies found (window_size default 128 or 2048, "
    "interleaved_sliding_window an attribute or a property) trace to no revision of those checkpoints (pfnet's "
    "GitHub repositories ship none), so no engine start of it was recorded: not verified offline"
)
LONGCAT_NGRAM = (
    "LongCat-Flash-Lite's config: vLLM 0.27.1-0.31.0 read it only as remote code (its config.json names no "
    "model_type, only auto_map), 0.32.0+ as transformers' LongcatFlashConfig; neither its published config.json nor "
    "its configuration file was found, and its model (longcat_flash_ngram.py: n-gram embedding tables, per-request "
    "n-gram state, the V2 model runner only) is not modelled: not verified offline"
)
NEEDS_CUDA = (
    "vLLM 0.28.0 needs CUDA to build this model (its MoE layer allocates on the GPU at construction), so "
    "the meta-device harness cannot verify it: not planned"
)
MPT_CONFIG = (
    "vLLM 0.28.0 cannot read an MPT config whose attn_config sets kv_n_heads (MptAttentionConfig is not "
    "subscriptable), and MPT's ALiBi slopes are computed as tensors on the model's device, so vLLM cannot build "
    "it on the meta device: not verified, not planned"
)
PER_LAYER_HEADS = (
    "its config class is remote code (model_type nemotron-nas: vLLM 0.28.0 refuses it without "
    "--trust-remote-code), and its per-layer block configs (nemotron_nas.py: KV heads per layer from "
    "n_heads_in_group, no-op attention layers) are not modelled"
)
SPLIT_HEAD_SIZES = (
    "not verified: MiMoV2FlashForCausalLM's model class (planned) with fused QKV weights, but neither "
    "transformers nor vLLM 0.28.0 ships a config class for model_type mimo_v2, so no offline config of it was "
    "checked against vLLM"
)
LOOPED = (
    "its config class is remote code (model_type iquestloopcoder: vLLM 0.28.0 refuses it without "
    "--trust-remote-code), and its looped layers (each layer run loop_num times with its own KV cache, the later "
    "loops in a loop_window_size window) are not modelled"
)
NOFILE = "its vLLM module lives outside vllm/model_executor/models (vllm.models.*): not modelled"
MINIMAX_M3_MTP = (
    "MiniMax-M3 drafter (vllm/models/minimax_m3 mtp.py: a sparse decoder layer with its indexer cache): dryboot "
    "plans MiniMax-M3 targets (MiniMaxM3SparseForCausalLM / ForConditionalGeneration), not this MTP module"
)
POOLING = "embedding / pooling model: no generation KV cache to plan"
#: the drafters' rows (issue 37): given as the model of its own, no release serves a drafter class (each fails
#: building it without a speculative config, or in the profile run's call of its forward); dryboot refuses it
#: then in vLLM's recorded words (vllm/models/drafter_as_model.py, tests/fidelity/test_drafter_as_model.py).
#: These reasons say why it is not planned as a --speculative-config drafter either
AS_MODEL = "; given as the model, vLLM does not serve it either (dryboot quotes vLLM's failure: docs/speculative.md)"
SPEC_MTP = (
    "MTP draft module: dryboot plans MTP only as the target's own layers (Qwen3-Next, Qwen3.5, DeepSeek-V3, "
    "GLM-4.5, GLM-5, Ernie-4.5, LongCat-Flash, Nemotron-H, Bailing-V2.5 with --speculative-config method mtp); this "
    "drafter class is not modelled" + AS_MODEL
)
SPEC_EAGLE = (
    "EAGLE / EAGLE-3 draft model: its draft layers (and the target's hidden states they read) are not modelled"
    + AS_MODEL
)
SPEC_DFLASH = "DFlash-style drafter other than DFlashDraftModel: its draft layers are not modelled" + AS_MODEL
SPEC_DSPARK = "DSpark drafter: its draft layers are not modelled" + AS_MODEL
MEDUSA = "Medusa heads: the drafter keeps no KV cache of its own; Medusa proposing is not modelled" + AS_MODEL
EXTRACT = "hidden-state extraction drafter: not modelled" + AS_MODEL
SPEC_OTHER = "draft model: its draft layers are not modelled"

#: vLLM 0.33.0's new text models that dryboot does not plan (issue 37), read in that release's files
ALICE_AI = (
    "hybrid: Kimi Delta Attention layers (alice_ai.py: KimiGatedDeltaNetAttention, a KDA state per layer) beside "
    "Qwen3-Next gated attention layers, and its config class is remote code (neither transformers 5.20 nor vLLM "
    "0.33.0 ships one): not verifiable offline"
)
DOMYN_EDGE = (
    "its config class is remote code (neither transformers 5.20 nor vLLM 0.33.0 ships one), and its layers take "
    "per-layer head sizes (domyn_edge.py: per_layer_config[i].head_dim) and windows of window_sizes[i][0] + 1 "
    "tokens: not modelled"
)
DORY = (
    "looped layers (dory.py: the recurrent block's layers run n_recurrent_loops times, each loop with a KV cache "
    "of its own under recurrent_kv_cache_mode per_loop) beside attention-free mlp layers of layer_types: not modelled"
)
K2_HORIZON = (
    "its config class is remote code (neither transformers 5.20 nor vLLM 0.33.0 ships one), and its sparse layers "
    "compute attention values through routed experts (k2_horizon.py: K2HorizonMoVAAttention, mova_num_experts): "
    "not verifiable offline"
)
NANBEIGE = (
    "served by vLLM 0.33.0's Transformers modeling backend (TransformersForCausalLM), but its config class is "
    "remote code (transformers 5.20, the release's, has none): not verifiable offline"
)

#: architecture -> why dryboot refuses it
REASONS: dict[str, str] = {
    "AliceAIForCausalLM": ALICE_AI,
    "ArcticForCausalLM": NEEDS_CUDA,
    "BailingMoeV25MTPModel": SPEC_MTP,
    "BailingMoeV3ForCausalLM": HYBRID,
    "BailingMoeV3MTPModel": SPEC_MTP,
    "BeeForConditionalGeneration": VLLM_TESTS_ONLY,
    "BloomForCausalLM": BLOOM_ALIBI,
    "CohereAsrForConditionalGeneration": COHERE_ASR,
    "DFlash2BeamDraftModel": SPEC_DFLASH,
    "DFlash2DraftModel": SPEC_DFLASH,
    "DFlashLagunaForCausalLM": SPEC_DFLASH,
    "DFlashMuseGlimmerAssistantModel": SPEC_DFLASH,
    "DFlashQwen3XPressModel": SPEC_DFLASH,
    "DSparkDraftModel": NOFILE,
    "DSparkV41DraftModel": SPEC_DSPARK,
    "DeciLMForCausalLM": PER_LAYER_HEADS,
    "DeepSeekMTPModel": SPEC_MTP,
    "DeepSeekV4MTPModel": NOFILE,
    "DeepseekForCausalLM": DEEPSEEK_V1,
    "DeepseekV32MTPModel": SPEC_MTP,
    "DomynEdgeForCausalLM": DOMYN_EDGE,
    "DoryForCausalLM": DORY,
    "Dots3NoteMTPModel": SPEC_MTP,
    "Eagle2_5_VLForConditionalGeneration": EAGLE2_5_VL,
    "EagleCohereForCausalLM": SPEC_EAGLE,
    "EagleDeepSeekMTPModel": SPEC_MTP,
    "EagleLlama4ForCausalLM": SPEC_EAGLE,
    "EagleMiniCPMForCausalLM": SPEC_EAGLE,
    "EagleMistralForCausalLM": SPEC_EAGLE,
    "EagleMistralLarge3ForCausalLM": SPEC_EAGLE,
    "Ernie4_5_VLMoeForConditionalGeneration": ERNIE_VL,
    "ErnieMTPModel": SPEC_MTP,
    "Exaone4_5_MTP": SPEC_MTP,
    "ExaoneMoeMTP": SPEC_MTP,
    "ExtractHiddenStatesModel": EXTRACT,
    "FireRedLIDForConditionalGeneration": FIRERED_LID,
    "Gemma4DSparkModel": SPEC_DSPARK,
    "Glm4MoeLiteMTPModel": SPEC_MTP,
    "Glm4MoeMTPModel": SPEC_MTP,
    "GlmOcrMTPModel": SPEC_MTP,
    "GritLM": POOLING,
    "H2OVLChatModel": H2OVL,
    "HYV3MTPModel": SPEC_MTP,
    "HYV4MTPModel": SPEC_MTP,
    "IQuestLoopCoderForCausalLM": LOOPED,
    "InklingMTPModel": SPEC_MTP,
    "InternS1ForConditionalGeneration": INTERNS1,
    "InternS1ProForConditionalGeneration": INTERNS1_PRO,
    "InternS2MobiusForConditionalGeneration": INTERNS2_MOBIUS,
    "InternS2MobiusMTP": SPEC_MTP,
    "InternS2PreviewForConditionalGeneration": INTERNS2_PREVIEW,
    "K2HorizonForCausalLM": K2_HORIZON,
    "K3DSparkModel": SPEC_DSPARK,
    "KananaVForConditionalGeneration": KANANA_V,
    "KeyeForConditionalGeneration": KEYE,
    "KeyeVL1_5ForConditionalGeneration": KEYE,
    "KimiK3MTPModel": SPEC_MTP,
    "LiLiCorrDraftModel": SPEC_DFLASH,
    "Llama_Nemotron_Nano_VL": LLAMA_NEMOTRON_VL,
    "LlavaOnevision2ForConditionalGeneration": LLAVA_OV2,
    "LongCatFlashMTPModel": SPEC_MTP,
    "LongcatFlashNgramForCausalLM": LONGCAT_NGRAM,
    "MPTForCausalLM": MPT_CONFIG,
    "MedusaModel": MEDUSA,
    "MiMoMTPModel": SPEC_MTP,
    "MiMoV2ForCausalLM": SPLIT_HEAD_SIZES,
    "MiMoV2MTPModel": SPEC_MTP,
    "MiMoV2OmniForCausalLM": MM_SPLIT_HEADS,
    "MiMoV2OmniMTPModel": SPEC_MTP,
    "MiniCPMO": MINICPMO,
    "MiniCPMV": MINICPMV,
    "MiniMaxM3MTP": MINIMAX_M3_MTP,
    "Molmo2ForConditionalGeneration": MOLMO2,
    "MolmoForCausalLM": MOLMO,
    "MoonshotKimiaForCausalLM": KIMI_AUDIO,
    "MossAudioModel": MOSS_AUDIO,
    "MptForCausalLM": MPT_CONFIG,
    "MuseGlimmerAssistantModel": SPEC_DFLASH,
    "NVLM_D": NVLM_D,
    "NanbeigeForCausalLM": NANBEIGE,
    "NemotronHMTPModel": SPEC_MTP,
    "NemotronHPuzzleForCausalLM": HYBRID,
    "NemotronH_Nano_Omni_Reasoning_V3": NEMOTRON_VL,
    "NemotronH_Nano_VL_V2": NEMOTRON_VL,
    "NemotronH_Super_Omni_Reasoning_V3": NEMOTRON_VL,
    "NemotronParseForConditionalGeneration": NEMOTRON_PARSE,
    "OpenCUAForConditionalGeneration": OPENCUA,
    "OpenPanguMTPModel": SPEC_MTP,
    "OpenPanguVLForConditionalGeneration": MM_MLA_SPARSE,
    "OrionForCausalLM": ORION,
    "Ovis2_5": OVIS2_5,
    "Ovis2_6ForCausalLM": OVIS2_5,
    "Ovis2_6_MoeForCausalLM": OVIS2_5,
    "PEagleDraftModel": SPEC_EAGLE,
    "PanguEmbeddedForCausalLM": PANGU,
    "PanguProMoEV2ForCausalLM": PANGU,
    "PanguUltraMoEForCausalLM": PANGU,
    "ParseAuxMTPModel": SPEC_MTP,
    "PeagleLlamaForCausalLM": SPEC_EAGLE,
    "PeagleQwen3ForCausalLM": SPEC_EAGLE,
    "Phi3VForCausalLM": PHI3V,
    "Phi4ForCausalLMV": PHI4SIGLIP,
    "Phi4MMForCausalLM": PHI4MM,
    "PixtralForConditionalGeneration": MISTRAL_FORMAT,
    "Plamo3ForCausalLM": PLAMO3,
    "Qwen3DSparkModel": SPEC_DSPARK,
    "Qwen3NextMTP": SPEC_MTP,
    "Qwen3OmniDSparkModel": SPEC_DSPARK,
    "Qwen3XPressModel": SPEC_DFLASH,
    "Qwen3_5MTP": SPEC_MTP,
    "Qwen3_5MoeMTP": SPEC_MTP,
    "RForConditionalGeneration": VLLM_TESTS_ONLY,
    "SkyworkR1VChatModel": SKYWORK_R1V,
    "SolarForCausalLM": SOLAR,
    "Step1ForCausalLM": STEP1,
    "Step3p5MTP": SPEC_MTP,
    "Step3p7ForConditionalGeneration": STEP_TEXT,
    "StepVLForConditionalGeneration": VLLM_TESTS_ONLY,
    "TeleChat3ForCausalLM": TELECHAT3,
    "TeleFLMForCausalLM": TELEFLM,
    "VoxtralForConditionalGeneration": VOXTRAL,
    "VoxtralRealtimeGeneration": (
        "multimodal wrapper (a VoxtralForConditionalGeneration) whose model class reads its audio encoder's "
        "configuration from the Mistral tokenizer (mistral_common's instruct.audio_encoder); dryboot reads "
        "config.json only: not modelled"
    ),
}
