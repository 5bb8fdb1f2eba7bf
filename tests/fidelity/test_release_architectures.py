"""Architectures whose model class or config class one release changed, against that release's own
engine start: dryboot ``--vllm-version X`` on the tiny config (``data/architectures/<Arch>.json``)
under the flag sets ``test_architectures`` records on 0.28.0, and on the config with every
defaultable key left out (``data/architectures/defaults/``, where there is one) under
``DEFAULTS_FLAG_SETS``. ``record_release_architectures.py PYTHON`` records a release into
``data/release-architectures/vllm-X.json``; nothing there comes from dryboot. Needs no vLLM.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from dryboot.vllm.versions import VersionRules

sys.path.insert(0, str(Path(__file__).resolve().parent))

import e2e_harness as H
import test_architectures as T

pytestmark = pytest.mark.fidelity

DATA = Path(__file__).resolve().parent / "data" / "release-architectures"

#: release -> the architectures recorded on it, each with why
ARCHITECTURES: dict[str, dict[str, str]] = {
    "0.28.0": {
        # in 0.28.0's registry but planned on the releases recorded (LATER_ARCHITECTURES), so recorded
        # here rather than by test_architectures: no FlashKDA prefill checkpoint block before 0.29 (0.27.1 too)
        "KimiK3ForConditionalGeneration": "its full-rank-gate KDA layers (KimiK3DeltaAttention), no checkpoint block",
    },
    "0.27.1": {
        # remote-code config classes (the checkpoints' own configuration_*.py, tests/fidelity/data/remote-code),
        # read by vLLM under --trust-remote-code (issue 37): recorded on the oldest and newest releases
        "InternLM2ForCausalLM": "the checkpoint's own InternLM2Config (remote code), internlm2.py's attention",
        "MiniCPMForCausalLM": "the checkpoint's own MiniCPMConfig (remote code), minicpm.py's attention",
        "MiMoForCausalLM": "the checkpoint's own MiMoConfig (remote code, a Qwen2Config), qwen2.py's layers",
        "BailingMoeForCausalLM": "the checkpoint's own BailingMoeConfig (remote code): its default window slides",
        "Param2MoEForCausalLM": "the checkpoint's own Param2MoEConfig (remote code): TP splits its KV heads",
        # Kimi-K3's wrapper (vllm/models/kimi_k3): Kimi-Linear's rules on text_config, full-rank-gate KDA
        "KimiK3ForConditionalGeneration": "its full-rank-gate KDA layers (KimiK3DeltaAttention) on text_config",
        # apertus.py (the same attention as 0.28.0's; only its weight loader changed), built by the
        # engine start past XIELU's Tensor.item() (its constructor on the CPU device)
        "ApertusForCausalLM": "Llama's attention with an xIELU MLP (apertus.py), recorded on every release",
        # a wrapper planned through its text model (Llama here), recorded on 0.28.0; 0.27.1 has the
        # same hyperclovax_vision.py and HCXVisionConfig
        "HCXVisionForCausalLM": "a wrapper of a text model dryboot plans",
        # DeepSeek-OCR's wrapper on RSWAAttention: the same config hook and RSWASpec as 0.28.0
        "UnlimitedOCRForCausalLM": "its RSWA layers on the backend its config hook picks",
        # as on 0.31.0: transformers 5.10.4's LongcatFlashConfig.num_hidden_layers field (default 56)
        "LongcatFlashForCausalLM": "its decoder layers counted by LongcatFlashConfig.num_hidden_layers",
    },
    "0.29.0": {
        # param2moe.py changed its MoE gate / runner in this range; its attention (TP splits the KV heads) did not
        "Param2MoEForCausalLM": "the checkpoint's own Param2MoEConfig (remote code): TP splits its KV heads",
        # Kimi-K3's wrapper (vllm/models/kimi_k3): Kimi-Linear's rules on text_config, full-rank-gate KDA
        "KimiK3ForConditionalGeneration": "its full-rank-gate KDA layers (KimiK3DeltaAttention) on text_config",
        # apertus.py (the same attention as 0.28.0's; only its weight loader changed), built by the
        # engine start past XIELU's Tensor.item() (its constructor on the CPU device)
        "ApertusForCausalLM": "Llama's attention with an xIELU MLP (apertus.py), recorded on every release",
        # DeepSeek-OCR's wrapper on RSWAAttention: unlimited_ocr.py as on 0.28.0 (only its processor
        # changed), the same config hook and RSWASpec
        "UnlimitedOCRForCausalLM": "its RSWA layers on the backend its config hook picks",
        "Step3p5ForCausalLM": "read with vLLM's own Step3p5Config and its defaults",
        # in this release's registry, not in 0.28.0's: planned on the releases recorded (LATER_ARCHITECTURES)
        "GraniteSWAForCausalLM": "granite.py's per-layer windows and attention sinks (granite_swa)",
        "GraniteMoeSWAForCausalLM": "granitemoeshared.py's per-layer windows and attention sinks (granitemoe_swa)",
        # Qwen4-Exp without QSA and PLE layers (vllm/models/qwen4_exp, vLLM's own Qwen4ExpTextConfig):
        # Qwen3.5's hybrid on a hyper-connection stream, its block sized from the PLE state page too
        "Qwen4ExpForCausalLM": "Qwen4-Exp's plain layout (GDN + full attention), block from the larger Mamba page",
        "Qwen4ExpForConditionalGeneration": "its wrapper (Qwen3-VL's tower), planned through that text model",
        "HunYuanVLForConditionalGeneration": "served by the Transformers backend (TransformersMultiModalForCausalLM)",
    },
    "0.30.0": {
        # param2moe.py changed its MoE gate / runner in this range; its attention (TP splits the KV heads) did not
        "Param2MoEForCausalLM": "the checkpoint's own Param2MoEConfig (remote code): TP splits its KV heads",
        # DeepSeek-V4.1 (vllm/models/deepseek_v41): compressed caches on its KV source layers only, every layer's
        # sliding-window cache, repeat-pattern packing (test_deepseek_v41.py records more cases)
        "DeepseekV41ForCausalLM": "its KV source layers' compressed caches beside every layer's sliding window",
        # Kimi-K3's wrapper (vllm/models/kimi_k3): Kimi-Linear's rules on text_config, full-rank-gate KDA
        "KimiK3ForConditionalGeneration": "its full-rank-gate KDA layers (KimiK3DeltaAttention) on text_config",
        # apertus.py (the same attention as 0.28.0's; only its weight loader changed), built by the
        # engine start past XIELU's Tensor.item() (its constructor on the CPU device)
        "ApertusForCausalLM": "Llama's attention with an xIELU MLP (apertus.py), recorded on every release",
        # cohere_compass.py: Command-R 2's sliding and full layers of text_config (LATER_ARCHITECTURES)
        "CohereCompassForConditionalGeneration": "its text_config's sliding and full layers (Cohere2's)",
        # gone from the registry and the config registry: vLLM refuses its model_type
        "HCXVisionForCausalLM": "absent from this release: refused as vLLM refuses it",
        # the last release reading MuseGlimmer with vLLM's own config class (no_rope_layers)
        "MuseGlimmerForCausalLM": "its sliding layers read from no_rope_layers",
        "MuseGlimmerForConditionalGeneration": "its sliding layers read from no_rope_layers",
        # in this release's registry, not in 0.28.0's: planned on the releases recorded (LATER_ARCHITECTURES)
        "GraniteSWAForCausalLM": "granite.py's per-layer windows and attention sinks (granite_swa)",
        "GraniteMoeSWAForCausalLM": "granitemoeshared.py's per-layer windows and attention sinks (granitemoe_swa)",
        # DeepSeek-OCR's wrapper on RSWAAttention: unlimited_ocr.py as on 0.28.0 (only its processor
        # changed), the same config hook and RSWASpec
        "UnlimitedOCRForCausalLM": "its RSWA layers on the backend its config hook picks",
        "Step3p5ForCausalLM": "read with vLLM's own Step3p5Config and its defaults",
        "Qwen4ExpForCausalLM": "Qwen4-Exp's plain layout (GDN + full attention), block from the larger Mamba page",
        "Qwen4ExpForConditionalGeneration": "its wrapper (Qwen3-VL's tower), planned through that text model",
        "HunYuanVLForConditionalGeneration": "served by the Transformers backend (TransformersMultiModalForCausalLM)",
        # DeepSeek-V4's packed KV cache (0.30.0+: the auto KV dtype is fp8); its fp8 cases on every
        # release are test_deepseek_v4's
        "DeepseekV4ForCausalLM": "its packed KV cache, the auto KV dtype taken as fp8",
        # its multimodal wrapper (vl_model.py, 0.30.0+): the text model's packed KV cache on the same config
        "DeepseekV4ForConditionalGeneration": "a wrapper of DeepSeek-V4 (a DeepseekV4ViT tower), its text cache",
    },
    "0.31.0": {
        # param2moe.py changed its MoE gate / runner in this range; its attention (TP splits the KV heads) did not
        "Param2MoEForCausalLM": "the checkpoint's own Param2MoEConfig (remote code): TP splits its KV heads",
        # DeepSeek-V4.1 (vllm/models/deepseek_v41): compressed caches on its KV source layers only, every layer's
        # sliding-window cache, repeat-pattern packing (test_deepseek_v41.py records more cases)
        "DeepseekV41ForCausalLM": "its KV source layers' compressed caches beside every layer's sliding window",
        # Kimi-K3's wrapper (vllm/models/kimi_k3): Kimi-Linear's rules on text_config, full-rank-gate KDA
        "KimiK3ForConditionalGeneration": "its full-rank-gate KDA layers (KimiK3DeltaAttention) on text_config",
        # apertus.py (the same attention as 0.28.0's; only its weight loader changed), built by the
        # engine start past XIELU's Tensor.item() (its constructor on the CPU device)
        "ApertusForCausalLM": "Llama's attention with an xIELU MLP (apertus.py), recorded on every release",
        # kimi_k3/nvidia/model.py's KimiLinearForCausalLM: built by the oracle with its GEMM-AR module
        # stood in (engine_start.py: the CuTe DSL is absent)
        "KimiLinearForCausalLM": "its KDA + MLA layers (kimi_k3/nvidia/model.py), GEMM-AR stood in",
        # cohere_compass.py: Command-R 2's sliding and full layers of text_config (LATER_ARCHITECTURES)
        "CohereCompassForConditionalGeneration": "its text_config's sliding and full layers (Cohere2's)",
        # gone from the registry (_PREVIOUSLY_SUPPORTED_MODELS: 0.28.0): vLLM refuses it
        "HCXVisionForCausalLM": "absent from this release: refused as vLLM refuses it",
        # muse_glimmer.py still slides the no_rope_layers' RoPE layers, vLLM's own config class
        "MuseGlimmerForCausalLM": "its sliding layers read from no_rope_layers",
        "MuseGlimmerForConditionalGeneration": "its sliding layers read from no_rope_layers",
        "MellumForCausalLM": "its own model class (mellum.py), as on 0.30.0",
        "HCXVisionV2ForCausalLM": "a wrapper of a text model dryboot plans",
        # in this release's registry, not in 0.28.0's: planned on the releases recorded (LATER_ARCHITECTURES)
        "GraniteSWAForCausalLM": "granite.py's per-layer windows and attention sinks (granite_swa)",
        "GraniteMoeSWAForCausalLM": "granitemoeshared.py's per-layer windows and attention sinks (granitemoe_swa)",
        # not in this registry (0.32+): vLLM refuses its config (transformers 5.17 has no minicpmv4_7)
        "MiniCPMV4_7ForConditionalGeneration": "absent from this release: refused as vLLM refuses it",
        # DeepSeek-OCR's wrapper on RSWAAttention: unlimited_ocr.py as on 0.28.0 (only its processor
        # changed), the same config hook and RSWASpec
        "UnlimitedOCRForCausalLM": "its RSWA layers on the backend its config hook picks",
        "Step3p5ForCausalLM": "read with vLLM's own Step3p5Config and its defaults",
        # FlashConfig(**hf_config.__dict__) over transformers' LongcatFlashConfig (<5.18), whose
        # num_hidden_layers is a field of its own (default 56): that many decoder layers, whatever
        # num_layers says
        "LongcatFlashForCausalLM": "its decoder layers counted by LongcatFlashConfig.num_hidden_layers",
        "Qwen4ExpForCausalLM": "Qwen4-Exp's plain layout (GDN + full attention), block from the larger Mamba page",
        "Qwen4ExpForConditionalGeneration": "its wrapper (Qwen3-VL's tower), planned through that text model",
        "HunYuanVLForConditionalGeneration": "served by the Transformers backend (TransformersMultiModalForCausalLM)",
        # DeepSeek-V4's packed KV cache (0.30.0+: the auto KV dtype is fp8); its fp8 cases on every
        # release are test_deepseek_v4's
        "DeepseekV4ForCausalLM": "its packed KV cache, the auto KV dtype taken as fp8",
        # its multimodal wrapper (vl_model.py, 0.30.0+): the text model's packed KV cache on the same config
        "DeepseekV4ForConditionalGeneration": "a wrapper of DeepSeek-V4 (a DeepseekV4ViT tower), its text cache",
    },
    "0.32.0": {
        # param2moe.py changed its MoE gate / runner in this range; its attention (TP splits the KV heads) did not
        "Param2MoEForCausalLM": "the checkpoint's own Param2MoEConfig (remote code): TP splits its KV heads",
        # DeepSeek-V4.1 (vllm/models/deepseek_v41): compressed caches on its KV source layers only, every layer's
        # sliding-window cache, repeat-pattern packing (test_deepseek_v41.py records more cases)
        "DeepseekV41ForCausalLM": "its KV source layers' compressed caches beside every layer's sliding window",
        # Kimi-K3's wrapper (vllm/models/kimi_k3): Kimi-Linear's rules on text_config, full-rank-gate KDA
        "KimiK3ForConditionalGeneration": "its full-rank-gate KDA layers (KimiK3DeltaAttention) on text_config",
        # apertus.py (the same attention as 0.28.0's; only its weight loader changed), built by the
        # engine start past XIELU's Tensor.item() (its constructor on the CPU device)
        "ApertusForCausalLM": "Llama's attention with an xIELU MLP (apertus.py), recorded on every release",
        # kimi_k3/nvidia/model.py's KimiLinearForCausalLM: built by the oracle with its GEMM-AR module
        # stood in (engine_start.py: the CuTe DSL is absent)
        "KimiLinearForCausalLM": "its KDA + MLA layers (kimi_k3/nvidia/model.py), GEMM-AR stood in",
        # cohere_compass.py: Command-R 2's sliding and full layers of text_config (LATER_ARCHITECTURES)
        "CohereCompassForConditionalGeneration": "its text_config's sliding and full layers (Cohere2's)",
        # vllm/models/hy_v4 (the same model and config files as 0.33.0's for the KV cache)
        "HYV4ForCausalLM": "its sparse MLA layers (shared top-k, learned sinks on FLASHMLA_SPARSE)",
        "HCXVisionForCausalLM": "absent from this release: refused as vLLM refuses it",
        "MuseGlimmerForCausalLM": "its sliding layers read from no_rope_layers",
        "MuseGlimmerForConditionalGeneration": "its sliding layers read from no_rope_layers",
        # registry.py maps it to the Transformers backend (TransformersMoEForCausalLM)
        "MellumForCausalLM": "served by the Transformers backend",
        # mimo_v2.py passes the cache config to its attention layers (--kv-cache-dtype applies)
        "MiMoV2FlashForCausalLM": "its attention layers take the cache config",
        "HCXVisionV2ForCausalLM": "a wrapper of a text model dryboot plans",
        # in this release's registry, not in 0.28.0's: planned on the releases recorded (LATER_ARCHITECTURES)
        "GraniteSWAForCausalLM": "granite.py's per-layer windows and attention sinks (granite_swa)",
        "GraniteMoeSWAForCausalLM": "granitemoeshared.py's per-layer windows and attention sinks (granitemoe_swa)",
        "ExaoneMoEForCausalLM": "exaone_moe.py under the registry's second name",
        # first in this registry: minicpmv4_6.py / minicpmv4_7.py as 0.33.0's
        "MiniCPMV4_7ForConditionalGeneration": "a wrapper of a text model dryboot plans",
        # DeepSeek-OCR's wrapper on RSWAAttention: unlimited_ocr.py as on 0.28.0 (only its processor
        # changed), the same config hook and RSWASpec
        "UnlimitedOCRForCausalLM": "its RSWA layers on the backend its config hook picks",
        # vLLM's own Step3p5Config still reads the file (0.33.0: transformers' Step3p7TextConfig);
        # the defaults config is the one a refusal was reported on
        "Step3p5ForCausalLM": "read with vLLM's own Step3p5Config and its defaults",
        # transformers' LongcatFlashConfig reads the file (0.32+): recorded with the published
        # checkpoints' mla_scale_* fields (OVERLAID), which that class does not define
        "LongcatFlashForCausalLM": "read with transformers' LongcatFlashConfig (mla_scale_* set)",
        "Qwen4ExpForCausalLM": "Qwen4-Exp's plain layout (GDN + full attention), block from the larger Mamba page",
        "Qwen4ExpForConditionalGeneration": "its wrapper (Qwen3-VL's tower), planned through that text model",
        "HunYuanVLForConditionalGeneration": "served by the Transformers backend (TransformersMultiModalForCausalLM)",
        # DeepSeek-V4's packed KV cache (0.30.0+: the auto KV dtype is fp8); its fp8 cases on every
        # release are test_deepseek_v4's
        "DeepseekV4ForCausalLM": "its packed KV cache, the auto KV dtype taken as fp8",
        # its multimodal wrapper (vl_model.py, 0.30.0+): the text model's packed KV cache on the same config
        "DeepseekV4ForConditionalGeneration": "a wrapper of DeepSeek-V4 (a DeepseekV4ViT tower), its text cache",
    },
    "0.33.0": {
        # dots.ocr's wrapper (dots_ocr.py as on 0.28.0): Qwen2ForCausalLM on the checkpoint's own
        # DotsOCRConfig (remote code, files/DotsOCRForCausalLM/), every case --trust-remote-code
        "DotsOCRForCausalLM": "a wrapper of Qwen2 on its remote-code config class, as on 0.28.0",
        # remote-code config classes (the checkpoints' own configuration_*.py, tests/fidelity/data/remote-code),
        # read by vLLM under --trust-remote-code (issue 37): recorded on the oldest and newest releases
        "InternLM2ForCausalLM": "the checkpoint's own InternLM2Config (remote code), internlm2.py's attention",
        "MiniCPMForCausalLM": "the checkpoint's own MiniCPMConfig (remote code), minicpm.py's attention",
        "MiMoForCausalLM": "the checkpoint's own MiMoConfig (remote code, a Qwen2Config), qwen2.py's layers",
        "BailingMoeForCausalLM": "the checkpoint's own BailingMoeConfig (remote code): its default window slides",
        "Param2MoEForCausalLM": "the checkpoint's own Param2MoEConfig (remote code): TP splits its KV heads",
        # DeepSeek-V4.1 (vllm/models/deepseek_v41): compressed caches on its KV source layers only, every layer's
        # sliding-window cache, repeat-pattern packing (test_deepseek_v41.py records more cases)
        "DeepseekV41ForCausalLM": "its KV source layers' compressed caches beside every layer's sliding window",
        # apertus.py (the same attention as 0.28.0's; only its weight loader changed), built by the
        # engine start past XIELU's Tensor.item() (its constructor on the CPU device)
        "ApertusForCausalLM": "Llama's attention with an xIELU MLP (apertus.py), recorded on every release",
        # cohere_compass.py: Command-R 2's sliding and full layers of text_config (LATER_ARCHITECTURES)
        "CohereCompassForConditionalGeneration": "its text_config's sliding and full layers (Cohere2's)",
        # registry.py maps it to the Transformers backend (TransformersMoEForCausalLM) and vLLM's
        # own MellumConfig is gone: transformers' class reads the file
        "MellumForCausalLM": "served by the Transformers backend, config read by transformers' MellumConfig",
        # mimo_v2.py passes the cache config to its attention layers (--kv-cache-dtype applies)
        "MiMoV2FlashForCausalLM": "its attention layers take the cache config",
        # a wrapper planned through its text model (HyperCLOVAX), first planned with this release
        "HCXVisionV2ForCausalLM": "a wrapper of a text model dryboot plans",
        # gone from the registry and the config registry: vLLM refuses its model_type
        "HCXVisionForCausalLM": "absent from this release: refused as vLLM refuses it",
        # transformers' MuseGlimmerTextConfig reads the file and the model class slides the
        # layer_types' sliding layers (0.28-0.30: vLLM's own class, no_rope_layers)
        "MuseGlimmerForCausalLM": "its sliding layers read from layer_types",
        "MuseGlimmerForConditionalGeneration": "its sliding layers read from layer_types",
        # transformers' own config classes read the file: LongcatFlashConfig (as on 0.32.0) and, for
        # Step-3.5, Step3p7TextConfig (_CONFIG_REGISTRY); recorded with the published checkpoints'
        # values of the fields those classes do not define (OVERLAID)
        "LongcatFlashForCausalLM": "read with transformers' LongcatFlashConfig (mla_scale_* set)",
        "Step3p5ForCausalLM": "read with transformers' Step3p7TextConfig (router fields set)",
        # DeepSeek-OCR's wrapper on RSWAAttention (one RSWA group, prefix caching off), without
        # --gpu: dryboot's H200, FlashAttention 4 as the config hook picks it
        "UnlimitedOCRForCausalLM": "its RSWA layers on the backend its config hook picks",
        # only this release's registry has it (vllm/models/muse_spark): MuseGlimmer's 0.33.0 layout
        # (layer_types' sliding layers) on vLLM's own MuseSparkConfig, which has no defaults
        "MuseSparkForConditionalGeneration": "its sliding layers read from layer_types (MuseSparkConfig)",
        # new in 0.33.0's registry (none before it): Qwen3VLForConditionalGeneration's class on
        # Alpamayo2SuperConfig, the Qwen3-VL text config taken from vlm_config
        "Alpamayo2Super": "a wrapper of a text model dryboot plans, new in this release",
        # new in this release's registry (not in 0.28.0's): planned on it only (LATER_ARCHITECTURES)
        "BeamForCausalLM": "vllm/models/beam's per-layer windows (its own BeamConfig)",
        # vllm/models/flint: its layers assert FlashInfer, which the default H200 does not get (FLASH_ATTN for
        # the sinks): refused as vLLM refuses it; the SM 10.x cases are test_flint.py's
        "FlintForCausalLM": "its FlashInfer assertion on the default H200 (served on SM 10.x: test_flint.py)",
        "ExaoneMoEForCausalLM": "exaone_moe.py under the registry's second name",
        "GraniteSWAForCausalLM": "granite.py's per-layer windows and attention sinks (granite_swa)",
        "GraniteMoeSWAForCausalLM": "granitemoeshared.py's per-layer windows and attention sinks (granitemoe_swa)",
        "Kolibri1ForCausalLM": "served by the Transformers backend (TransformersMoEForCausalLM)",
        # vllm/models/kimi_k3/nvidia/model.py's KimiLinearForCausalLM (moved there in 0.31): built by the
        # oracle with its GEMM-AR module stood in (engine_start.py: the CuTe DSL is absent)
        "KimiLinearForCausalLM": "its KDA + MLA layers (kimi_k3/nvidia/model.py), GEMM-AR stood in",
        # its multimodal wrapper (KimiK3Config's text_config built as KimiLinearForCausalLM): full-rank-gate
        # KDA layers (KimiK3DeltaAttention), FlashKDA's prefill checkpoint block on the faked H200
        "KimiK3ForConditionalGeneration": "Kimi-Linear's rules on text_config, FlashKDA checkpoint blocks",
        # vllm/models/step5: DSA layers' summary caches and tail rings on 0.33.0's repeat-pattern packing
        "Step5ForCausalLM": "its DSA layers' caches on the repeat-pattern packing (vLLM's own Step5Config)",
        # vllm/models/hy_v4: DeepSeek-V3.2's sparse MLA, shared top-k layers without indexer, sinks on FLASHMLA_SPARSE
        "HYV4ForCausalLM": "its sparse MLA layers (shared top-k, learned sinks on FLASHMLA_SPARSE)",
        # its multimodal wrapper (step5/nvidia/vl.py: Step3p7's perception-encoder tower): the text model's caches
        "Step5ForConditionalGeneration": "a wrapper of Step5 (a perception-encoder tower), its text model's caches",
        # vllm/models/inkling: each layer's short-conv state (a SlidingWindowSpec of the kernel's tokens)
        # beside its sliding or full attention; the wrapper builds that text model on text_config
        "InklingForCausalLM": "each layer's conv state (a sliding-window cache) beside its attention",
        "InklingForConditionalGeneration": "a wrapper of Inkling (towers off), its text model's caches",
        # vllm/models/dots3_note: sliding-window MLA beside padded sparse MLA on the repeat-pattern packing
        # (its added_tokens.json in data/architectures/files/); more cases in test_dots3_note.py
        "Dots3NoteForCausalLM": "its sliding-window MLA and padded sparse MLA caches (repeat-pattern packing)",
        # MiniCPM-V 4.6's class keeping every vision layer, on Qwen3_5ForCausalLM (first in 0.32.0's
        # registry; 0.28.0 refuses it, recorded in data/architectures/recorded.json)
        "MiniCPMV4_7ForConditionalGeneration": "a wrapper of a text model dryboot plans",
        # Gemma-3n's shared-KV layers (0.33.0's gemma3n.py builds them with q_proj only), past
        # GeluAndMulSparse's Tensor.item() by the engine start's CPU stand-in; the text model in
        # 0.33.0's environment, the wrapper in 0.33.0-mm's (timm: its MobileNetV5 tower)
        "Gemma3nForCausalLM": "its shared-KV layers and sparse MLPs (gemma3n.py)",
        "Gemma3nForConditionalGeneration": "a wrapper of a text model dryboot plans, recorded in the -mm environment",
        # wrappers of planned text models recorded in `boot-env --with-mm-extras`'s 0.33.0-mm (timm)
        # or with the engine start's torchaudio stand-in (FunASR, MiDashengLM)
        **dict.fromkeys(
            (
                "DeepseekVLV2ForCausalLM",
                "OpenVLAForActionPrediction",
                "FunASRForConditionalGeneration",
                "MiDashengLMModel",
            ),
            "a wrapper of a text model dryboot plans, recorded in the -mm environment",
        ),
        "Qwen4ExpForCausalLM": "Qwen4-Exp's plain layout (GDN + full attention), block from the larger Mamba page",
        "Qwen4ExpForConditionalGeneration": "its wrapper (Qwen3-VL's tower), planned through that text model",
        "HunYuanVLForConditionalGeneration": "served by the Transformers backend (TransformersMultiModalForCausalLM)",
        # DeepSeek-V4's packed KV cache (0.30.0+: the auto KV dtype is fp8); its fp8 cases on every
        # release are test_deepseek_v4's
        "DeepseekV4ForCausalLM": "its packed KV cache, the auto KV dtype taken as fp8",
        # its multimodal wrapper (vl_model.py, 0.30.0+): the text model's packed KV cache on the same config
        "DeepseekV4ForConditionalGeneration": "a wrapper of DeepSeek-V4 (a DeepseekV4ViT tower), its text cache",
        # GLM-5.3-Flash (vllm/models/glm5next): KDA states beside sparse MLA with the kpool indexer's
        # caches, repeat-packed (tiny stand-in config: no published one)
        "Glm5NextForCausalLM": "KDA states beside sparse MLA, the kpool indexer cache and tail ring, repeat-packed",
        # its multimodal wrapper (glm5next/common/model.py: a Glm4v-style tower), recorded in the -mm environment
        "Glm5NextForConditionalGeneration": "a wrapper of GLM-5.3-Flash's text model, recorded in the -mm environment",
    },
}

# OLMo-Hybrid (olmo_hybrid.py, in every release's registry): Qwen3-Next's Gated DeltaNet state beside
# OLMo attention layers, built with the engine start's stand-in for Triton's set_allocator
for _release in ("0.27.1", "0.29.0", "0.30.0", "0.31.0", "0.32.0", "0.33.0"):
    ARCHITECTURES[_release]["OlmoHybridForCausalLM"] = "its Gated DeltaNet layers beside OLMo attention"

# Bailing-V2.5 (bailing_moe_linear.py, the same layers in every release): its lightning-attention states
# beside MLA layers, read with transformers' BailingHybridConfig where the release's transformers has
# it (0.28.0-0.30.0, 0.33.0); 0.27.1's, 0.31.0's and 0.32.0's have no bailing_hybrid: vLLM refuses the config
for _release in ("0.27.1", "0.29.0", "0.30.0", "0.31.0", "0.32.0", "0.33.0"):
    ARCHITECTURES[_release]["BailingMoeV2_5ForCausalLM"] = (
        "its linear-attention states beside MLA layers (BailingHybridConfig: head_dim = qk_rope_head_dim)"
    )

# remote-code text configs of session 26 (issue 37; the checkpoints' own configuration_*.py in
# tests/fidelity/data/remote-code, read under --trust-remote-code), in every release's registry and
# recorded on each: Bailing-V2 (bailing_moe.py changed between releases) and TeleChat2 (llama.py's LlamaModel)
for _release in ("0.27.1", "0.29.0", "0.30.0", "0.31.0", "0.32.0", "0.33.0"):
    ARCHITECTURES[_release]["BailingMoeV2ForCausalLM"] = (
        "the checkpoint's own BailingMoeV2Config (remote code), bailing_moe.py's attention"
    )
    ARCHITECTURES[_release]["TeleChat2ForCausalLM"] = (
        "the checkpoint's own Telechat2Config (remote code, n_layer / n_head), llama.py's LlamaModel"
    )

# Whisper (whisper.py, the same layers in every release): the decoder's self-attention and
# cross-attention caches (CrossAttentionSpec sized by the scheduler's encoder input budget)
for _release in ("0.27.1", "0.29.0", "0.30.0", "0.31.0", "0.32.0", "0.33.0"):
    ARCHITECTURES[_release]["WhisperForConditionalGeneration"] = "its decoder's self- and cross-attention caches"

# HY V4 (vllm/models/hy_v4, in 0.29.0-0.31.0's registries too): 0.31.0 builds it as 0.32.0 does; 0.29.0 /
# 0.30.0's transformers renames the sparse layer type to indexed_attention, which their model file builds dense
for _release in ("0.29.0", "0.30.0", "0.31.0"):
    ARCHITECTURES[_release]["HYV4ForCausalLM"] = (
        "its sparse MLA layers (shared top-k, learned sinks on FLASHMLA_SPARSE)"
    )


# InternVL's own chat class (internvl.py InternVLChatModel, in every release's registry): the language model
# of llm_config, read with the checkpoint's own config class (data/remote-code/internvl_chat/, --trust-remote-code)
for _release in ("0.27.1", "0.29.0", "0.30.0", "0.31.0", "0.32.0", "0.33.0"):
    ARCHITECTURES[_release]["InternVLChatModel"] = (
        "InternVL's chat class over llm_config (its remote-code config class)"
    )

# multimodal models served by the Transformers backend (TransformersMultiModalForCausalLM) on every
# release: base.py's attention instances over text_config (0.32+ name the layers by their module), Emu3's
# stand-in processor files; 0.27.1 builds Emu3's VQ-VAE attention whole (backend_splits_encoder_qkv)
for _release in ("0.27.1", "0.29.0", "0.30.0", "0.31.0", "0.32.0", "0.33.0"):
    for _arch in ("Emu3ForConditionalGeneration", "VibeVoiceAsrForConditionalGeneration"):
        ARCHITECTURES[_release][_arch] = "served by the Transformers backend (TransformersMultiModalForCausalLM)"

#: (release, case id) -> why dryboot's answer differs from the record; each must still differ
KNOWN: dict[tuple[str, str], str] = {
    (v, "MiMoV2FlashForCausalLM#8"): (
        "dryboot refuses by name: vLLM builds MiMo's FLASH_ATTN_DIFFKV layers with an nvfp4_4over6 cache "
        "unchecked (pages of one byte an element, no FlashInfer layout); not modelled"
    )
    for v in ("0.32.0", "0.33.0")
} | {
    ("0.33.0", "MuseSparkForConditionalGeneration#16"): (
        "both refuse, in another order: vLLM refuses --max-model-len 16384 (ModelConfig) before building the "
        "model; dryboot refuses TP 8 first (the fused QKV+O-gate projection's KV heads, checked with the flags)"
    ),
    ("0.33.0", "DeepseekV4ForCausalLM#12"): (
        "both refuse, in another order: vLLM refuses --max-model-len 131072 (ModelConfig) before the "
        "extract_hidden_states draft config; dryboot refuses that draft config first (the family's engine-args hook)"
    ),
}


#: (release, architecture) -> the decoder layers that release builds from the tiny configs, whatever
#: their ``num_layers`` says: LongCat-Flash on 0.31.0 (``FlashConfig(**hf_config.__dict__)`` takes
#: the ``num_hidden_layers`` field transformers <5.18 keeps, default 56). vLLM's engine start (no
#: weights) serves them; a checkpoint of ``num_layers`` layers would not load, so dryboot refuses
#: each case by name, and plans the record's figures once config.json says ``num_layers`` = 56.
RELAYERED: dict[tuple[str, str], int] = {(v, "LongcatFlashForCausalLM"): 56 for v in ("0.27.1", "0.31.0")}


def relayered(case: H.Case, num_layers: int) -> H.Case:
    """``case`` on a copy of its config with ``num_layers`` set."""
    config = json.loads((Path(case.model) / "config.json").read_text())
    model = H._write_config(H.default_workdir(), f"relayered-{num_layers}", {**config, "num_layers": num_layers})
    return H.Case(f"{case.id}@{num_layers}", case.family, model, case.argv)


#: (release, architecture) -> the fields the release's config class (transformers' own: switch
#: ``hf_config_class_architectures``) does not define and the model class reads, with the published
#: checkpoints' values: vLLM fails building the tiny configs without them (AttributeError), so each
#: case is recorded on its config with these set (the weights records' ``overlay``,
#: ``data/weights/recorded-<release>-fields.json``), and dryboot must refuse it without them
OVERLAID: dict[tuple[str, str], dict[str, Any]] = {
    **{
        (v, "LongcatFlashForCausalLM"): {"mla_scale_q_lora": True, "mla_scale_kv_lora": True}
        for v in ("0.32.0", "0.33.0")
    },
    ("0.33.0", "Step3p5ForCausalLM"): {"use_moe_router_bias": True, "need_fp32_gate": True, "norm_expert_weight": True},
}


def overlaid(case: H.Case, fields: dict[str, Any]) -> H.Case:
    """``case`` on a copy of its config with ``fields`` set (same id)."""
    config = json.loads((Path(case.model) / "config.json").read_text())
    name = f"overlaid-{case.family.replace(':', '-')}"
    model = H._write_config(H.default_workdir(), name, {**config, **fields})
    return H.Case(case.id, case.family, model, case.argv)


def record_path(version: str) -> Path:
    return DATA / f"vllm-{version}.json"


def cases(architecture: str, version: str | None = None) -> list[H.Case]:
    """The tiny config's cases (ids ``<Arch>#i``), then the defaults config's (``<Arch>@defaults#i``),
    with ``version``'s :data:`OVERLAID` fields set where it has some."""
    path = T.tiny_configs()[architecture]
    out = [T.make_case(architecture, i, argv) for i, argv in enumerate(T.flag_sets(architecture, path))]
    if architecture in T.defaults_configs():
        out += [T.defaults_case(architecture, i, argv) for i, argv in enumerate(T.DEFAULTS_FLAG_SETS)]
    fields = OVERLAID.get((version or "", architecture))
    return out if fields is None else [overlaid(c, fields) for c in out]


def _record(version: str) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(record_path(version).read_text())
    assert doc["vllm"] == version
    return doc


PAIRS = [(v, a) for v, archs in ARCHITECTURES.items() for a in archs]

#: architecture -> the fewest of its flag sets a release must serve where not 12: DeepSeek-V4's
#: 16-bit and int8 KV dtypes, small blocks, FLASH_ATTN and n-gram cases (0.33.0: the hidden-state
#: drafter too) are vLLM's refusals (its fp8 cases on every release are test_deepseek_v4's)
#: Whisper's tiny config is float16 (as whisper-large-v3's): 0.33.0 refuses its two bfloat16 KV cache
#: flag sets (kv_cache_dtype="bfloat16" is incompatible with dtype="float16")
MIN_SERVED = {
    "DeepseekV4ForCausalLM": 7,
    "DeepseekV4ForConditionalGeneration": 7,
    "WhisperForConditionalGeneration": 11,
    # HY V4's sparse layers: vLLM's probe finds no sparse MLA backend under a non-sparse named backend,
    # blocks below 64, fp8_e5m2 / per-token-head caches; nvfp4 is refused for any MLA model
    "HYV4ForCausalLM": 9,
    # Dots3-Note's sparse layers likewise (blocks below 64, fp8 caches, non-MLA named backends)
    "Dots3NoteForCausalLM": 9,
    # Flint's layers assert FlashInfer, which the default H200 does not get: every flag set refused (its SM 10.x
    # cases are test_flint.py's)
    "FlintForCausalLM": 0,
}

#: (release, architecture) that release's registry lacks or whose config it cannot read: vLLM refuses
#: every case, and dryboot must too
ABSENT = frozenset(
    {(v, "HCXVisionForCausalLM") for v in ("0.30.0", "0.31.0", "0.32.0", "0.33.0")}
    # the transformers of 0.31.0's environment has no hyperclovax_vision_v2 config class
    | {("0.31.0", "HCXVisionV2ForCausalLM"), ("0.31.0", "MiniCPMV4_7ForConditionalGeneration")}
    # the transformers of 0.27.1's, 0.31.0's and 0.32.0's environments has no bailing_hybrid config class
    | {(v, "BailingMoeV2_5ForCausalLM") for v in ("0.27.1", "0.31.0", "0.32.0")}
)


@pytest.mark.parametrize(("version", "architecture"), PAIRS)
def test_every_listed_architecture_is_recorded_with_todays_flag_sets(version: str, architecture: str) -> None:
    rows = _record(version)["architectures"][architecture]
    assert [T.local(r["argv"]) for r in rows] == [c.argv for c in cases(architecture, version)]
    served = sum(1 for r in rows if r["vllm"].get("ok"))
    if (version, architecture) in ABSENT:
        assert served == 0, "a release without the architecture served it"
    else:
        assert served >= MIN_SERVED.get(architecture, 12), "too few cases vLLM serves"


@pytest.mark.parametrize(("version", "architecture"), PAIRS)
def test_dryboot_matches_the_release(version: str, architecture: str) -> None:
    rows = _record(version)["architectures"][architecture]
    problems = []
    layers = RELAYERED.get((version, architecture))
    for c, row in zip(cases(architecture, version), rows, strict=True):
        got = H.run_dryboot(c, version)
        if layers is not None:
            # where vLLM serves the case, refused by the layer count; else refused as vLLM refuses it
            by_layers = "num_hidden_layers" in str(got.get("error"))
            if not got.get("refused") or (row["vllm"].get("ok") and not by_layers):
                problems.append(f"{c.id} on {version} is not refused by its layer count: {got}")
            c = relayered(c, layers)
            got = H.run_dryboot(c, version)
        agree = H.compare(row["vllm"], got)["agree"]
        if (version, c.id) in KNOWN:
            if agree:
                problems.append(f"{c.id} on {version} now agrees: remove it from KNOWN")
            continue
        if not agree:
            problems.append(
                f"{c.command(version)}\n    vLLM:    {H._answer(row['vllm'], vllm=True)}\n"
                f"    dryboot: {H._answer(got, vllm=False)}"
            )
    assert not problems, f"{len(problems)}/{len(rows)} disagree:\n" + "\n".join(problems)


def test_overlays_are_the_weights_records_overlays() -> None:
    """The fields set here are those the weights records of the same release set (one source of the
    published checkpoints' values)."""
    weights = Path(__file__).resolve().parent / "data" / "weights"
    for (version, architecture), fields in OVERLAID.items():
        doc = json.loads((weights / f"recorded-{version}-fields.json").read_text())
        assert doc["overlay"][architecture] == fields


@pytest.mark.parametrize(("version", "architecture"), sorted(OVERLAID))
def test_without_the_overlaid_fields_refused_in_vllms_words(version: str, architecture: str) -> None:
    """Without the fields its config class lacks, every case vLLM serves with them is refused by
    dryboot naming the first one the model class reads (vLLM's AttributeError)."""
    rows = _record(version)["architectures"][architecture]
    first = next(iter(OVERLAID[(version, architecture)]))
    plain = cases(architecture)
    checked = 0
    for c, row in zip(plain, rows, strict=True):
        if not row["vllm"].get("ok"):
            continue
        got = H.run_dryboot(c, version)
        assert got.get("refused") and first in str(got.get("error")) and "AttributeError" in str(got.get("error")), (
            c.id,
            got,
        )
        checked += 1
    assert checked >= 6


@pytest.mark.parametrize(
    ("version", "architecture", "switch"),
    [
        ("0.33.0", "MiMoV2FlashForCausalLM", "mimo_v2_cache_config"),
        ("0.33.0", "MellumForCausalLM", "hf_config_class_architectures"),
        ("0.33.0", "MuseGlimmerForCausalLM", "muse_glimmer_layer_types"),
        ("0.32.0", "MiMoV2FlashForCausalLM", "mimo_v2_cache_config"),
        ("0.31.0", "MellumForCausalLM", "hf_config_class_architectures"),
        ("0.32.0", "MellumForCausalLM", "hf_config_class_architectures"),
        ("0.31.0", "LongcatFlashForCausalLM", "longcat_hidden_layers_field"),
        ("0.27.1", "LongcatFlashForCausalLM", "longcat_hidden_layers_field"),
        ("0.31.0", "HunYuanVLForConditionalGeneration", "hunyuan_vl_whole_tower"),
        ("0.33.0", "HunYuanVLForConditionalGeneration", "hunyuan_vl_whole_tower"),
        ("0.27.1", "ApertusForCausalLM", "sliding_int4_unpacked"),
        ("0.32.0", "KimiK3ForConditionalGeneration", "kda_full_rank_gate"),
        ("0.30.0", "KimiK3ForConditionalGeneration", "kda_prefill_checkpoints"),
        ("0.29.0", "KimiK3ForConditionalGeneration", "kda_prefill_checkpoints"),
        ("0.27.1", "KimiK3ForConditionalGeneration", "kda_full_rank_gate"),
    ],
)
def test_switch_is_needed(
    version: str, architecture: str, switch: str, flip_rules: Callable[..., VersionRules]
) -> None:
    """With the release's switch off for the architecture, dryboot disagrees with some record."""
    from dryboot.vllm import versions

    rules = versions.rules_for(version)
    value = getattr(rules, switch)
    off = value - {architecture} if isinstance(value, frozenset) else type(value)()
    flip_rules(version, **{switch: off})
    rows = _record(version)["architectures"][architecture]
    assert any(
        not H.compare(row["vllm"], H.run_dryboot(c, version))["agree"]
        for c, row in zip(cases(architecture, version), rows, strict=True)
    )


def test_every_newer_only_architecture_is_recorded_on_a_release() -> None:
    """A planned architecture vLLM 0.28.0's registry lacks (not recorded by test_architectures) is
    recorded on a release whose registry has it."""
    listed = {a for archs in ARCHITECTURES.values() for a in archs}
    assert sorted(T.newer_only() - listed) == []
