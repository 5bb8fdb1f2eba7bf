"""Release differences: dryboot ``--vllm-version X`` against figures each vLLM release printed.

Every figure below was produced by that release's own engine start (``src/dryboot/boot/engine_start.py`` in a venv
built by ``VLLM_VERSION=X bash scripts/fidelity-env.sh DIR``), recorded with
``python3 tests/fidelity/record_releases.py DIR/bin/python``; the configs are in
``data/releases/`` (see its README). Needs no vLLM.

``test_switch_is_needed`` flips each switch of ``dryboot.vllm.versions`` that a case depends on
and checks that dryboot then disagrees with the record.
"""

# ruff: noqa: E501 -- the release log lines below are recorded verbatim
from __future__ import annotations

import dataclasses
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from dryboot.vllm.versions import VersionRules

sys.path.insert(0, str(Path(__file__).resolve().parent))

import e2e_harness as H

from dryboot.vllm import versions

pytestmark = pytest.mark.fidelity

REL = Path(__file__).resolve().parent / "data" / "releases"
E2E_EXTRA = Path(__file__).resolve().parent / "data" / "e2e-extra"
ARCH = Path(__file__).resolve().parent / "data" / "architectures"
NEMO = H.EXAMPLES / "Nemotron-H-56B-Base-8K.config.json"
_NB = ["--max-num-batched-tokens", "2048"]
_GDN = ["--max-model-len", "8192", "--max-num-batched-tokens", "8192", "--kv-cache-memory-bytes", "2000000000"]
_NEMO = ["--max-model-len", "8192", "--max-num-batched-tokens", "8192", "--kv-cache-memory-bytes", "4000000000"]


def _l4_dflash(drafter: Path) -> list[str]:
    spec = {"method": "dflash", "num_speculative_tokens": 2, "model": str(drafter)}
    return [
        "--max-model-len",
        "8192",
        "--max-num-batched-tokens",
        "8192",
        "--kv-cache-memory-bytes",
        "2000000000",
        "--speculative-config",
        json.dumps(spec),
    ]


_DBK = [
    *("--max-model-len", "32k", "--kv-cache-memory-bytes", "5372596774", "--tensor-parallel-size", "2"),
    *("--kv-cache-dtype", "auto", "--no-enable-prefix-caching"),
]
_DBK_DFLASH = json.dumps({"method": "dflash", "num_speculative_tokens": 6, "model": str(REL / "dflash-sw2")})


def _dbk_spec(method: str, **extra: str) -> str:
    """An EAGLE-3 head (``eagle3-sw1``) or draft model (``llama-sw2``) of sliding-window layers for ``qwen35-4l``."""
    drafter = REL / ("eagle3-sw1" if method == "eagle3" else "llama-sw2")
    return json.dumps({"method": method, "num_speculative_tokens": 3, "model": str(drafter), **extra})


#: case id -> (model, argv)
#: a 2-layer Mistral at PP 3 (``pp3-empty*``) with 1.3 MB of KV cache memory
_PP3_LOWMEM = ["--kv-cache-memory-bytes", "1316425", "--max-num-batched-tokens", "16384", "-pp", "3"]

#: the Kimi-Linear --mamba-ssm-cache-dtype bfloat16 cases' length and budget
_KIMIL_BASE = ("--max-model-len", "2048", "--kv-cache-memory-bytes", "1000000000")
#: an EAGLE method over a DFlash drafter: vLLM names its class EagleDFlashDraftModel, which no release registers,
#: in SpeculativeConfig (after the target's ModelConfig and ParallelConfig, before SchedulerConfig)
_EAGLE_DFLASH = [
    *("--kv-cache-memory-bytes", "2000000000", "--speculative-config"),
    json.dumps({"method": "eagle", "num_speculative_tokens": 2, "model": str(REL / "dflash-sw2")}),
]
#: an explicit --async-scheduling with the ngram method, which VllmConfig refuses (after ParallelConfig and
#: SchedulerConfig)
_NGRAM_ASYNC = [
    *("--max-model-len", "4096", "--kv-cache-memory-bytes", "2000000000", "--async-scheduling"),
    *("--speculative-config", json.dumps({"method": "ngram", "num_speculative_tokens": 7, "prompt_lookup_max": 4})),
]


def _ppembed(drafter: Path, method: str, *extra: str) -> list[str]:
    """Two pipeline stages and a ``method`` drafter of two tokens at ``drafter``."""
    spec = json.dumps({"method": method, "num_speculative_tokens": 2, "model": str(drafter)})
    return [
        "--max-model-len",
        "2048",
        "--kv-cache-memory-bytes",
        "2000000000",
        "-pp",
        "2",
        *extra,
        "--no-async-scheduling",
        "--speculative-config",
        spec,
    ]


CASES: dict[str, tuple[Path, list[str]]] = {
    "nullblk-est": (REL / "nullblk", ["--max-model-len", "4096", *_NB, "--kv-cache-memory-bytes", "1310720"]),
    "nullblk-admit": (REL / "nullblk", ["--max-model-len", "1600", *_NB, "--kv-cache-memory-bytes", "13107200"]),
    "nullblk-autofit": (REL / "nullblk", ["--max-model-len", "-1", *_NB, "--kv-cache-memory-bytes", "13107200"]),
    "gdn64-block": (REL / "gdn64", _GDN),
    "gdn64-pages": (REL / "gdn64", [*_GDN, "--block-size", "64"]),
    # 0.33 aligns the hybrid block per worker: a pipeline stage without Gated DeltaNet layers takes no
    # FlashInfer GDN checkpoint alignment (the random audit's s2102-124: a 2-layer Qwen3.5, MTP on stage 1)
    "gdn2l-pp-mtp": (
        REL / "gdn2l",
        [
            "--max-model-len",
            "4096",
            "--kv-cache-memory-bytes",
            "9270258982",
            "-tp",
            "2",
            "-pp",
            "2",
            "--kv-cache-dtype",
            "bfloat16",
            "--block-size",
            "16",
            "--speculative-config",
            json.dumps({"method": "mtp", "num_speculative_tokens": 2}),
        ],
    ),
    "gdn64-pp2": (REL / "gdn64", [*_GDN, "-pp", "2"]),
    # an MLA hybrid's block is aligned to MLAAttentionSpec's token (the latent in the cache dtype's torch dtype,
    # no per-token-head packing or scales): a one-layer linear-attention Bailing-V2.5 with a DFlash drafter
    # (the s21-gen audit's s0-28 and s0-32)
    "bailing-pth-int4": (
        REL / "bailing-pth1",
        [
            "--kv-cache-memory-bytes",
            "4G",
            "-tp",
            "2",
            "--kv-cache-dtype",
            "int4_per_token_head",
            "--no-enable-prefix-caching",
            "--speculative-config",
            json.dumps({"method": "dflash", "num_speculative_tokens": 7, "model": str(REL / "dflash-pth1")}),
        ],
    ),
    "bailing-pth-fp8": (
        REL / "bailing-pth2",
        [
            "--max-model-len",
            "1024",
            "--kv-cache-memory-bytes",
            "10367116469",
            "--kv-cache-dtype",
            "fp8_per_token_head",
            "--no-enable-prefix-caching",
            "--speculative-config",
            json.dumps({"method": "dflash", "num_speculative_tokens": 3, "model": str(REL / "dflash-pth2")}),
        ],
    ),
    "mcmode-align-noprefix": (REL / "gdn64", [*_GDN, "--no-enable-prefix-caching", "--mamba-cache-mode", "align"]),
    "fa4fp8": (
        REL / "fa4fp8",
        [
            "-tp",
            "4",
            "--kv-cache-dtype",
            "fp8",
            "--max-model-len",
            "32768",
            "--max-num-batched-tokens",
            "8192",
            "--kv-cache-memory-bytes",
            "10000000000",
        ],
    ),
    "nemo-prefix": (NEMO, [*_NEMO, "--enable-prefix-caching"]),
    "nemo-default": (NEMO, _NEMO),
    # gpt-oss with FLASHINFER named on the stand-in H200 (no flashinfer-cubin): its sinks need TRT-LLM's XQA
    # kernel there (audit seed 260331 case 102; dryboot is run with --no-flashinfer-cubin, the oracle's box)
    "gptoss-fi-sm90": (
        H.EXAMPLES / "gpt-oss-20b.config.json",
        [
            *("--max-model-len", "65536", "--kv-cache-memory-bytes", "9505283031", "--block-size", "16"),
            *("--enable-prefix-caching", "--attention-backend", "FLASHINFER"),
        ],
    ),
    # gpt-oss (mxfp4) with --dtype float16 and a bfloat16 KV cache: 0.33's float KV cache check answers before the
    # quantization dtypes (audit seed 260332 cases 56, 128)
    "gptoss-f16-bf16kv": (
        H.EXAMPLES / "gpt-oss-20b.config.json",
        [
            "--max-model-len",
            "8192",
            "--kv-cache-memory-bytes",
            "581171674",
            "--kv-cache-dtype",
            "bfloat16",
            "--dtype",
            "float16",
        ],
    ),
    "async-sw": (
        H.EXAMPLES / "gpt-oss-20b.config.json",
        [
            "--max-model-len",
            "8192",
            *_NB,
            "--kv-cache-memory-bytes",
            "2000000000",
            "--speculative-config",
            '{"method": "ngram", "num_speculative_tokens": 3}',
        ],
    ),
    "f16kv": (
        REL / "nullblk",
        ["--max-model-len", "1024", *_NB, "--kv-cache-memory-bytes", "13107200", "--kv-cache-dtype", "float16"],
    ),
    "dflash-slots": (
        REL / "nullblk",
        [
            "--max-model-len",
            "1024",
            *_NB,
            "--kv-cache-memory-bytes",
            "100000000",
            "--speculative-config",
            json.dumps({"method": "dflash", "num_speculative_tokens": 3, "model": str(REL / "dflash5")}),
        ],
    ),
    # LLaVA-Next (a Mistral text model, CLIP tower): planned through its text model; vLLM 0.28.0's
    # module imports pixtral.py's old transformers names (the oracle's stand-ins), 0.33.0's not
    "llava-next": (
        ARCH / "LlavaNextForConditionalGeneration.json",
        ["--max-model-len", "8192", *_NB, "--kv-cache-memory-bytes", "300000000"],
    ),
    "llava-next-tp2-fp8": (
        ARCH / "LlavaNextForConditionalGeneration.json",
        ["-tp", "2", "--kv-cache-dtype", "fp8", "--max-model-len", "16384", "--kv-cache-memory-bytes", "200000000"],
    ),
    # wrappers planned through their text model (issue 37 item 2): vLLM 0.28.0's modules import
    # pixtral.py's old transformers names (the oracle's stand-ins: Mistral-3 and LightOnOCR build a
    # Pixtral tower), 0.33.0's not
    **{
        f"wrap-{name}": (ARCH / f"{arch}.json", argv)
        for name, arch, argv in (
            (
                "mistral3",
                "Mistral3ForConditionalGeneration",
                ["--max-model-len", "8192", *_NB, "--kv-cache-memory-bytes", "300000000"],
            ),
            (
                "mistral3-tp2-fp8",
                "Mistral3ForConditionalGeneration",
                [
                    "-tp",
                    "2",
                    "--kv-cache-dtype",
                    "fp8",
                    "--max-model-len",
                    "16384",
                    "--kv-cache-memory-bytes",
                    "200000000",
                ],
            ),
            (
                "lightonocr",
                "LightOnOCRForConditionalGeneration",
                ["--max-model-len", "8192", *_NB, "--kv-cache-memory-bytes", "300000000"],
            ),
            (
                "llava-onevision",
                "LlavaOnevisionForConditionalGeneration",
                ["-tp", "2", "--max-model-len", "16384", "--kv-cache-memory-bytes", "200000000"],
            ),
            (
                "llava-next-video",
                "LlavaNextVideoForConditionalGeneration",
                ["--max-model-len", "4096", *_NB, "--kv-cache-memory-bytes", "300000000"],
            ),
            (
                "step3-vl",
                "Step3VLForConditionalGeneration",
                ["--max-model-len", "8192", *_NB, "--kv-cache-memory-bytes", "300000000"],
            ),
            (
                "cosmos3-edge",
                "Cosmos3EdgeForConditionalGeneration",
                ["-tp", "2", "--max-model-len", "8192", *_NB, "--kv-cache-memory-bytes", "300000000"],
            ),
            (
                "diffusion-gemma",
                "DiffusionGemmaForBlockDiffusion",
                ["--max-model-len", "8192", "--kv-cache-memory-bytes", "3000000000"],
            ),
            (
                "hunyuan-vl",
                "HunYuanVLForConditionalGeneration",
                ["--max-model-len", "8192", *_NB, "--kv-cache-memory-bytes", "300000000"],
            ),
            (
                "gemma4-unified",
                "Gemma4UnifiedForConditionalGeneration",
                ["--max-model-len", "8192", "--kv-cache-memory-bytes", "3000000000"],
            ),
            (
                "granite4-vision",
                "Granite4VisionForConditionalGeneration",
                [
                    "-tp",
                    "2",
                    "--kv-cache-dtype",
                    "fp8",
                    "--max-model-len",
                    "8192",
                    "--kv-cache-memory-bytes",
                    "300000000",
                ],
            ),
        )
    },
    # DeepSeek-V2 without MLA (qk_nope = qk_rope = 0: DeepseekAttention, 4 KV heads of 64): the
    # DeepSeek-OCR tiny config's language model alone, and the wrapper
    "dsv2-mha": (REL / "dsv2-mha", ["--max-model-len", "8192", *_NB, "--kv-cache-memory-bytes", "300000000"]),
    "dsv2-mha-tp2-fp8": (
        REL / "dsv2-mha",
        ["-tp", "2", "--kv-cache-dtype", "fp8", "--max-model-len", "4096", "--kv-cache-memory-bytes", "200000000"],
    ),
    "dsocr-mha-tp8": (
        ARCH / "DeepseekOCRForCausalLM.json",
        ["-tp", "8", "--max-model-len", "-1", "--kv-cache-memory-bytes", "100000000"],
    ),
    "g4keqv": (REL / "g4keqv", ["--max-model-len", "4096", *_NB, "--kv-cache-memory-bytes", "2000000000"]),
    # sparse MLA (the architectures' tiny configs): GLM-5 with index_topk_freq 2, DeepSeek-V3.2 with
    # fp8 (fp8_ds_mla) and its MTP layer
    "dsa-skip": (
        ARCH / "GlmMoeDsaForCausalLM.json",
        ["--max-model-len", "8192", "--kv-cache-memory-bytes", "1000000000"],
    ),
    "dsa-fp8-mtp": (
        ARCH / "DeepseekV32ForCausalLM.json",
        [
            *("--max-model-len", "8192", "--kv-cache-memory-bytes", "1000000000", "--kv-cache-dtype", "fp8"),
            *("--speculative-config", json.dumps({"method": "mtp", "num_speculative_tokens": 2})),
        ],
    ),
    # the reference deployment's CTX=fast DFLASH_TOKENS=15 profile (examples/reference-deployment.toml)
    # with vLLM's max_num_seqs default on its 24 GB GPU (256)
    "ref-fast15": (
        H.EXAMPLES / "Qwen3.5-27B.config.json",
        [
            "--mamba-ssm-cache-dtype",
            "float16",
            *_NB,
            "--enable-prefix-caching",
            "--kv-cache-dtype",
            "bfloat16",
            "--attention-backend",
            "FLASH_ATTN",
            "--max-model-len",
            "57344",
            "--kv-cache-memory-bytes",
            "5583457484",
            "--no-async-scheduling",
            "--max-num-seqs",
            "256",
            "--speculative-config",
            json.dumps({"method": "dflash", "num_speculative_tokens": 15, "model": str(REL / "dflash5")}),
        ],
    ),
    "mla-pad": (
        REL / "mla2",
        [
            "--max-model-len",
            "4096",
            *_NB,
            "--kv-cache-memory-bytes",
            "2000000000",
            "--speculative-config",
            json.dumps({"method": "dflash", "num_speculative_tokens": 3, "model": str(REL / "dflash5")}),
        ],
    ),
    # the full-allocation fallback at block 64 (MLA's and the drafter's) and where a whole
    # max_model_len of full-attention pages no longer fits a budget the window would
    "mla-pad-bs64": (
        REL / "mla2",
        [
            "--max-model-len",
            "4096",
            *_NB,
            "--block-size",
            "64",
            "--kv-cache-memory-bytes",
            "2000000000",
            "--speculative-config",
            json.dumps({"method": "dflash", "num_speculative_tokens": 3, "model": str(REL / "dflash5")}),
        ],
    ),
    "mla-pad-tight": (
        REL / "mla2",
        [
            "--max-model-len",
            "16384",
            *_NB,
            "--kv-cache-memory-bytes",
            "300000000",
            "--speculative-config",
            json.dumps({"method": "dflash", "num_speculative_tokens": 3, "model": str(REL / "dflash5")}),
        ],
    ),
    "sw-start": (
        H.EXAMPLES / "Qwen3.5-397B-A17B.config.json",
        [
            "--max-model-len",
            "2048",
            *_NB,
            "--kv-cache-memory-bytes",
            "7162213046",
            "-tp",
            "2",
            "--kv-cache-dtype",
            "bfloat16",
            "--enable-prefix-caching",
            "--mamba-cache-mode",
            "align",
            "--attention-backend",
            "TRITON_ATTN",
            "--speculative-config",
            json.dumps({"method": "dflash", "num_speculative_tokens": 3, "model": str(REL / "dflash5")}),
        ],
    ),
    "mcmode-all": (REL / "gdn64", [*_GDN, "--enable-prefix-caching", "--mamba-cache-mode", "all"]),
    "mla-flashmla": (
        REL / "mla2",
        ["--max-model-len", "4096", *_NB, "--kv-cache-memory-bytes", "2000000000", "--attention-backend", "FLASHMLA"],
    ),
    "qnext2": (
        REL / "qnext2",
        ["--max-model-len", "8192", "--max-num-batched-tokens", "8192", "--kv-cache-memory-bytes", "1000000000"],
    ),
    # pipeline parallelism and the hidden-state cache (recorded by e2e_oracle.py, which builds every
    # stage under its pipeline rank and the ExtractHiddenStatesProposer)
    # the harness's seed-0 cases s0-1097 and s0-172 (configs copied from its work directory)
    "nvfp4-fi": (
        REL / "llama-nvfp4",
        [
            *("--max-model-len", "131072", "--kv-cache-memory-bytes", "26124600811", "--tensor-parallel-size", "4"),
            *("--kv-cache-dtype", "nvfp4", "--no-enable-prefix-caching", "--async-scheduling"),
        ],
    ),
    "granite-spec": (
        REL / "granite4",
        [
            *("--max-model-len", "1024", "--kv-cache-memory-bytes", "1664125108", "--max-num-batched-tokens", "2048"),
            *("--mamba-cache-mode", "none", "--num-gpu-blocks-override", "64", "--speculative-config"),
            json.dumps({"method": "dflash", "num_speculative_tokens": 8, "model": str(REL / "granite4-drafter")}),
        ],
    ),
    # config.json without num_key_value_heads: the config class's own default (Qwen2Config 32: 16 heads refused,
    # 64 served with 32 KV heads; Qwen3_5MoeTextConfig 2), not the attention heads
    # Kimi-Linear MLA dims no SM90 prefill backend serves (qk_rope_head_dim 32): vLLM selects the decode
    # backend (and builds the hidden-state proposer) first; audit seeds 260300 (cases 252, 279), 260310 (262),
    # 260320 (98), 260271 (150)
    "kimi-rope32-e5m2": (
        REL / "kimi-rope32",
        ["--max-model-len", "65536", "--kv-cache-memory-bytes", "37721501832", "--kv-cache-dtype", "fp8_e5m2"],
    ),
    "kimi-rope32-flex": (
        REL / "kimi-rope32",
        ["--max-model-len", "8192", "--kv-cache-memory-bytes", "114577708", "--attention-backend", "FLEX_ATTENTION"],
    ),
    "kimi-rope32-pth": (
        REL / "kimi-rope32",
        ["--max-model-len", "8192", "--kv-cache-memory-bytes", "3930659260", "--kv-cache-dtype", "fp8_per_token_head"],
    ),
    "kimi-rope32-int8pth": (
        REL / "kimi-rope32",
        ["--max-model-len", "8192", "--kv-cache-memory-bytes", "4G", "--kv-cache-dtype", "int8_per_token_head"],
    ),
    "kimi-rope32-ehs": (
        REL / "kimi-rope32",
        [
            *("--max-model-len", "8192", "--kv-cache-memory-bytes", "1419380548", "--speculative-config"),
            json.dumps({"method": "extract_hidden_states", "num_speculative_tokens": 1}),
        ],
    ),
    # a 2-layer Mistral at PP 3 (stage 2 holds no layer): vLLM's memory check over the other stages comes first,
    # the empty stage fails after it (audit seed 260320 case 138)
    "pp3-empty-lowmem": (
        REL / "mistral-2l",
        _PP3_LOWMEM,
    ),
    "pp3-empty-lowmem-override": (
        REL / "mistral-2l",
        [*_PP3_LOWMEM, "--num-gpu-blocks-override", "16"],
    ),
    "pp3-empty-lowmem-autofit": (
        REL / "mistral-2l",
        [*_PP3_LOWMEM, "--max-model-len", "-1"],
    ),
    "pp3-empty": (
        REL / "mistral-2l",
        [*("--kv-cache-memory-bytes", "4000000000", "--max-num-batched-tokens", "16384", "-pp", "3")],
    ),
    # a 4-layer Qwen2 sliding from layer 3 (max_window_layers 3): Qwen2Model asserts while it is built, after
    # ParallelConfig refuses TP 4 x PP 4 (audit seed 260312 case 140); at PP 2 the assertion itself
    "qwen2-partwin-ws16": (
        REL / "qwen2-partwin",
        [
            *("--max-model-len", "2048", "--kv-cache-memory-bytes", "3837283632", "-tp", "4", "-pp", "4"),
            *("--block-size", "64", "--no-enable-prefix-caching"),
        ],
    ),
    "qwen2-partwin-pp2": (
        REL / "qwen2-partwin",
        ["--max-model-len", "2048", "--kv-cache-memory-bytes", "3837283632", "-pp", "2"],
    ),
    # a 2-layer Qwen3-Next at PP 4 (stages 0 and 1 hold no layer) and PP 3 (stage 2): set_moe_parameters finds no
    # MoE block there while the model is built (audit seeds 260283 case 0, 260323 case 542)
    "qnext-2l-pp4": (
        REL / "qnext-2l",
        [
            *("--max-model-len", "65536", "--kv-cache-memory-bytes", "501308114", "--max-num-batched-tokens", "2048"),
            *("--max-num-seqs", "8", "--pipeline-parallel-size", "4", "--mamba-ssm-cache-dtype", "bfloat16"),
        ],
    ),
    "qnext-2l-pp3": (
        REL / "qnext-2l",
        [
            *("--max-model-len", "-1", "--kv-cache-memory-bytes", "131979984", "--max-num-batched-tokens", "2048"),
            *("--pipeline-parallel-size", "3", "--no-enable-prefix-caching"),
        ],
    ),
    # the tiny Qwen3.5-MoE wrapper cut to 2 layers at PP 4: Qwen3_5_MoeMixtureOfExperts words it otherwise
    "q35moe-2l-pp4": (
        REL / "q35moe-2l",
        ["--max-model-len", "4096", "--kv-cache-memory-bytes", "2000000000", "-pp", "4"],
    ),
    # MoE model classes that look for an MoE block among their stage's layers (set_moe_parameters) while the model is
    # built: a stage of no layer (2 layers at PP 3) and a stage of only dense layers (mlp_only_layers,
    # first_k_dense_replace) at PP 2, refused in the class's words before any KV cache check
    **{
        f"{name}-pp{pp}": (REL / name, ["--max-model-len", "4096", "--kv-cache-memory-bytes", "2000000000", "-pp", pp])
        for name, pp in (
            ("qwen3moe-2l", "3"),
            ("qwen3moe-mlponly", "2"),
            ("mixtral-2l", "3"),
            ("glm4moe-2l", "3"),
            ("glm4moe-dense2", "2"),
            ("q3vlmoe-mlponly", "2"),
            ("glm45v-dense2", "2"),
            ("qwen3moe-allmlp", "1"),
            # classes that build a stage of dense layers (no MoE parameters): planned
            ("qwen2moe-mlponly", "2"),
            ("dsv2-dense2", "2"),
        )
    },
    # Zamba2 with n_groups 2 at TP 4: its shared attention blocks are built (their backend selected) before the
    # first mamba layer's group split check (audit seed 260280 case 21)
    "zamba2-g2-tp4-nvfp4": (
        REL / "zamba2-g2",
        [
            *(
                "--max-model-len",
                "8192",
                "--kv-cache-memory-bytes",
                "1451562468",
                "-tp",
                "4",
                "--kv-cache-dtype",
                "nvfp4",
            )
        ],
    ),
    "zamba2-g2-tp4": (
        REL / "zamba2-g2",
        ["--max-model-len", "8192", "--kv-cache-memory-bytes", "1451562468", "-tp", "4"],
    ),
    # Falcon-H1 with mamba_n_groups 2 at TP 4: each layer's attention branch selects its backend before its SSM
    # branch splits the groups (audit seeds 260333 case 161, 260303 case 244)
    "falconh1-g2-tp4-nvfp4": (
        REL / "falconh1-g2",
        [
            *(
                "--max-model-len",
                "2048",
                "--kv-cache-memory-bytes",
                "1021572415",
                "-tp",
                "4",
                "--kv-cache-dtype",
                "nvfp4",
            )
        ],
    ),
    "falconh1-g2-tp4": (
        REL / "falconh1-g2",
        ["--max-model-len", "2048", "--kv-cache-memory-bytes", "1021572415", "-tp", "4"],
    ),
    # the hidden-state proposer refuses before Nemotron-H's mixers check their groups (audit seed 270332 case 124)
    "nemh-g2-tp4-ehs4": (
        REL / "nemh-g2",
        [
            *("--max-model-len", "8192", "--kv-cache-memory-bytes", "1224239000", "-tp", "4", "--speculative-config"),
            json.dumps(
                {
                    "method": "extract_hidden_states",
                    "num_speculative_tokens": 4,
                    "draft_model_config": {"hf_config": {"eagle_aux_hidden_state_layer_ids": [1, 2, 3, 7]}},
                }
            ),
        ],
    ),
    "falconh1-g2-tp4-ehs8": (
        REL / "falconh1-g2",
        [
            *("--max-model-len", "2048", "--kv-cache-memory-bytes", "1021572415", "-tp", "4", "--speculative-config"),
            json.dumps(
                {
                    "method": "extract_hidden_states",
                    "num_speculative_tokens": 8,
                    "draft_model_config": {"hf_config": {"eagle_aux_hidden_state_layer_ids": [0]}},
                }
            ),
        ],
    ),
    "qwen2-nokv16": (REL / "qwen2-nokv16", ["--max-model-len", "4096", *_NB, "--kv-cache-memory-bytes", "1000000000"]),
    "qwen2-nokv64": (REL / "qwen2-nokv64", ["--max-model-len", "4096", *_NB, "--kv-cache-memory-bytes", "1000000000"]),
    "qwen35moe-nokv": (
        REL / "qwen35moe-nokv",
        ["--max-model-len", "4096", *_NB, "--kv-cache-memory-bytes", "1000000000"],
    ),
    # config.json without n_groups: NemotronHConfig's default 8 SSM groups (vLLM's own class on 0.27.1-0.31.0,
    # transformers' on 0.32.0-0.33.0), not 1
    "nemotronh-nogroups": (
        REL / "nemotronh-nogroups",
        ["--max-model-len", "4096", *_NB, "--kv-cache-memory-bytes", "1000000000"],
    ),
    # without num_key_value_heads: AfmoeConfig / Cohere2MoeConfig default it to the attention heads (every release)
    "afmoe-nokv": (REL / "afmoe-nokv", ["--max-model-len", "4096", *_NB, "--kv-cache-memory-bytes", "1000000000"]),
    # Gemma-4 (the tiny Gemma4ForCausalLM) with one field left out (the field-omission audit, audit_omissions.py,
    # on google/gemma-4-26B-A4B): Gemma4TextConfig's own defaults (4 KV heads, head_dim 256, 131,072 positions),
    # and a MoE block without moe_intermediate_size, which vLLM's Gemma4MoE cannot build
    "g4-nokv": (REL / "g4-nokv", ["--kv-cache-memory-bytes", "2000000000"]),
    "g4-nohd": (REL / "g4-nohd", ["--kv-cache-memory-bytes", "2000000000"]),
    "g4-nompe": (REL / "g4-nompe", ["--kv-cache-memory-bytes", "2000000000"]),
    "g4-nomoeisz": (REL / "g4-nomoeisz", ["--kv-cache-memory-bytes", "2000000000"]),
    # Laguna without layer_types (the same audit, on poolside/Laguna-XS.2-FP8): every layer full attention, its
    # sliding_window unused (transformers' LagunaConfig writes the layer types)
    "laguna-notypes": (REL / "laguna-notypes", ["--kv-cache-memory-bytes", "1000000000", "--max-model-len", "8192"]),
    "cohere2moe-nokv": (
        REL / "cohere2moe-nokv",
        ["--max-model-len", "4096", *_NB, "--kv-cache-memory-bytes", "1000000000"],
    ),
    # UltravoxConfig builds its text config from text_config alone: a context length at the top level is not the
    # language model's (LlamaConfig's default 2048 is)
    "ultravox-toplevel": (REL / "ultravox-toplevel", [*_NB, "--kv-cache-memory-bytes", "1000000000"]),
    # the harness's case s250290-102 on 0.29.0: ModelConfig refuses the max_model_len before VllmConfig asks
    # whether the class supports pipeline parallelism
    "mamba2-autofit-pp": (
        REL / "mamba2-2l",
        ["--max-model-len", "-1", *_NB, "-tp", "4", "-pp", "2", "--kv-cache-memory-bytes", "2625517287"],
    ),
    # the harness's case s250330-82 on 0.33.0: the parser refuses --mamba-cache-mode all (0.32+) before the
    # config is read (its MLA head dims have no SM90 prefill backend)
    "kimi-mla-mcmode-all": (
        REL / "kimi-mla-6432",
        [
            *("--max-model-len", "8192", *_NB, "-tp", "2", "--kv-cache-memory-bytes", "2625517287"),
            *("--enable-prefix-caching", "--mamba-cache-mode", "all"),
        ],
    ),
    # issue 37, refusal order (the harness's cases s250310-109 on 0.31.0, s250300-21 / -86 on 0.30.0, s250330-293
    # on 0.33.0, s250290-232 on 0.29.0): ModelConfig refuses a max_model_len before the model's TP checks; a Gemma-4
    # shared layer with no earlier layer of its type fails only when vLLM builds it (after the backend selection,
    # on its own pipeline stage); a pipeline stage without layers selects the named backend from the model config
    "order-lfm2moe-tp8-len": (
        REL / "lfm2moe-4experts",
        [
            *("--max-model-len", "256000", "--kv-cache-memory-bytes", "3017302139", *_NB),
            *("--tensor-parallel-size", "8", "--kv-cache-dtype", "fp8", "--block-size", "64"),
        ],
    ),
    "order-g4-shared-pp3-len": (
        REL / "g4-shared-nofull-a",
        [
            *("--max-model-len", "524288", "--kv-cache-memory-bytes", "156910399497", "--max-num-seqs", "8"),
            *("-pp", "3", "--kv-cache-dtype", "fp8_e4m3", "--block-size", "32"),
        ],
    ),
    "order-g4-shared-nvfp4": (
        REL / "g4-shared-nofull-b",
        ["--max-model-len", "262144", "--kv-cache-memory-bytes", "10160955", "-tp", "4", "--kv-cache-dtype", "nvfp4"],
    ),
    # FlexAttentionImpl refuses a KV-shared layer when the model is built, before any memory is profiled
    # (audit seed 270291 case 79: dryboot refused the auto-fit instead)
    "g4-shared-flex": (
        E2E_EXTRA / "gemma4_kv_shared3",
        [
            *("--max-model-len", "-1", "--kv-cache-memory-bytes", "3763899", "--block-size", "256"),
            *("--attention-backend", "FLEX_ATTENTION"),
        ],
    ),
    "g3n-shared-flex": (
        E2E_EXTRA / "gemma3n_kv_shared_early",
        ["--max-model-len", "4096", "--kv-cache-memory-bytes", "2G", "--attention-backend", "FLEX_ATTENTION"],
    ),
    "order-g4-shared-pp4": (
        REL / "g4-shared-nofull-c",
        [
            *("--max-model-len", "-1", "--kv-cache-memory-bytes", "44369527219", "--max-num-batched-tokens", "4096"),
            *("--pipeline-parallel-size", "4", "--num-gpu-blocks-override", "4096"),
        ],
    ),
    # unnamed, an attention-free model's layerless stage selects a backend at head size 0 from 0.29 (audit seed
    # 270302 case 164: dryboot named the empty stage)
    "order-mamba1-pp3-nvfp4": (
        REL / "mamba1-2l",
        [
            "--max-model-len",
            "4K",
            "--kv-cache-memory-bytes",
            "754216",
            "-tp",
            "2",
            "-pp",
            "3",
            "--kv-cache-dtype",
            "nvfp4",
        ],
    ),
    "order-mamba1-pp3-pth": (
        REL / "mamba1-2l",
        [
            "--max-model-len",
            "4K",
            "--kv-cache-memory-bytes",
            "754216",
            "-pp",
            "3",
            "--kv-cache-dtype",
            "fp8_per_token_head",
        ],
    ),
    "order-mamba1-pp3-fa": (
        REL / "mamba1-2l",
        [
            *("--max-model-len", "2k", "--kv-cache-memory-bytes", "10835393666", "--max-num-batched-tokens", "16384"),
            *("--pipeline-parallel-size", "3", "--data-parallel-size", "2", "--kv-cache-dtype", "fp8_per_token_head"),
            *("--enable-prefix-caching", "--mamba-cache-mode", "align", "--attention-backend", "FLASH_ATTN"),
        ],
    ),
    # the harness's case s2433-182 on 0.33.0: the hidden states scale the attention page, not the ShortConv one
    "lfm2-ehs": (
        REL / "lfm2-ehs",
        [
            *("--kv-cache-memory-bytes", "4147222680", "--max-num-batched-tokens", "2048", "--kv-cache-dtype", "fp8"),
            "--enable-prefix-caching",
            "--speculative-config",
            json.dumps(
                {
                    "method": "extract_hidden_states",
                    "num_speculative_tokens": 1,
                    "draft_model_config": {"hf_config": {"eagle_aux_hidden_state_layer_ids": [1, 2]}},
                }
            ),
        ],
    ),
    # the harness's seed-0 cases s0-75 and s0-545 on 0.27.1
    "ehs-block": (
        REL / "gemma3-ehs",
        [
            *("--max-model-len", "8192", "--kv-cache-memory-bytes", "1824919759", "--attention-backend", "FLASHINFER"),
            "--speculative-config",
            json.dumps(
                {
                    "method": "extract_hidden_states",
                    "num_speculative_tokens": 1,
                    "draft_model_config": {"hf_config": {"eagle_aux_hidden_state_layer_ids": [5]}},
                }
            ),
        ],
    ),
    "dtype-4over6": (
        REL / "qwen35-attnfree",
        [
            *("--max-model-len", "16384", "--kv-cache-memory-bytes", "112690328", "--max-num-batched-tokens", "2048"),
            *("-tp", "2", "--kv-cache-dtype", "nvfp4_4over6", "--no-enable-prefix-caching"),
        ],
    ),
    # the harness's seed-0 case s0-693: LFM2 with ngram speculation
    "lfm2-spec": (
        REL / "lfm2-spec",
        [
            *("--kv-cache-memory-bytes", "57073384061", "--max-num-batched-tokens", "4096"),
            *("--speculative-config", '{"method": "ngram", "num_speculative_tokens": 3}'),
        ],
    ),
    "pp-mtp": (
        H.E2E_MIN / "mtp",
        [
            *("--max-model-len", "4096", "--kv-cache-memory-bytes", "4000000000", "-pp", "2"),
            *("--no-async-scheduling", "--speculative-config", '{"method": "mtp", "num_speculative_tokens": 2}'),
        ],
    ),
    "pp-async-sw": (
        H.EXAMPLES / "gpt-oss-20b.config.json",
        ["--max-model-len", "8192", *_NB, "--kv-cache-memory-bytes", "2000000000", "-pp", "2"],
    ),
    "ehs-wide": (
        H.EXAMPLES / "gpt-oss-20b.config.json",
        [
            *("--max-model-len", "8192", *_NB, "--kv-cache-memory-bytes", "2000000000", "-tp", "4"),
            "--speculative-config",
            json.dumps(
                {
                    "method": "extract_hidden_states",
                    "num_speculative_tokens": 1,
                    "draft_model_config": {"hf_config": {"eagle_aux_hidden_state_layer_ids": [5, 8]}},
                }
            ),
        ],
    ),
    # chunked local attention (Llama-4) with an EAGLE-style drafter: vLLM turns the hybrid KV cache
    # manager off and promotes every local layer, the drafter's sliding ones too, to full attention
    # (harness --family llama4 case s0-9 on 0.28.0); with no full layer anywhere it cannot unify them
    "l4-dflash": (REL / "llama4-chunked", _l4_dflash(REL / "dflash-l4")),
    "l4-dflash-allchunked": (REL / "llama4-allchunked", _l4_dflash(REL / "dflash-l4")),
    "l4-dflash-sw": (REL / "llama4-allchunked", _l4_dflash(REL / "dflash5")),
    # Bailing-V2.5 with every layer MLA (layer_group_size 1; harness --family bailing case s0-64): hybrid to 0.28,
    # no hybrid from 0.29 (switch hybrid_full_attention_types)
    "bailing-allmla": (
        REL / "bailing-allmla",
        ["--max-model-len", "8192", *_NB, "--kv-cache-memory-bytes", "2000000000"],
    ),
    # --mamba-cache-mode all on a model without mamba state: vLLM's parser refuses it from 0.32 whatever the model
    # (harness --family bailing s0-42, an all-MLA Bailing-V2.5)
    "mcmode-all-dense": (
        REL / "nullblk",
        ["--max-model-len", "1024", *_NB, "--kv-cache-memory-bytes", "13107200", "--mamba-cache-mode", "all"],
    ),
    # ModelConfig.is_hybrid by layer types (issue 37): dryboot's tiny hybrid configs (data/architectures/) with
    # every layer attention, or every layer a state layer (switches hybrid_full_attention_types,
    # legacy_layer_type_names; data/releases/README.md)
    **{
        cid: (REL / cid, ["--max-model-len", "8192", *_NB, "--kv-cache-memory-bytes", "2000000000"])
        for cid in (
            "hyb-qwen35-allfull",
            "hyb-qnext-allfull",
            "hyb-jamba-allattn",
            "hyb-nemoh-allattn",
            "hyb-nemoh-attnmlp",
            "hyb-granite-allattn",
            "hyb-lfm2moe-allattn",
            "hyb-kimil-allfull",
            "hyb-qwen35vl-allfull",
            "hyb-granite-allmamba",
            "hyb-nemoh-allmamba",
            "hyb-olmoh-allfull",
            "hyb-olmoh-alllin",
            "hyb-q4-allfull",
            "hyb-q4-allfull-ple",
            "hyb-glm5-allidx",
            "hyb-glm5-linfull",
            "hyb-glm5-allidxn",
            "hyb-glm5-linfull2",
        )
    },
    # hyb-glm5-allidx at a block the kpool indexer takes (index_kpool x 32 = 512 tokens, and 1,024)
    **{
        f"hyb-glm5-allidx-b{b}": (
            REL / "hyb-glm5-allidx",
            ["--max-model-len", "8192", *_NB, "--kv-cache-memory-bytes", "2000000000", "--block-size", str(b)],
        )
        for b in (512, 1024)
    },
    # hyb-glm5-linfull at TP 2 and without prefix caching
    **{
        f"hyb-glm5-linfull-{name}": (
            REL / "hyb-glm5-linfull",
            ["--max-model-len", "8192", *_NB, "--kv-cache-memory-bytes", "2000000000", *flags],
        )
        for name, flags in (
            ("tp2", ["--tensor-parallel-size", "2"]),
            ("noprefix", ["--no-enable-prefix-caching"]),
            ("len-auto", ["--max-model-len", "-1"]),
            ("b2048", ["--block-size", "2048"]),
            ("fp8", ["--kv-cache-dtype", "fp8"]),
            ("override", ["--num-gpu-blocks-override", "500"]),
            (
                "ngram",
                ["--speculative-config", '{"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_max": 4}'],
            ),
            (
                "hidden",
                [
                    "--speculative-config",
                    '{"method": "extract_hidden_states", "num_speculative_tokens": 1, "draft_model_config": '
                    '{"hf_config": {"eagle_aux_hidden_state_layer_ids": [0, 3]}}}',
                ],
            ),
            ("tp4", ["--tensor-parallel-size", "4"]),
            ("ssm-bf16", ["--mamba-ssm-cache-dtype", "bfloat16"]),
            ("mcmode-all", ["--mamba-cache-mode", "all"]),
            ("fp16", ["--dtype", "float16"]),
            ("kv-bf16", ["--kv-cache-dtype", "bfloat16"]),
        )
    },
    # ... and under more flags: a block the kpool pages do not tile, TP 2, PP 2, no prefix caching
    **{
        f"hyb-glm5-allidx-{name}": (
            REL / "hyb-glm5-allidx",
            ["--max-model-len", "8192", *_NB, "--kv-cache-memory-bytes", "2000000000", *flags],
        )
        for name, flags in (
            ("b256", ["--block-size", "256"]),
            ("b512-tp2", ["--block-size", "512", "--tensor-parallel-size", "2"]),
            ("b512-pp2", ["--block-size", "512", "--pipeline-parallel-size", "2"]),
            ("b512-noprefix", ["--block-size", "512", "--no-enable-prefix-caching"]),
        )
    },
    # GLM-5.3-Flash's flash-8 (sixteen KDA heads: its state sizes the hybrid block) with a bfloat16 recurrent
    # state asked for: 0.30.0 / 0.31.0's model class passes no --mamba-ssm-cache-dtype to kda_state_dtype
    "glm5-flash8-ssmbf16": (
        Path(__file__).resolve().parent / "data" / "glm5next" / "configs" / "flash-8.json",
        [
            "--max-model-len",
            "8192",
            *_NB,
            "--kv-cache-memory-bytes",
            "2000000000",
            "--mamba-ssm-cache-dtype",
            "bfloat16",
        ],
    ),
    # hyb-q4-allfull-ple without the n-gram table's CPU offload (0.30+: the oracle's faked GPU has no UVA)
    "hyb-q4-allfull-ple-nooffload": (
        REL / "hyb-q4-allfull-ple",
        [
            "--max-model-len",
            "8192",
            *_NB,
            "--kv-cache-memory-bytes",
            "2000000000",
            "--engram-config",
            '{"cpu_offload": false}',
        ],
    ),
    # Kimi-Linear with every layer KDA (no MLA layer built) and an nvfp4 cache: its MLA fields still make
    # ModelConfig.use_mla true, which VllmConfig.validate_nvfp4_kv_cache_with_mla refuses (harness case
    # s2326-181 on 0.33.0; dryboot planned it)
    # Kimi-Linear with every layer full attention (MLA, no KDA layer) and a bfloat16 SSM cache dtype: the
    # bfloat16 state only sizes the hybrid block (harness case s2325-53 on 0.30.0; dryboot refused it)
    "kimil-allmla-ssm-bf16": (
        REL / "kimil-allmla",
        ["--max-model-len", "1024", "--kv-cache-memory-bytes", "1360778217", "--mamba-ssm-cache-dtype", "bfloat16"],
    ),
    "kimil-allkda-nvfp4": (
        REL / "kimil-allkda",
        ["--max-model-len", "8192", "--kv-cache-memory-bytes", "2410532466", "--kv-cache-dtype", "nvfp4"],
    ),
    # Kimi-Linear under --mamba-ssm-cache-dtype bfloat16: from 0.30.0 the model class sizes the hybrid
    # block from a bfloat16 KDA state, the KDA layer keeps float32 and its page is padded to the
    # attention page where it fits (vLLM's MambaSpec asserts where it does not). kimil-kda64: harness
    # case s260313-367 (0.31.0 served it at TP 4 / PP 2; dryboot refused); the tiny config's KDA
    # state (16 heads of 128) outgrows the page up to TP 4 and fits at TP 8
    "kimil-kda64-ssmbf16-tp4pp2": (
        REL / "kimil-kda64",
        [
            "--max-model-len",
            "-1",
            "--kv-cache-memory-bytes",
            "148638891123",
            "--tensor-parallel-size",
            "4",
            "-pp",
            "2",
            "--mamba-ssm-cache-dtype",
            "bfloat16",
        ],
    ),
    **{
        f"kimil-{cfg}ssmbf16-tp{tp}": (
            path,
            [*_KIMIL_BASE, "--tensor-parallel-size", str(tp), "--mamba-ssm-cache-dtype", "bfloat16"],
        )
        for cfg, path, tp in (
            ("kda64-", REL / "kimil-kda64", 2),
            ("", ARCH / "KimiLinearForCausalLM.json", 1),
            ("", ARCH / "KimiLinearForCausalLM.json", 2),
            ("", ARCH / "KimiLinearForCausalLM.json", 8),
        )
    },
    # Step-3.5 without MTP layers (num_nextn_predict_layers 0; harness --family step3p5 case s0-27)
    "step3p5-nomtp": (
        REL / "step3p5-nomtp",
        ["--max-model-len", "8192", *_NB, "--kv-cache-memory-bytes", "2000000000"],
    ),
    # the drafter's attention backend when the target's is named (random audit, seed 240300 case 214):
    # the V1 proposers and the V2 DFlash loader auto-select for the drafter's own layers unless the
    # speculative config names one; the V2 EAGLE / MTP loader keeps the target's (0.29: even over a named one)
    "dbk-dflash-fi": (
        REL / "qwen35-4l",
        [*_DBK, "--attention-backend", "FLASHINFER", "--speculative-config", _DBK_DFLASH],
    ),
    "dbk-dflash": (REL / "qwen35-4l", [*_DBK, "--speculative-config", _DBK_DFLASH]),
    # which refusal comes first (issue 37): the unregistered EAGLE class of a DFlash drafter after the world size
    # (random audit s260271-94 / s260313-520) and the target's max_model_len (s260282-231 / s260313-296), before
    # the scheduler's; the ngram method's async refusal after the world size (s260293-352) and the scheduler's
    "eagle-dflash": (REL / "qwen35-4l", ["--max-model-len", "4096", *_EAGLE_DFLASH]),
    "eagle-dflash-ws": (REL / "qwen35-4l", ["--max-model-len", "4096", "-tp", "4", "-pp", "3", *_EAGLE_DFLASH]),
    "eagle-dflash-mml": (REL / "qwen35-4l", ["--max-model-len", "524288", *_EAGLE_DFLASH]),
    "eagle-dflash-nbt": (
        REL / "qwen35-4l",
        ["--max-model-len", "4096", "--max-num-batched-tokens", "128", "--max-num-seqs", "256", *_EAGLE_DFLASH],
    ),
    # a drafter under PP (0.30+): vLLM's V2 loader needs the target's input embedding on the last stage
    # (maybe_share_target_embed); Falcon-H1 builds it on the first only (random audit s270301-165), a Granite
    # target only when tied, Qwen3 for these methods (spec_decode_needs_target_embed)
    "ppembed-falconh1-dflash": (
        REL / "falconh1-pp",
        _ppembed(REL / "dflash-falconh1", "dflash", "--mamba-cache-mode", "align"),
    ),
    "ppembed-qwen3-dflash": (REL / "qwen3-5l", _ppembed(REL / "dflash-falconh1", "dflash")),
    "ppembed-granite-tied-eagle3": (REL / "granite-tied", _ppembed(REL / "eagle3-512", "eagle3")),
    "ppembed-granite-eagle3": (REL / "granite-untied", _ppembed(REL / "eagle3-512", "eagle3")),
    "ngram-async": (REL / "mistral-2l", _NGRAM_ASYNC),
    "ngram-async-ws": (REL / "mistral-2l", [*_NGRAM_ASYNC, "-tp", "4", "-pp", "4"]),
    "ngram-async-nbt": (
        REL / "mistral-2l",
        [*_NGRAM_ASYNC, "--max-num-batched-tokens", "128", "--max-num-seqs", "256"],
    ),
    "dbk-e3-fi": (
        REL / "qwen35-4l",
        [*_DBK, "--attention-backend", "FLASHINFER", "--speculative-config", _dbk_spec("eagle3")],
    ),
    "dbk-e3-fi-fa": (
        REL / "qwen35-4l",
        [
            *_DBK,
            "--attention-backend",
            "FLASHINFER",
            "--speculative-config",
            _dbk_spec("eagle3", attention_backend="FLASH_ATTN"),
        ],
    ),
    "dbk-e3-fi-kv": (
        REL / "qwen35-4l",
        [
            *_DBK,
            "--attention-backend",
            "FLASHINFER",
            "--speculative-config",
            _dbk_spec("eagle3", kv_cache_dtype="bfloat16"),
        ],
    ),
    "dbk-dm-fi": (
        REL / "qwen35-4l",
        [*_DBK, "--attention-backend", "FLASHINFER", "--speculative-config", _dbk_spec("draft_model")],
    ),
    "dbk-dm-fi-fa": (
        REL / "qwen35-4l",
        [
            *(*_DBK, "--attention-backend", "FLASHINFER", "--speculative-config"),
            _dbk_spec("draft_model", attention_backend="FLASH_ATTN"),
        ],
    ),
}


def case(cid: str) -> H.Case:
    model, argv = CASES[cid]
    work = H.default_workdir()
    work.mkdir(parents=True, exist_ok=True)
    path = H.materialize_file(work, model) if model.is_file() else str(model)
    return H.Case(id=cid, family="releases", model=path, argv=list(argv))


def _ok(block: int, nb: int, tok: int, mml: int, log: tuple[str, ...] | None = None) -> dict[str, Any]:
    """Figures, and (``log``) the KV cache lines the release printed (the oracle's ``kv_log``)."""
    out: dict[str, Any] = {"block_size": block, "num_blocks": nb, "tokens": tok, "max_model_len": mml}
    if log is not None:
        out["log"] = log
    return out


#: The lines ``src/dryboot/boot/engine_start.py`` keeps as ``kv_log`` (its ``KV_LOG_MARKERS``); "kv lcm" is a vLLM
#: debug line dryboot does not print.
_KV_MARKERS = (
    "block size",
    "Mamba cache mode",
    "mamba page size",
    "padding layers",
    "num_gpu_blocks",
    "Auto-fit max_model_len",
    "GPU KV cache size",
    "Maximum concurrency",
)


def _kv_lines(lines: Any) -> set[str]:
    return {m for m in lines or () if any(k in m for k in _KV_MARKERS) and not m.startswith("kv lcm")}


def _refused(estimated: int) -> dict[str, Any]:
    return {"refused": True, "estimated": estimated}


def _refused_with(text: str) -> dict[str, Any]:
    """A refusal whose message holds ``text`` (vLLM's own words)."""
    return {"refused": True, "says": text}


#: Qwen2Model's assertion on ``qwen2-partwin`` (max_window_layers 3 of 4 layers), in vLLM's words
_PARTWIN = (
    "Sliding window for some but all layers is not supported. This model uses sliding window but "
    "`max_window_layers` = 3 is less than `num_hidden_layers` = 4"
)


def _refused_as(error: str, site: str) -> dict[str, Any]:
    """A refusal where vLLM says only ``error`` (``Type: message`` as the oracle records it; a bare
    ``assert`` gives ``"AssertionError: "``), raised at ``site`` (vLLM's file and the failing line, read
    from the oracle's traceback). dryboot's refusal must be the same refusal (``e2e_harness.compare``)."""
    return {"refused": True, "vllm": error, "site": site}


#: (release, case) -> what that release printed. Filled from record_releases.py output.
RECORDED: dict[tuple[str, str], dict[str, Any]] = {
    # Kimi-Linear under --mamba-ssm-cache-dtype bfloat16 (kimil-*ssmbf16-*): 0.28.0 sizes the hybrid block from
    # a float32 KDA state whatever the flag; from 0.30.0 from a bfloat16 one, the KDA layer's float32 state
    # padded to that attention page where it fits (kimil-kda64-*, the tiny config at TP 8) and asserted
    # where it outgrows it (the tiny config at TP 1 and 2)
    ("0.28.0", "kimil-kda64-ssmbf16-tp4pp2"): _ok(
        128,
        1008021,
        32006620,
        8192,
        log=(
            "Mamba cache mode is set to 'align' for KimiLinearForCausalLM by default when prefix caching is enabled",
            "Setting attention block size to 128 tokens to ensure that attention page size is >= mamba page size.",
            "Padding mamba page size by 110.22% to ensure that mamba page size and attention page size are exactly equal.",
            "Auto-fit max_model_len: full model context length 8192 fits in available GPU memory",
            "GPU KV cache size: 32,006,620 tokens, Maximum concurrency for 8,192 tokens per request: 3907.06x",
        ),
    ),
    ("0.28.0", "kimil-kda64-ssmbf16-tp2"): _ok(
        128,
        6781,
        210416,
        2048,
        log=(
            "Mamba cache mode is set to 'align' for KimiLinearForCausalLM by default when prefix caching is enabled",
            "Setting attention block size to 128 tokens to ensure that attention page size is >= mamba page size.",
            "Padding mamba page size by 5.11% to ensure that mamba page size and attention page size are exactly equal.",
            "GPU KV cache size: 210,416 tokens, Maximum concurrency for 2,048 tokens per request: 102.74x",
        ),
    ),
    ("0.28.0", "kimil-ssmbf16-tp1"): _ok(
        1024,
        847,
        216832,
        2048,
        log=(
            "Mamba cache mode is set to 'align' for KimiLinearForCausalLM by default when prefix caching is enabled",
            "Setting attention block size to 1024 tokens to ensure that attention page size is >= mamba page size.",
            "Padding mamba page size by 8.68% to ensure that mamba page size and attention page size are exactly equal.",
            "GPU KV cache size: 216,832 tokens, Maximum concurrency for 2,048 tokens per request: 105.88x",
        ),
    ),
    ("0.28.0", "kimil-ssmbf16-tp2"): _ok(
        512,
        1695,
        347136,
        2048,
        log=(
            "Mamba cache mode is set to 'align' for KimiLinearForCausalLM by default when prefix caching is enabled",
            "Setting attention block size to 512 tokens to ensure that attention page size is >= mamba page size.",
            "Padding mamba page size by 8.68% to ensure that mamba page size and attention page size are exactly equal.",
            "GPU KV cache size: 347,136 tokens, Maximum concurrency for 2,048 tokens per request: 169.50x",
        ),
    ),
    ("0.28.0", "kimil-ssmbf16-tp8"): _ok(
        128,
        6781,
        631249,
        2048,
        log=(
            "Mamba cache mode is set to 'align' for KimiLinearForCausalLM by default when prefix caching is enabled",
            "Setting attention block size to 128 tokens to ensure that attention page size is >= mamba page size.",
            "Padding mamba page size by 8.68% to ensure that mamba page size and attention page size are exactly equal.",
            "GPU KV cache size: 631,249 tokens, Maximum concurrency for 2,048 tokens per request: 308.23x",
        ),
    ),
    ("0.30.0", "kimil-kda64-ssmbf16-tp4pp2"): _ok(
        128,
        1008021,
        32006620,
        8192,
        log=(
            "Mamba cache mode is set to 'align' for KimiLinearForCausalLM by default when prefix caching is enabled",
            "Setting attention block size to 128 tokens to ensure that attention page size is >= mamba page size.",
            "Padding mamba page size by 294.52% to ensure that mamba page size and attention page size are exactly equal.",
            "Auto-fit max_model_len: full model context length 8192 fits in available GPU memory",
            "GPU KV cache size: 32,006,620 tokens, Maximum concurrency for 8,192 tokens per request: 3907.06x",
        ),
    ),
    ("0.30.0", "kimil-kda64-ssmbf16-tp2"): _ok(
        128,
        6781,
        210416,
        2048,
        log=(
            "Mamba cache mode is set to 'align' for KimiLinearForCausalLM by default when prefix caching is enabled",
            "Setting attention block size to 128 tokens to ensure that attention page size is >= mamba page size.",
            "Padding mamba page size by 97.26% to ensure that mamba page size and attention page size are exactly equal.",
            "GPU KV cache size: 210,416 tokens, Maximum concurrency for 2,048 tokens per request: 102.74x",
        ),
    ),
    ("0.30.0", "kimil-ssmbf16-tp1"): _refused_as(
        "AssertionError: ",
        "v1/kv_cache_interface.py:1026 MambaSpec.page_size_bytes: assert self.page_size_padded >= page_size",
    ),
    ("0.30.0", "kimil-ssmbf16-tp2"): _refused_as(
        "AssertionError: ",
        "v1/kv_cache_interface.py:1026 MambaSpec.page_size_bytes: assert self.page_size_padded >= page_size",
    ),
    ("0.30.0", "kimil-ssmbf16-tp8"): _ok(
        128,
        6781,
        631249,
        2048,
        log=(
            "Mamba cache mode is set to 'align' for KimiLinearForCausalLM by default when prefix caching is enabled",
            "Setting attention block size to 128 tokens to ensure that attention page size is >= mamba page size.",
            "Padding mamba page size by 110.22% to ensure that mamba page size and attention page size are exactly equal.",
            "GPU KV cache size: 631,249 tokens, Maximum concurrency for 2,048 tokens per request: 308.23x",
        ),
    ),
    ("0.31.0", "kimil-kda64-ssmbf16-tp4pp2"): _ok(
        128,
        1008021,
        32006620,
        8192,
        log=(
            "Mamba cache mode is set to 'align' for KimiLinearForCausalLM by default when prefix caching is enabled",
            "Setting attention block size to 128 tokens to ensure that attention page size is >= mamba page size.",
            "Padding mamba page size by 294.52% to ensure that mamba page size and attention page size are exactly equal.",
            "Auto-fit max_model_len: full model context length 8192 fits in available GPU memory",
            "GPU KV cache size: 32,006,620 tokens, Maximum concurrency for 8,192 tokens per request: 3907.06x",
        ),
    ),
    ("0.31.0", "kimil-kda64-ssmbf16-tp2"): _ok(
        128,
        6781,
        210416,
        2048,
        log=(
            "Mamba cache mode is set to 'align' for KimiLinearForCausalLM by default when prefix caching is enabled",
            "Setting attention block size to 128 tokens to ensure that attention page size is >= mamba page size.",
            "Padding mamba page size by 97.26% to ensure that mamba page size and attention page size are exactly equal.",
            "GPU KV cache size: 210,416 tokens, Maximum concurrency for 2,048 tokens per request: 102.74x",
        ),
    ),
    ("0.31.0", "kimil-ssmbf16-tp1"): _refused_as(
        "AssertionError: ",
        "v1/kv_cache_interface.py:1075 MambaSpec.page_size_bytes: assert self.page_size_padded >= page_size",
    ),
    ("0.31.0", "kimil-ssmbf16-tp2"): _refused_as(
        "AssertionError: ",
        "v1/kv_cache_interface.py:1075 MambaSpec.page_size_bytes: assert self.page_size_padded >= page_size",
    ),
    ("0.31.0", "kimil-ssmbf16-tp8"): _ok(
        128,
        6781,
        631249,
        2048,
        log=(
            "Mamba cache mode is set to 'align' for KimiLinearForCausalLM by default when prefix caching is enabled",
            "Setting attention block size to 128 tokens to ensure that attention page size is >= mamba page size.",
            "Padding mamba page size by 110.22% to ensure that mamba page size and attention page size are exactly equal.",
            "GPU KV cache size: 631,249 tokens, Maximum concurrency for 2,048 tokens per request: 308.23x",
        ),
    ),
    ("0.33.0", "kimil-kda64-ssmbf16-tp4pp2"): _ok(
        128,
        1008021,
        32006620,
        8192,
        log=(
            "Mamba cache mode is set to 'align' for KimiLinearForCausalLM by default when prefix caching is enabled",
            "Setting attention block size to 128 tokens to ensure that attention page size is >= mamba page size.",
            "Padding mamba page size by 294.52% to ensure that mamba page size and attention page size are exactly equal.",
            "Auto-fit max_model_len: full model context length 8192 fits in available KV cache memory (138.43 GiB GPU)",
            "GPU KV cache size: 32,006,620 tokens, Maximum concurrency for 8,192 tokens per request: 3907.06x",
        ),
    ),
    ("0.33.0", "kimil-kda64-ssmbf16-tp2"): _ok(
        128,
        6781,
        210416,
        2048,
        log=(
            "Mamba cache mode is set to 'align' for KimiLinearForCausalLM by default when prefix caching is enabled",
            "Setting attention block size to 128 tokens to ensure that attention page size is >= mamba page size.",
            "Padding mamba page size by 97.26% to ensure that mamba page size and attention page size are exactly equal.",
            "GPU KV cache size: 210,416 tokens, Maximum concurrency for 2,048 tokens per request: 102.74x",
        ),
    ),
    ("0.33.0", "kimil-ssmbf16-tp1"): _refused_as(
        "AssertionError: ",
        "v1/kv_cache_interface.py:1127 MambaSpec.page_size_bytes: assert self.page_size_padded >= page_size",
    ),
    ("0.33.0", "kimil-ssmbf16-tp2"): _refused_as(
        "AssertionError: ",
        "v1/kv_cache_interface.py:1127 MambaSpec.page_size_bytes: assert self.page_size_padded >= page_size",
    ),
    ("0.33.0", "kimil-ssmbf16-tp8"): _ok(
        128,
        6781,
        631249,
        2048,
        log=(
            "Mamba cache mode is set to 'align' for KimiLinearForCausalLM by default when prefix caching is enabled",
            "Setting attention block size to 128 tokens to ensure that attention page size is >= mamba page size.",
            "Padding mamba page size by 110.22% to ensure that mamba page size and attention page size are exactly equal.",
            "GPU KV cache size: 631,249 tokens, Maximum concurrency for 2,048 tokens per request: 308.23x",
        ),
    ),
    # falconh1-g2-*: the attention branch selects its backend (and the hidden-state proposer is built) before the
    # SSM branch splits its groups (0.27/0.28 assert the proposer's one token bare, 0.29+ say it)
    ("0.27.1", "falconh1-g2-tp4-nvfp4"): _refused_with("No valid attention backend found"),
    ("0.27.1", "falconh1-g2-tp4"): _refused_with(
        "If tensor parallel world size does not divide num_groups, then num_groups must equal 1."
    ),
    # vLLM's proposer: a bare assert to 0.28, its ValueError from 0.29 (harness SAME_REFUSAL pairs both)
    ("0.27.1", "nemh-g2-tp4-ehs4"): _refused_with("extract_hidden_states proposes exactly 1 token"),
    ("0.28.0", "nemh-g2-tp4-ehs4"): _refused_with("extract_hidden_states proposes exactly 1 token"),
    ("0.29.0", "nemh-g2-tp4-ehs4"): _refused_with("extract_hidden_states proposes exactly 1 token"),
    ("0.30.0", "nemh-g2-tp4-ehs4"): _refused_with("extract_hidden_states proposes exactly 1 token"),
    ("0.31.0", "nemh-g2-tp4-ehs4"): _refused_with("extract_hidden_states proposes exactly 1 token"),
    ("0.32.0", "nemh-g2-tp4-ehs4"): _refused_with("extract_hidden_states proposes exactly 1 token"),
    ("0.33.0", "nemh-g2-tp4-ehs4"): _refused_with("extract_hidden_states proposes exactly 1 token"),
    ("0.27.1", "falconh1-g2-tp4-ehs8"): _refused_with("extract_hidden_states proposes exactly 1 token"),
    ("0.28.0", "falconh1-g2-tp4-nvfp4"): _refused_with("No valid attention backend found"),
    ("0.28.0", "falconh1-g2-tp4"): _refused_with(
        "If tensor parallel world size does not divide num_groups, then num_groups must equal 1."
    ),
    ("0.28.0", "falconh1-g2-tp4-ehs8"): _refused_with("extract_hidden_states proposes exactly 1 token"),
    ("0.29.0", "falconh1-g2-tp4-nvfp4"): _refused_with("No valid attention backend found"),
    ("0.29.0", "falconh1-g2-tp4"): _refused_with(
        "If tensor parallel world size does not divide num_groups, then num_groups must equal 1."
    ),
    ("0.29.0", "falconh1-g2-tp4-ehs8"): _refused_with("extract_hidden_states proposes exactly 1 token"),
    ("0.30.0", "falconh1-g2-tp4-nvfp4"): _refused_with("No valid attention backend found"),
    ("0.30.0", "falconh1-g2-tp4"): _refused_with(
        "If tensor parallel world size does not divide num_groups, then num_groups must equal 1."
    ),
    ("0.30.0", "falconh1-g2-tp4-ehs8"): _refused_with("extract_hidden_states proposes exactly 1 token"),
    ("0.31.0", "falconh1-g2-tp4-nvfp4"): _refused_with("No valid attention backend found"),
    ("0.31.0", "falconh1-g2-tp4"): _refused_with(
        "If tensor parallel world size does not divide num_groups, then num_groups must equal 1."
    ),
    ("0.31.0", "falconh1-g2-tp4-ehs8"): _refused_with("extract_hidden_states proposes exactly 1 token"),
    ("0.32.0", "falconh1-g2-tp4-nvfp4"): _refused_with("No valid attention backend found"),
    ("0.32.0", "falconh1-g2-tp4"): _refused_with(
        "If tensor parallel world size does not divide num_groups, then num_groups must equal 1."
    ),
    ("0.32.0", "falconh1-g2-tp4-ehs8"): _refused_with("extract_hidden_states proposes exactly 1 token"),
    ("0.33.0", "falconh1-g2-tp4-nvfp4"): _refused_with("No valid attention backend found"),
    ("0.33.0", "falconh1-g2-tp4"): _refused_with(
        "If tensor parallel world size does not divide num_groups, then num_groups must equal 1."
    ),
    ("0.33.0", "falconh1-g2-tp4-ehs8"): _refused_with("extract_hidden_states proposes exactly 1 token"),
    # g4-*: Gemma4TextConfig's defaults (4 KV heads, head_dim 256, 131,072 positions); without an expert width
    # Gemma4MoE fails to build (0.27.1-0.28.0: None reaches FusedMoE; 0.29.0+ refuses it by name)
    ("0.27.1", "g4-nokv"): _ok(16, 30517, 366478, 262144),
    ("0.27.1", "g4-nohd"): _ok(16, 15258, 293304, 262144),
    ("0.27.1", "g4-nompe"): _ok(16, 15258, 209610, 131072),
    ("0.27.1", "g4-nomoeisz"): _refused_with("unsupported operand type(s) for %: 'NoneType' and 'int'"),
    ("0.28.0", "g4-nokv"): _ok(16, 30517, 366478, 262144),
    ("0.28.0", "g4-nohd"): _ok(16, 15258, 293304, 262144),
    ("0.28.0", "g4-nompe"): _ok(16, 15258, 209610, 131072),
    ("0.28.0", "g4-nomoeisz"): _refused_with("unsupported operand type(s) for %: 'NoneType' and 'int'"),
    ("0.29.0", "g4-nokv"): _ok(16, 30517, 366478, 262144),
    ("0.29.0", "g4-nohd"): _ok(16, 15258, 293304, 262144),
    ("0.29.0", "g4-nompe"): _ok(16, 15258, 209610, 131072),
    ("0.29.0", "g4-nomoeisz"): _refused_with("Gemma4 MoE requires an expert intermediate size"),
    ("0.30.0", "g4-nokv"): _ok(16, 30517, 366478, 262144),
    ("0.30.0", "g4-nohd"): _ok(16, 15258, 293304, 262144),
    ("0.30.0", "g4-nompe"): _ok(16, 15258, 209610, 131072),
    ("0.30.0", "g4-nomoeisz"): _refused_with("Gemma4 MoE requires an expert intermediate size"),
    ("0.31.0", "g4-nokv"): _ok(16, 30517, 366478, 262144),
    ("0.31.0", "g4-nohd"): _ok(16, 15258, 293304, 262144),
    ("0.31.0", "g4-nompe"): _ok(16, 15258, 209610, 131072),
    ("0.31.0", "g4-nomoeisz"): _refused_with("Gemma4 MoE requires an expert intermediate size"),
    ("0.32.0", "g4-nokv"): _ok(16, 30517, 366478, 262144),
    ("0.32.0", "g4-nohd"): _ok(16, 15258, 293304, 262144),
    ("0.32.0", "g4-nompe"): _ok(16, 15258, 209610, 131072),
    ("0.32.0", "g4-nomoeisz"): _refused_with("Gemma4 MoE requires an expert intermediate size"),
    ("0.33.0", "g4-nokv"): _ok(16, 30517, 366478, 262144),
    ("0.33.0", "g4-nohd"): _ok(16, 15258, 293304, 262144),
    ("0.33.0", "g4-nompe"): _ok(16, 15258, 209610, 131072),
    ("0.33.0", "g4-nomoeisz"): _refused_with("Gemma4 MoE requires an expert intermediate size"),
    # laguna-notypes: no layer_types, every layer full attention (its sliding_window unused)
    ("0.27.1", "laguna-notypes"): _ok(16, 30517, 488272, 8192),
    ("0.28.0", "laguna-notypes"): _ok(16, 30517, 488272, 8192),
    ("0.29.0", "laguna-notypes"): _ok(16, 30517, 488272, 8192),
    ("0.30.0", "laguna-notypes"): _ok(16, 30517, 488272, 8192),
    ("0.31.0", "laguna-notypes"): _ok(16, 30517, 488272, 8192),
    ("0.32.0", "laguna-notypes"): _ok(16, 30517, 488272, 8192),
    ("0.33.0", "laguna-notypes"): _ok(16, 30517, 488272, 8192),
    # gptoss-f16-bf16kv: 0.33 checks a float KV cache dtype against --dtype before the quantization dtypes
    ("0.27.1", "gptoss-f16-bf16kv"): _refused_with("torch.float16 is not supported for quantization method"),
    ("0.28.0", "gptoss-f16-bf16kv"): _refused_with("torch.float16 is not supported for quantization method"),
    ("0.29.0", "gptoss-f16-bf16kv"): _refused_with("torch.float16 is not supported for quantization method"),
    ("0.30.0", "gptoss-f16-bf16kv"): _refused_with("torch.float16 is not supported for quantization method"),
    ("0.31.0", "gptoss-f16-bf16kv"): _refused_with("torch.float16 is not supported for quantization method"),
    ("0.32.0", "gptoss-f16-bf16kv"): _refused_with("torch.float16 is not supported for quantization method"),
    ("0.33.0", "gptoss-f16-bf16kv"): _refused_with('kv_cache_dtype="bfloat16" is incompatible with dtype="float16"'),
    # zamba2-g2-*: the attention blocks select their backend before the mamba layers split their groups (0.32+:
    # FlashInfer takes nvfp4 on SM 9.0, so the group split refuses)
    ("0.27.1", "zamba2-g2-tp4-nvfp4"): _refused_with("No valid attention backend found"),
    ("0.27.1", "zamba2-g2-tp4"): _refused_with(
        "If tensor parallel world size does not divide num_groups, then num_groups must equal 1."
    ),
    ("0.28.0", "zamba2-g2-tp4-nvfp4"): _refused_with("No valid attention backend found"),
    ("0.28.0", "zamba2-g2-tp4"): _refused_with(
        "If tensor parallel world size does not divide num_groups, then num_groups must equal 1."
    ),
    ("0.29.0", "zamba2-g2-tp4-nvfp4"): _refused_with("No valid attention backend found"),
    ("0.29.0", "zamba2-g2-tp4"): _refused_with(
        "If tensor parallel world size does not divide num_groups, then num_groups must equal 1."
    ),
    ("0.30.0", "zamba2-g2-tp4-nvfp4"): _refused_with("No valid attention backend found"),
    ("0.30.0", "zamba2-g2-tp4"): _refused_with(
        "If tensor parallel world size does not divide num_groups, then num_groups must equal 1."
    ),
    ("0.31.0", "zamba2-g2-tp4-nvfp4"): _refused_with("No valid attention backend found"),
    ("0.31.0", "zamba2-g2-tp4"): _refused_with(
        "If tensor parallel world size does not divide num_groups, then num_groups must equal 1."
    ),
    ("0.32.0", "zamba2-g2-tp4-nvfp4"): _refused_with(
        "If tensor parallel world size does not divide num_groups, then num_groups must equal 1."
    ),
    ("0.32.0", "zamba2-g2-tp4"): _refused_with(
        "If tensor parallel world size does not divide num_groups, then num_groups must equal 1."
    ),
    ("0.33.0", "zamba2-g2-tp4-nvfp4"): _refused_with(
        "If tensor parallel world size does not divide num_groups, then num_groups must equal 1."
    ),
    ("0.33.0", "zamba2-g2-tp4"): _refused_with(
        "If tensor parallel world size does not divide num_groups, then num_groups must equal 1."
    ),
    # pp3-empty*: a stage of no layer fails after the memory check on 0.27.1, 0.28.0 and 0.32.0 (vLLM estimates
    # 304 / 288 tokens over the other stages), before it on 0.29-0.31 (a bare AssertionError) and 0.33.0
    # (ZeroDivisionError); with memory enough, every release fails on it
    ("0.27.1", "pp3-empty-lowmem-override"): _refused_with("ZeroDivisionError"),
    ("0.27.1", "pp3-empty-lowmem-autofit"): _refused_with("group_size"),
    ("0.28.0", "pp3-empty-lowmem-override"): _refused_with("ZeroDivisionError"),
    ("0.28.0", "pp3-empty-lowmem-autofit"): _refused_with("group_size"),
    ("0.29.0", "pp3-empty-lowmem-override"): _refused_with("AssertionError"),
    ("0.29.0", "pp3-empty-lowmem-autofit"): _refused_with("AssertionError"),
    ("0.30.0", "pp3-empty-lowmem-override"): _refused_with("AssertionError"),
    ("0.30.0", "pp3-empty-lowmem-autofit"): _refused_with("AssertionError"),
    ("0.31.0", "pp3-empty-lowmem-override"): _refused_with("AssertionError"),
    ("0.31.0", "pp3-empty-lowmem-autofit"): _refused_with("AssertionError"),
    ("0.32.0", "pp3-empty-lowmem-override"): _refused_with("ZeroDivisionError"),
    ("0.32.0", "pp3-empty-lowmem-autofit"): _refused_with("ZeroDivisionError"),
    ("0.33.0", "pp3-empty-lowmem-override"): _refused_with("ZeroDivisionError"),
    ("0.33.0", "pp3-empty-lowmem-autofit"): _refused_with("ZeroDivisionError"),
    ("0.27.1", "pp3-empty-lowmem"): _refused(304),
    ("0.28.0", "pp3-empty-lowmem"): _refused(304),
    ("0.32.0", "pp3-empty-lowmem"): _refused(288),
    ("0.29.0", "pp3-empty-lowmem"): _refused_with("AssertionError"),
    ("0.30.0", "pp3-empty-lowmem"): _refused_with("AssertionError"),
    ("0.31.0", "pp3-empty-lowmem"): _refused_with("AssertionError"),
    ("0.33.0", "pp3-empty-lowmem"): _refused_with("ZeroDivisionError"),
    ("0.27.1", "pp3-empty"): _refused_with("group_size"),
    ("0.28.0", "pp3-empty"): _refused_with("group_size"),
    ("0.29.0", "pp3-empty"): _refused_with("AssertionError"),
    ("0.30.0", "pp3-empty"): _refused_with("AssertionError"),
    ("0.31.0", "pp3-empty"): _refused_with("AssertionError"),
    ("0.32.0", "pp3-empty"): _refused_with("ZeroDivisionError"),
    ("0.33.0", "pp3-empty"): _refused_with("ZeroDivisionError"),
    # qwen2-partwin-*: Qwen2Model's partial-window assertion fires while the model is built, after ParallelConfig's
    # world size (ws16); qnext-2l-* / q35moe-2l-pp4: set_moe_parameters on a stage of no layer, before any KV cache
    # check (the Qwen3.5-MoE wrapper's language model, Qwen3_5MoeForCausalLM, fails first); every release alike
    **{
        (v, cid): _refused_with(text)
        for v in ("0.27.1", "0.28.0", "0.29.0", "0.30.0", "0.31.0", "0.32.0", "0.33.0")
        for cid, text in (
            ("qwen2-partwin-ws16", "World size (16) is larger than the number of available GPUs (8)"),
            ("qwen2-partwin-pp2", _PARTWIN),
            ("qnext-2l-pp4", "No Qwen3Next layer found in the model.layers."),
            ("qnext-2l-pp3", "No Qwen3Next layer found in the model.layers."),
            ("q35moe-2l-pp4", "No Qwen3Next layer found in the model.layers."),
        )
    },
    # MoE model classes' set_moe_parameters on a pipeline stage of no layer (qwen3moe-2l, mixtral-2l at PP 3) or of
    # only dense layers (mlp_only_layers, first_k_dense_replace: glm4moe-2l at PP 3 too), before any KV cache check
    # (GLM-4.5V's language model is Glm4MoeForCausalLM); every release alike (Qwen3-VL-MoE's text config, naming no architectures, is refused first until 0.30.0)
    **{
        (v, cid): _refused_with(text)
        for v in ("0.27.1", "0.28.0", "0.29.0", "0.30.0", "0.31.0", "0.32.0", "0.33.0")
        for cid, text in (
            ("qwen3moe-2l-pp3", "No Qwen3MoE layer found in the model.layers."),
            ("qwen3moe-mlponly-pp2", "No Qwen3MoE layer found in the model.layers."),
            ("mixtral-2l-pp3", "No MixtralMoE layer found  in model.layers."),
            ("glm4moe-2l-pp3", "No Glm4MoE layer found in model.layers."),
            ("glm4moe-dense2-pp2", "No Glm4MoE layer found in model.layers."),
            ("glm45v-dense2-pp2", "No Glm4MoE layer found in model.layers."),
            ("qwen3moe-allmlp-pp1", "No Qwen3MoE layer found in the model.layers."),
            (
                "q3vlmoe-mlponly-pp2",
                "No model architectures are specified"
                if v in ("0.27.1", "0.28.0", "0.29.0")
                else "No Qwen3Moe layer found in the language_model.",
            ),
        )
    },
    # Qwen2-MoE (mlp_only_layers) and DeepSeek-V2 (first_k_dense_replace) build a stage of only dense layers: served
    ("0.28.0", "qwen2moe-mlponly-pp2"): _ok(16, 122070, 1953120, 4096),
    ("0.28.0", "dsv2-dense2-pp2"): _ok(16, 54253, 868048, 4096),
    # gptoss-fi-sm90: the oracle box has no flashinfer-cubin (dryboot runs with --no-flashinfer-cubin)
    ("0.27.1", "gptoss-fi-sm90"): _refused_with("attention sinks not supported"),
    ("0.28.0", "gptoss-fi-sm90"): _refused_with("attention sinks not supported"),
    ("0.29.0", "gptoss-fi-sm90"): _refused_with("attention sinks not supported"),
    ("0.30.0", "gptoss-fi-sm90"): _refused_with("attention sinks not supported"),
    ("0.31.0", "gptoss-fi-sm90"): _refused_with("attention sinks not supported"),
    ("0.32.0", "gptoss-fi-sm90"): _refused_with("attention sinks not supported"),
    ("0.33.0", "gptoss-fi-sm90"): _refused_with("attention sinks not supported"),
    # kimi-rope32-*: vLLM refuses the decode backend / the hidden-state proposer before the MLA prefill dims
    ("0.27.1", "kimi-rope32-e5m2"): _refused_with("No valid attention backend found"),
    ("0.27.1", "kimi-rope32-flex"): _refused_with("FLEX_ATTENTION"),
    ("0.27.1", "kimi-rope32-pth"): _refused_with("No valid attention backend found"),
    ("0.27.1", "kimi-rope32-int8pth"): _refused_with("No valid attention backend found"),
    ("0.27.1", "kimi-rope32-ehs"): _refused_with(
        "eagle_aux_hidden_state_layer_ids must be set in the draft model config"
    ),
    ("0.28.0", "kimi-rope32-e5m2"): _refused_with("No valid attention backend found"),
    ("0.28.0", "kimi-rope32-flex"): _refused_with("FLEX_ATTENTION"),
    ("0.28.0", "kimi-rope32-pth"): _refused_with("No valid attention backend found"),
    ("0.28.0", "kimi-rope32-int8pth"): _refused_with("No valid attention backend found"),
    ("0.28.0", "kimi-rope32-ehs"): _refused_with(
        "eagle_aux_hidden_state_layer_ids must be set in the draft model config"
    ),
    ("0.29.0", "kimi-rope32-e5m2"): _refused_with("No valid attention backend found"),
    ("0.29.0", "kimi-rope32-flex"): _refused_with("FLEX_ATTENTION"),
    ("0.29.0", "kimi-rope32-pth"): _refused_with("No valid attention backend found"),
    ("0.29.0", "kimi-rope32-int8pth"): _refused_with("No valid attention backend found"),
    ("0.29.0", "kimi-rope32-ehs"): _refused_with(
        "eagle_aux_hidden_state_layer_ids must be set in the draft model config"
    ),
    ("0.30.0", "kimi-rope32-e5m2"): _refused_with("No valid attention backend found"),
    ("0.30.0", "kimi-rope32-flex"): _refused_with("FLEX_ATTENTION"),
    ("0.30.0", "kimi-rope32-pth"): _refused_with("No valid attention backend found"),
    ("0.30.0", "kimi-rope32-int8pth"): _refused_with("No valid attention backend found"),
    ("0.30.0", "kimi-rope32-ehs"): _refused_with(
        "eagle_aux_hidden_state_layer_ids must be set in the draft model config"
    ),
    ("0.31.0", "kimi-rope32-e5m2"): _refused_with("No valid attention backend found"),
    ("0.31.0", "kimi-rope32-flex"): _refused_with("FLEX_ATTENTION"),
    ("0.31.0", "kimi-rope32-pth"): _refused_with("No valid attention backend found"),
    ("0.31.0", "kimi-rope32-int8pth"): _refused_with("No valid attention backend found"),
    ("0.31.0", "kimi-rope32-ehs"): _refused_with(
        "eagle_aux_hidden_state_layer_ids must be set in the draft model config"
    ),
    ("0.32.0", "kimi-rope32-e5m2"): _refused_with("No valid attention backend found"),
    ("0.32.0", "kimi-rope32-flex"): _refused_with("FLEX_ATTENTION"),
    ("0.32.0", "kimi-rope32-pth"): _refused_with("No valid attention backend found"),
    ("0.32.0", "kimi-rope32-int8pth"): _refused_with("No valid attention backend found"),
    ("0.32.0", "kimi-rope32-ehs"): _refused_with(
        "eagle_aux_hidden_state_layer_ids must be set in the draft model config"
    ),
    ("0.33.0", "kimi-rope32-e5m2"): _refused_with("No valid attention backend found"),
    ("0.33.0", "kimi-rope32-flex"): _refused_with("FLEX_ATTENTION"),
    ("0.33.0", "kimi-rope32-pth"): _refused_with("No valid attention backend found"),
    ("0.33.0", "kimi-rope32-int8pth"): _refused_with("No valid attention backend found"),
    ("0.33.0", "kimi-rope32-ehs"): _refused_with(
        "eagle_aux_hidden_state_layer_ids must be set in the draft model config"
    ),
    # dbk-*: the drafter's attention backend beside a named target backend (issue 37, seed 240300 case 214)
    ("0.27.1", "dbk-dm-fi"): _ok(
        560,
        9369,
        221751,
        32000,
        log=(
            "Setting attention block size to 560 tokens to ensure that attention page size is >= mamba page size.",
            "Padding mamba page size by 2.19% to ensure that mamba page size and attention page size are exactly equal.",
            "GPU KV cache size: 221,751 tokens",
            "Maximum concurrency for 32,000 tokens per request: 6.93x",
        ),
    ),
    ("0.27.1", "dbk-dm-fi-fa"): _ok(
        560,
        9369,
        221751,
        32000,
        log=(
            "Setting attention block size to 560 tokens to ensure that attention page size is >= mamba page size.",
            "Padding mamba page size by 2.19% to ensure that mamba page size and attention page size are exactly equal.",
            "GPU KV cache size: 221,751 tokens",
            "Maximum concurrency for 32,000 tokens per request: 6.93x",
        ),
    ),
    ("0.28.0", "dbk-dm-fi"): _ok(
        560,
        9369,
        126181,
        32000,
        log=(
            "Setting attention block size to 560 tokens to ensure that attention page size is >= mamba page size.",
            "Padding mamba page size by 2.19% to ensure that mamba page size and attention page size are exactly equal.",
            "GPU KV cache size: 126,181 tokens, Maximum concurrency for 32,000 tokens per request: 3.94x",
        ),
    ),
    ("0.28.0", "dbk-dm-fi-fa"): _ok(
        560,
        9369,
        126181,
        32000,
        log=(
            "Setting attention block size to 560 tokens to ensure that attention page size is >= mamba page size.",
            "Padding mamba page size by 2.19% to ensure that mamba page size and attention page size are exactly equal.",
            "GPU KV cache size: 126,181 tokens, Maximum concurrency for 32,000 tokens per request: 3.94x",
        ),
    ),
    ("0.29.0", "dbk-dm-fi"): _ok(
        560,
        9369,
        126181,
        32000,
        log=(
            "Setting attention block size to 560 tokens to ensure that attention page size is >= mamba page size.",
            "Padding mamba page size by 2.19% to ensure that mamba page size and attention page size are exactly equal.",
            "GPU KV cache size: 126,181 tokens, Maximum concurrency for 32,000 tokens per request: 3.94x",
        ),
    ),
    ("0.29.0", "dbk-dm-fi-fa"): _ok(
        560,
        9369,
        126181,
        32000,
        log=(
            "Setting attention block size to 560 tokens to ensure that attention page size is >= mamba page size.",
            "Padding mamba page size by 2.19% to ensure that mamba page size and attention page size are exactly equal.",
            "GPU KV cache size: 126,181 tokens, Maximum concurrency for 32,000 tokens per request: 3.94x",
        ),
    ),
    ("0.30.0", "dbk-dm-fi"): _ok(
        560,
        4684,
        1375119,
        32000,
        log=(
            "Setting attention block size to 560 tokens to ensure that attention page size is >= mamba page size.",
            "Padding mamba page size by 2.19% to ensure that mamba page size and attention page size are exactly equal.",
            "GPU KV cache size: 1,375,119 tokens, Maximum concurrency for 32,000 tokens per request: 42.97x",
        ),
    ),
    ("0.30.0", "dbk-dm-fi-fa"): _ok(
        560,
        4684,
        1375119,
        32000,
        log=(
            "Setting attention block size to 560 tokens to ensure that attention page size is >= mamba page size.",
            "Padding mamba page size by 2.19% to ensure that mamba page size and attention page size are exactly equal.",
            "GPU KV cache size: 1,375,119 tokens, Maximum concurrency for 32,000 tokens per request: 42.97x",
        ),
    ),
    ("0.31.0", "dbk-dm-fi"): _ok(
        560,
        9369,
        462666,
        32000,
        log=(
            "Setting attention block size to 560 tokens to ensure that attention page size is >= mamba page size.",
            "Padding mamba page size by 2.19% to ensure that mamba page size and attention page size are exactly equal.",
            "GPU KV cache size: 462,666 tokens, Maximum concurrency for 32,000 tokens per request: 14.46x",
        ),
    ),
    ("0.31.0", "dbk-dm-fi-fa"): _ok(
        560,
        9369,
        462666,
        32000,
        log=(
            "Setting attention block size to 560 tokens to ensure that attention page size is >= mamba page size.",
            "Padding mamba page size by 2.19% to ensure that mamba page size and attention page size are exactly equal.",
            "GPU KV cache size: 462,666 tokens, Maximum concurrency for 32,000 tokens per request: 14.46x",
        ),
    ),
    ("0.32.0", "dbk-dm-fi"): _ok(
        560,
        9369,
        462666,
        32000,
        log=(
            "Setting attention block size to 560 tokens to ensure that attention page size is >= mamba page size.",
            "Padding mamba page size by 2.19% to ensure that mamba page size and attention page size are exactly equal.",
            "GPU KV cache size: 462,666 tokens, Maximum concurrency for 32,000 tokens per request: 14.46x",
        ),
    ),
    ("0.32.0", "dbk-dm-fi-fa"): _ok(
        560,
        9369,
        462666,
        32000,
        log=(
            "Setting attention block size to 560 tokens to ensure that attention page size is >= mamba page size.",
            "Padding mamba page size by 2.19% to ensure that mamba page size and attention page size are exactly equal.",
            "GPU KV cache size: 462,666 tokens, Maximum concurrency for 32,000 tokens per request: 14.46x",
        ),
    ),
    ("0.33.0", "dbk-dm-fi"): _ok(
        560,
        9369,
        462666,
        32000,
        log=(
            "Setting attention block size to 560 tokens to ensure that attention page size is >= mamba page size.",
            "Padding mamba page size by 2.19% to ensure that mamba page size and attention page size are exactly equal.",
            "GPU KV cache size: 462,666 tokens, Maximum concurrency for 32,000 tokens per request: 14.46x",
        ),
    ),
    ("0.33.0", "dbk-dm-fi-fa"): _ok(
        560,
        9369,
        462666,
        32000,
        log=(
            "Setting attention block size to 560 tokens to ensure that attention page size is >= mamba page size.",
            "Padding mamba page size by 2.19% to ensure that mamba page size and attention page size are exactly equal.",
            "GPU KV cache size: 462,666 tokens, Maximum concurrency for 32,000 tokens per request: 14.46x",
        ),
    ),
    ("0.27.1", "dbk-dflash-fi"): _ok(
        576,
        9108,
        1408000,
        32000,
        log=(
            "Setting attention block size to 576 tokens to ensure that attention page size is >= mamba page size.",
            "Padding mamba page size by 1.77% to ensure that mamba page size and attention page size are exactly equal.",
            "GPU KV cache size: 1,408,000 tokens",
            "Maximum concurrency for 32,000 tokens per request: 44.00x",
        ),
    ),
    ("0.27.1", "dbk-dflash"): _ok(
        576,
        9108,
        1408000,
        32000,
        log=(
            "Setting attention block size to 576 tokens to ensure that attention page size is >= mamba page size.",
            "Padding mamba page size by 1.77% to ensure that mamba page size and attention page size are exactly equal.",
            "GPU KV cache size: 1,408,000 tokens",
            "Maximum concurrency for 32,000 tokens per request: 44.00x",
        ),
    ),
    ("0.28.0", "dbk-dflash-fi"): _ok(
        576,
        9108,
        1408000,
        32000,
        log=(
            "Setting attention block size to 576 tokens to ensure that attention page size is >= mamba page size.",
            "Padding mamba page size by 1.77% to ensure that mamba page size and attention page size are exactly equal.",
            "GPU KV cache size: 1,408,000 tokens, Maximum concurrency for 32,000 tokens per request: 44.00x",
        ),
    ),
    ("0.28.0", "dbk-dflash"): _ok(
        576,
        9108,
        1408000,
        32000,
        log=(
            "Setting attention block size to 576 tokens to ensure that attention page size is >= mamba page size.",
            "Padding mamba page size by 1.77% to ensure that mamba page size and attention page size are exactly equal.",
            "GPU KV cache size: 1,408,000 tokens, Maximum concurrency for 32,000 tokens per request: 44.00x",
        ),
    ),
    ("0.29.0", "dbk-dflash-fi"): _ok(
        576,
        9108,
        1408000,
        32000,
        log=(
            "Setting attention block size to 576 tokens to ensure that attention page size is >= mamba page size.",
            "Padding mamba page size by 1.77% to ensure that mamba page size and attention page size are exactly equal.",
            "GPU KV cache size: 1,408,000 tokens, Maximum concurrency for 32,000 tokens per request: 44.00x",
        ),
    ),
    ("0.29.0", "dbk-dflash"): _ok(
        576,
        9108,
        1408000,
        32000,
        log=(
            "Setting attention block size to 576 tokens to ensure that attention page size is >= mamba page size.",
            "Padding mamba page size by 1.77% to ensure that mamba page size and attention page size are exactly equal.",
            "GPU KV cache size: 1,408,000 tokens, Maximum concurrency for 32,000 tokens per request: 44.00x",
        ),
    ),
    ("0.30.0", "dbk-dflash-fi"): _ok(
        576,
        4554,
        1267200,
        32000,
        log=(
            "Setting attention block size to 576 tokens to ensure that attention page size is >= mamba page size.",
            "Padding mamba page size by 1.77% to ensure that mamba page size and attention page size are exactly equal.",
            "GPU KV cache size: 1,267,200 tokens, Maximum concurrency for 32,000 tokens per request: 39.60x",
        ),
    ),
    ("0.30.0", "dbk-dflash"): _ok(
        576,
        4554,
        1267200,
        32000,
        log=(
            "Setting attention block size to 576 tokens to ensure that attention page size is >= mamba page size.",
            "Padding mamba page size by 1.77% to ensure that mamba page size and attention page size are exactly equal.",
            "GPU KV cache size: 1,267,200 tokens, Maximum concurrency for 32,000 tokens per request: 39.60x",
        ),
    ),
    ("0.31.0", "dbk-dflash-fi"): _ok(
        576,
        4554,
        1267200,
        32000,
        log=(
            "Setting attention block size to 576 tokens to ensure that attention page size is >= mamba page size.",
            "Padding mamba page size by 1.77% to ensure that mamba page size and attention page size are exactly equal.",
            "GPU KV cache size: 1,267,200 tokens, Maximum concurrency for 32,000 tokens per request: 39.60x",
        ),
    ),
    ("0.31.0", "dbk-dflash"): _ok(
        576,
        4554,
        1267200,
        32000,
        log=(
            "Setting attention block size to 576 tokens to ensure that attention page size is >= mamba page size.",
            "Padding mamba page size by 1.77% to ensure that mamba page size and attention page size are exactly equal.",
            "GPU KV cache size: 1,267,200 tokens, Maximum concurrency for 32,000 tokens per request: 39.60x",
        ),
    ),
    ("0.32.0", "dbk-dflash-fi"): _ok(
        576,
        4554,
        1267200,
        32000,
        log=(
            "Setting attention block size to 576 tokens to ensure that attention page size is >= mamba page size.",
            "Padding mamba page size by 1.77% to ensure that mamba page size and attention page size are exactly equal.",
            "GPU KV cache size: 1,267,200 tokens, Maximum concurrency for 32,000 tokens per request: 39.60x",
        ),
    ),
    ("0.32.0", "dbk-dflash"): _ok(
        576,
        4554,
        1267200,
        32000,
        log=(
            "Setting attention block size to 576 tokens to ensure that attention page size is >= mamba page size.",
            "Padding mamba page size by 1.77% to ensure that mamba page size and attention page size are exactly equal.",
            "GPU KV cache size: 1,267,200 tokens, Maximum concurrency for 32,000 tokens per request: 39.60x",
        ),
    ),
    ("0.33.0", "dbk-dflash-fi"): _ok(
        576,
        4554,
        1267200,
        32000,
        log=(
            "Setting attention block size to 576 tokens to ensure that attention page size is >= mamba page size.",
            "Padding mamba page size by 1.77% to ensure that mamba page size and attention page size are exactly equal.",
            "GPU KV cache size: 1,267,200 tokens, Maximum concurrency for 32,000 tokens per request: 39.60x",
        ),
    ),
    ("0.33.0", "dbk-dflash"): _ok(
        576,
        4554,
        1267200,
        32000,
        log=(
            "Setting attention block size to 576 tokens to ensure that attention page size is >= mamba page size.",
            "Padding mamba page size by 1.77% to ensure that mamba page size and attention page size are exactly equal.",
            "GPU KV cache size: 1,267,200 tokens, Maximum concurrency for 32,000 tokens per request: 39.60x",
        ),
    ),
    ("0.27.1", "dbk-e3-fi"): _ok(
        560,
        9369,
        245141,
        32000,
        log=(
            "Setting attention block size to 560 tokens to ensure that attention page size is >= mamba page size.",
            "Padding mamba page size by 2.19% to ensure that mamba page size and attention page size are exactly equal.",
            "GPU KV cache size: 245,141 tokens",
            "Maximum concurrency for 32,000 tokens per request: 7.66x",
        ),
    ),
    ("0.27.1", "dbk-e3-fi-fa"): _ok(
        560,
        9369,
        245141,
        32000,
        log=(
            "Setting attention block size to 560 tokens to ensure that attention page size is >= mamba page size.",
            "Padding mamba page size by 2.19% to ensure that mamba page size and attention page size are exactly equal.",
            "GPU KV cache size: 245,141 tokens",
            "Maximum concurrency for 32,000 tokens per request: 7.66x",
        ),
    ),
    ("0.27.1", "dbk-e3-fi-kv"): _ok(
        560,
        9369,
        245141,
        32000,
        log=(
            "Setting attention block size to 560 tokens to ensure that attention page size is >= mamba page size.",
            "Padding mamba page size by 2.19% to ensure that mamba page size and attention page size are exactly equal.",
            "GPU KV cache size: 245,141 tokens",
            "Maximum concurrency for 32,000 tokens per request: 7.66x",
        ),
    ),
    ("0.28.0", "dbk-e3-fi"): _ok(
        560,
        9369,
        245141,
        32000,
        log=(
            "Setting attention block size to 560 tokens to ensure that attention page size is >= mamba page size.",
            "Padding mamba page size by 2.19% to ensure that mamba page size and attention page size are exactly equal.",
            "GPU KV cache size: 245,141 tokens, Maximum concurrency for 32,000 tokens per request: 7.66x",
        ),
    ),
    ("0.28.0", "dbk-e3-fi-fa"): _ok(
        560,
        9369,
        245141,
        32000,
        log=(
            "Setting attention block size to 560 tokens to ensure that attention page size is >= mamba page size.",
            "Padding mamba page size by 2.19% to ensure that mamba page size and attention page size are exactly equal.",
            "GPU KV cache size: 245,141 tokens, Maximum concurrency for 32,000 tokens per request: 7.66x",
        ),
    ),
    ("0.28.0", "dbk-e3-fi-kv"): _ok(
        560,
        9369,
        245141,
        32000,
        log=(
            "Setting attention block size to 560 tokens to ensure that attention page size is >= mamba page size.",
            "Padding mamba page size by 2.19% to ensure that mamba page size and attention page size are exactly equal.",
            "GPU KV cache size: 245,141 tokens, Maximum concurrency for 32,000 tokens per request: 7.66x",
        ),
    ),
    ("0.29.0", "dbk-e3-fi"): _ok(
        560,
        9369,
        245141,
        32000,
        log=(
            "Setting attention block size to 560 tokens to ensure that attention page size is >= mamba page size.",
            "Padding mamba page size by 2.19% to ensure that mamba page size and attention page size are exactly equal.",
            "GPU KV cache size: 245,141 tokens, Maximum concurrency for 32,000 tokens per request: 7.66x",
        ),
    ),
    ("0.29.0", "dbk-e3-fi-fa"): _ok(
        560,
        9369,
        245141,
        32000,
        log=(
            "Setting attention block size to 560 tokens to ensure that attention page size is >= mamba page size.",
            "Padding mamba page size by 2.19% to ensure that mamba page size and attention page size are exactly equal.",
            "GPU KV cache size: 245,141 tokens, Maximum concurrency for 32,000 tokens per request: 7.66x",
        ),
    ),
    ("0.29.0", "dbk-e3-fi-kv"): _ok(
        560,
        9369,
        245141,
        32000,
        log=(
            "Setting attention block size to 560 tokens to ensure that attention page size is >= mamba page size.",
            "Padding mamba page size by 2.19% to ensure that mamba page size and attention page size are exactly equal.",
            "GPU KV cache size: 245,141 tokens, Maximum concurrency for 32,000 tokens per request: 7.66x",
        ),
    ),
    ("0.30.0", "dbk-e3-fi"): _ok(
        560,
        9369,
        835119,
        32000,
        log=(
            "Setting attention block size to 560 tokens to ensure that attention page size is >= mamba page size.",
            "Padding mamba page size by 2.19% to ensure that mamba page size and attention page size are exactly equal.",
            "GPU KV cache size: 835,119 tokens, Maximum concurrency for 32,000 tokens per request: 26.10x",
        ),
    ),
    ("0.30.0", "dbk-e3-fi-fa"): _ok(
        560,
        4684,
        1998506,
        32000,
        log=(
            "Setting attention block size to 560 tokens to ensure that attention page size is >= mamba page size.",
            "Padding mamba page size by 2.19% to ensure that mamba page size and attention page size are exactly equal.",
            "GPU KV cache size: 1,998,506 tokens, Maximum concurrency for 32,000 tokens per request: 62.45x",
        ),
    ),
    ("0.30.0", "dbk-e3-fi-kv"): _ok(
        560,
        9369,
        835119,
        32000,
        log=(
            "Setting attention block size to 560 tokens to ensure that attention page size is >= mamba page size.",
            "Padding mamba page size by 2.19% to ensure that mamba page size and attention page size are exactly equal.",
            "GPU KV cache size: 835,119 tokens, Maximum concurrency for 32,000 tokens per request: 26.10x",
        ),
    ),
    ("0.31.0", "dbk-e3-fi"): _ok(
        560,
        9369,
        835119,
        32000,
        log=(
            "Setting attention block size to 560 tokens to ensure that attention page size is >= mamba page size.",
            "Padding mamba page size by 2.19% to ensure that mamba page size and attention page size are exactly equal.",
            "GPU KV cache size: 835,119 tokens, Maximum concurrency for 32,000 tokens per request: 26.10x",
        ),
    ),
    ("0.31.0", "dbk-e3-fi-fa"): _ok(
        560,
        4684,
        1998506,
        32000,
        log=(
            "Setting attention block size to 560 tokens to ensure that attention page size is >= mamba page size.",
            "Padding mamba page size by 2.19% to ensure that mamba page size and attention page size are exactly equal.",
            "GPU KV cache size: 1,998,506 tokens, Maximum concurrency for 32,000 tokens per request: 62.45x",
        ),
    ),
    ("0.31.0", "dbk-e3-fi-kv"): _ok(
        560,
        9369,
        835119,
        32000,
        log=(
            "Setting attention block size to 560 tokens to ensure that attention page size is >= mamba page size.",
            "Padding mamba page size by 2.19% to ensure that mamba page size and attention page size are exactly equal.",
            "GPU KV cache size: 835,119 tokens, Maximum concurrency for 32,000 tokens per request: 26.10x",
        ),
    ),
    ("0.32.0", "dbk-e3-fi"): _ok(
        560,
        9369,
        835119,
        32000,
        log=(
            "Setting attention block size to 560 tokens to ensure that attention page size is >= mamba page size.",
            "Padding mamba page size by 2.19% to ensure that mamba page size and attention page size are exactly equal.",
            "GPU KV cache size: 835,119 tokens, Maximum concurrency for 32,000 tokens per request: 26.10x",
        ),
    ),
    ("0.32.0", "dbk-e3-fi-fa"): _ok(
        560,
        4684,
        1998506,
        32000,
        log=(
            "Setting attention block size to 560 tokens to ensure that attention page size is >= mamba page size.",
            "Padding mamba page size by 2.19% to ensure that mamba page size and attention page size are exactly equal.",
            "GPU KV cache size: 1,998,506 tokens, Maximum concurrency for 32,000 tokens per request: 62.45x",
        ),
    ),
    ("0.32.0", "dbk-e3-fi-kv"): _ok(
        560,
        9369,
        835119,
        32000,
        log=(
            "Setting attention block size to 560 tokens to ensure that attention page size is >= mamba page size.",
            "Padding mamba page size by 2.19% to ensure that mamba page size and attention page size are exactly equal.",
            "GPU KV cache size: 835,119 tokens, Maximum concurrency for 32,000 tokens per request: 26.10x",
        ),
    ),
    ("0.33.0", "dbk-e3-fi"): _ok(
        560,
        9369,
        835119,
        32000,
        log=(
            "Setting attention block size to 560 tokens to ensure that attention page size is >= mamba page size.",
            "Padding mamba page size by 2.19% to ensure that mamba page size and attention page size are exactly equal.",
            "GPU KV cache size: 835,119 tokens, Maximum concurrency for 32,000 tokens per request: 26.10x",
        ),
    ),
    ("0.33.0", "dbk-e3-fi-fa"): _ok(
        560,
        4684,
        1998506,
        32000,
        log=(
            "Setting attention block size to 560 tokens to ensure that attention page size is >= mamba page size.",
            "Padding mamba page size by 2.19% to ensure that mamba page size and attention page size are exactly equal.",
            "GPU KV cache size: 1,998,506 tokens, Maximum concurrency for 32,000 tokens per request: 62.45x",
        ),
    ),
    ("0.33.0", "dbk-e3-fi-kv"): _ok(
        560,
        9369,
        835119,
        32000,
        log=(
            "Setting attention block size to 560 tokens to ensure that attention page size is >= mamba page size.",
            "Padding mamba page size by 2.19% to ensure that mamba page size and attention page size are exactly equal.",
            "GPU KV cache size: 835,119 tokens, Maximum concurrency for 32,000 tokens per request: 26.10x",
        ),
    ),
    ("0.28.0", "wrap-cosmos3-edge"): _ok(
        16,
        24414,
        390624,
        8192,
        ("GPU KV cache size: 390,624 tokens, Maximum concurrency for 8,192 tokens per request: 47.68x",),
    ),
    ("0.33.0", "wrap-cosmos3-edge"): _ok(
        16,
        24414,
        390624,
        8192,
        ("GPU KV cache size: 390,624 tokens, Maximum concurrency for 8,192 tokens per request: 47.68x",),
    ),
    ("0.28.0", "wrap-diffusion-gemma"): _ok(
        16,
        22888,
        66465,
        8192,
        ("GPU KV cache size: 66,465 tokens, Maximum concurrency for 8,192 tokens per request: 8.11x",),
    ),
    ("0.33.0", "wrap-diffusion-gemma"): _ok(
        16,
        22888,
        66465,
        8192,
        (
            "GPU KV cache size: 66,465 tokens, Maximum concurrency for 8,192 tokens per request: 8.11x",
            "kv lcm block sizes 32",
        ),
    ),
    ("0.28.0", "wrap-hunyuan-vl"): _ok(
        16,
        1525,
        24400,
        8192,
        ("GPU KV cache size: 24,400 tokens, Maximum concurrency for 8,192 tokens per request: 2.98x",),
    ),
    # DeepSeek-V2 without MLA: transformers' DeepseekV2Config takes no null kv_lora_rank; the
    # DeepSeek-OCR wrapper's text config class does (DeepseekAttention, 4 KV heads of 64 over TP 8)
    **{
        (v, cid): {
            "refused": True,
            "vllm": "StrictDataclassFieldValidationError: Validation error for field 'kv_lora_rank':\n    TypeError: Field 'kv_lora_rank' expected int, got NoneType (value: None)",
        }
        for v in ("0.28.0", "0.33.0")
        for cid in ("dsv2-mha", "dsv2-mha-tp2-fp8")
    },
    ("0.28.0", "dsocr-mha-tp8"): _ok(
        16,
        12207,
        195312,
        8192,
        (
            "Auto-fit max_model_len: full model context length 8192 fits in available GPU memory",
            "GPU KV cache size: 195,312 tokens, Maximum concurrency for 8,192 tokens per request: 23.84x",
        ),
    ),
    ("0.33.0", "dsocr-mha-tp8"): _ok(
        16,
        12207,
        195312,
        8192,
        (
            "Auto-fit max_model_len: full model context length 8192 fits in available KV cache memory (0.09 GiB GPU)",
            "GPU KV cache size: 195,312 tokens, Maximum concurrency for 8,192 tokens per request: 23.84x",
        ),
    ),
    ("0.33.0", "wrap-gemma4-unified"): _ok(
        16,
        22888,
        66465,
        8192,
        (
            "GPU KV cache size: 66,465 tokens, Maximum concurrency for 8,192 tokens per request: 8.11x",
            "kv lcm block sizes 32",
        ),
    ),
    ("0.28.0", "wrap-gemma4-unified"): _ok(
        16,
        22888,
        66465,
        8192,
        ("GPU KV cache size: 66,465 tokens, Maximum concurrency for 8,192 tokens per request: 8.11x",),
    ),
    ("0.28.0", "wrap-mistral3"): _ok(
        16,
        6103,
        97648,
        8192,
        ("GPU KV cache size: 97,648 tokens, Maximum concurrency for 8,192 tokens per request: 11.92x",),
    ),
    ("0.28.0", "wrap-mistral3-tp2-fp8"): _ok(
        16,
        16276,
        260416,
        16384,
        ("GPU KV cache size: 260,416 tokens, Maximum concurrency for 16,384 tokens per request: 15.89x",),
    ),
    ("0.28.0", "wrap-lightonocr"): _ok(
        16,
        3051,
        48816,
        8192,
        ("GPU KV cache size: 48,816 tokens, Maximum concurrency for 8,192 tokens per request: 5.96x",),
    ),
    ("0.28.0", "wrap-llava-onevision"): _ok(
        16,
        16276,
        260416,
        16384,
        ("GPU KV cache size: 260,416 tokens, Maximum concurrency for 16,384 tokens per request: 15.89x",),
    ),
    ("0.28.0", "wrap-llava-next-video"): _ok(
        16,
        3051,
        48816,
        4096,
        ("GPU KV cache size: 48,816 tokens, Maximum concurrency for 4,096 tokens per request: 11.92x",),
    ),
    ("0.28.0", "wrap-step3-vl"): _ok(
        16,
        12207,
        195312,
        8192,
        ("GPU KV cache size: 195,312 tokens, Maximum concurrency for 8,192 tokens per request: 23.84x",),
    ),
    ("0.28.0", "wrap-granite4-vision"): _ok(
        16,
        48828,
        781248,
        8192,
        ("GPU KV cache size: 781,248 tokens, Maximum concurrency for 8,192 tokens per request: 95.37x",),
    ),
    ("0.33.0", "wrap-mistral3"): _ok(
        16,
        6103,
        97648,
        8192,
        ("GPU KV cache size: 97,648 tokens, Maximum concurrency for 8,192 tokens per request: 11.92x",),
    ),
    ("0.33.0", "wrap-mistral3-tp2-fp8"): _ok(
        16,
        16276,
        260416,
        16384,
        ("GPU KV cache size: 260,416 tokens, Maximum concurrency for 16,384 tokens per request: 15.89x",),
    ),
    ("0.33.0", "wrap-lightonocr"): _ok(
        16,
        3051,
        48816,
        8192,
        ("GPU KV cache size: 48,816 tokens, Maximum concurrency for 8,192 tokens per request: 5.96x",),
    ),
    ("0.33.0", "wrap-llava-onevision"): _ok(
        16,
        16276,
        260416,
        16384,
        ("GPU KV cache size: 260,416 tokens, Maximum concurrency for 16,384 tokens per request: 15.89x",),
    ),
    ("0.33.0", "wrap-llava-next-video"): _ok(
        16,
        3051,
        48816,
        4096,
        ("GPU KV cache size: 48,816 tokens, Maximum concurrency for 4,096 tokens per request: 11.92x",),
    ),
    ("0.33.0", "wrap-step3-vl"): _ok(
        16,
        12207,
        195312,
        8192,
        ("GPU KV cache size: 195,312 tokens, Maximum concurrency for 8,192 tokens per request: 23.84x",),
    ),
    ("0.33.0", "wrap-granite4-vision"): _ok(
        16,
        48828,
        781248,
        8192,
        ("GPU KV cache size: 781,248 tokens, Maximum concurrency for 8,192 tokens per request: 95.37x",),
    ),
    ("0.28.0", "llava-next"): _ok(
        16,
        12207,
        195312,
        8192,
        ("GPU KV cache size: 195,312 tokens, Maximum concurrency for 8,192 tokens per request: 23.84x",),
    ),
    ("0.28.0", "llava-next-tp2-fp8"): _ok(
        16,
        32552,
        520832,
        16384,
        ("GPU KV cache size: 520,832 tokens, Maximum concurrency for 16,384 tokens per request: 31.79x",),
    ),
    ("0.33.0", "llava-next"): _ok(
        16,
        12207,
        195312,
        8192,
        ("GPU KV cache size: 195,312 tokens, Maximum concurrency for 8,192 tokens per request: 23.84x",),
    ),
    ("0.33.0", "llava-next-tp2-fp8"): _ok(
        16,
        32552,
        520832,
        16384,
        ("GPU KV cache size: 520,832 tokens, Maximum concurrency for 16,384 tokens per request: 31.79x",),
    ),
    ("0.27.1", "nullblk-est"): _refused(160),
    ("0.27.1", "nullblk-admit"): _ok(
        16,
        100,
        1600,
        1600,
        log=("GPU KV cache size: 1,600 tokens", "Maximum concurrency for 1,600 tokens per request: 1.00x"),
    ),
    ("0.27.1", "nullblk-autofit"): _ok(16, 100, 1600, 1600),
    ("0.27.1", "gdn64-block"): _ok(784, 311, 181979, 8192),
    ("0.27.1", "gdn64-pages"): _ok(832, 293, 184635, 8192),
    ("0.27.1", "mcmode-align-noprefix"): _ok(784, 311, 181979, 8192),
    ("0.27.1", "fa4fp8"): _ok(16, 122070, 533830, 32768),
    ("0.27.1", "nemo-prefix"): _ok(4224, 23, 13458, 8192),
    ("0.27.1", "nemo-default"): _ok(4128, 23, 23552, 8192),
    ("0.29.0", "nullblk-est"): _refused(144),
    ("0.29.0", "nullblk-admit"): _refused(1584),
    ("0.29.0", "nullblk-autofit"): _ok(16, 100, 1600, 1584),
    ("0.29.0", "gdn64-block"): _ok(784, 311, 149865, 8192),
    ("0.29.0", "gdn64-pages"): _ok(832, 293, 150016, 8192),
    ("0.29.0", "mcmode-align-noprefix"): _ok(784, 311, 181979, 8192),
    ("0.29.0", "fa4fp8"): _ok(16, 122070, 533830, 32768),
    ("0.29.0", "nemo-prefix"): _ok(4128, 23, 13458, 8192),
    ("0.29.0", "nemo-default"): _ok(4128, 23, 13458, 8192),
    ("0.30.0", "nullblk-est"): _refused(144),
    ("0.30.0", "nullblk-admit"): _refused(1584),
    ("0.30.0", "gdn64-block"): _ok(784, 311, 149865, 8192),
    ("0.30.0", "gdn64-pages"): _ok(832, 293, 150016, 8192),
    ("0.30.0", "mcmode-align-noprefix"): _ok(784, 311, 181979, 8192),
    ("0.30.0", "fa4fp8"): _ok(16, 122070, 533830, 32768),
    ("0.30.0", "nemo-prefix"): _ok(4128, 23, 13458, 8192),
    ("0.30.0", "nemo-default"): _ok(4128, 23, 13458, 8192),
    ("0.31.0", "nullblk-est"): _refused(144),
    ("0.31.0", "nullblk-admit"): _refused(1584),
    ("0.31.0", "gdn64-block"): _ok(784, 311, 149865, 8192),
    ("0.31.0", "gdn64-pages"): _ok(832, 293, 150016, 8192),
    ("0.31.0", "mcmode-align-noprefix"): _ok(784, 311, 181979, 8192),
    ("0.31.0", "fa4fp8"): _ok(64, 30517, 532754, 32768),
    ("0.31.0", "nemo-prefix"): _ok(4128, 23, 13458, 8192),
    ("0.31.0", "nemo-default"): _ok(4128, 23, 13458, 8192),
    ("0.32.0", "nullblk-est"): _refused(144),
    ("0.32.0", "nullblk-admit"): _refused(1584),
    ("0.32.0", "gdn64-block"): _ok(784, 311, 149865, 8192),
    ("0.32.0", "gdn64-pages"): _ok(832, 293, 150016, 8192),
    ("0.32.0", "fa4fp8"): _ok(64, 30517, 532754, 32768),
    ("0.32.0", "nemo-prefix"): _ok(4128, 23, 9420, 8192),
    ("0.32.0", "nemo-default"): _ok(4128, 23, 9420, 8192),
    ("0.33.0", "nullblk-est"): _refused(144),
    ("0.33.0", "nullblk-admit"): _refused(1584),
    ("0.33.0", "gdn64-block"): _ok(832, 293, 126329, 8192),
    ("0.33.0", "gdn64-pages"): _ok(832, 293, 126329, 8192),
    ("0.33.0", "fa4fp8"): _ok(64, 30517, 532754, 32768),
    ("0.33.0", "nemo-prefix"): _ok(4128, 23, 9420, 8192),
    ("0.33.0", "nemo-default"): _ok(4128, 23, 9420, 8192),
    ("0.27.1", "async-sw"): _ok(16, 5086, 64198, 8192),
    ("0.27.1", "f16kv"): _ok(16, 100, 1600, 1024),
    ("0.27.1", "dflash-slots"): _refused_with("max_num_scheduled_tokens is set to 0 based on the speculative decoding"),
    ("0.27.1", "g4keqv"): _refused_with("'>=' not supported between instances of 'NoneType' and 'int'"),
    ("0.27.1", "ref-fast15"): _refused_with("max_num_scheduled_tokens is set to -1536 based on the speculative"),
    ("0.28.0", "dflash-slots"): _ok(16, 762, 3012, 1024),
    ("0.28.0", "mla-pad"): _ok(16, 6103, 48728, 4096),
    ("0.29.0", "mla-pad"): _ok(16, 4982, 79712, 4096),
    ("0.33.0", "mla-pad"): _ok(16, 4982, 79712, 4096),
    ("0.32.0", "gdn2l-pp-mtp"): _ok(16, 8320, 1703936, 4096),
    ("0.33.0", "gdn2l-pp-mtp"): _ok(16, 8320, 1622796, 4096),
    ("0.32.0", "gdn64-pp2"): _ok(784, 622, 299730, 8192),
    ("0.33.0", "gdn64-pp2"): _ok(832, 586, 252658, 8192),
    ("0.28.0", "bailing-pth-int4"): _ok(256, 30840, 3460839, 8192),
    ("0.33.0", "bailing-pth-int4"): _ok(256, 30840, 3460839, 8192),
    ("0.28.0", "bailing-pth-fp8"): _ok(128, 29776, 441893, 1024),
    ("0.33.0", "bailing-pth-fp8"): _ok(128, 7669, 604081, 1024),
    # 0.27.1 has no slot for DFlash's drafting tokens at 2,048 batched tokens
    ("0.27.1", "mla-pad"): _refused_with("max_num_scheduled_tokens is set to 0 based on the speculative decoding"),
    ("0.27.1", "mla-pad-bs64"): _refused_with("max_num_scheduled_tokens is set to 0 based on the speculative decoding"),
    ("0.27.1", "mla-pad-tight"): _refused_with(
        "max_num_scheduled_tokens is set to 0 based on the speculative decoding"
    ),
    ("0.30.0", "mla-pad"): _ok(16, 4982, 79712, 4096),
    ("0.31.0", "mla-pad"): _ok(16, 4982, 79712, 4096),
    ("0.32.0", "mla-pad"): _ok(16, 4982, 79712, 4096),
    # 0.28.0 pads MLA (its backend indexes by block stride) and so does 0.29.0 at block 64; 0.30+ fall
    # back to full allocation there too; a whole max_model_len of full-attention pages needs more
    ("0.28.0", "mla-pad-bs64"): _ok(64, 5425, 69223, 4096),
    ("0.29.0", "mla-pad-bs64"): _ok(64, 5425, 69223, 4096),
    ("0.30.0", "mla-pad-bs64"): _ok(64, 1245, 79680, 4096),
    ("0.31.0", "mla-pad-bs64"): _ok(64, 1245, 79680, 4096),
    ("0.32.0", "mla-pad-bs64"): _ok(64, 1245, 79680, 4096),
    ("0.33.0", "mla-pad-bs64"): _ok(64, 1245, 79680, 4096),
    ("0.28.0", "mla-pad-tight"): _refused(8480),
    ("0.29.0", "mla-pad-tight"): _refused(11936),
    ("0.30.0", "mla-pad-tight"): _refused(11936),
    ("0.31.0", "mla-pad-tight"): _refused(11936),
    ("0.32.0", "mla-pad-tight"): _refused(11936),
    ("0.33.0", "mla-pad-tight"): _refused(11936),
    ("0.29.0", "sw-start"): _ok(2128, 657, 7601, 2048),
    ("0.29.0", "mcmode-all"): _ok(784, 311, 149865, 8192),
    ("0.30.0", "sw-start"): _ok(2128, 328, 13434, 2048),
    ("0.30.0", "mcmode-all"): _ok(784, 311, 149865, 8192),
    ("0.32.0", "mcmode-all"): _refused_with("invalid choice: 'all' (choose from 'align', 'none')"),
    # upstream 0.28.0 (no deployment patches): the request does not fit, but the config is accepted
    ("0.28.0", "ref-fast15"): _refused(46080),
    ("0.28.0", "g4keqv"): _ok(16, 7629, 69286, 4096),
    ("0.27.1", "qnext2"): _ok(2144, 910, 931840, 8192),
    ("0.28.0", "async-sw"): _ok(16, 5086, 64198, 8192),
    ("0.28.0", "pp-mtp"): _refused_with("Pipeline parallelism is not supported for this model"),
    # 0.27.1: the hidden-state block is the tokens that fit the common page (7 here)
    ("0.27.1", "ehs-block"): _ok(16, 27846, 103877, 8192),
    ("0.27.1", "dtype-4over6"): _refused_with("invalid choice: 'nvfp4_4over6'"),
    # LFM2's ShortConv state gains the speculative rows in 0.29, its alignment does not: AssertionError
    ("0.28.0", "lfm2-spec"): _ok(16, 2322321, 37133927, 128000),
    ("0.29.0", "lfm2-spec"): _refused_as(
        "AssertionError: ",
        "v1/kv_cache_interface.py:879 MambaSpec.page_size_bytes: assert self.page_size_padded >= page_size",
    ),
    # FlashInfer's SM90 nvfp4 path (0.32+); 0.28.0 finds no backend
    ("0.28.0", "nvfp4-fi"): _refused_with("No valid attention backend"),
    ("0.33.0", "nvfp4-fi"): _ok(16, 11338802, 181420832, 131072),
    # Granite-4 aligns to the state with its speculative rows from 0.32; 0.28.0 asserts (AssertionError)
    ("0.28.0", "granite-spec"): _refused_as(
        "AssertionError: ",
        "v1/kv_cache_interface.py:683 MambaSpec.page_size_bytes: assert self.page_size_padded >= page_size",
    ),
    ("0.33.0", "granite-spec"): _ok(1136, 64, 2184, 1024),
    ("0.30.0", "pp-mtp"): _ok(16, 3487, 510098, 4096),
    # gpt-oss (MoE) stays on the V1 runner in 0.28 (PP batches in flight), V2 from 0.29 (PP + 1)
    ("0.28.0", "pp-async-sw"): _ok(16, 10172, 107244, 8192),
    ("0.30.0", "pp-async-sw"): _ok(16, 10172, 92076, 8192),
    # LFM2 with a hidden-state cache wider than the common page: 0.27.1-0.29.0 assert as "ehs-wide" does; from
    # 0.30 the attention page is scaled for it and the ShortConv page is not, so the pages are mixed, which the
    # default layout cannot express
    ("0.28.0", "qwen2-nokv16"): _refused_with("num_heads (16) is not divisible by num_kv_heads (32)"),
    ("0.28.0", "qwen2-nokv64"): _ok(16, 3814, 61024, 4096),
    ("0.28.0", "qwen35moe-nokv"): _ok(1568, 155, 70542, 4096),
    ("0.33.0", "qwen2-nokv16"): _refused_with("num_heads (16) is not divisible by num_kv_heads (32)"),
    ("0.33.0", "qwen2-nokv64"): _ok(16, 3814, 61024, 4096),
    ("0.33.0", "qwen35moe-nokv"): _ok(1600, 152, 51882, 4096),
    ("0.27.1", "qwen2-nokv16"): _refused_with("num_heads (16) is not divisible by num_kv_heads (32)"),
    ("0.27.1", "qwen2-nokv64"): _ok(16, 3814, 61024, 4096),
    ("0.27.1", "qwen35moe-nokv"): _ok(1568, 155, 105813, 4096),
    ("0.30.0", "qwen2-nokv16"): _refused_with("num_heads (16) is not divisible by num_kv_heads (32)"),
    ("0.30.0", "qwen2-nokv64"): _ok(16, 3814, 61024, 4096),
    ("0.30.0", "qwen35moe-nokv"): _ok(1568, 155, 70542, 4096),
    ("0.27.1", "nemotronh-nogroups"): _ok(2096, 465, 634880, 4096),
    ("0.28.0", "ultravox-toplevel"): _ok(16, 40690, 651040, 2048),
    ("0.33.0", "ultravox-toplevel"): _ok(16, 40690, 651040, 2048),
    ("0.27.1", "ultravox-toplevel"): _ok(16, 40690, 651040, 2048),
    ("0.31.0", "ultravox-toplevel"): _ok(16, 40690, 651040, 2048),
    ("0.27.1", "afmoe-nokv"): _ok(16, 30517, 121711, 4096),
    ("0.27.1", "cohere2moe-nokv"): _ok(16, 30517, 121711, 4096),
    ("0.28.0", "afmoe-nokv"): _ok(16, 30517, 121711, 4096),
    ("0.28.0", "cohere2moe-nokv"): _ok(16, 30517, 121711, 4096),
    ("0.33.0", "afmoe-nokv"): _ok(16, 30517, 121711, 4096),
    ("0.33.0", "cohere2moe-nokv"): _ok(16, 30517, 121711, 4096),
    ("0.28.0", "nemotronh-nogroups"): _ok(2096, 465, 476160, 4096),
    ("0.31.0", "nemotronh-nogroups"): _ok(2096, 465, 476160, 4096),
    ("0.32.0", "nemotronh-nogroups"): _ok(2096, 465, 380928, 4096),
    ("0.33.0", "nemotronh-nogroups"): _ok(2096, 465, 380928, 4096),
    ("0.27.1", "mamba2-autofit-pp"): _refused_with("max_model_len must be a positive integer, got int: -1"),
    ("0.28.0", "mamba2-autofit-pp"): _refused_with("max_model_len must be a positive integer, got int: -1"),
    ("0.29.0", "mamba2-autofit-pp"): _refused_with("max_model_len must be a positive integer, got int: -1"),
    ("0.30.0", "mamba2-autofit-pp"): _refused_with("max_model_len must be a positive integer, got int: -1"),
    ("0.31.0", "mamba2-autofit-pp"): _refused_with("max_model_len must be a positive integer, got int: -1"),
    ("0.32.0", "mamba2-autofit-pp"): _refused_with("max_model_len must be a positive integer, got int: -1"),
    ("0.33.0", "mamba2-autofit-pp"): _refused_with("max_model_len must be a positive integer, got int: -1"),
    ("0.27.1", "kimi-mla-mcmode-all"): _refused_with("No valid MLA prefill backend found"),
    ("0.28.0", "kimi-mla-mcmode-all"): _refused_with("No valid MLA prefill backend found"),
    ("0.29.0", "kimi-mla-mcmode-all"): _refused_with("No valid MLA prefill backend found"),
    ("0.30.0", "kimi-mla-mcmode-all"): _refused_with("No valid MLA prefill backend found"),
    ("0.31.0", "kimi-mla-mcmode-all"): _refused_with("No valid MLA prefill backend found"),
    ("0.32.0", "kimi-mla-mcmode-all"): _refused_with("invalid choice: 'all' (choose from 'align', 'none')"),
    ("0.33.0", "kimi-mla-mcmode-all"): _refused_with("invalid choice: 'all' (choose from 'align', 'none')"),
    ("0.27.1", "lfm2-ehs"): _refused_as(
        "AssertionError: ",
        "v1/kv_cache_interface.py:207 page_size_bytes: assert self.page_size_padded >= self.unpadded_page_size_bytes",
    ),
    ("0.28.0", "lfm2-ehs"): _refused_as(
        "AssertionError: ",
        "v1/kv_cache_interface.py:257 page_size_bytes: assert self.page_size_padded >= self.unpadded_page_size_bytes",
    ),
    ("0.29.0", "lfm2-ehs"): _refused_as(
        "AssertionError: ",
        "v1/kv_cache_interface.py:421 page_size_bytes: assert self.page_size_padded >= self.unpadded_page_size_bytes",
    ),
    ("0.30.0", "lfm2-ehs"): _refused_with(
        "KV cache layout LBNHC cannot express this model's mixed page sizes ([6144, 12288])"
    ),
    ("0.31.0", "lfm2-ehs"): _refused_with(
        "KV cache layout LBNHC cannot express this model's mixed page sizes ([6144, 12288])"
    ),
    ("0.32.0", "lfm2-ehs"): _refused_with(
        "KV cache layout LBNHC cannot express this model's mixed page sizes ([6144, 12288])"
    ),
    ("0.33.0", "lfm2-ehs"): _refused_with(
        "KV cache layout LBNHC cannot express this model's mixed page sizes ([6144, 12288])"
    ),
    # issue 37, refusal order: vLLM's first reason where several hold
    ("0.31.0", "order-lfm2moe-tp8-len"): _refused_with(
        "User-specified max_model_len (256000) is greater than the derived max_model_len"
    ),
    ("0.30.0", "order-g4-shared-pp3-len"): _refused_with(
        "User-specified max_model_len (524288) is greater than the derived max_model_len"
    ),
    ("0.30.0", "order-g4-shared-nvfp4"): _refused_with("No valid attention backend found"),
    ("0.33.0", "order-g4-shared-pp4"): _refused_with("Specified KV sharing target layer for"),
    # FlexAttentionImpl refuses a KV-shared layer while the model is built (audit seed 270291 case 79)
    ("0.27.1", "g4-shared-flex"): _refused_with("FlexAttention does not support kv sharing yet"),
    ("0.28.0", "g4-shared-flex"): _refused_with("FlexAttention does not support kv sharing yet"),
    ("0.29.0", "g4-shared-flex"): _refused_with("FlexAttention does not support kv sharing yet"),
    ("0.30.0", "g4-shared-flex"): _refused_with("FlexAttention does not support kv sharing yet"),
    ("0.31.0", "g4-shared-flex"): _refused_with("FlexAttention does not support kv sharing yet"),
    ("0.32.0", "g4-shared-flex"): _refused_with("FlexAttention does not support kv sharing yet"),
    ("0.33.0", "g4-shared-flex"): _refused_with("FlexAttention does not support kv sharing yet"),
    ("0.27.1", "g3n-shared-flex"): _refused_with("FlexAttention does not support kv sharing yet"),
    ("0.28.0", "g3n-shared-flex"): _refused_with("FlexAttention does not support kv sharing yet"),
    ("0.29.0", "g3n-shared-flex"): _refused_with("FlexAttention does not support kv sharing yet"),
    ("0.30.0", "g3n-shared-flex"): _refused_with("FlexAttention does not support kv sharing yet"),
    ("0.31.0", "g3n-shared-flex"): _refused_with("FlexAttention does not support kv sharing yet"),
    ("0.32.0", "g3n-shared-flex"): _refused_with("FlexAttention does not support kv sharing yet"),
    ("0.33.0", "g3n-shared-flex"): _refused_with("FlexAttention does not support kv sharing yet"),
    # an attention-free model's layerless stage: the backend selection at head size 0 (0.29+) or the empty group
    ("0.27.1", "order-mamba1-pp3-nvfp4"): _refused_with("group_size"),
    ("0.28.0", "order-mamba1-pp3-nvfp4"): _refused_with("group_size"),
    ("0.29.0", "order-mamba1-pp3-nvfp4"): _refused_with("No valid attention backend found"),
    ("0.30.0", "order-mamba1-pp3-nvfp4"): _refused_with("No valid attention backend found"),
    ("0.31.0", "order-mamba1-pp3-nvfp4"): _refused_with("No valid attention backend found"),
    ("0.32.0", "order-mamba1-pp3-nvfp4"): _refused_with("No valid attention backend found"),
    ("0.33.0", "order-mamba1-pp3-nvfp4"): _refused_with("No valid attention backend found"),
    ("0.27.1", "order-mamba1-pp3-pth"): _refused_with("group_size"),
    ("0.28.0", "order-mamba1-pp3-pth"): _refused_with("group_size"),
    ("0.29.0", "order-mamba1-pp3-pth"): _refused_with("No valid attention backend found"),
    ("0.30.0", "order-mamba1-pp3-pth"): _refused_with("No valid attention backend found"),
    ("0.31.0", "order-mamba1-pp3-pth"): _refused_with("No valid attention backend found"),
    ("0.32.0", "order-mamba1-pp3-pth"): _refused_with("No valid attention backend found"),
    ("0.33.0", "order-mamba1-pp3-pth"): _refused_with("No valid attention backend found"),
    ("0.29.0", "order-mamba1-pp3-fa"): _refused_with(
        "Selected backend AttentionBackendEnum.FLASH_ATTN is not valid for this configuration. Reason: "
        "['kv_cache_dtype not supported']"
    ),
    # before 0.29 no layout is resolved: the empty stage's assertion (AssertionError: group_size must be greater
    # than 0) is the first failure
    ("0.28.0", "order-mamba1-pp3-fa"): _refused_with("group_size"),
    # 0.28 asserts (AssertionError) when one token of hidden states outgrows the common page
    ("0.28.0", "ehs-wide"): _refused_as(
        "AssertionError: ",
        "v1/kv_cache_interface.py:257 page_size_bytes: assert self.page_size_padded >= self.unpadded_page_size_bytes",
    ),
    ("0.30.0", "ehs-wide"): _ok(16, 10172, 9710, 8192),
    ("0.28.0", "f16kv"): _ok(16, 100, 1600, 1024),
    ("0.28.0", "qnext2"): _ok(2144, 910, 621226, 8192),
    ("0.29.0", "async-sw"): _ok(16, 5086, 64198, 8192),
    ("0.29.0", "f16kv"): _ok(16, 100, 1600, 1024),
    ("0.29.0", "qnext2"): _ok(2144, 910, 621226, 8192),
    ("0.30.0", "async-sw"): _ok(16, 5086, 64198, 8192),
    ("0.30.0", "f16kv"): _ok(16, 100, 1600, 1024),
    ("0.30.0", "qnext2"): _ok(2144, 910, 621226, 8192),
    ("0.31.0", "async-sw"): _ok(16, 5086, 64198, 8192),
    ("0.31.0", "f16kv"): _ok(16, 100, 1600, 1024),
    ("0.31.0", "qnext2"): _ok(2144, 910, 621226, 8192),
    ("0.32.0", "async-sw"): _ok(16, 5086, 64198, 8192),
    ("0.32.0", "f16kv"): _ok(16, 100, 1600, 1024),
    ("0.32.0", "qnext2"): _ok(2144, 455, 465920, 8192),
    ("0.33.0", "dflash-slots"): _ok(16, 762, 3012, 1024),
    ("0.33.0", "g4keqv"): _ok(16, 7629, 69286, 4096),
    ("0.33.0", "async-sw"): _ok(16, 5086, 53622, 8192),
    ("0.33.0", "f16kv"): _refused_with('kv_cache_dtype="float16" is incompatible with dtype="bfloat16"'),
    ("0.33.0", "qnext2"): _ok(2176, 448, 367001, 8192),
    ("0.30.0", "nullblk-autofit"): _ok(
        16,
        100,
        1600,
        1584,
        log=(
            "Auto-fit max_model_len: reduced from 8192 to 1584 to fit in available GPU memory "
            "(0.01 GiB available for KV cache)",
            "GPU KV cache size: 1,600 tokens, Maximum concurrency for 1,584 tokens per request: 1.01x",
        ),
    ),
    ("0.30.0", "mla-flashmla"): _ok(
        64,
        6781,
        433984,
        4096,
        log=(
            "Setting kv cache block size to 64 for FLASHMLA backend.",
            "GPU KV cache size: 433,984 tokens, Maximum concurrency for 4,096 tokens per request: 105.95x",
        ),
    ),
    ("0.33.0", "nullblk-autofit"): _ok(
        16,
        100,
        1600,
        1584,
        log=(
            "Auto-fit max_model_len: reduced from 8192 to 1584 to fit in available KV cache memory (0.01 GiB GPU)",
            "GPU KV cache size: 1,600 tokens, Maximum concurrency for 1,584 tokens per request: 1.01x",
        ),
    ),
    ("0.33.0", "mla-flashmla"): _ok(
        64,
        6781,
        433984,
        4096,
        log=(
            "Setting kv cache block size to 64 for FLASHMLA backend(s).",
            "GPU KV cache size: 433,984 tokens, Maximum concurrency for 4,096 tokens per request: 105.95x",
        ),
    ),
    ("0.33.0", "mcmode-align-noprefix"): _ok(
        784,
        311,
        181979,
        8192,
        log=(
            "Setting attention block size to 784 tokens to ensure that attention page size is >= mamba page size.",
            "Padding mamba page size by 0.13% to ensure that mamba page size and attention page size "
            "are exactly equal.",
            "GPU KV cache size: 181,979 tokens, Maximum concurrency for 8,192 tokens per request: 22.21x",
            "kv lcm block sizes 401408",
        ),
    ),
    ("0.31.0", "sw-start"): _ok(
        2128,
        328,
        13434,
        2048,
        log=(
            "Setting attention block size to 2128 tokens to ensure that attention page size is >= mamba page size.",
            "Padding mamba page size by 0.38% to ensure that mamba page size and attention page size are exactly equal.",
            "GPU KV cache size: 13,434 tokens, Maximum concurrency for 2,048 tokens per request: 6.56x",
            "kv lcm block sizes 4256",
        ),
    ),
    ("0.31.0", "mcmode-all"): _ok(
        784,
        311,
        149865,
        8192,
        log=(
            "Mamba cache mode 'all' is deprecated and will be removed in an upcoming release. If this is a problem, please open an issue at https://github.com/vllm-project/vllm/issues.",
            "Setting attention block size to 784 tokens to ensure that attention page size is >= mamba page size.",
            "Padding mamba page size by 0.13% to ensure that mamba page size and attention page size are exactly equal.",
            "GPU KV cache size: 149,865 tokens, Maximum concurrency for 8,192 tokens per request: 18.29x",
            "kv lcm block sizes 784",
        ),
    ),
    ("0.32.0", "sw-start"): _ok(
        2128,
        328,
        13434,
        2048,
        log=(
            "Setting attention block size to 2128 tokens to ensure that attention page size is >= mamba page size.",
            "Padding mamba page size by 0.38% to ensure that mamba page size and attention page size are exactly equal.",
            "GPU KV cache size: 13,434 tokens, Maximum concurrency for 2,048 tokens per request: 6.56x",
            "kv lcm block sizes 4256",
        ),
    ),
    ("0.31.0", "nullblk-autofit"): _ok(
        16,
        100,
        1600,
        1584,
        log=(
            "Auto-fit max_model_len: reduced from 8192 to 1584 to fit in available GPU memory (0.01 GiB available for KV cache)",
            "GPU KV cache size: 1,600 tokens, Maximum concurrency for 1,584 tokens per request: 1.01x",
        ),
    ),
    ("0.31.0", "mla-flashmla"): _ok(
        64,
        6781,
        433984,
        4096,
        log=(
            "Setting kv cache block size to 64 for FLASHMLA backend(s).",
            "GPU KV cache size: 433,984 tokens, Maximum concurrency for 4,096 tokens per request: 105.95x",
        ),
    ),
    ("0.32.0", "nullblk-autofit"): _ok(
        16,
        100,
        1600,
        1584,
        log=(
            "Auto-fit max_model_len: reduced from 8192 to 1584 to fit in available KV cache memory (0.01 GiB GPU)",
            "GPU KV cache size: 1,600 tokens, Maximum concurrency for 1,584 tokens per request: 1.01x",
        ),
    ),
    ("0.32.0", "mla-flashmla"): _ok(
        64,
        6781,
        433984,
        4096,
        log=(
            "Setting kv cache block size to 64 for FLASHMLA backend(s).",
            "GPU KV cache size: 433,984 tokens, Maximum concurrency for 4,096 tokens per request: 105.95x",
        ),
    ),
    ("0.32.0", "mcmode-align-noprefix"): _ok(
        784,
        311,
        181979,
        8192,
        log=(
            "Mamba cache mode is set to 'none' when prefix caching is disabled",
            "Setting attention block size to 784 tokens to ensure that attention page size is >= mamba page size.",
            "Padding mamba page size by 0.13% to ensure that mamba page size and attention page size are exactly equal.",
            "GPU KV cache size: 181,979 tokens, Maximum concurrency for 8,192 tokens per request: 22.21x",
            "kv lcm block sizes 401408",
        ),
    ),
    # sparse MLA: the tiny configs of GlmMoeDsaForCausalLM / DeepseekV32ForCausalLM
    ("0.27.1", "dsa-skip"): _ok(
        64,
        2028,
        129792,
        8192,
        log=(
            "Setting kv cache block size to 64 for DEEPSEEK_V32_INDEXER backend.",
            "GPU KV cache size: 129,792 tokens",
            "Maximum concurrency for 8,192 tokens per request: 15.84x",
        ),
    ),
    ("0.27.1", "dsa-fp8-mtp"): _ok(
        64,
        3965,
        253760,
        8192,
        log=(
            "Setting kv cache block size to 64 for DEEPSEEK_V32_INDEXER backend.",
            "GPU KV cache size: 253,760 tokens",
            "Maximum concurrency for 8,192 tokens per request: 30.98x",
        ),
    ),
    ("0.28.0", "dsa-skip"): _ok(
        64,
        2100,
        134400,
        8192,
        log=(
            "Setting kv cache block size to 64 for DEEPSEEK_V32_INDEXER backend.",
            "GPU KV cache size: 134,400 tokens, Maximum concurrency for 8,192 tokens per request: 16.41x",
        ),
    ),
    ("0.28.0", "dsa-fp8-mtp"): _ok(
        64,
        3965,
        253760,
        8192,
        log=(
            "Setting kv cache block size to 64 for DEEPSEEK_V32_INDEXER backend.",
            "GPU KV cache size: 253,760 tokens, Maximum concurrency for 8,192 tokens per request: 30.98x",
        ),
    ),
    ("0.29.0", "dsa-skip"): _ok(
        64,
        2100,
        134400,
        8192,
        log=(
            "Setting kv cache block size to 64 for DEEPSEEK_V32_INDEXER backend.",
            "GPU KV cache size: 134,400 tokens, Maximum concurrency for 8,192 tokens per request: 16.41x",
        ),
    ),
    ("0.29.0", "dsa-fp8-mtp"): _ok(
        64,
        3965,
        253760,
        8192,
        log=(
            "Setting kv cache block size to 64 for DEEPSEEK_V32_INDEXER backend.",
            "GPU KV cache size: 253,760 tokens, Maximum concurrency for 8,192 tokens per request: 30.98x",
        ),
    ),
    ("0.30.0", "dsa-skip"): _ok(
        64,
        2100,
        134400,
        8192,
        log=(
            "Setting kv cache block size to 64 for DEEPSEEK_V32_INDEXER backend.",
            "GPU KV cache size: 134,400 tokens, Maximum concurrency for 8,192 tokens per request: 16.41x",
        ),
    ),
    ("0.30.0", "dsa-fp8-mtp"): _ok(
        64,
        3965,
        253760,
        8192,
        log=(
            "Setting kv cache block size to 64 for DEEPSEEK_V32_INDEXER backend.",
            "GPU KV cache size: 253,760 tokens, Maximum concurrency for 8,192 tokens per request: 30.98x",
        ),
    ),
    ("0.31.0", "dsa-skip"): _ok(
        64,
        2100,
        134400,
        8192,
        log=(
            "Setting kv cache block size to 64 for DEEPSEEK_V32_INDEXER/FLASH_ATTN_MLA_SPARSE backend(s).",
            "GPU KV cache size: 134,400 tokens, Maximum concurrency for 8,192 tokens per request: 16.41x",
        ),
    ),
    ("0.31.0", "dsa-fp8-mtp"): _ok(
        64,
        3965,
        253760,
        8192,
        log=(
            "Setting kv cache block size to 64 for DEEPSEEK_V32_INDEXER/FLASHMLA_SPARSE backend(s).",
            "GPU KV cache size: 253,760 tokens, Maximum concurrency for 8,192 tokens per request: 30.98x",
        ),
    ),
    ("0.32.0", "dsa-skip"): _ok(
        64,
        2100,
        134400,
        8192,
        log=(
            "Setting kv cache block size to 64 for DEEPSEEK_V32_INDEXER/FLASH_ATTN_MLA_SPARSE backend(s).",
            "GPU KV cache size: 134,400 tokens, Maximum concurrency for 8,192 tokens per request: 16.41x",
        ),
    ),
    ("0.32.0", "dsa-fp8-mtp"): _ok(
        64,
        3965,
        253760,
        8192,
        log=(
            "Setting kv cache block size to 64 for DEEPSEEK_V32_INDEXER/FLASHMLA_SPARSE backend(s).",
            "GPU KV cache size: 253,760 tokens, Maximum concurrency for 8,192 tokens per request: 30.98x",
        ),
    ),
    ("0.33.0", "dsa-skip"): _ok(
        64,
        2100,
        134400,
        8192,
        log=(
            "Setting kv cache block size to 64 for DEEPSEEK_V32_INDEXER/FLASH_ATTN_MLA_SPARSE backend(s).",
            "GPU KV cache size: 134,400 tokens, Maximum concurrency for 8,192 tokens per request: 16.41x",
        ),
    ),
    ("0.33.0", "dsa-fp8-mtp"): _ok(
        64,
        3965,
        253760,
        8192,
        log=(
            "Setting kv cache block size to 64 for DEEPSEEK_V32_INDEXER/FLASHMLA_SPARSE backend(s).",
            "GPU KV cache size: 253,760 tokens, Maximum concurrency for 8,192 tokens per request: 30.98x",
        ),
    ),
    # harness --family bailing case s0-64 (issue 37): switch hybrid_full_attention_types
    ("0.27.1", "bailing-allmla"): _refused_with(
        "model type `bailing_hybrid` but Transformers does not recognize this architecture"
    ),
    ("0.28.0", "bailing-allmla"): _ok(
        256,
        3051,
        781056,
        8192,
        log=(
            "Mamba cache mode is set to 'align' for BailingMoeV2_5ForCausalLM by default when prefix caching is enabled",
            "Setting attention block size to 256 tokens to ensure that attention page size is >= mamba page size.",
            "Padding mamba page size by 25.00% to ensure that mamba page size and attention page size are exactly equal.",
            "GPU KV cache size: 781,056 tokens, Maximum concurrency for 8,192 tokens per request: 95.34x",
        ),
    ),
    ("0.29.0", "bailing-allmla"): _ok(
        16,
        48828,
        781248,
        8192,
        log=("GPU KV cache size: 781,248 tokens, Maximum concurrency for 8,192 tokens per request: 95.37x",),
    ),
    ("0.30.0", "bailing-allmla"): _ok(
        16,
        48828,
        781248,
        8192,
        log=("GPU KV cache size: 781,248 tokens, Maximum concurrency for 8,192 tokens per request: 95.37x",),
    ),
    ("0.31.0", "bailing-allmla"): _refused_with(
        "model type `bailing_hybrid` but Transformers does not recognize this architecture"
    ),
    ("0.32.0", "bailing-allmla"): _refused_with(
        "model type `bailing_hybrid` but Transformers does not recognize this architecture"
    ),
    ("0.33.0", "bailing-allmla"): _ok(
        16,
        48828,
        781248,
        8192,
        log=("GPU KV cache size: 781,248 tokens, Maximum concurrency for 8,192 tokens per request: 95.37x",),
    ),
    # --mamba-cache-mode all on a dense model (issue 37; switch mamba_mode_all)
    ("0.27.1", "mcmode-all-dense"): _ok(
        16,
        100,
        1600,
        1024,
        log=("GPU KV cache size: 1,600 tokens", "Maximum concurrency for 1,024 tokens per request: 1.56x"),
    ),
    ("0.28.0", "mcmode-all-dense"): _ok(
        16,
        100,
        1600,
        1024,
        log=("GPU KV cache size: 1,600 tokens, Maximum concurrency for 1,024 tokens per request: 1.56x",),
    ),
    ("0.29.0", "mcmode-all-dense"): _ok(
        16,
        100,
        1600,
        1024,
        log=("GPU KV cache size: 1,600 tokens, Maximum concurrency for 1,024 tokens per request: 1.56x",),
    ),
    ("0.30.0", "mcmode-all-dense"): _ok(
        16,
        100,
        1600,
        1024,
        log=(
            "Mamba cache mode 'all' is deprecated and will be removed in an upcoming release. If this is a problem, please open an issue at https://github.com/vllm-project/vllm/issues.",
            "GPU KV cache size: 1,600 tokens, Maximum concurrency for 1,024 tokens per request: 1.56x",
        ),
    ),
    ("0.31.0", "mcmode-all-dense"): _ok(
        16,
        100,
        1600,
        1024,
        log=(
            "Mamba cache mode 'all' is deprecated and will be removed in an upcoming release. If this is a problem, please open an issue at https://github.com/vllm-project/vllm/issues.",
            "GPU KV cache size: 1,600 tokens, Maximum concurrency for 1,024 tokens per request: 1.56x",
        ),
    ),
    ("0.32.0", "mcmode-all-dense"): _refused_with("invalid choice: 'all' (choose from 'align', 'none')"),
    ("0.33.0", "mcmode-all-dense"): _refused_with("invalid choice: 'all' (choose from 'align', 'none')"),
    # harness --family llama4 / step3p5 cases (issue 37): the chunked-local + EAGLE-style drafter unification
    ("0.27.1", "l4-dflash"): _ok(
        16,
        6781,
        108496,
        8192,
        log=("GPU KV cache size: 108,496 tokens", "Maximum concurrency for 8,192 tokens per request: 13.24x"),
    ),
    ("0.27.1", "l4-dflash-allchunked"): _ok(
        16,
        6781,
        108496,
        8192,
        log=("GPU KV cache size: 108,496 tokens", "Maximum concurrency for 8,192 tokens per request: 13.24x"),
    ),
    ("0.27.1", "l4-dflash-sw"): _refused_with("Failed to promote local KV cache specs to one unified type"),
    ("0.27.1", "step3p5-nomtp"): _ok(
        16,
        122070,
        1246879,
        8192,
        log=("GPU KV cache size: 1,246,879 tokens", "Maximum concurrency for 8,192 tokens per request: 152.21x"),
    ),
    ("0.28.0", "l4-dflash"): _ok(
        16,
        6781,
        108496,
        8192,
        log=("GPU KV cache size: 108,496 tokens, Maximum concurrency for 8,192 tokens per request: 13.24x",),
    ),
    ("0.28.0", "l4-dflash-allchunked"): _ok(
        16,
        6781,
        108496,
        8192,
        log=("GPU KV cache size: 108,496 tokens, Maximum concurrency for 8,192 tokens per request: 13.24x",),
    ),
    ("0.28.0", "l4-dflash-sw"): _refused_with("Failed to promote local KV cache specs to one unified type"),
    ("0.28.0", "step3p5-nomtp"): _ok(
        16,
        122070,
        1246879,
        8192,
        log=("GPU KV cache size: 1,246,879 tokens, Maximum concurrency for 8,192 tokens per request: 152.21x",),
    ),
    ("0.29.0", "l4-dflash"): _ok(
        16,
        6781,
        108496,
        8192,
        log=("GPU KV cache size: 108,496 tokens, Maximum concurrency for 8,192 tokens per request: 13.24x",),
    ),
    ("0.29.0", "l4-dflash-allchunked"): _ok(
        16,
        6781,
        108496,
        8192,
        log=("GPU KV cache size: 108,496 tokens, Maximum concurrency for 8,192 tokens per request: 13.24x",),
    ),
    ("0.29.0", "l4-dflash-sw"): _refused_with("Failed to promote local KV cache specs to one unified type"),
    ("0.29.0", "step3p5-nomtp"): _ok(
        16,
        122070,
        1246879,
        8192,
        log=("GPU KV cache size: 1,246,879 tokens, Maximum concurrency for 8,192 tokens per request: 152.21x",),
    ),
    ("0.30.0", "l4-dflash"): _ok(
        16,
        6781,
        108496,
        8192,
        log=("GPU KV cache size: 108,496 tokens, Maximum concurrency for 8,192 tokens per request: 13.24x",),
    ),
    ("0.30.0", "l4-dflash-allchunked"): _ok(
        16,
        6781,
        108496,
        8192,
        log=("GPU KV cache size: 108,496 tokens, Maximum concurrency for 8,192 tokens per request: 13.24x",),
    ),
    ("0.30.0", "l4-dflash-sw"): _refused_with("Failed to promote local KV cache specs to one unified type"),
    ("0.30.0", "step3p5-nomtp"): _ok(
        16,
        122070,
        1246879,
        8192,
        log=("GPU KV cache size: 1,246,879 tokens, Maximum concurrency for 8,192 tokens per request: 152.21x",),
    ),
    ("0.31.0", "l4-dflash"): _ok(
        16,
        6781,
        108496,
        8192,
        log=("GPU KV cache size: 108,496 tokens, Maximum concurrency for 8,192 tokens per request: 13.24x",),
    ),
    ("0.31.0", "l4-dflash-allchunked"): _ok(
        16,
        6781,
        108496,
        8192,
        log=("GPU KV cache size: 108,496 tokens, Maximum concurrency for 8,192 tokens per request: 13.24x",),
    ),
    ("0.31.0", "l4-dflash-sw"): _refused_with("Failed to promote local KV cache specs to one unified type"),
    ("0.31.0", "step3p5-nomtp"): _ok(
        16,
        122070,
        1246879,
        8192,
        log=("GPU KV cache size: 1,246,879 tokens, Maximum concurrency for 8,192 tokens per request: 152.21x",),
    ),
    ("0.32.0", "l4-dflash"): _ok(
        16,
        6781,
        108496,
        8192,
        log=("GPU KV cache size: 108,496 tokens, Maximum concurrency for 8,192 tokens per request: 13.24x",),
    ),
    ("0.32.0", "l4-dflash-allchunked"): _ok(
        16,
        6781,
        108496,
        8192,
        log=("GPU KV cache size: 108,496 tokens, Maximum concurrency for 8,192 tokens per request: 13.24x",),
    ),
    ("0.32.0", "l4-dflash-sw"): _refused_with("Failed to promote local KV cache specs to one unified type"),
    ("0.32.0", "step3p5-nomtp"): _ok(
        16,
        122070,
        1246879,
        8192,
        log=("GPU KV cache size: 1,246,879 tokens, Maximum concurrency for 8,192 tokens per request: 152.21x",),
    ),
    ("0.33.0", "l4-dflash"): _ok(
        16,
        6781,
        108496,
        8192,
        log=("GPU KV cache size: 108,496 tokens, Maximum concurrency for 8,192 tokens per request: 13.24x",),
    ),
    ("0.33.0", "l4-dflash-allchunked"): _ok(
        16,
        6781,
        108496,
        8192,
        log=("GPU KV cache size: 108,496 tokens, Maximum concurrency for 8,192 tokens per request: 13.24x",),
    ),
    ("0.33.0", "l4-dflash-sw"): _refused_with("Failed to promote local KV cache specs to one unified type"),
    ("0.33.0", "step3p5-nomtp"): _refused_with("'Step3p7TextConfig' object has no attribute 'use_moe_router_bias'"),
    # ModelConfig.is_hybrid by layer types (issue 37): the hyb-* stand-ins (CASES); switches
    # hybrid_full_attention_types, legacy_layer_type_names
    ("0.27.1", "hyb-qwen35-allfull"): _ok(
        784,
        77,
        57344,
        8192,
        log=(
            "Setting attention block size to 784 tokens to ensure that attention page size is >= mamba page size.",
            "Padding mamba page size by 0.13% to ensure that mamba page size and attention page size are exactly equal.",
            "GPU KV cache size: 57,344 tokens",
            "Maximum concurrency for 8,192 tokens per request: 7.00x",
        ),
    ),
    ("0.28.0", "hyb-qwen35-allfull"): _ok(
        784,
        77,
        57344,
        8192,
        log=(
            "Mamba cache mode is set to 'align' for Qwen3_5ForCausalLM by default when prefix caching is enabled",
            "Setting attention block size to 784 tokens to ensure that attention page size is >= mamba page size.",
            "Padding mamba page size by 0.13% to ensure that mamba page size and attention page size are exactly equal.",
            "GPU KV cache size: 57,344 tokens, Maximum concurrency for 8,192 tokens per request: 7.00x",
        ),
    ),
    ("0.29.0", "hyb-qwen35-allfull"): _ok(
        16,
        3814,
        61024,
        8192,
        log=("GPU KV cache size: 61,024 tokens, Maximum concurrency for 8,192 tokens per request: 7.45x",),
    ),
    ("0.30.0", "hyb-qwen35-allfull"): _ok(
        16,
        3814,
        61024,
        8192,
        log=("GPU KV cache size: 61,024 tokens, Maximum concurrency for 8,192 tokens per request: 7.45x",),
    ),
    ("0.31.0", "hyb-qwen35-allfull"): _ok(
        16,
        3814,
        61024,
        8192,
        log=("GPU KV cache size: 61,024 tokens, Maximum concurrency for 8,192 tokens per request: 7.45x",),
    ),
    ("0.32.0", "hyb-qwen35-allfull"): _ok(
        16,
        3814,
        61024,
        8192,
        log=("GPU KV cache size: 61,024 tokens, Maximum concurrency for 8,192 tokens per request: 7.45x",),
    ),
    ("0.33.0", "hyb-qwen35-allfull"): _ok(
        16,
        3814,
        61024,
        8192,
        log=("GPU KV cache size: 61,024 tokens, Maximum concurrency for 8,192 tokens per request: 7.45x",),
    ),
    ("0.27.1", "hyb-qnext-allfull"): _ok(
        544,
        1795,
        773928,
        8192,
        log=(
            "Setting attention block size to 544 tokens to ensure that attention page size is >= mamba page size.",
            "Padding mamba page size by 1.49% to ensure that mamba page size and attention page size are exactly equal.",
            "GPU KV cache size: 773,928 tokens",
            "Maximum concurrency for 8,192 tokens per request: 94.47x",
        ),
    ),
    ("0.28.0", "hyb-qnext-allfull"): _ok(
        544,
        1795,
        668392,
        8192,
        log=(
            "Mamba cache mode is set to 'align' for Qwen3NextForCausalLM by default when prefix caching is enabled",
            "Setting attention block size to 544 tokens to ensure that attention page size is >= mamba page size.",
            "Padding mamba page size by 1.49% to ensure that mamba page size and attention page size are exactly equal.",
            "GPU KV cache size: 668,392 tokens, Maximum concurrency for 8,192 tokens per request: 81.59x",
        ),
    ),
    ("0.29.0", "hyb-qnext-allfull"): _ok(
        544,
        1795,
        668392,
        8192,
        log=(
            "Mamba cache mode is set to 'align' for Qwen3NextForCausalLM by default when prefix caching is enabled",
            "Setting attention block size to 544 tokens to ensure that attention page size is >= mamba page size.",
            "Padding mamba page size by 1.49% to ensure that mamba page size and attention page size are exactly equal.",
            "GPU KV cache size: 668,392 tokens, Maximum concurrency for 8,192 tokens per request: 81.59x",
        ),
    ),
    ("0.30.0", "hyb-qnext-allfull"): _ok(
        544,
        1795,
        668392,
        8192,
        log=(
            "Mamba cache mode is set to 'align' for Qwen3NextForCausalLM by default when prefix caching is enabled",
            "Setting attention block size to 544 tokens to ensure that attention page size is >= mamba page size.",
            "Padding mamba page size by 1.49% to ensure that mamba page size and attention page size are exactly equal.",
            "GPU KV cache size: 668,392 tokens, Maximum concurrency for 8,192 tokens per request: 81.59x",
            "kv lcm block sizes 544",
        ),
    ),
    ("0.31.0", "hyb-qnext-allfull"): _ok(
        544,
        1795,
        668392,
        8192,
        log=(
            "Mamba cache mode is set to 'align' for Qwen3NextForCausalLM by default when prefix caching is enabled",
            "Setting attention block size to 544 tokens to ensure that attention page size is >= mamba page size.",
            "Padding mamba page size by 1.49% to ensure that mamba page size and attention page size are exactly equal.",
            "GPU KV cache size: 668,392 tokens, Maximum concurrency for 8,192 tokens per request: 81.59x",
            "kv lcm block sizes 544",
        ),
    ),
    ("0.32.0", "hyb-qnext-allfull"): _ok(
        16,
        15258,
        244128,
        8192,
        log=("GPU KV cache size: 244,128 tokens, Maximum concurrency for 8,192 tokens per request: 29.80x",),
    ),
    ("0.33.0", "hyb-qnext-allfull"): _ok(
        16,
        15258,
        244128,
        8192,
        log=("GPU KV cache size: 244,128 tokens, Maximum concurrency for 8,192 tokens per request: 29.80x",),
    ),
    ("0.27.1", "hyb-jamba-allattn"): _ok(
        48,
        4069,
        194931,
        8192,
        log=(
            "Setting attention block size to 48 tokens to ensure that attention page size is >= mamba page size.",
            "Padding mamba page size by 26.32% to ensure that mamba page size and attention page size are exactly equal.",
            "GPU KV cache size: 194,931 tokens",
            "Maximum concurrency for 8,192 tokens per request: 23.80x",
        ),
    ),
    ("0.28.0", "hyb-jamba-allattn"): _ok(
        48,
        4069,
        194931,
        8192,
        log=(
            "Mamba cache mode is set to 'align' for JambaForCausalLM by default when prefix caching is enabled",
            "Setting attention block size to 48 tokens to ensure that attention page size is >= mamba page size.",
            "Padding mamba page size by 26.32% to ensure that mamba page size and attention page size are exactly equal.",
            "GPU KV cache size: 194,931 tokens, Maximum concurrency for 8,192 tokens per request: 23.80x",
        ),
    ),
    ("0.29.0", "hyb-jamba-allattn"): _ok(
        16,
        12207,
        195312,
        8192,
        log=("GPU KV cache size: 195,312 tokens, Maximum concurrency for 8,192 tokens per request: 23.84x",),
    ),
    ("0.30.0", "hyb-jamba-allattn"): _ok(
        16,
        12207,
        195312,
        8192,
        log=("GPU KV cache size: 195,312 tokens, Maximum concurrency for 8,192 tokens per request: 23.84x",),
    ),
    ("0.31.0", "hyb-jamba-allattn"): _ok(
        16,
        12207,
        195312,
        8192,
        log=("GPU KV cache size: 195,312 tokens, Maximum concurrency for 8,192 tokens per request: 23.84x",),
    ),
    ("0.32.0", "hyb-jamba-allattn"): _ok(
        16,
        12207,
        195312,
        8192,
        log=("GPU KV cache size: 195,312 tokens, Maximum concurrency for 8,192 tokens per request: 23.84x",),
    ),
    ("0.33.0", "hyb-jamba-allattn"): _ok(
        16,
        12207,
        195312,
        8192,
        log=("GPU KV cache size: 195,312 tokens, Maximum concurrency for 8,192 tokens per request: 23.84x",),
    ),
    ("0.27.1", "hyb-nemoh-allattn"): _ok(
        16,
        61035,
        976560,
        8192,
        log=(
            "GPU KV cache size: 976,560 tokens",
            "Maximum concurrency for 8,192 tokens per request: 119.21x",
        ),
    ),
    ("0.28.0", "hyb-nemoh-allattn"): _ok(
        2096,
        465,
        952320,
        8192,
        log=(
            "Mamba cache mode is set to 'align' for NemotronHForCausalLM by default when prefix caching is enabled",
            "Setting attention block size to 2096 tokens to ensure that attention page size is >= mamba page size.",
            "Padding mamba page size by 0.58% to ensure that mamba page size and attention page size are exactly equal.",
            "GPU KV cache size: 952,320 tokens, Maximum concurrency for 8,192 tokens per request: 116.25x",
        ),
    ),
    ("0.29.0", "hyb-nemoh-allattn"): _ok(
        16,
        61035,
        976560,
        8192,
        log=("GPU KV cache size: 976,560 tokens, Maximum concurrency for 8,192 tokens per request: 119.21x",),
    ),
    ("0.30.0", "hyb-nemoh-allattn"): _ok(
        16,
        61035,
        976560,
        8192,
        log=("GPU KV cache size: 976,560 tokens, Maximum concurrency for 8,192 tokens per request: 119.21x",),
    ),
    ("0.31.0", "hyb-nemoh-allattn"): _ok(
        16,
        61035,
        976560,
        8192,
        log=("GPU KV cache size: 976,560 tokens, Maximum concurrency for 8,192 tokens per request: 119.21x",),
    ),
    ("0.32.0", "hyb-nemoh-allattn"): _ok(
        16,
        61035,
        976560,
        8192,
        log=("GPU KV cache size: 976,560 tokens, Maximum concurrency for 8,192 tokens per request: 119.21x",),
    ),
    ("0.33.0", "hyb-nemoh-allattn"): _ok(
        16,
        61035,
        976560,
        8192,
        log=("GPU KV cache size: 976,560 tokens, Maximum concurrency for 8,192 tokens per request: 119.21x",),
    ),
    ("0.27.1", "hyb-nemoh-attnmlp"): _ok(
        2096,
        931,
        1906688,
        8192,
        log=(
            "Setting attention block size to 2096 tokens to ensure that attention page size is >= mamba page size.",
            "Padding mamba page size by 0.58% to ensure that mamba page size and attention page size are exactly equal.",
            "GPU KV cache size: 1,906,688 tokens",
            "Maximum concurrency for 8,192 tokens per request: 232.75x",
        ),
    ),
    ("0.28.0", "hyb-nemoh-attnmlp"): _ok(
        2096,
        931,
        1906688,
        8192,
        log=(
            "Mamba cache mode is set to 'align' for NemotronHForCausalLM by default when prefix caching is enabled",
            "Setting attention block size to 2096 tokens to ensure that attention page size is >= mamba page size.",
            "Padding mamba page size by 0.58% to ensure that mamba page size and attention page size are exactly equal.",
            "GPU KV cache size: 1,906,688 tokens, Maximum concurrency for 8,192 tokens per request: 232.75x",
        ),
    ),
    ("0.29.0", "hyb-nemoh-attnmlp"): _ok(
        2096,
        931,
        1906688,
        8192,
        log=(
            "Mamba cache mode is set to 'align' for NemotronHForCausalLM by default when prefix caching is enabled",
            "Setting attention block size to 2096 tokens to ensure that attention page size is >= mamba page size.",
            "Padding mamba page size by 0.58% to ensure that mamba page size and attention page size are exactly equal.",
            "GPU KV cache size: 1,906,688 tokens, Maximum concurrency for 8,192 tokens per request: 232.75x",
        ),
    ),
    ("0.30.0", "hyb-nemoh-attnmlp"): _ok(
        2096,
        931,
        1906688,
        8192,
        log=(
            "Mamba cache mode is set to 'align' for NemotronHForCausalLM by default when prefix caching is enabled",
            "Setting attention block size to 2096 tokens to ensure that attention page size is >= mamba page size.",
            "Padding mamba page size by 0.58% to ensure that mamba page size and attention page size are exactly equal.",
            "GPU KV cache size: 1,906,688 tokens, Maximum concurrency for 8,192 tokens per request: 232.75x",
        ),
    ),
    ("0.31.0", "hyb-nemoh-attnmlp"): _ok(
        2096,
        931,
        1906688,
        8192,
        log=(
            "Mamba cache mode is set to 'align' for NemotronHForCausalLM by default when prefix caching is enabled",
            "Setting attention block size to 2096 tokens to ensure that attention page size is >= mamba page size.",
            "Padding mamba page size by 0.58% to ensure that mamba page size and attention page size are exactly equal.",
            "GPU KV cache size: 1,906,688 tokens, Maximum concurrency for 8,192 tokens per request: 232.75x",
        ),
    ),
    ("0.32.0", "hyb-nemoh-attnmlp"): _ok(
        2096,
        931,
        1906688,
        8192,
        log=(
            "Mamba cache mode is set to 'align' for NemotronHForCausalLM by default when prefix caching is enabled",
            "Setting attention block size to 2096 tokens to ensure that attention page size is >= mamba page size.",
            "Padding mamba page size by 0.58% to ensure that mamba page size and attention page size are exactly equal.",
            "GPU KV cache size: 1,906,688 tokens, Maximum concurrency for 8,192 tokens per request: 232.75x",
        ),
    ),
    ("0.33.0", "hyb-nemoh-attnmlp"): _ok(
        2096,
        931,
        1906688,
        8192,
        log=(
            "Mamba cache mode is set to 'align' for NemotronHForCausalLM by default when prefix caching is enabled",
            "Setting attention block size to 2096 tokens to ensure that attention page size is >= mamba page size.",
            "Padding mamba page size by 0.58% to ensure that mamba page size and attention page size are exactly equal.",
            "GPU KV cache size: 1,906,688 tokens, Maximum concurrency for 8,192 tokens per request: 232.75x",
        ),
    ),
    ("0.27.1", "hyb-granite-allattn"): _ok(
        16,
        20345,
        325520,
        8192,
        log=(
            "GPU KV cache size: 325,520 tokens",
            "Maximum concurrency for 8,192 tokens per request: 39.74x",
        ),
    ),
    ("0.28.0", "hyb-granite-allattn"): _ok(
        400,
        813,
        317147,
        8192,
        log=(
            "Mamba cache mode is set to 'align' for GraniteMoeHybridForCausalLM by default when prefix caching is enabled",
            "Setting attention block size to 400 tokens to ensure that attention page size is >= mamba page size.",
            "Padding mamba page size by 1.39% to ensure that mamba page size and attention page size are exactly equal.",
            "GPU KV cache size: 317,147 tokens, Maximum concurrency for 8,192 tokens per request: 38.71x",
        ),
    ),
    ("0.29.0", "hyb-granite-allattn"): _ok(
        16,
        20345,
        325520,
        8192,
        log=("GPU KV cache size: 325,520 tokens, Maximum concurrency for 8,192 tokens per request: 39.74x",),
    ),
    ("0.30.0", "hyb-granite-allattn"): _ok(
        16,
        20345,
        325520,
        8192,
        log=("GPU KV cache size: 325,520 tokens, Maximum concurrency for 8,192 tokens per request: 39.74x",),
    ),
    ("0.31.0", "hyb-granite-allattn"): _ok(
        16,
        20345,
        325520,
        8192,
        log=("GPU KV cache size: 325,520 tokens, Maximum concurrency for 8,192 tokens per request: 39.74x",),
    ),
    ("0.32.0", "hyb-granite-allattn"): _ok(
        16,
        20345,
        325520,
        8192,
        log=("GPU KV cache size: 325,520 tokens, Maximum concurrency for 8,192 tokens per request: 39.74x",),
    ),
    ("0.33.0", "hyb-granite-allattn"): _ok(
        16,
        20345,
        325520,
        8192,
        log=("GPU KV cache size: 325,520 tokens, Maximum concurrency for 8,192 tokens per request: 39.74x",),
    ),
    ("0.27.1", "hyb-lfm2moe-allattn"): _ok(
        16,
        10172,
        162752,
        8192,
        log=(
            "Padding mamba page size by 700.00% to ensure that mamba page size and attention page size are exactly equal.",
            "GPU KV cache size: 162,752 tokens",
            "Maximum concurrency for 8,192 tokens per request: 19.87x",
        ),
    ),
    ("0.28.0", "hyb-lfm2moe-allattn"): _ok(
        16,
        10172,
        162752,
        8192,
        log=(
            "Mamba cache mode is set to 'align' for Lfm2MoeForCausalLM by default when prefix caching is enabled",
            "Padding mamba page size by 700.00% to ensure that mamba page size and attention page size are exactly equal.",
            "GPU KV cache size: 162,752 tokens, Maximum concurrency for 8,192 tokens per request: 19.87x",
        ),
    ),
    ("0.29.0", "hyb-lfm2moe-allattn"): _ok(
        16,
        10172,
        162752,
        8192,
        log=("GPU KV cache size: 162,752 tokens, Maximum concurrency for 8,192 tokens per request: 19.87x",),
    ),
    ("0.30.0", "hyb-lfm2moe-allattn"): _ok(
        16,
        10172,
        162752,
        8192,
        log=("GPU KV cache size: 162,752 tokens, Maximum concurrency for 8,192 tokens per request: 19.87x",),
    ),
    ("0.31.0", "hyb-lfm2moe-allattn"): _ok(
        16,
        10172,
        162752,
        8192,
        log=("GPU KV cache size: 162,752 tokens, Maximum concurrency for 8,192 tokens per request: 19.87x",),
    ),
    ("0.32.0", "hyb-lfm2moe-allattn"): _ok(
        16,
        10172,
        162752,
        8192,
        log=("GPU KV cache size: 162,752 tokens, Maximum concurrency for 8,192 tokens per request: 19.87x",),
    ),
    ("0.33.0", "hyb-lfm2moe-allattn"): _ok(
        16,
        10172,
        162752,
        8192,
        log=("GPU KV cache size: 162,752 tokens, Maximum concurrency for 8,192 tokens per request: 19.87x",),
    ),
    ("0.27.1", "hyb-kimil-allfull"): _ok(
        1024,
        423,
        433152,
        8192,
        log=(
            "Setting attention block size to 1024 tokens to ensure that attention page size is >= mamba page size.",
            "Padding mamba page size by 8.68% to ensure that mamba page size and attention page size are exactly equal.",
            "GPU KV cache size: 433,152 tokens",
            "Maximum concurrency for 8,192 tokens per request: 52.88x",
        ),
    ),
    ("0.28.0", "hyb-kimil-allfull"): _ok(
        1024,
        423,
        433152,
        8192,
        log=(
            "Mamba cache mode is set to 'align' for KimiLinearForCausalLM by default when prefix caching is enabled",
            "Setting attention block size to 1024 tokens to ensure that attention page size is >= mamba page size.",
            "Padding mamba page size by 8.68% to ensure that mamba page size and attention page size are exactly equal.",
            "GPU KV cache size: 433,152 tokens, Maximum concurrency for 8,192 tokens per request: 52.88x",
        ),
    ),
    ("0.29.0", "hyb-kimil-allfull"): _ok(
        1024,
        423,
        433152,
        8192,
        log=(
            "Mamba cache mode is set to 'align' for KimiLinearForCausalLM by default when prefix caching is enabled",
            "Setting attention block size to 1024 tokens to ensure that attention page size is >= mamba page size.",
            "Padding mamba page size by 8.68% to ensure that mamba page size and attention page size are exactly equal.",
            "GPU KV cache size: 433,152 tokens, Maximum concurrency for 8,192 tokens per request: 52.88x",
        ),
    ),
    ("0.30.0", "hyb-kimil-allfull"): _ok(
        1024,
        423,
        433152,
        8192,
        log=(
            "Mamba cache mode is set to 'align' for KimiLinearForCausalLM by default when prefix caching is enabled",
            "Setting attention block size to 1024 tokens to ensure that attention page size is >= mamba page size.",
            "Padding mamba page size by 8.68% to ensure that mamba page size and attention page size are exactly equal.",
            "GPU KV cache size: 433,152 tokens, Maximum concurrency for 8,192 tokens per request: 52.88x",
        ),
    ),
    ("0.31.0", "hyb-kimil-allfull"): _ok(
        1024,
        423,
        433152,
        8192,
        log=(
            "Mamba cache mode is set to 'align' for KimiLinearForCausalLM by default when prefix caching is enabled",
            "Setting attention block size to 1024 tokens to ensure that attention page size is >= mamba page size.",
            "Padding mamba page size by 8.68% to ensure that mamba page size and attention page size are exactly equal.",
            "GPU KV cache size: 433,152 tokens, Maximum concurrency for 8,192 tokens per request: 52.88x",
        ),
    ),
    ("0.32.0", "hyb-kimil-allfull"): _ok(
        1024,
        423,
        433152,
        8192,
        log=(
            "Mamba cache mode is set to 'align' for KimiLinearForCausalLM by default when prefix caching is enabled",
            "Setting attention block size to 1024 tokens to ensure that attention page size is >= mamba page size.",
            "Padding mamba page size by 8.68% to ensure that mamba page size and attention page size are exactly equal.",
            "GPU KV cache size: 433,152 tokens, Maximum concurrency for 8,192 tokens per request: 52.88x",
        ),
    ),
    ("0.33.0", "hyb-kimil-allfull"): _ok(
        1024,
        423,
        433152,
        8192,
        log=(
            "Mamba cache mode is set to 'align' for KimiLinearForCausalLM by default when prefix caching is enabled",
            "Setting attention block size to 1024 tokens to ensure that attention page size is >= mamba page size.",
            "Padding mamba page size by 8.68% to ensure that mamba page size and attention page size are exactly equal.",
            "GPU KV cache size: 433,152 tokens, Maximum concurrency for 8,192 tokens per request: 52.88x",
        ),
    ),
    ("0.27.1", "hyb-qwen35vl-allfull"): _ok(
        784,
        77,
        57344,
        8192,
        log=(
            "Setting attention block size to 784 tokens to ensure that attention page size is >= mamba page size.",
            "Padding mamba page size by 0.13% to ensure that mamba page size and attention page size are exactly equal.",
            "GPU KV cache size: 57,344 tokens",
            "Maximum concurrency for 8,192 tokens per request: 7.00x",
        ),
    ),
    ("0.28.0", "hyb-qwen35vl-allfull"): _ok(
        784,
        77,
        57344,
        8192,
        log=(
            "Mamba cache mode is set to 'align' for Qwen3_5MoeForConditionalGeneration by default when prefix caching is enabled",
            "Setting attention block size to 784 tokens to ensure that attention page size is >= mamba page size.",
            "Padding mamba page size by 0.13% to ensure that mamba page size and attention page size are exactly equal.",
            "GPU KV cache size: 57,344 tokens, Maximum concurrency for 8,192 tokens per request: 7.00x",
        ),
    ),
    ("0.29.0", "hyb-qwen35vl-allfull"): _ok(
        784,
        77,
        57344,
        8192,
        log=(
            "Mamba cache mode is set to 'align' for Qwen3_5MoeForConditionalGeneration by default when prefix caching is enabled",
            "Setting attention block size to 784 tokens to ensure that attention page size is >= mamba page size.",
            "Padding mamba page size by 0.13% to ensure that mamba page size and attention page size are exactly equal.",
            "GPU KV cache size: 57,344 tokens, Maximum concurrency for 8,192 tokens per request: 7.00x",
        ),
    ),
    ("0.30.0", "hyb-qwen35vl-allfull"): _ok(
        784,
        77,
        57344,
        8192,
        log=(
            "Mamba cache mode is set to 'align' for Qwen3_5MoeForConditionalGeneration by default when prefix caching is enabled",
            "Setting attention block size to 784 tokens to ensure that attention page size is >= mamba page size.",
            "Padding mamba page size by 0.13% to ensure that mamba page size and attention page size are exactly equal.",
            "GPU KV cache size: 57,344 tokens, Maximum concurrency for 8,192 tokens per request: 7.00x",
        ),
    ),
    ("0.31.0", "hyb-qwen35vl-allfull"): _ok(
        784,
        77,
        57344,
        8192,
        log=(
            "Mamba cache mode is set to 'align' for Qwen3_5MoeForConditionalGeneration by default when prefix caching is enabled",
            "Setting attention block size to 784 tokens to ensure that attention page size is >= mamba page size.",
            "Padding mamba page size by 0.13% to ensure that mamba page size and attention page size are exactly equal.",
            "GPU KV cache size: 57,344 tokens, Maximum concurrency for 8,192 tokens per request: 7.00x",
        ),
    ),
    ("0.32.0", "hyb-qwen35vl-allfull"): _ok(
        784,
        77,
        57344,
        8192,
        log=(
            "Mamba cache mode is set to 'align' for Qwen3_5MoeForConditionalGeneration by default when prefix caching is enabled",
            "Setting attention block size to 784 tokens to ensure that attention page size is >= mamba page size.",
            "Padding mamba page size by 0.13% to ensure that mamba page size and attention page size are exactly equal.",
            "GPU KV cache size: 57,344 tokens, Maximum concurrency for 8,192 tokens per request: 7.00x",
        ),
    ),
    ("0.33.0", "hyb-qwen35vl-allfull"): _ok(
        784,
        77,
        57344,
        8192,
        log=(
            "Mamba cache mode is set to 'align' for Qwen3_5MoeForConditionalGeneration by default when prefix caching is enabled",
            "Setting attention block size to 784 tokens to ensure that attention page size is >= mamba page size.",
            "Padding mamba page size by 0.13% to ensure that mamba page size and attention page size are exactly equal.",
            "GPU KV cache size: 57,344 tokens, Maximum concurrency for 8,192 tokens per request: 7.00x",
        ),
    ),
    ("0.27.1", "hyb-granite-allmamba"): _ok(
        16,
        825,
        6758400,
        8192,
        log=(
            "GPU KV cache size: 6,758,400 tokens",
            "Maximum concurrency for 8,192 tokens per request: 825.00x",
        ),
    ),
    ("0.28.0", "hyb-granite-allmamba"): _ok(
        16,
        825,
        3379200,
        8192,
        log=(
            "Mamba cache mode is set to 'align' for GraniteMoeHybridForCausalLM by default when prefix caching is enabled",
            "GPU KV cache size: 3,379,200 tokens, Maximum concurrency for 8,192 tokens per request: 412.50x",
        ),
    ),
    ("0.29.0", "hyb-granite-allmamba"): _ok(
        16,
        825,
        3379200,
        8192,
        log=(
            "Mamba cache mode is set to 'align' for GraniteMoeHybridForCausalLM by default when prefix caching is enabled",
            "GPU KV cache size: 3,379,200 tokens, Maximum concurrency for 8,192 tokens per request: 412.50x",
        ),
    ),
    ("0.30.0", "hyb-granite-allmamba"): _ok(
        16,
        825,
        3379200,
        8192,
        log=(
            "Mamba cache mode is set to 'align' for GraniteMoeHybridForCausalLM by default when prefix caching is enabled",
            "GPU KV cache size: 3,379,200 tokens, Maximum concurrency for 8,192 tokens per request: 412.50x",
        ),
    ),
    ("0.31.0", "hyb-granite-allmamba"): _ok(
        16,
        825,
        3379200,
        8192,
        log=(
            "Mamba cache mode is set to 'align' for GraniteMoeHybridForCausalLM by default when prefix caching is enabled",
            "GPU KV cache size: 3,379,200 tokens, Maximum concurrency for 8,192 tokens per request: 412.50x",
        ),
    ),
    ("0.32.0", "hyb-granite-allmamba"): _ok(
        16,
        825,
        2252800,
        8192,
        log=(
            "Mamba cache mode is set to 'align' for GraniteMoeHybridForCausalLM by default when prefix caching is enabled",
            "GPU KV cache size: 2,252,800 tokens, Maximum concurrency for 8,192 tokens per request: 275.00x",
        ),
    ),
    ("0.33.0", "hyb-granite-allmamba"): _ok(
        16,
        825,
        2252800,
        8192,
        log=(
            "Mamba cache mode is set to 'align' for GraniteMoeHybridForCausalLM by default when prefix caching is enabled",
            "GPU KV cache size: 2,252,800 tokens, Maximum concurrency for 8,192 tokens per request: 275.00x",
        ),
    ),
    ("0.27.1", "hyb-nemoh-allmamba"): _ok(
        16,
        468,
        3833856,
        8192,
        log=(
            "GPU KV cache size: 3,833,856 tokens",
            "Maximum concurrency for 8,192 tokens per request: 468.00x",
        ),
    ),
    ("0.28.0", "hyb-nemoh-allmamba"): _ok(
        16,
        468,
        1916928,
        8192,
        log=(
            "Mamba cache mode is set to 'align' for NemotronHForCausalLM by default when prefix caching is enabled",
            "GPU KV cache size: 1,916,928 tokens, Maximum concurrency for 8,192 tokens per request: 234.00x",
        ),
    ),
    ("0.29.0", "hyb-nemoh-allmamba"): _ok(
        16,
        468,
        1916928,
        8192,
        log=(
            "Mamba cache mode is set to 'align' for NemotronHForCausalLM by default when prefix caching is enabled",
            "GPU KV cache size: 1,916,928 tokens, Maximum concurrency for 8,192 tokens per request: 234.00x",
        ),
    ),
    ("0.30.0", "hyb-nemoh-allmamba"): _ok(
        16,
        468,
        1916928,
        8192,
        log=(
            "Mamba cache mode is set to 'align' for NemotronHForCausalLM by default when prefix caching is enabled",
            "GPU KV cache size: 1,916,928 tokens, Maximum concurrency for 8,192 tokens per request: 234.00x",
        ),
    ),
    ("0.31.0", "hyb-nemoh-allmamba"): _ok(
        16,
        468,
        1916928,
        8192,
        log=(
            "Mamba cache mode is set to 'align' for NemotronHForCausalLM by default when prefix caching is enabled",
            "GPU KV cache size: 1,916,928 tokens, Maximum concurrency for 8,192 tokens per request: 234.00x",
        ),
    ),
    ("0.32.0", "hyb-nemoh-allmamba"): _ok(
        16,
        468,
        1277952,
        8192,
        log=(
            "Mamba cache mode is set to 'align' for NemotronHForCausalLM by default when prefix caching is enabled",
            "GPU KV cache size: 1,277,952 tokens, Maximum concurrency for 8,192 tokens per request: 156.00x",
        ),
    ),
    ("0.33.0", "hyb-nemoh-allmamba"): _ok(
        16,
        468,
        1277952,
        8192,
        log=(
            "Mamba cache mode is set to 'align' for NemotronHForCausalLM by default when prefix caching is enabled",
            "GPU KV cache size: 1,277,952 tokens, Maximum concurrency for 8,192 tokens per request: 156.00x",
        ),
    ),
    # OLMo-Hybrid all full / all linear: its config class refuses both (0.33.0: inside transformers'
    # StrictDataclassClassValidationError)
    ("0.28.0", "hyb-olmoh-allfull"): {
        "refused": True,
        "vllm": "ValidationError: 1 validation error for ModelConfig\n  Value error, OLMoHybrid expects at least one 'linear_attention' layer.",
    },
    ("0.29.0", "hyb-olmoh-allfull"): {
        "refused": True,
        "vllm": "ValidationError: 1 validation error for ModelConfig\n  Value error, OLMoHybrid expects at least one 'linear_attention' layer.",
    },
    ("0.30.0", "hyb-olmoh-allfull"): {
        "refused": True,
        "vllm": "ValidationError: 1 validation error for ModelConfig\n  Value error, OLMoHybrid expects at least one 'linear_attention' layer.",
    },
    ("0.31.0", "hyb-olmoh-allfull"): {
        "refused": True,
        "vllm": "ValidationError: 1 validation error for ModelConfig\n  Value error, OLMoHybrid expects at least one 'linear_attention' layer.",
    },
    ("0.32.0", "hyb-olmoh-allfull"): {
        "refused": True,
        "vllm": "StrictDataclassClassValidationError: Class validation error for validator 'validate_architecture':\n    ValueError: OLMoHybrid expects at least one 'linear_attention' layer.",
    },
    ("0.33.0", "hyb-olmoh-allfull"): {
        "refused": True,
        "vllm": "StrictDataclassClassValidationError: Class validation error for validator 'validate_architecture':\n    ValueError: OLMoHybrid expects at least one 'linear_attention' layer.",
    },
    ("0.28.0", "hyb-olmoh-alllin"): {
        "refused": True,
        "vllm": "ValidationError: 1 validation error for ModelConfig\n  Value error, OLMoHybrid expects at least one attention layer.",
    },
    ("0.29.0", "hyb-olmoh-alllin"): {
        "refused": True,
        "vllm": "ValidationError: 1 validation error for ModelConfig\n  Value error, OLMoHybrid expects at least one attention layer.",
    },
    ("0.30.0", "hyb-olmoh-alllin"): {
        "refused": True,
        "vllm": "ValidationError: 1 validation error for ModelConfig\n  Value error, OLMoHybrid expects at least one attention layer.",
    },
    ("0.31.0", "hyb-olmoh-alllin"): {
        "refused": True,
        "vllm": "ValidationError: 1 validation error for ModelConfig\n  Value error, OLMoHybrid expects at least one attention layer.",
    },
    ("0.32.0", "hyb-olmoh-alllin"): {
        "refused": True,
        "vllm": "StrictDataclassClassValidationError: Class validation error for validator 'validate_architecture':\n    ValueError: OLMoHybrid expects at least one attention layer.",
    },
    ("0.33.0", "hyb-olmoh-alllin"): {
        "refused": True,
        "vllm": "StrictDataclassClassValidationError: Class validation error for validator 'validate_architecture':\n    ValueError: OLMoHybrid expects at least one attention layer.",
    },
    # Qwen4-Exp with every layer full attention: vLLM's own config class (0.29-0.31) keeps full_attention
    # names (no hybrid; with a PLE cache vLLM then asserts a mamba block size), transformers' (0.32+) names
    # them indexed_attention (hybrid)
    ("0.29.0", "hyb-q4-allfull"): _ok(
        16,
        30517,
        488272,
        8192,
        log=("GPU KV cache size: 488,272 tokens, Maximum concurrency for 8,192 tokens per request: 59.60x",),
    ),
    ("0.30.0", "hyb-q4-allfull"): _ok(
        16,
        30517,
        488272,
        8192,
        log=("GPU KV cache size: 488,272 tokens, Maximum concurrency for 8,192 tokens per request: 59.60x",),
    ),
    ("0.31.0", "hyb-q4-allfull"): _ok(
        16,
        30517,
        488272,
        8192,
        log=("GPU KV cache size: 488,272 tokens, Maximum concurrency for 8,192 tokens per request: 59.60x",),
    ),
    ("0.32.0", "hyb-q4-allfull"): _ok(
        144,
        3390,
        487208,
        8192,
        log=(
            "Mamba cache mode is set to 'align' for Qwen4ExpForCausalLM by default when prefix caching is enabled",
            "Setting attention block size to 144 tokens to ensure that attention page size is >= mamba page size.",
            "GPU KV cache size: 487,208 tokens, Maximum concurrency for 8,192 tokens per request: 59.47x",
        ),
    ),
    ("0.33.0", "hyb-q4-allfull"): _ok(
        144,
        3390,
        487208,
        8192,
        log=(
            "Mamba cache mode is set to 'align' for Qwen4ExpForCausalLM by default when prefix caching is enabled",
            "Setting attention block size to 144 tokens to ensure that attention page size is >= mamba page size.",
            "GPU KV cache size: 487,208 tokens, Maximum concurrency for 8,192 tokens per request: 59.47x",
        ),
    ),
    ("0.29.0", "hyb-q4-allfull-ple"): {"refused": True, "vllm": "AssertionError: "},
    ("0.32.0", "hyb-q4-allfull-ple"): {
        "refused": True,
        "vllm": "StrictDataclassClassValidationError: Class validation error for validator 'validate_architecture':\n    ValueError: Qwen4-Exp PLE is only supported on linear_attention layers, got PLE on layers [1].",
    },
    ("0.33.0", "hyb-q4-allfull-ple"): {
        "refused": True,
        "vllm": "StrictDataclassClassValidationError: Class validation error for validator 'validate_architecture':\n    ValueError: Qwen4-Exp PLE is only supported on linear_attention layers, got PLE on layers [1].",
    },
    ("0.30.0", "hyb-q4-allfull-ple-nooffload"): {"refused": True, "vllm": "AssertionError: "},
    ("0.31.0", "hyb-q4-allfull-ple-nooffload"): {"refused": True, "vllm": "AssertionError: "},
    ("0.32.0", "hyb-q4-allfull-ple-nooffload"): {
        "refused": True,
        "vllm": "StrictDataclassClassValidationError: Class validation error for validator 'validate_architecture':\n    ValueError: Qwen4-Exp PLE is only supported on linear_attention layers, got PLE on layers [1].",
    },
    # GLM-5.3-Flash with every layer full_attention: 0.30.0 / 0.31.0's own config class keeps the list, so every
    # layer is built indexed and ModelConfig.is_hybrid is false (no mamba alignment): the block stays the
    # indexer backend's 64 and the kpool indexer cache asserts; at 512 / 1,024 tokens it serves (one group).
    # 0.32.0 / 0.33.0: transformers' config class names them indexed_attention (still hybrid)
    ("0.30.0", "hyb-glm5-allidx"): {
        "refused": True,
        "vllm": "AssertionError: Glm5NextIndexerCache: kpool indexer requires cache block_size to be a multiple of index_kpool * 32 (512) so that DeepGEMM paged-MQA pool pages (32 or 64 entries) tile the storage block, got block_size=64 -> storage_block_size=4.",
    },
    ("0.30.0", "hyb-glm5-allidx-b512"): _ok(
        512,
        632,
        323584,
        8192,
        log=(
            "KV cache page sizes cannot be unified; treating sliding-window layers as full attention for cache allocation. Sliding-window attention compute is unchanged.",
            "GPU KV cache size: 323,584 tokens, Maximum concurrency for 8,192 tokens per request: 39.50x",
        ),
    ),
    ("0.30.0", "hyb-glm5-allidx-b1024"): _ok(
        1024,
        316,
        323584,
        8192,
        log=(
            "KV cache page sizes cannot be unified; treating sliding-window layers as full attention for cache allocation. Sliding-window attention compute is unchanged.",
            "GPU KV cache size: 323,584 tokens, Maximum concurrency for 8,192 tokens per request: 39.50x",
        ),
    ),
    ("0.30.0", "hyb-glm5-linfull"): _ok(
        1024,
        1892,
        1033284,
        8192,
        log=(
            "Mamba cache mode is set to 'align' for Glm5NextForCausalLM by default when prefix caching is enabled",
            "Setting kv cache block size to 64 for DEEPSEEK_V32_INDEXER backend.",
            "Setting attention block size to 1024 tokens to ensure that attention page size is >= mamba page size.",
            "Padding mamba page size by 93.21% to ensure that mamba page size and attention page size are exactly equal.",
            "GPU KV cache size: 1,033,284 tokens, Maximum concurrency for 8,192 tokens per request: 126.13x",
            "kv lcm block sizes 1024",
        ),
    ),
    ("0.31.0", "hyb-glm5-allidx"): {
        "refused": True,
        "vllm": "AssertionError: Glm5NextIndexerCache: kpool indexer requires cache block_size to be a multiple of index_kpool * 32 (512) so that DeepGEMM paged-MQA pool pages (32 or 64 entries) tile the storage block, got block_size=64 -> storage_block_size=4.",
    },
    ("0.31.0", "hyb-glm5-allidx-b512"): _ok(
        512,
        632,
        323584,
        8192,
        log=(
            "KV cache page sizes cannot be unified; treating sliding-window layers as full attention for cache allocation. Sliding-window attention compute is unchanged.",
            "GPU KV cache size: 323,584 tokens, Maximum concurrency for 8,192 tokens per request: 39.50x",
        ),
    ),
    ("0.31.0", "hyb-glm5-allidx-b1024"): _ok(
        1024,
        316,
        323584,
        8192,
        log=(
            "KV cache page sizes cannot be unified; treating sliding-window layers as full attention for cache allocation. Sliding-window attention compute is unchanged.",
            "GPU KV cache size: 323,584 tokens, Maximum concurrency for 8,192 tokens per request: 39.50x",
        ),
    ),
    ("0.31.0", "hyb-glm5-linfull"): _ok(
        1024,
        1892,
        1033284,
        8192,
        log=(
            "Mamba cache mode is set to 'align' for Glm5NextForCausalLM by default when prefix caching is enabled",
            "Setting kv cache block size to 64 for DEEPSEEK_V32_INDEXER/KPOOL_TAIL/FLASHINFER_MLA_SPARSE_SM90 backend(s).",
            "Setting attention block size to 1024 tokens to ensure that attention page size is >= mamba page size.",
            "Padding mamba page size by 93.21% to ensure that mamba page size and attention page size are exactly equal.",
            "GPU KV cache size: 1,033,284 tokens, Maximum concurrency for 8,192 tokens per request: 126.13x",
            "kv lcm block sizes 1024",
        ),
    ),
    ("0.32.0", "hyb-glm5-allidx"): _ok(
        1024,
        473,
        430535,
        8192,
        log=(
            "Mamba cache mode is set to 'align' for Glm5NextForCausalLM by default when prefix caching is enabled",
            "Setting kv cache block size to 512 for DEEPSEEK_V32_INDEXER/KPOOL_TAIL/FLASHINFER_MLA_SPARSE_SM90 backend(s).",
            "Setting attention block size to 1024 tokens to ensure that attention page size is >= mamba page size.",
            "Padding mamba page size by 93.21% to ensure that mamba page size and attention page size are exactly equal.",
            "GPU KV cache size: 430,535 tokens, Maximum concurrency for 8,192 tokens per request: 52.56x",
            "kv lcm block sizes 1024",
        ),
    ),
    ("0.33.0", "hyb-glm5-allidx"): _ok(
        1024,
        473,
        430535,
        8192,
        log=(
            "Mamba cache mode is set to 'align' for Glm5NextForCausalLM by default when prefix caching is enabled",
            "Setting kv cache block size to 512 for DEEPSEEK_V32_INDEXER/KPOOL_TAIL/FLASHINFER_MLA_SPARSE_SM90 backend(s).",
            "Setting attention block size to 1024 tokens to ensure that attention page size is >= mamba page size.",
            "Padding mamba page size by 93.21% to ensure that mamba page size and attention page size are exactly equal.",
            "GPU KV cache size: 430,535 tokens, Maximum concurrency for 8,192 tokens per request: 52.56x",
            "kv lcm block sizes 1024",
        ),
    ),
    # Kimi-Linear of KDA layers only with an nvfp4 cache: refused by VllmConfig on every release
    **{
        (v, "kimil-allkda-nvfp4"): {
            "refused": True,
            "vllm": "ValidationError: 1 validation error for VllmConfig\n  Value error, nvfp4 KV cache is not supported "
            "with MLA (Multi-head Latent Attention) backends. Please use a different --kv-cache-dtype (e.g., 'fp8', "
            "'auto', or 'nvfp4_ds_mla' with a sparse MLA backend) for MLA models such as DeepSeek.",
        }
        for v in ("0.27.1", "0.28.0", "0.29.0", "0.30.0", "0.31.0", "0.32.0", "0.33.0")
    },
    ("0.33.0", "hyb-glm5-allidx-b512"): _ok(
        1024,
        473,
        430535,
        8192,
        log=(
            "Mamba cache mode is set to 'align' for Glm5NextForCausalLM by default when prefix caching is enabled",
            "Setting attention block size to 1024 tokens to ensure that attention page size is >= mamba page size.",
            "Padding mamba page size by 93.21% to ensure that mamba page size and attention page size are exactly equal.",
            "GPU KV cache size: 430,535 tokens, Maximum concurrency for 8,192 tokens per request: 52.56x",
            "kv lcm block sizes 1024",
        ),
    ),
    ("0.33.0", "hyb-glm5-allidx-b1024"): _ok(
        1024,
        473,
        430535,
        8192,
        log=(
            "Mamba cache mode is set to 'align' for Glm5NextForCausalLM by default when prefix caching is enabled",
            "Padding mamba page size by 93.21% to ensure that mamba page size and attention page size are exactly equal.",
            "GPU KV cache size: 430,535 tokens, Maximum concurrency for 8,192 tokens per request: 52.56x",
            "kv lcm block sizes 1024",
        ),
    ),
    ("0.33.0", "hyb-glm5-linfull"): _ok(
        1024,
        1890,
        860160,
        8192,
        log=(
            "Mamba cache mode is set to 'align' for Glm5NextForCausalLM by default when prefix caching is enabled",
            "Setting kv cache block size to 512 for DEEPSEEK_V32_INDEXER/KPOOL_TAIL/FLASHINFER_MLA_SPARSE_SM90 backend(s).",
            "Setting attention block size to 1024 tokens to ensure that attention page size is >= mamba page size.",
            "Padding mamba page size by 93.21% to ensure that mamba page size and attention page size are exactly equal.",
            "GPU KV cache size: 860,160 tokens, Maximum concurrency for 8,192 tokens per request: 105.00x",
            "kv lcm block sizes 1024",
        ),
    ),
    # flash-8 with --mamba-ssm-cache-dtype bfloat16: 0.30.0 / 0.31.0 align the block to a float32 KDA state
    ("0.30.0", "glm5-flash8-ssmbf16"): _ok(
        1536,
        105,
        143360,
        8192,
        log=(
            "Mamba cache mode is set to 'align' for Glm5NextForCausalLM by default when prefix caching is enabled",
            "Setting kv cache block size to 64 for DEEPSEEK_V32_INDEXER backend.",
            "Setting attention block size to 1536 tokens to ensure that attention page size is >= mamba page size.",
            "Padding mamba page size by 44.91% to ensure that mamba page size and attention page size are exactly equal.",
            "KV cache page sizes cannot be unified; treating sliding-window layers as full attention for cache allocation. Sliding-window attention compute is unchanged.",
            "GPU KV cache size: 143,360 tokens, Maximum concurrency for 8,192 tokens per request: 17.50x",
        ),
    ),
    ("0.31.0", "glm5-flash8-ssmbf16"): _ok(
        1536,
        105,
        143360,
        8192,
        log=(
            "Mamba cache mode is set to 'align' for Glm5NextForCausalLM by default when prefix caching is enabled",
            "Setting kv cache block size to 64 for DEEPSEEK_V32_INDEXER/KPOOL_TAIL/FLASHINFER_MLA_SPARSE_SM90 backend(s).",
            "Setting attention block size to 1536 tokens to ensure that attention page size is >= mamba page size.",
            "Padding mamba page size by 44.91% to ensure that mamba page size and attention page size are exactly equal.",
            "KV cache page sizes cannot be unified; treating sliding-window layers as full attention for cache allocation. Sliding-window attention compute is unchanged.",
            "GPU KV cache size: 143,360 tokens, Maximum concurrency for 8,192 tokens per request: 17.50x",
        ),
    ),
    ("0.33.0", "glm5-flash8-ssmbf16"): _ok(
        1024,
        945,
        430080,
        8192,
        log=(
            "Mamba cache mode is set to 'align' for Glm5NextForCausalLM by default when prefix caching is enabled",
            "Setting kv cache block size to 512 for DEEPSEEK_V32_INDEXER/KPOOL_TAIL/FLASHINFER_MLA_SPARSE_SM90 backend(s).",
            "Setting attention block size to 1024 tokens to ensure that attention page size is >= mamba page size.",
            "Padding mamba page size by 86.86% to ensure that mamba page size and attention page size are exactly equal.",
            "GPU KV cache size: 430,080 tokens, Maximum concurrency for 8,192 tokens per request: 52.50x",
            "kv lcm block sizes 1024",
        ),
    ),
    # hyb-glm5-allidx under more flags; hyb-glm5-allidxn (every layer indexed_attention): hybrid on 0.30.0 (the
    # entries are not attention names), refused by 0.31.0's transformers, hybrid on 0.33.0
    ("0.30.0", "hyb-glm5-allidx-b256"): {
        "refused": True,
        "vllm": "AssertionError: Glm5NextIndexerCache: kpool indexer requires cache block_size to be a multiple of index_kpool * 32 (512) so that DeepGEMM paged-MQA pool pages (32 or 64 entries) tile the storage block, got block_size=256 -> storage_block_size=16.",
    },
    ("0.30.0", "hyb-glm5-allidx-b512-tp2"): _ok(
        512,
        632,
        323584,
        8192,
        log=(
            "KV cache page sizes cannot be unified; treating sliding-window layers as full attention for cache allocation. Sliding-window attention compute is unchanged.",
            "GPU KV cache size: 323,584 tokens, Maximum concurrency for 8,192 tokens per request: 39.50x",
        ),
    ),
    ("0.30.0", "hyb-glm5-allidx-b512-pp2"): _ok(
        512,
        1264,
        647168,
        8192,
        log=(
            "KV cache page sizes cannot be unified; treating sliding-window layers as full attention for cache allocation. Sliding-window attention compute is unchanged.",
            "GPU KV cache size: 647,168 tokens, Maximum concurrency for 8,192 tokens per request: 79.00x",
        ),
    ),
    ("0.30.0", "hyb-glm5-allidx-b512-noprefix"): _ok(
        512,
        632,
        323584,
        8192,
        log=(
            "KV cache page sizes cannot be unified; treating sliding-window layers as full attention for cache allocation. Sliding-window attention compute is unchanged.",
            "GPU KV cache size: 323,584 tokens, Maximum concurrency for 8,192 tokens per request: 39.50x",
        ),
    ),
    ("0.30.0", "hyb-glm5-allidxn"): _ok(
        1024,
        316,
        323584,
        8192,
        log=(
            "Mamba cache mode is set to 'align' for Glm5NextForCausalLM by default when prefix caching is enabled",
            "Setting kv cache block size to 64 for DEEPSEEK_V32_INDEXER backend.",
            "Setting attention block size to 1024 tokens to ensure that attention page size is >= mamba page size.",
            "Padding mamba page size by 93.21% to ensure that mamba page size and attention page size are exactly equal.",
            "KV cache page sizes cannot be unified; treating sliding-window layers as full attention for cache allocation. Sliding-window attention compute is unchanged.",
            "GPU KV cache size: 323,584 tokens, Maximum concurrency for 8,192 tokens per request: 39.50x",
        ),
    ),
    ("0.31.0", "hyb-glm5-allidx-b256"): {
        "refused": True,
        "vllm": "AssertionError: Glm5NextIndexerCache: kpool indexer requires cache block_size to be a multiple of index_kpool * 32 (512) so that DeepGEMM paged-MQA pool pages (32 or 64 entries) tile the storage block, got block_size=256 -> storage_block_size=16.",
    },
    ("0.31.0", "hyb-glm5-allidx-b512-tp2"): _ok(
        512,
        632,
        323584,
        8192,
        log=(
            "KV cache page sizes cannot be unified; treating sliding-window layers as full attention for cache allocation. Sliding-window attention compute is unchanged.",
            "GPU KV cache size: 323,584 tokens, Maximum concurrency for 8,192 tokens per request: 39.50x",
        ),
    ),
    ("0.31.0", "hyb-glm5-allidx-b512-pp2"): _ok(
        512,
        1264,
        647168,
        8192,
        log=(
            "KV cache page sizes cannot be unified; treating sliding-window layers as full attention for cache allocation. Sliding-window attention compute is unchanged.",
            "GPU KV cache size: 647,168 tokens, Maximum concurrency for 8,192 tokens per request: 79.00x",
        ),
    ),
    ("0.31.0", "hyb-glm5-allidx-b512-noprefix"): _ok(
        512,
        632,
        323584,
        8192,
        log=(
            "KV cache page sizes cannot be unified; treating sliding-window layers as full attention for cache allocation. Sliding-window attention compute is unchanged.",
            "GPU KV cache size: 323,584 tokens, Maximum concurrency for 8,192 tokens per request: 39.50x",
        ),
    ),
    ("0.31.0", "hyb-glm5-allidxn"): {
        "refused": True,
        "vllm": "StrictDataclassClassValidationError: Class validation error for validator 'validate_layer_type':\n    ValueError: The `layer_types` entries must be in ('full_attention', 'sliding_attention', 'chunked_attention', 'window_attention', 'compressed_sparse_attention', 'heavily_compressed_attention', 'minimax_m3_sparse', 'conv', 'moe', 'hybrid', 'hybrid_sliding', 'deepseek_sparse_attention', 'qwen_sparse_attention', 'linear_attention') but got ['indexed_attention', 'indexed_attention', 'indexed_attention', 'indexed_attention']",
    },
    ("0.33.0", "hyb-glm5-allidx-b256"): _ok(
        1024,
        473,
        430535,
        8192,
        log=(
            "Mamba cache mode is set to 'align' for Glm5NextForCausalLM by default when prefix caching is enabled",
            "Setting attention block size to 1024 tokens to ensure that attention page size is >= mamba page size.",
            "Padding mamba page size by 93.21% to ensure that mamba page size and attention page size are exactly equal.",
            "GPU KV cache size: 430,535 tokens, Maximum concurrency for 8,192 tokens per request: 52.56x",
            "kv lcm block sizes 1024",
        ),
    ),
    ("0.33.0", "hyb-glm5-allidx-b512-tp2"): _ok(
        512,
        945,
        455378,
        8192,
        log=(
            "Mamba cache mode is set to 'align' for Glm5NextForCausalLM by default when prefix caching is enabled",
            "Padding mamba page size by 93.21% to ensure that mamba page size and attention page size are exactly equal.",
            "GPU KV cache size: 455,378 tokens, Maximum concurrency for 8,192 tokens per request: 55.59x",
            "kv lcm block sizes 512",
        ),
    ),
    ("0.33.0", "hyb-glm5-allidx-b512-pp2"): _ok(
        1024,
        945,
        860160,
        8192,
        log=(
            "Mamba cache mode is set to 'align' for Glm5NextForCausalLM by default when prefix caching is enabled",
            "Setting attention block size to 1024 tokens to ensure that attention page size is >= mamba page size.",
            "Padding mamba page size by 93.21% to ensure that mamba page size and attention page size are exactly equal.",
            "Setting attention block size to 1024 tokens to ensure that attention page size is >= mamba page size.",
            "Padding mamba page size by 93.21% to ensure that mamba page size and attention page size are exactly equal.",
            "GPU KV cache size: 860,160 tokens, Maximum concurrency for 8,192 tokens per request: 105.00x",
            "kv lcm block sizes 1024",
        ),
    ),
    ("0.33.0", "hyb-glm5-allidx-b512-noprefix"): _ok(
        1024,
        473,
        430535,
        8192,
        log=(
            "Setting attention block size to 1024 tokens to ensure that attention page size is >= mamba page size.",
            "Padding mamba page size by 93.21% to ensure that mamba page size and attention page size are exactly equal.",
            "GPU KV cache size: 430,535 tokens, Maximum concurrency for 8,192 tokens per request: 52.56x",
            "kv lcm block sizes 1024",
        ),
    ),
    ("0.33.0", "hyb-glm5-allidxn"): _ok(
        1024,
        473,
        430535,
        8192,
        log=(
            "Mamba cache mode is set to 'align' for Glm5NextForCausalLM by default when prefix caching is enabled",
            "Setting kv cache block size to 512 for DEEPSEEK_V32_INDEXER/KPOOL_TAIL/FLASHINFER_MLA_SPARSE_SM90 backend(s).",
            "Setting attention block size to 1024 tokens to ensure that attention page size is >= mamba page size.",
            "Padding mamba page size by 93.21% to ensure that mamba page size and attention page size are exactly equal.",
            "GPU KV cache size: 430,535 tokens, Maximum concurrency for 8,192 tokens per request: 52.56x",
            "kv lcm block sizes 1024",
        ),
    ),
    # KDA layers beside indexed ones: 0.30.0 / 0.31.0's own GLM-5.3-Flash grouping (a group of the key caches and
    # MLA rows, one of the tail rings padded to the key cache's page, the KDA states round-robin); at TP 2 the
    # 512-token block's key cache page (4,224 bytes) is smaller than a tail ring's 8,192: AssertionError
    ("0.30.0", "hyb-glm5-linfull2"): _ok(
        1024,
        946,
        516642,
        8192,
        log=(
            "Mamba cache mode is set to 'align' for Glm5NextForCausalLM by default when prefix caching is enabled",
            "Setting kv cache block size to 64 for DEEPSEEK_V32_INDEXER backend.",
            "Setting attention block size to 1024 tokens to ensure that attention page size is >= mamba page size.",
            "Padding mamba page size by 93.21% to ensure that mamba page size and attention page size are exactly equal.",
            "GPU KV cache size: 516,642 tokens, Maximum concurrency for 8,192 tokens per request: 63.07x",
            "kv lcm block sizes 1024",
        ),
    ),
    ("0.30.0", "hyb-glm5-linfull-tp2"): {
        "refused": True,
        "vllm": "AssertionError: ",
    },
    ("0.30.0", "hyb-glm5-linfull-noprefix"): _ok(
        1024,
        1892,
        1291605,
        8192,
        log=(
            "Setting kv cache block size to 64 for DEEPSEEK_V32_INDEXER backend.",
            "Setting attention block size to 1024 tokens to ensure that attention page size is >= mamba page size.",
            "Padding mamba page size by 93.21% to ensure that mamba page size and attention page size are exactly equal.",
            "GPU KV cache size: 1,291,605 tokens, Maximum concurrency for 8,192 tokens per request: 157.67x",
            "kv lcm block sizes 8192",
        ),
    ),
    ("0.30.0", "hyb-glm5-linfull-len-auto"): _ok(
        1024,
        1892,
        1347762,
        16384,
        log=(
            "Mamba cache mode is set to 'align' for Glm5NextForCausalLM by default when prefix caching is enabled",
            "Setting kv cache block size to 64 for DEEPSEEK_V32_INDEXER backend.",
            "Setting attention block size to 1024 tokens to ensure that attention page size is >= mamba page size.",
            "Padding mamba page size by 93.21% to ensure that mamba page size and attention page size are exactly equal.",
            "Auto-fit max_model_len: full model context length 16384 fits in available GPU memory",
            "GPU KV cache size: 1,347,762 tokens, Maximum concurrency for 16,384 tokens per request: 82.26x",
            "kv lcm block sizes 1024",
        ),
    ),
    ("0.31.0", "hyb-glm5-linfull2"): _ok(
        1024,
        946,
        516642,
        8192,
        log=(
            "Mamba cache mode is set to 'align' for Glm5NextForCausalLM by default when prefix caching is enabled",
            "Setting kv cache block size to 64 for DEEPSEEK_V32_INDEXER/KPOOL_TAIL/FLASHINFER_MLA_SPARSE_SM90 backend(s).",
            "Setting attention block size to 1024 tokens to ensure that attention page size is >= mamba page size.",
            "Padding mamba page size by 93.21% to ensure that mamba page size and attention page size are exactly equal.",
            "GPU KV cache size: 516,642 tokens, Maximum concurrency for 8,192 tokens per request: 63.07x",
            "kv lcm block sizes 1024",
        ),
    ),
    ("0.31.0", "hyb-glm5-linfull-tp2"): {
        "refused": True,
        "vllm": "AssertionError: ",
    },
    ("0.31.0", "hyb-glm5-linfull-noprefix"): _ok(
        1024,
        1892,
        1291605,
        8192,
        log=(
            "Setting kv cache block size to 64 for DEEPSEEK_V32_INDEXER/KPOOL_TAIL/FLASHINFER_MLA_SPARSE_SM90 backend(s).",
            "Setting attention block size to 1024 tokens to ensure that attention page size is >= mamba page size.",
            "Padding mamba page size by 93.21% to ensure that mamba page size and attention page size are exactly equal.",
            "GPU KV cache size: 1,291,605 tokens, Maximum concurrency for 8,192 tokens per request: 157.67x",
            "kv lcm block sizes 8192",
        ),
    ),
    ("0.31.0", "hyb-glm5-linfull-len-auto"): _ok(
        1024,
        1892,
        1347762,
        16384,
        log=(
            "Mamba cache mode is set to 'align' for Glm5NextForCausalLM by default when prefix caching is enabled",
            "Setting kv cache block size to 64 for DEEPSEEK_V32_INDEXER/KPOOL_TAIL/FLASHINFER_MLA_SPARSE_SM90 backend(s).",
            "Setting attention block size to 1024 tokens to ensure that attention page size is >= mamba page size.",
            "Padding mamba page size by 93.21% to ensure that mamba page size and attention page size are exactly equal.",
            "Auto-fit max_model_len: full model context length 16384 fits in available GPU memory",
            "GPU KV cache size: 1,347,762 tokens, Maximum concurrency for 16,384 tokens per request: 82.26x",
            "kv lcm block sizes 1024",
        ),
    ),
    ("0.33.0", "hyb-glm5-linfull2"): _ok(
        1024,
        945,
        430080,
        8192,
        log=(
            "Mamba cache mode is set to 'align' for Glm5NextForCausalLM by default when prefix caching is enabled",
            "Setting kv cache block size to 512 for DEEPSEEK_V32_INDEXER/KPOOL_TAIL/FLASHINFER_MLA_SPARSE_SM90 backend(s).",
            "Setting attention block size to 1024 tokens to ensure that attention page size is >= mamba page size.",
            "Padding mamba page size by 93.21% to ensure that mamba page size and attention page size are exactly equal.",
            "GPU KV cache size: 430,080 tokens, Maximum concurrency for 8,192 tokens per request: 52.50x",
            "kv lcm block sizes 1024",
        ),
    ),
    ("0.33.0", "hyb-glm5-linfull-tp2"): _ok(
        512,
        3777,
        1190045,
        8192,
        log=(
            "Mamba cache mode is set to 'align' for Glm5NextForCausalLM by default when prefix caching is enabled",
            "Setting kv cache block size to 512 for DEEPSEEK_V32_INDEXER/KPOOL_TAIL/FLASHINFER_MLA_SPARSE_SM90 backend(s).",
            "Padding mamba page size by 93.21% to ensure that mamba page size and attention page size are exactly equal.",
            "GPU KV cache size: 1,190,045 tokens, Maximum concurrency for 8,192 tokens per request: 145.27x",
            "kv lcm block sizes 512",
        ),
    ),
    ("0.33.0", "hyb-glm5-linfull-noprefix"): _ok(
        1024,
        1890,
        1290240,
        8192,
        log=(
            "Setting kv cache block size to 512 for DEEPSEEK_V32_INDEXER/KPOOL_TAIL/FLASHINFER_MLA_SPARSE_SM90 backend(s).",
            "Setting attention block size to 1024 tokens to ensure that attention page size is >= mamba page size.",
            "Padding mamba page size by 93.21% to ensure that mamba page size and attention page size are exactly equal.",
            "GPU KV cache size: 1,290,240 tokens, Maximum concurrency for 8,192 tokens per request: 157.50x",
            "kv lcm block sizes 8192",
        ),
    ),
    ("0.33.0", "hyb-glm5-linfull-len-auto"): _ok(
        1024,
        1890,
        1190990,
        16384,
        log=(
            "Mamba cache mode is set to 'align' for Glm5NextForCausalLM by default when prefix caching is enabled",
            "Setting kv cache block size to 512 for DEEPSEEK_V32_INDEXER/KPOOL_TAIL/FLASHINFER_MLA_SPARSE_SM90 backend(s).",
            "Setting attention block size to 1024 tokens to ensure that attention page size is >= mamba page size.",
            "Padding mamba page size by 93.21% to ensure that mamba page size and attention page size are exactly equal.",
            "Auto-fit max_model_len: full model context length 16384 fits in available KV cache memory (1.86 GiB GPU)",
            "GPU KV cache size: 1,190,990 tokens, Maximum concurrency for 16,384 tokens per request: 72.69x",
            "kv lcm block sizes 1024",
        ),
    ),
    # hyb-glm5-linfull under more flags: 0.31.0's tail ring grows with the n-gram tokens (32 > the key cache's
    # 8,448-byte page at 1,024 tokens: AssertionError); 0.30.0's stays index_kpool
    ("0.30.0", "hyb-glm5-linfull-b2048"): _ok(
        2048,
        946,
        704512,
        8192,
        log=(
            "Mamba cache mode is set to 'align' for Glm5NextForCausalLM by default when prefix caching is enabled",
            "Padding mamba page size by 286.42% to ensure that mamba page size and attention page size are exactly equal.",
            "GPU KV cache size: 704,512 tokens, Maximum concurrency for 8,192 tokens per request: 86.00x",
            "kv lcm block sizes 2048",
        ),
    ),
    ("0.30.0", "hyb-glm5-linfull-fp8"): _ok(
        1536,
        2502,
        1576644,
        8192,
        log=(
            "Mamba cache mode is set to 'align' for Glm5NextForCausalLM by default when prefix caching is enabled",
            "Setting kv cache block size to 64 for DEEPSEEK_V32_INDEXER backend.",
            "Setting attention block size to 1536 tokens to ensure that attention page size is >= mamba page size.",
            "Padding mamba page size by 44.91% to ensure that mamba page size and attention page size are exactly equal.",
            "GPU KV cache size: 1,576,644 tokens, Maximum concurrency for 8,192 tokens per request: 192.46x",
            "kv lcm block sizes 1536",
        ),
    ),
    ("0.30.0", "hyb-glm5-linfull-override"): _ok(
        1024,
        500,
        273066,
        8192,
        log=(
            "Mamba cache mode is set to 'align' for Glm5NextForCausalLM by default when prefix caching is enabled",
            "Setting kv cache block size to 64 for DEEPSEEK_V32_INDEXER backend.",
            "Setting attention block size to 1024 tokens to ensure that attention page size is >= mamba page size.",
            "Padding mamba page size by 93.21% to ensure that mamba page size and attention page size are exactly equal.",
            "Overriding num_gpu_blocks=1892 with num_gpu_blocks_override=500",
            "GPU KV cache size: 273,066 tokens, Maximum concurrency for 8,192 tokens per request: 33.33x",
            "kv lcm block sizes 1024",
        ),
    ),
    ("0.30.0", "hyb-glm5-linfull-ngram"): _ok(
        1024,
        1892,
        645802,
        8192,
        log=(
            "Mamba cache mode is set to 'align' for Glm5NextForCausalLM by default when prefix caching is enabled",
            "Setting kv cache block size to 64 for DEEPSEEK_V32_INDEXER backend.",
            "Setting attention block size to 1024 tokens to ensure that attention page size is >= mamba page size.",
            "Padding mamba page size by 86.86% to ensure that mamba page size and attention page size are exactly equal.",
            "GPU KV cache size: 645,802 tokens, Maximum concurrency for 8,192 tokens per request: 78.83x",
            "kv lcm block sizes 1024",
        ),
    ),
    ("0.31.0", "hyb-glm5-linfull-b2048"): _ok(
        2048,
        946,
        704512,
        8192,
        log=(
            "Mamba cache mode is set to 'align' for Glm5NextForCausalLM by default when prefix caching is enabled",
            "Padding mamba page size by 286.42% to ensure that mamba page size and attention page size are exactly equal.",
            "GPU KV cache size: 704,512 tokens, Maximum concurrency for 8,192 tokens per request: 86.00x",
            "kv lcm block sizes 2048",
        ),
    ),
    ("0.31.0", "hyb-glm5-linfull-fp8"): _ok(
        1536,
        2502,
        1576644,
        8192,
        log=(
            "Mamba cache mode is set to 'align' for Glm5NextForCausalLM by default when prefix caching is enabled",
            "Setting kv cache block size to 64 for DEEPSEEK_V32_INDEXER/KPOOL_TAIL/FLASHINFER_MLA_SPARSE_SM90 backend(s).",
            "Setting attention block size to 1536 tokens to ensure that attention page size is >= mamba page size.",
            "Padding mamba page size by 44.91% to ensure that mamba page size and attention page size are exactly equal.",
            "GPU KV cache size: 1,576,644 tokens, Maximum concurrency for 8,192 tokens per request: 192.46x",
            "kv lcm block sizes 1536",
        ),
    ),
    ("0.31.0", "hyb-glm5-linfull-override"): _ok(
        1024,
        500,
        273066,
        8192,
        log=(
            "Mamba cache mode is set to 'align' for Glm5NextForCausalLM by default when prefix caching is enabled",
            "Setting kv cache block size to 64 for DEEPSEEK_V32_INDEXER/KPOOL_TAIL/FLASHINFER_MLA_SPARSE_SM90 backend(s).",
            "Setting attention block size to 1024 tokens to ensure that attention page size is >= mamba page size.",
            "Padding mamba page size by 93.21% to ensure that mamba page size and attention page size are exactly equal.",
            "Overriding num_gpu_blocks=1892 with num_gpu_blocks_override=500",
            "GPU KV cache size: 273,066 tokens, Maximum concurrency for 8,192 tokens per request: 33.33x",
            "kv lcm block sizes 1024",
        ),
    ),
    ("0.31.0", "hyb-glm5-linfull-ngram"): {
        "refused": True,
        "vllm": "AssertionError: ",
    },
    ("0.33.0", "hyb-glm5-linfull-b2048"): _ok(
        2048,
        939,
        549449,
        8192,
        log=(
            "Mamba cache mode is set to 'align' for Glm5NextForCausalLM by default when prefix caching is enabled",
            "Padding mamba page size by 286.42% to ensure that mamba page size and attention page size are exactly equal.",
            "GPU KV cache size: 549,449 tokens, Maximum concurrency for 8,192 tokens per request: 67.07x",
            "kv lcm block sizes 2048",
        ),
    ),
    ("0.33.0", "hyb-glm5-linfull-fp8"): _ok(
        1536,
        2466,
        1262592,
        8192,
        log=(
            "Mamba cache mode is set to 'align' for Glm5NextForCausalLM by default when prefix caching is enabled",
            "Setting kv cache block size to 512 for DEEPSEEK_V32_INDEXER/KPOOL_TAIL/FLASHINFER_MLA_SPARSE_SM90 backend(s).",
            "Setting attention block size to 1536 tokens to ensure that attention page size is >= mamba page size.",
            "Padding mamba page size by 44.91% to ensure that mamba page size and attention page size are exactly equal.",
            "GPU KV cache size: 1,262,592 tokens, Maximum concurrency for 8,192 tokens per request: 154.12x",
            "kv lcm block sizes 1536",
        ),
    ),
    ("0.33.0", "hyb-glm5-linfull-override"): _ok(
        1024,
        500,
        227555,
        8192,
        log=(
            "Mamba cache mode is set to 'align' for Glm5NextForCausalLM by default when prefix caching is enabled",
            "Setting kv cache block size to 512 for DEEPSEEK_V32_INDEXER/KPOOL_TAIL/FLASHINFER_MLA_SPARSE_SM90 backend(s).",
            "Setting attention block size to 1024 tokens to ensure that attention page size is >= mamba page size.",
            "Padding mamba page size by 93.21% to ensure that mamba page size and attention page size are exactly equal.",
            "Overriding num_gpu_blocks=1890 with num_gpu_blocks_override=500",
            "GPU KV cache size: 227,555 tokens, Maximum concurrency for 8,192 tokens per request: 27.78x",
            "kv lcm block sizes 1024",
        ),
    ),
    ("0.33.0", "hyb-glm5-linfull-ngram"): _ok(
        1024,
        1890,
        573440,
        8192,
        log=(
            "Mamba cache mode is set to 'align' for Glm5NextForCausalLM by default when prefix caching is enabled",
            "Setting kv cache block size to 512 for DEEPSEEK_V32_INDEXER/KPOOL_TAIL/FLASHINFER_MLA_SPARSE_SM90 backend(s).",
            "Setting attention block size to 1024 tokens to ensure that attention page size is >= mamba page size.",
            "Padding mamba page size by 86.86% to ensure that mamba page size and attention page size are exactly equal.",
            "GPU KV cache size: 573,440 tokens, Maximum concurrency for 8,192 tokens per request: 70.00x",
            "kv lcm block sizes 1024",
        ),
    ),
    # a hidden-state cache beside KDA and indexed layers: 0.30.0 / 0.31.0's grouping declines it and the pages
    # cannot be unified (NotImplementedError); TP 4: the tail ring outgrows the 512-token key cache page
    ("0.30.0", "hyb-glm5-linfull-hidden"): {
        "refused": True,
        "vllm": "NotImplementedError: Layer model.layers.3.self_attn.indexer.k_cache: page size is not divisible by the maximum page size and cannot be padded. Padding is only supported for non-MLA attention layers.",
    },
    ("0.30.0", "hyb-glm5-linfull-tp4"): {
        "refused": True,
        "vllm": "AssertionError: ",
    },
    ("0.31.0", "hyb-glm5-linfull-hidden"): {
        "refused": True,
        "vllm": "NotImplementedError: Layer model.layers.3.self_attn.indexer.k_cache: page size is not divisible by the maximum page size and cannot be padded. Padding is only supported for non-MLA attention layers.",
    },
    ("0.31.0", "hyb-glm5-linfull-tp4"): {
        "refused": True,
        "vllm": "AssertionError: ",
    },
    ("0.33.0", "hyb-glm5-linfull-hidden"): _ok(
        1024,
        1890,
        533892,
        8192,
        log=(
            "Mamba cache mode is set to 'align' for Glm5NextForCausalLM by default when prefix caching is enabled",
            "Setting kv cache block size to 512 for DEEPSEEK_V32_INDEXER/KPOOL_TAIL/FLASHINFER_MLA_SPARSE_SM90/CACHE_ONLY_ATTN backend(s).",
            "Setting attention block size to 1024 tokens to ensure that attention page size is >= mamba page size.",
            "Padding mamba page size by 91.04% to ensure that mamba page size and attention page size are exactly equal.",
            "GPU KV cache size: 533,892 tokens, Maximum concurrency for 8,192 tokens per request: 65.17x",
            "kv lcm block sizes 1024",
        ),
    ),
    ("0.33.0", "hyb-glm5-linfull-tp4"): _ok(
        512,
        3777,
        1190045,
        8192,
        log=(
            "Mamba cache mode is set to 'align' for Glm5NextForCausalLM by default when prefix caching is enabled",
            "Setting kv cache block size to 512 for DEEPSEEK_V32_INDEXER/KPOOL_TAIL/FLASHINFER_MLA_SPARSE_SM90 backend(s).",
            "Padding mamba page size by 286.42% to ensure that mamba page size and attention page size are exactly equal.",
            "GPU KV cache size: 1,190,045 tokens, Maximum concurrency for 8,192 tokens per request: 145.27x",
            "kv lcm block sizes 512",
        ),
    ),
    # more flags beside KDA layers: --mamba-cache-mode all falls back to align on 0.30.0 / 0.31.0 (the class is no
    # SupportsMambaPrefixCaching), 0.33.0's parser refuses it; a bfloat16 SSM state is float32 on 0.30.0 / 0.31.0
    ("0.30.0", "hyb-glm5-linfull-ssm-bf16"): _ok(
        1024,
        1892,
        1033284,
        8192,
        log=(
            "Mamba cache mode is set to 'align' for Glm5NextForCausalLM by default when prefix caching is enabled",
            "Setting kv cache block size to 64 for DEEPSEEK_V32_INDEXER backend.",
            "Setting attention block size to 1024 tokens to ensure that attention page size is >= mamba page size.",
            "Padding mamba page size by 93.21% to ensure that mamba page size and attention page size are exactly equal.",
            "GPU KV cache size: 1,033,284 tokens, Maximum concurrency for 8,192 tokens per request: 126.13x",
            "kv lcm block sizes 1024",
        ),
    ),
    ("0.30.0", "hyb-glm5-linfull-mcmode-all"): _ok(
        1024,
        1892,
        1033284,
        8192,
        log=(
            "Mamba cache mode 'all' is deprecated and will be removed in an upcoming release. If this is a problem, please open an issue at https://github.com/vllm-project/vllm/issues.",
            "Setting kv cache block size to 64 for DEEPSEEK_V32_INDEXER backend.",
            "Setting attention block size to 1024 tokens to ensure that attention page size is >= mamba page size.",
            "Padding mamba page size by 93.21% to ensure that mamba page size and attention page size are exactly equal.",
            "GPU KV cache size: 1,033,284 tokens, Maximum concurrency for 8,192 tokens per request: 126.13x",
            "kv lcm block sizes 1024",
        ),
    ),
    ("0.30.0", "hyb-glm5-linfull-fp16"): _ok(
        1024,
        1892,
        1033284,
        8192,
        log=(
            "Mamba cache mode is set to 'align' for Glm5NextForCausalLM by default when prefix caching is enabled",
            "Setting kv cache block size to 64 for DEEPSEEK_V32_INDEXER backend.",
            "Setting attention block size to 1024 tokens to ensure that attention page size is >= mamba page size.",
            "Padding mamba page size by 93.21% to ensure that mamba page size and attention page size are exactly equal.",
            "GPU KV cache size: 1,033,284 tokens, Maximum concurrency for 8,192 tokens per request: 126.13x",
            "kv lcm block sizes 1024",
        ),
    ),
    ("0.30.0", "hyb-glm5-linfull-kv-bf16"): _ok(
        1024,
        1892,
        1033284,
        8192,
        log=(
            "Mamba cache mode is set to 'align' for Glm5NextForCausalLM by default when prefix caching is enabled",
            "Setting kv cache block size to 64 for DEEPSEEK_V32_INDEXER backend.",
            "Setting attention block size to 1024 tokens to ensure that attention page size is >= mamba page size.",
            "Padding mamba page size by 93.21% to ensure that mamba page size and attention page size are exactly equal.",
            "GPU KV cache size: 1,033,284 tokens, Maximum concurrency for 8,192 tokens per request: 126.13x",
            "kv lcm block sizes 1024",
        ),
    ),
    ("0.31.0", "hyb-glm5-linfull-ssm-bf16"): _ok(
        1024,
        1892,
        1033284,
        8192,
        log=(
            "Mamba cache mode is set to 'align' for Glm5NextForCausalLM by default when prefix caching is enabled",
            "Setting kv cache block size to 64 for DEEPSEEK_V32_INDEXER/KPOOL_TAIL/FLASHINFER_MLA_SPARSE_SM90 backend(s).",
            "Setting attention block size to 1024 tokens to ensure that attention page size is >= mamba page size.",
            "Padding mamba page size by 93.21% to ensure that mamba page size and attention page size are exactly equal.",
            "GPU KV cache size: 1,033,284 tokens, Maximum concurrency for 8,192 tokens per request: 126.13x",
            "kv lcm block sizes 1024",
        ),
    ),
    ("0.31.0", "hyb-glm5-linfull-mcmode-all"): _ok(
        1024,
        1892,
        1033284,
        8192,
        log=(
            "Mamba cache mode 'all' is deprecated and will be removed in an upcoming release. If this is a problem, please open an issue at https://github.com/vllm-project/vllm/issues.",
            "Setting kv cache block size to 64 for DEEPSEEK_V32_INDEXER/KPOOL_TAIL/FLASHINFER_MLA_SPARSE_SM90 backend(s).",
            "Setting attention block size to 1024 tokens to ensure that attention page size is >= mamba page size.",
            "Padding mamba page size by 93.21% to ensure that mamba page size and attention page size are exactly equal.",
            "GPU KV cache size: 1,033,284 tokens, Maximum concurrency for 8,192 tokens per request: 126.13x",
            "kv lcm block sizes 1024",
        ),
    ),
    ("0.31.0", "hyb-glm5-linfull-fp16"): _ok(
        1024,
        1892,
        1033284,
        8192,
        log=(
            "Mamba cache mode is set to 'align' for Glm5NextForCausalLM by default when prefix caching is enabled",
            "Setting kv cache block size to 64 for DEEPSEEK_V32_INDEXER/KPOOL_TAIL/FLASH_ATTN_MLA_SPARSE backend(s).",
            "Setting attention block size to 1024 tokens to ensure that attention page size is >= mamba page size.",
            "Padding mamba page size by 93.21% to ensure that mamba page size and attention page size are exactly equal.",
            "GPU KV cache size: 1,033,284 tokens, Maximum concurrency for 8,192 tokens per request: 126.13x",
            "kv lcm block sizes 1024",
        ),
    ),
    ("0.31.0", "hyb-glm5-linfull-kv-bf16"): _ok(
        1024,
        1892,
        1033284,
        8192,
        log=(
            "Mamba cache mode is set to 'align' for Glm5NextForCausalLM by default when prefix caching is enabled",
            "Setting kv cache block size to 64 for DEEPSEEK_V32_INDEXER/KPOOL_TAIL/FLASHINFER_MLA_SPARSE_SM90 backend(s).",
            "Setting attention block size to 1024 tokens to ensure that attention page size is >= mamba page size.",
            "Padding mamba page size by 93.21% to ensure that mamba page size and attention page size are exactly equal.",
            "GPU KV cache size: 1,033,284 tokens, Maximum concurrency for 8,192 tokens per request: 126.13x",
            "kv lcm block sizes 1024",
        ),
    ),
    ("0.33.0", "hyb-glm5-linfull-ssm-bf16"): _ok(
        512,
        3777,
        1190045,
        8192,
        log=(
            "Mamba cache mode is set to 'align' for Glm5NextForCausalLM by default when prefix caching is enabled",
            "Setting kv cache block size to 512 for DEEPSEEK_V32_INDEXER/KPOOL_TAIL/FLASHINFER_MLA_SPARSE_SM90 backend(s).",
            "Padding mamba page size by 86.86% to ensure that mamba page size and attention page size are exactly equal.",
            "GPU KV cache size: 1,190,045 tokens, Maximum concurrency for 8,192 tokens per request: 145.27x",
            "kv lcm block sizes 512",
        ),
    ),
    ("0.33.0", "hyb-glm5-linfull-mcmode-all"): {
        "refused": True,
        "vllm": "SystemExit: vllm serve: error: argument --mamba-cache-mode: invalid choice: 'all' (choose from 'align', 'none')",
    },
    ("0.33.0", "hyb-glm5-linfull-fp16"): _ok(
        1024,
        1890,
        1032192,
        8192,
        log=(
            "Mamba cache mode is set to 'align' for Glm5NextForCausalLM by default when prefix caching is enabled",
            "Setting kv cache block size to 512 for DEEPSEEK_V32_INDEXER/KPOOL_TAIL/FLASH_ATTN_MLA_SPARSE backend(s).",
            "Setting attention block size to 1024 tokens to ensure that attention page size is >= mamba page size.",
            "Padding mamba page size by 93.21% to ensure that mamba page size and attention page size are exactly equal.",
            "GPU KV cache size: 1,032,192 tokens, Maximum concurrency for 8,192 tokens per request: 126.00x",
            "kv lcm block sizes 1024",
        ),
    ),
    ("0.33.0", "hyb-glm5-linfull-kv-bf16"): _ok(
        1024,
        1890,
        860160,
        8192,
        log=(
            "Mamba cache mode is set to 'align' for Glm5NextForCausalLM by default when prefix caching is enabled",
            "Setting kv cache block size to 512 for DEEPSEEK_V32_INDEXER/KPOOL_TAIL/FLASHINFER_MLA_SPARSE_SM90 backend(s).",
            "Setting attention block size to 1024 tokens to ensure that attention page size is >= mamba page size.",
            "Padding mamba page size by 93.21% to ensure that mamba page size and attention page size are exactly equal.",
            "GPU KV cache size: 860,160 tokens, Maximum concurrency for 8,192 tokens per request: 105.00x",
            "kv lcm block sizes 1024",
        ),
    ),
    # Kimi-Linear of MLA layers only with a bfloat16 SSM cache dtype: planned on every release
    ("0.27.1", "kimil-allmla-ssm-bf16"): _ok(
        512,
        1038,
        531456,
        1024,
        log=(
            "Setting attention block size to 512 tokens to ensure that attention page size is >= mamba page size.",
            "Padding mamba page size by 16.79% to ensure that mamba page size and attention page size are exactly equal.",
            "GPU KV cache size: 531,456 tokens",
            "Maximum concurrency for 1,024 tokens per request: 519.00x",
        ),
    ),
    **{
        (v, "kimil-allmla-ssm-bf16"): _ok(
            block,
            nb,
            531456,
            1024,
            log=(
                "Mamba cache mode is set to 'align' for KimiLinearForCausalLM by default when prefix caching is enabled",
                f"Setting attention block size to {block} tokens to ensure that attention page size is >= mamba page size.",
                f"Padding mamba page size by {pad} to ensure that mamba page size and attention page size are exactly equal.",
                "GPU KV cache size: 531,456 tokens, Maximum concurrency for 1,024 tokens per request: 519.00x",
            ),
        )
        for v, block, nb, pad in (
            ("0.28.0", 512, 1038, "16.79%"),
            ("0.29.0", 512, 1038, "16.79%"),
            ("0.30.0", 256, 2076, "9.59%"),
            ("0.31.0", 256, 2076, "9.59%"),
            ("0.32.0", 256, 2076, "9.59%"),
            ("0.33.0", 256, 2076, "9.59%"),
        )
    },
    # which refusal comes first (issue 37; recorded on every release): vLLM's SpeculativeConfig names an EAGLE head
    # of a DFlash drafter EagleDFlashDraftModel, which no release registers, after ModelConfig's max_model_len and
    # ParallelConfig's world size, before SchedulerConfig; VllmConfig refuses an explicit --async-scheduling with
    # ngram (0.27.1-0.32.0; 0.33.0 serves it) after the world size and the scheduler's check
    **{
        (v, cid): _refused_with(says)
        for v in ("0.27.1", "0.28.0", "0.29.0", "0.30.0", "0.31.0", "0.32.0", "0.33.0")
        for cid, says in (
            ("eagle-dflash", "Model architectures ['EagleDFlashDraftModel'] are not supported for now"),
            ("eagle-dflash-nbt", "Model architectures ['EagleDFlashDraftModel'] are not supported for now"),
            ("eagle-dflash-ws", "World size (12) is larger than the number of available GPUs (8) in this node"),
            (
                "eagle-dflash-mml",
                "User-specified max_model_len (524288) is greater than the derived max_model_len",
            ),
            ("ngram-async-ws", "World size (16) is larger than the number of available GPUs (8) in this node"),
            ("ngram-async-nbt", "max_num_batched_tokens (128) must be greater than or equal to max_num_seqs (256)"),
        )
    },
    # a drafter under PP (0.30+: the V2 loader's maybe_share_target_embed on the last stage; 0.27.1 / 0.28.0 refuse
    # any drafter under PP first: its class lacks SupportsPP)
    **{
        (v, cid): _refused_with(f"{cls} needs the target input embedding, but it is unavailable on this PP stage")
        for v in ("0.30.0", "0.33.0")
        for cid, cls in (
            ("ppembed-falconh1-dflash", "DFlashQwen3ForCausalLM"),
            ("ppembed-granite-eagle3", "Eagle3LlamaForCausalLM"),
        )
    },
    **{
        (v, cid): _refused_with("Pipeline parallelism is not supported for this model")
        for v in ("0.27.1", "0.28.0")
        for cid in (
            "ppembed-falconh1-dflash",
            "ppembed-qwen3-dflash",
            "ppembed-granite-tied-eagle3",
            "ppembed-granite-eagle3",
        )
    },
    **{(v, "ppembed-qwen3-dflash"): _ok(16, 15258, 161908, 2048) for v in ("0.30.0", "0.33.0")},
    **{(v, "ppembed-granite-tied-eagle3"): _ok(16, 48828, 781248, 2048) for v in ("0.30.0", "0.33.0")},
    **{
        (v, "ngram-async"): _refused_with("Currently, async scheduling is only supported with EAGLE/MTP/Draft Model")
        for v in ("0.27.1", "0.28.0", "0.29.0", "0.30.0", "0.31.0", "0.32.0")
    },
    ("0.33.0", "ngram-async"): _ok(
        16,
        15258,
        243178,
        4096,
        ("GPU KV cache size: 243,178 tokens, Maximum concurrency for 4,096 tokens per request: 59.37x",),
    ),
}

#: Kinds dryboot does not model yet (known disagreements; an XPASS means one is fixed).
#: recorded cases dryboot gets wrong today (strict: a fix turns them into failures to remove)
XFAIL: dict[tuple[str, str], str] = {}

#: (release, case, switch, flipped value): the case that shows the switch is needed.
SWITCH_CASES: list[tuple[str, str, str, Any]] = [
    ("0.32.0", "pp3-empty-lowmem", "empty_stage_after_memory_check", False),
    ("0.29.0", "pp3-empty-lowmem", "empty_stage_after_memory_check", True),
    ("0.27.1", "dbk-dm-fi", "async_default_skips_draft_model", False),
    ("0.27.1", "gdn64-block", "hybrid_prefix_caching_default", True),
    ("0.27.1", "nemo-prefix", "mamba_default_all", False),
    ("0.29.0", "nullblk-admit", "reserve_null_block", False),
    ("0.29.0", "nullblk-autofit", "reserve_null_block", False),
    ("0.33.0", "nullblk-est", "reserve_null_block", False),
    ("0.33.0", "gdn64-block", "gdn_align_sm90", None),
    ("0.33.0", "gdn64-pages", "gdn_align_sm90", None),
    ("0.33.0", "gdn64-pp2", "gdn_align_sm90", None),
    ("0.32.0", "nemo-prefix", "mamba2_align_pages", 2),
    ("0.33.0", "nemo-prefix", "mamba2_align_pages", 2),
    ("0.27.1", "dflash-slots", "drafting_slots_per_seq", False),
    ("0.27.1", "g4keqv", "gemma4_global_kv_heads_required", False),
    ("0.27.1", "ref-fast15", "drafting_slots_per_seq", False),
    ("0.27.1", "nullblk-admit", "capacity_log_split", False),
    ("0.29.0", "mla-pad", "pad_requires_block_stride", True),
    ("0.30.0", "sw-start", "sliding_window_start", "smallest"),
    ("0.31.0", "fa4fp8", "fa4_fp8_block", None),
    ("0.33.0", "fa4fp8", "fa4_fp8_block", None),
    ("0.33.0", "nullblk-autofit", "autofit_log_kv_memory", False),
    ("0.32.0", "nullblk-autofit", "autofit_log_kv_memory", False),
    ("0.31.0", "mla-flashmla", "block_size_log_backends", False),
    ("0.32.0", "mcmode-all", "mamba_mode_all", True),
    ("0.31.0", "mcmode-all", "mamba_all_deprecated", False),
    ("0.33.0", "mla-flashmla", "block_size_log_backends", False),
    ("0.33.0", "mcmode-align-noprefix", "mamba_cache_mode_ignored", False),
    ("0.33.0", "async-sw", "async_limits_v1_runner_only", False),
    ("0.33.0", "f16kv", "float_kv_dtype_must_match", False),
    ("0.32.0", "qnext2", "qwen3_next_hf_config_class", False),
    ("0.33.0", "qnext2", "qwen3_next_hf_config_class", False),
    ("0.30.0", "pp-mtp", "pp_draft_models", False),
    ("0.30.0", "pp-async-sw", "v2_runner_v1_methods", None),
    ("0.30.0", "ehs-wide", "hidden_state_min_page", False),
    ("0.33.0", "nvfp4-fi", "flashinfer_nvfp4_sm90", False),
    ("0.33.0", "granite-spec", "mamba_align_state_with_spec", False),
    ("0.27.1", "ehs-block", "hidden_state_block_divides", True),
    ("0.27.1", "dtype-4over6", "unknown_kv_cache_dtypes", frozenset()),
    ("0.29.0", "lfm2-spec", "short_conv_spec_rows", False),
    ("0.27.1", "dsa-skip", "glm_moe_dsa_drops_index_keys", False),
    ("0.28.0", "dsa-skip", "glm_moe_dsa_drops_index_keys", True),
    ("0.29.0", "bailing-allmla", "hybrid_full_attention_types", False),
    ("0.28.0", "bailing-allmla", "hybrid_full_attention_types", True),
    ("0.33.0", "hyb-jamba-allattn", "hybrid_full_attention_types", False),
    ("0.27.1", "hyb-granite-allattn", "legacy_layer_type_names", False),
    ("0.28.0", "hyb-nemoh-allattn", "legacy_layer_type_names", True),
]


def _check(expect: dict[str, Any], got: dict[str, Any]) -> list[str]:
    if H.is_crash(got):  # a crash is never the refusal recorded, whatever its message says
        return [f"dryboot crashed: {got.get('error')}"]
    if expect.get("refused"):
        if not got.get("refused"):
            return [f"expected a refusal, got {H._answer(got, vllm=False)}"]
        if "vllm" in expect:
            verdict = H.compare({"ok": False, "error": expect["vllm"]}, got)
            return [] if verdict["agree"] else [f"another refusal than vLLM's {expect['vllm']!r}: {verdict['diffs']}"]
        if "says" in expect:
            if expect["says"] not in str(got.get("error")):
                return [f"refusal {str(got.get('error'))[:200]!r} does not say {expect['says']!r}"]
            return []
        if f"estimated maximum model length is {expect['estimated']}." not in str(got.get("error")):
            return [f"refusal {str(got.get('error'))[:200]!r} does not estimate {expect['estimated']}"]
        return []
    if got.get("refused"):
        return [f"expected figures, got a refusal: {str(got.get('error'))[:300]}"]
    problems = [f"{k}: recorded {v} != {got.get(k)}" for k, v in expect.items() if k != "log" and got.get(k) != v]
    if "log" in expect and _kv_lines(expect["log"]) != _kv_lines(got.get("log")):
        want, have = _kv_lines(expect["log"]), _kv_lines(got.get("log"))
        problems.append(f"log: release printed {sorted(want - have)}, dryboot {sorted(have - want)}")
    return problems


@pytest.mark.parametrize(
    "key",
    [
        pytest.param(k, marks=pytest.mark.xfail(reason=XFAIL[k], strict=True)) if k in XFAIL else k
        for k in sorted(RECORDED)
    ],
    ids=[f"{v}-{c}" for v, c in sorted(RECORDED)],
)
def test_dryboot_matches_release(key: tuple[str, str]) -> None:
    version, cid = key
    c = case(cid)
    got = H.run_dryboot(c, version)
    problems = _check(RECORDED[key], got)
    assert not problems, f"{c.command(version)}\n" + "\n".join(problems)


@pytest.mark.parametrize("version,cid,switch,flipped", SWITCH_CASES, ids=[f"{s[2]}@{s[0]}" for s in SWITCH_CASES])
def test_switch_is_needed(
    version: str, cid: str, switch: str, flipped: Any, flip_rules: Callable[..., VersionRules]
) -> None:
    rules = versions.rules_for(version)
    assert rules.version == version, f"{version} has no table entry"
    flip_rules(version, **{switch: flipped})
    c = case(cid)
    got = H.run_dryboot(c, version)
    assert _check(RECORDED[(version, cid)], got), f"flipping {switch} to {flipped!r} still matches {cid}"


def test_every_switch_has_a_flip_case() -> None:
    """Each switch of the rule table is pinned by a recorded case above that fails when flipped."""
    switches = {f.name for f in dataclasses.fields(versions.VersionRules)} - {"version"}
    assert switches == {s for _, _, s, _ in SWITCH_CASES} | set(NO_FLIP_CASE)


#: Switches no recorded case can pin, and why (each has its own test).
NO_FLIP_CASE = {
    # pinned by test_fa4_hd256.py::test_switch_is_needed (FA4's head-256 kernel on a faked B200,
    # data/fa4-hd256/vllm-<release>.json)
    **{
        s: "the FA4 head-256 records on SM 10.x pin it (data/fa4-hd256/vllm-<release>.json)"
        for s in ("fa4_hd256_block", "fa4_hd256_layer_blocks")
    },
    # pinned by test_weights_sparse_mla_switches.py::test_switch_is_needed (the sparse-MLA weights records)
    **{
        s: "the sparse-MLA weights records pin it (quant-recorded-sparsemla-<release>.json)"
        for s in (
            "sparse_mla_index_groups",
            "sparse_mla_index_group_request_ids",
            "flash_attn_mla_sparse_cu_seqlens",
            "flashmla_sparse_prefill_buffers",
            "flashmla_sparse_padded_query",
        )
    },
    # pinned by test_weights_sparsemla.py::test_flashmla_sparse_reserves_the_worker_workspace (no record
    # past 262,144 tokens: the prefill rows at 2 x max_model_len there, 5 x before 0.32.0)
    "flashmla_sparse_long_context_factor": "the FLASHMLA_SPARSE workspace test pins it (a 327,680-token length)",
    # pinned by test_v1_runner.py::test_switch_is_needed (a mixed DFlash drafter under --mamba-cache-mode all)
    "v2_runner_lacks_mamba_all": "the V1-runner records pin it (data/v1-runner/, 0.29-0.32)",
    "v1_runner_refuses": "the V1-runner records pin it (data/v1-runner/, 0.29-0.32)",
    # pinned by test_sm90_composite.py::test_the_quantized_mm_prefix_switch_is_needed (FlashAttention's
    # recorded reason for a head-128 fp8 multimodal-prefix layer on the H100 / H200, 0.31.0)
    "fa_quantized_mm_prefix_sm90": "the SM 9.x backend matrices pin it (the composite serves first on 0.31+)",
    # pinned by test_qwen4_exp_step5.py::test_engine_block_switch_is_needed (Qwen4-Exp's QSA ring on 0.29.0)
    "engine_block_all_groups": "the Qwen4-Exp QSA records pin it (0.29.0's engine block ends on the ring's)",
    # pinned by test_vllm_models_transformers_multimodal.py::test_0_27_1_builds_the_vq_attention_whole and
    # the release-architecture records (Emu3's VQ-VAE attention under TP 2 / 4 on 0.27.1 and 0.28+)
    "backend_splits_encoder_qkv": "the release-architecture records pin it (Emu3's tiny config under TP)",
    # pinned by test_weights_emu3.py::test_switch_is_needed (Emu3's text attention on 0.27.1-0.33.0)
    "backend_text_attention_whole": "the Emu3 / VibeVoice-ASR weights records pin it (recorded-<release>-emu3.json)",
    # pinned by test_release_architectures.py::test_switch_is_needed (Apertus's sliding int4 case on 0.27.1)
    "sliding_int4_unpacked": "the release-architecture records pin it (Apertus's tiny config on 0.27.1)",
    # pinned by test_kimi_kda.py::test_switch_is_needed (data/kimi-kda/: Kimi-K3 on 0.33.0, Kimi-Linear's
    # bfloat16 recurrent state on 0.30.0)
    "kda_full_rank_gate": "the Kimi KDA records pin it (Kimi-K3's tiny config on 0.33.0)",
    # pinned by test_release_architectures.py::test_switch_is_needed (Kimi-K3's 0.30.0 records)
    "kda_prefill_checkpoints": "the release-architecture records pin it (Kimi-K3's tiny config on 0.30.0)",
    "kda_ssm_dtype_flag": "the Kimi KDA records pin it (Kimi-Linear under --mamba-ssm-cache-dtype on 0.28.0 / 0.30.0)",
    # pinned by test_gpus.py::test_sparse_mla_pool_row_aligned_switch_is_needed (a B200 record)
    "sparse_mla_pool_row_aligned": "the per-GPU records pin it (DeepSeek-V3.2 on a B200; this table runs on an H200)",
    # pinned by test_release_architectures.py::test_switch_is_needed (MuseGlimmer's 0.33.0 records)
    "muse_glimmer_layer_types": "the release-architecture records pin it (MuseGlimmer's tiny configs on 0.33.0)",
    # pinned by test_pipeline_parallel.py::test_minimax_m3_block_stride_alignment_switch_is_needed
    "kernel_block_stride_alignment": "the MiniMax-M3 pipeline records pin it (0.31.0, 0.32.0, 0.33.0)",
    "unverified_architectures": "a refusal of what the oracle cannot build: no release figure to record",
    # pinned by tests/fidelity/test_weights.py over data/weights/recorded-0.27.1.json (29 tiny cases)
    "attention_range_scalars": "a weights-only switch (0.27.1's q/k/v_range): no KV figure moves with it",
    # pinned by test_sm90_sparse_mla.py (data/sm90-sparse-mla/: 0.29.0 refuses fp8_e4m3 and the name,
    # 0.30+ serve them with FLASHINFER_MLA_SPARSE_SM90), the published-config corpus's 0.28.0 / 0.32.0
    # records (test_corpus.py) and tests/test_vllm_versions.py, test_vllm_fp8_utils.py
    "sparse_mla_fp8_e4m3_sm90": "the SM 9.0 sparse MLA records pin it (this table's cases hold no sparse MLA model)",
    "flashinfer_sinks_sm90": (
        "the backend matrix's SM 9.0 sinks rows (test_vllm_flashinfer_sinks.py) and Flint's h100-tp2-flashinfer "
        "record (test_flint.py::test_switch_is_needed) pin it"
    ),
    "flashinfer_sinks_sm120": (
        "the backend matrix's RTX 5090 sinks rows of 0.27.1 (test_vllm_flashinfer_sinks.py) and the gpt-oss weights "
        "records on the RTX 5090 with flashinfer-cubin (no float32 sinks copy on 0.27.1) pin it"
    ),
    "fp8_moe_block_refine": "flipping it turns the corpus's recorded 0.28.0 refusals (or 0.32.0 plans) into disagreements",
    # pinned by test_sm90_composite.py::test_the_causal_fa3_switch_is_needed (vLLM's selector on the H100 /
    # H200, head size 256 with a multimodal prefix: the composite from 0.31, Triton on 0.30)
    "composite_causal_fa3": "the SM 9.x backend matrices pin it (this table's cases keep the same figures)",
    # pinned by test_frontier.py's recorded Gemma-4 on a B200 (test_mm_prefix_composite_switch_is_needed)
    "mm_prefix_composites": "the per-GPU frontier recording pins it (a B200 case; this table's cases run on an H200)",
    # pinned by tests/test_vllm_distributed_dcp.py (0.33.0 refuses TRITON_ATTN under -dcp 2; checked live)
    "dcp_backends": "no recorded case of this table uses -dcp; the DCP test pins the 0.33.0 backend refusal",
    # pinned by test_pipeline_parallel.py: each release's PP 2 records of every planned architecture
    # (Qwen3-VL, Qwen3-VL-MoE, Cosmos-3, MOSS-Transcribe-Diarize disagree when a switch is flipped)
    "pp_text_model_named": "the pipeline-parallel records (data/pipeline/) pin it",
    "pp_submodel_unvalidated": "the pipeline-parallel records (data/pipeline/) pin it",
    "pp_tower_view_builds": "the pipeline-parallel records (data/pipeline/) pin it",
    # pinned by test_modelopt_mixed_releases.py (the oracle's records of a nested MIXED_PRECISION per release)
    "modelopt_mixed_nested": "a refusal of vLLM's own (0.27.1-0.30.0); the weights records pin it per release",
    # refusals of configs the release fails to build (vLLM's errors recorded by record_pp.py --single
    # on 0.30.0 / 0.33.0 before the tiny configs set the fields): tests/test_vllm_config_class_fields.py
    "hf_config_class_architectures": "a refusal (vLLM fails to build the model), and Mellum's reading on 0.33.0: "
    "test_release_architectures.py pins it",
    # pinned by test_release_architectures.py (MiMo-V2-Flash's fp8 cases on 0.33.0)
    "mimo_v2_cache_config": "the per-release architecture records (data/release-architectures/) pin it",
    # pinned by test_release_architectures.py (LongCat-Flash's tiny configs on 0.27.1 and 0.31.0)
    "longcat_hidden_layers_field": "the per-release architecture records (data/release-architectures/) pin it",
    # pinned by test_release_architectures.py::test_switch_is_needed (HunYuan-VL at TP 8, 0.31.0 / 0.33.0)
    "hunyuan_vl_whole_tower": "the per-release architecture records (data/release-architectures/) pin it",
    "hunyuan_transformers_backend": "a refusal (vLLM fails to build the model): no release figure to record",
    # weights-only switches, pinned by test_weights_sweep.py::test_weights_switch_is_needed over
    # data/weights/recorded-0.30.0-sweep.json / recorded-0.33.0-sweep.json
    "transformers_backend_vllm_attention": "a weights-only switch: the sweep's records pin it",
    "transformers_backend_fuses_biased_qkv": "a weights-only switch: the sweep's records pin it",
    "laguna_ropes_by_layer_type": "a weights-only switch: the sweep's records pin it",
    "input_norm_towers": "a weights-only switch: the sweep's records pin it",
    # pinned by test_weights_remote_config.py::test_sarvam_gate_switch_is_needed over
    # data/weights/recorded-0.31.0-remote.json / -0.32.0- / -0.33.0- (Sarvam-M MLA's GateLinear)
    "moe_gate_model_dtype": "a weights-only switch: the remote-config records pin it",
    # pinned by test_weights_multimodal.py over data/weights/recorded-0.33.0-wrappers.json (PP 3:
    # stages 1 and 2 of each wrapper hold no tower) and llava-tower-variants.json
    "pp_towers_first_stage": "a weights-only switch (0.33's towers on the first stage): no KV figure moves with it",
    # pinned by test_frontier.py's recorded Kimi-K2 + TorchSpec MLA head on 0.33.0
    # (test_limit_to_draft_switch_is_needed)
    "limit_max_model_len_to_draft": "the frontier recording's MLA EAGLE-3 head on 0.33.0 pins it",
    # pinned by tests/test_drafter_weights.py over data/weights/drafters/recorded-0.27.1.json
    # (test_deepseek_eagle3_yarn_switch_is_needed)
    "deepseek_eagle3_yarn_only": "a refusal (vLLM 0.27.1 fails to build the head): the drafter weights records pin it",
    # pinned by tests/test_vllm_yarn_max_len.py (vLLM 0.28.0 / 0.30.0 / 0.33.0's answers for a
    # Qwen3-8B config with Qwen's YaRN block, recorded by the e2e oracle)
    "yarn_max_len_prescaled": "no recorded case of this table has a YaRN config whose positions differ from its scaled length",
    # pinned by test_weights_hy_v4.py::test_dense_layers_switch_is_needed (0.29.0 / 0.30.0's weights records)
    # and test_hy_v4.py::test_switch_is_needed (its KV records on 0.30.0 / 0.31.0 / 0.32.0)
    "hy_v4_dense_layers": "the HY V4 records (data/hy-v4/, data/weights/recorded-<release>-hy-v4*.json) pin it",
    "hy_v4_indexed_layer_type": "the HY V4 KV records (data/hy-v4/: the indexed config on 0.31.0 / 0.32.0) pin it",
}


def test_unverified_architecture_is_refused_on_that_release_only() -> None:
    # MiniCPM-V 4.6's keep-every-layer class: refused on 0.30.0 (resolved to the Transformers backend,
    # which loads the tokenizer), planned on 0.32.0 / 0.33.0 (minicpmv4_7.py). (Kimi-K3, once refused
    # before 0.33.0, is recorded and planned on every release.)
    arch = "MiniCPMV4_7ForConditionalGeneration"
    tiny = str(H.REPO / "tests" / "fidelity" / "data" / "architectures" / f"{arch}.json")
    for version, refused in (("0.30.0", True), ("0.32.0", False), ("0.33.0", False)):
        argv = ["--kv-cache-memory-bytes", "1G", "--max-model-len", "4096"]
        c = H.Case(id=f"minicpmv-{version}", family="releases", model=tiny, argv=argv)
        got = H.run_dryboot(c, version)
        assert bool(got.get("refused")) is refused, (version, got.get("error"))
        if refused:
            assert f"not verified against vLLM {version}" in str(got.get("error"))


@pytest.mark.parametrize(
    ("architecture", "refused_on", "planned_on", "words"),
    [
        # checked with each release's oracle: vLLM 0.29.0 refuses RW ("supported in vLLM until v0.28.0")
        ("RWForCausalLM", "0.29.0", "0.28.0", "until v0.28.0"),
        # vLLM 0.30.0 and 0.33.0 refuse them by name (data/pipeline/ records)
        ("Fairseq2LlamaForCausalLM", "0.30.0", "0.28.0", "until v0.28.0"),
        ("StableLMEpochForCausalLM", "0.33.0", "0.28.0", "until v0.28.0"),
        # vLLM 0.27.1's transformers has no minicpm3 config class
        ("MiniCPM3ForCausalLM", "0.27.1", "0.28.0", "minicpm3 config class"),
        # vLLM 0.27.1 fails to inspect HunYuan-VL's model class; 0.28.0 builds hunyuan_vision.py
        ("HunYuanVLForConditionalGeneration", "0.27.1", "0.28.0", "failed to be inspected"),
    ],
)
def test_architecture_whose_release_differs_is_refused_there(
    architecture: str, refused_on: str, planned_on: str, words: str
) -> None:
    path = str(H.REPO / "tests" / "fidelity" / "data" / "architectures" / f"{architecture}.json")
    for version, refused in ((refused_on, True), (planned_on, False)):
        c = H.Case(
            id=f"{architecture}-{version}", family="releases", model=path, argv=["--kv-cache-memory-bytes", "1G"]
        )
        got = H.run_dryboot(c, version)
        assert bool(got.get("refused")) is refused, (version, got.get("error"))
        if refused:
            assert f"not verified against vLLM {version}" in str(got.get("error")) and words in str(got.get("error"))
