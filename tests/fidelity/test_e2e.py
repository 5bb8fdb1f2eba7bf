"""End-to-end fidelity: dryboot against vLLM 0.28.0's engine start, from the same config.json and flags.

* ``test_oracle_reproduces_recorded``: the oracle (``src/dryboot/boot/engine_start.py``) reproduces every figure
  recorded in ``data/e2e-min/README.md`` (vLLM 0.28.0's own engine start, stand-in H200).
* ``test_dryboot_matches_recorded``: dryboot against those recorded vLLM figures. Needs no vLLM;
  the kinds dryboot gets wrong today are marked ``xfail`` (strict: an XPASS fails the run, so a
  fixed kind's mark goes with the fix).
* ``test_e2e_agreement``: ``DRYBOOT_E2E_CASES`` (default 300) generated cases (shipped configs
  under many flag sets, small configs of every family) through both tools; prints a per-family
  table and every disagreement as a ``dryboot plan`` command with both answers, writes the report
  to ``DRYBOOT_E2E_REPORT`` (default ``<repo>/.e2e-report.json``) and requires >= 99.5 % agreement.

The vLLM-side tests are skipped unless ``DRYBOOT_VLLM_PYTHON`` names the fidelity venv's python
(``bash scripts/fidelity-env.sh``).
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

import e2e_harness as H

pytestmark = pytest.mark.fidelity

DATA = Path(__file__).resolve().parent / "data"
MIN = DATA / "e2e-min"
EXTRA = DATA / "e2e-extra"
ARCH = DATA / "architectures"
EX = H.EXAMPLES

MNB = ["--max-model-len", "8192", "--kv-cache-memory-bytes", "1000000000", "--max-num-batched-tokens", "8192"]


@dataclass
class Recorded:
    """One case of data/e2e-min/README.md: the command that produced vLLM 0.28.0's figures and them."""

    id: str
    title: str
    model: Path
    argv: list[str]
    expect: dict[str, Any]  # block_size, groups, num_blocks, tokens, concurrency, max_model_len | stage, error
    vllm_argv: list[str] | None = None  # when vLLM is given other flags than dryboot
    oracle_expect: dict[str, Any] | None = None  # when this oracle's answer differs in wording only
    dryboot_xfail: str = ""  # the disagreement kind dryboot has today
    env: dict[str, str] = field(default_factory=dict)  # e.g. VLLM_PP_LAYER_PARTITION

    def drafter_dirs(self) -> list[str]:
        return []


def _ok(
    block: int, groups: list[tuple[str, int, int, int]], nb: int, tok: int, conc: float, mml: int
) -> dict[str, Any]:
    return {
        "block_size": block,
        "groups": [list(g) for g in groups],
        "num_blocks": nb,
        "tokens": tok,
        "concurrency": conc,
        "max_model_len": mml,
    }


def _refused(stage: str, error: str) -> dict[str, Any]:
    return {"stage": stage, "error": error}


FA, SW, MB = "FullAttention", "SlidingWindow", "Mamba"
QN_GROUPS_544 = [(FA, 544, 1114112, 1), (MB, 544, 1114112, 1), (MB, 544, 1114112, 1), (MB, 544, 1114112, 1)]

PP_GEMMA2 = [
    "--max-model-len",
    "8192",
    "--kv-cache-memory-bytes",
    "1000000000",
    "--max-num-batched-tokens",
    "1024",
    "-pp",
    "2",
]
EHS_MNB = ["--kv-cache-memory-bytes", "1000000000", "--max-num-batched-tokens", "8192"]
DSA = ["--kv-cache-memory-bytes", "1000000000", "--max-model-len", "8192"]
MLA = "MLAAttention"


def _ehs(ids: list[int] | None, k: int = 1) -> str:
    """An ``extract_hidden_states`` speculative config caching the hidden states of ``ids``."""
    spec: dict[str, Any] = {"method": "extract_hidden_states", "num_speculative_tokens": k}
    if ids is not None:
        spec["draft_model_config"] = {"hf_config": {"eagle_aux_hidden_state_layer_ids": ids}}
    return json.dumps(spec)


RECORDED = [
    Recorded(
        "1",
        "MTP drafter layers missing",
        MIN / "mtp",
        [*MNB, "--speculative-config", '{"method": "mtp", "num_speculative_tokens": 1}'],
        _ok(544, [(FA, 544, 1114112, 2), (MB, 544, 1114112, 1), (MB, 544, 1114112, 2)], 448, 166818, 20.3636, 8192),
    ),
    Recorded(
        "1b",
        "MTP, real Qwen3-Next",
        EX / "Qwen3-Next-80B-A3B-Thinking.config.json",
        [
            "--max-model-len",
            "262144",
            "--kv-cache-memory-bytes",
            "42949672960",
            "--max-num-batched-tokens",
            "8192",
            "--speculative-config",
            '{"method": "mtp", "num_speculative_tokens": 3}',
        ],
        _ok(
            560,
            [(FA, 560, 1146880, 13), (MB, 560, 1146880, 12), (MB, 560, 1146880, 12), (MB, 560, 1146880, 12)],
            2880,
            1559865,
            5.9504,
            262144,
        ),
    ),
    Recorded(
        "2",
        "async scheduling off for ngram / drafter-less spec",
        EX / "gpt-oss-20b.config.json",
        [
            "--max-model-len",
            "65536",
            "--kv-cache-memory-bytes",
            "20000000000",
            "--max-num-batched-tokens",
            "8192",
            "--speculative-config",
            '{"method": "ngram", "num_speculative_tokens": 3}',
        ],
        _ok(16, [(FA, 16, 32768, 12), (SW, 16, 32768, 12)], 50862, 721960, 11.0162, 65536),
    ),
    Recorded(
        # vLLM 0.28.0 has no --num-speculative-tokens flag (its parser refuses it); the recorded
        # figures are those of the drafter-less equivalent (ngram), identical to no speculation here.
        "2b",
        "--num-speculative-tokens without a method",
        MIN / "async_ngram",
        [*MNB, "--num-speculative-tokens", "3"],
        _ok(16, [(FA, 16, 32768, 1), (SW, 16, 32768, 1)], 30517, 243897, 29.7727, 8192),
        vllm_argv=[*MNB, "--speculative-config", '{"method": "ngram", "num_speculative_tokens": 3}'],
    ),
    Recorded(
        "2c",
        "explicit --async-scheduling + ngram",
        MIN / "async_ngram",
        [*MNB, "--async-scheduling", "--speculative-config", '{"method": "ngram", "num_speculative_tokens": 3}'],
        _refused(
            "config",
            "ValidationError: 1 validation error for VllmConfig\n  Value error, Currently, async scheduling is only "
            "supported with EAGLE/MTP/Draft Model/NGram GPU/DSpark kind of speculative decoding",
        ),
    ),
    Recorded(
        "3",
        "modelopt kv_cache_quant_algo -> fp8 KV",
        MIN / "modelopt_kv",
        MNB,
        _ok(16, [(FA, 16, 32768, 2)], 15258, 244128, 29.8008, 8192),
    ),
    Recorded(
        "4",
        "Gemma-4 global attention geometry",
        MIN / "gemma4_global",
        MNB,
        _ok(16, [(FA, 32, 131072, 1)] + [(SW, 16, 131072, 1)] * 5, 7629, 22154, 2.7044, 8192),
    ),
    Recorded(
        "5",
        "Gemma-3 sliding_window_pattern without layer_types",
        MIN / "gemma3_pattern",
        MNB,
        _ok(16, [(FA, 16, 16384, 1)] + [(SW, 16, 16384, 1)] * 5, 61035, 162495, 19.8359, 8192),
    ),
    Recorded(
        "6",
        "gpt-oss: vLLM alternates by layer parity",
        MIN / "gptoss_parity",
        MNB,
        _ok(16, [(FA, 16, 32768, 2), (SW, 16, 32768, 2)], 15258, 121944, 14.8859, 8192),
    ),
    Recorded(
        "7",
        "HF config-class defaults: Mistral sliding_window=4096",
        MIN / "mistral_default_window",
        MNB,
        _ok(16, [(SW, 16, 65536, 2)], 7629, 121826, 14.8713, 8192),
    ),
    Recorded(
        "7b",
        "HF default head_dim (Qwen3=128)",
        MIN / "qwen3_default_head_dim",
        MNB,
        _ok(16, [(FA, 16, 65536, 2)], 7629, 122064, 14.9004, 8192),
    ),
    Recorded(
        "7c",
        "HF default max_position_embeddings (Llama=2048)",
        MIN / "llama_no_mpe",
        MNB,
        _refused(
            "config",
            "ValidationError: 1 validation error for ModelConfig\n  Value error, User-specified max_model_len (8192) "
            "is greater than the derived max_model_len (max_position_embeddings=2048.0 or model_max_length=None",
        ),
    ),
    Recorded(
        "8",
        "Qwen3-Next without layer_types: vLLM always every 4th",
        MIN / "qnext_interval",
        MNB,
        _ok(544, QN_GROUPS_544, 897, 334010, 40.7727, 8192),
    ),
    Recorded(
        "8b",
        "Qwen3-Next without full_attention_interval",
        MIN / "qnext_no_interval",
        MNB,
        _ok(544, QN_GROUPS_544, 897, 334010, 40.7727, 8192),
    ),
    Recorded(
        "9",
        "--mamba-cache-mode all falls back to align (GDN)",
        MIN / "mamba_all",
        [*MNB, "--mamba-cache-mode", "all", "--enable-prefix-caching"],
        _ok(544, QN_GROUPS_544, 897, 334010, 40.7727, 8192),
    ),
    Recorded(
        "10",
        "auto-fit failure message",
        MIN / "autofit",
        ["--max-model-len", "-1", "--kv-cache-memory-bytes", "1000000", "--max-num-batched-tokens", "8192"],
        _refused(
            "plan",
            "ValueError: Cannot auto-fit max_model_len: not enough GPU memory available to serve even a "
            "single token. Try increasing `gpu_memory_utilization`.",
        ),
    ),
    Recorded(
        "11",
        "num_gpu_blocks_override applied before auto-fit",
        MIN / "mtp",
        [
            "--max-model-len",
            "-1",
            "--kv-cache-memory-bytes",
            "20000000000",
            "--max-num-batched-tokens",
            "8192",
            "--num-gpu-blocks-override",
            "64",
        ],
        _ok(544, QN_GROUPS_544, 64, 31552, 1.0, 31552),
    ),
    Recorded(
        "12",
        "default max-num-batched-tokens (H200 serve = 8192)",
        MIN / "async_ngram",
        ["--max-model-len", "8192", "--kv-cache-memory-bytes", "1000000000"],
        _ok(16, [(FA, 16, 32768, 1), (SW, 16, 32768, 1)], 30517, 243897, 29.7727, 8192),
    ),
    Recorded(
        "R1",
        "MLA qk_rope_head_dim=32 on SM90",
        MIN / "mla_rope32",
        MNB,
        _refused(
            "model",
            "ValueError: No valid MLA prefill backend found with MLAPrefillSelectorConfig(dtype=torch."
            "bfloat16, mla_dimensions=(qk_nope_head_dim=128, qk_rope_head_dim=32, v_head_dim=128)). "
            "Reasons: {FLASH_ATTN: [Model does not have supported MLA dimensions (got (qk_nope_he",
        ),
    ),
    Recorded(
        "R2",
        "Mamba2 n_groups % TP",
        MIN / "nemotron_ngroups_tp",
        [*MNB, "--tensor-parallel-size", "4"],
        _refused(
            "model",
            "AssertionError: If tensor parallel world size does not divide num_groups, then num_groups must equal 1.",
        ),
    ),
    Recorded(
        "R3",
        "Qwen3 max_window_layers < num_hidden_layers",
        MIN / "qwen3_max_window_layers",
        MNB,
        _refused(
            "model",
            "AssertionError: Sliding window for some but all layers is not supported. This model uses "
            "sliding window but `max_window_layers` = 1 is less than `num_hidden_layers` = 2. Please "
            "open an issue to discuss this feature.",
        ),
    ),
    Recorded(
        # The recorded message comes from building the drafter model. vLLM's GPUModelRunner.__init__
        # constructs the DFlashProposer before any model is built, and that refuses this config
        # earlier (no mask token id): same stage, other wording. R4-mask below (the same drafter
        # plus dflash_config.mask_token_id) reproduces the recorded message.
        "R4",
        "DFlash drafter without a usable window",
        EX / "Qwen3.5-27B.config.json",
        [
            *MNB,
            "--speculative-config",
            json.dumps({"method": "dflash", "model": str(MIN / "dflash_no_window"), "num_speculative_tokens": 7}),
        ],
        _refused(
            "model",
            "ValueError: DFlash sliding attention requires a window size configured in "
            "dflash_config.swa_window_size or the top-level sliding_window.",
        ),
        oracle_expect=_refused(
            "model", "ValueError: For parallel drafting, the draft model config must have `dflash_config.mask_token_id`"
        ),
    ),
    Recorded(
        "R4-mask",
        "DFlash drafter with a mask token but no usable window",
        EX / "Qwen3.5-27B.config.json",
        [
            *MNB,
            "--speculative-config",
            json.dumps(
                {"method": "dflash", "model": str(EXTRA / "dflash_no_window_mask"), "num_speculative_tokens": 7}
            ),
        ],
        _refused(
            "model",
            "ValueError: DFlash sliding attention requires a window size configured in "
            "dflash_config.swa_window_size or the top-level sliding_window.",
        ),
    ),
    Recorded(
        "R5",
        "FLEX_ATTENTION + fp8",
        MIN / "mtp",
        [*MNB, "--attention-backend", "FLEX_ATTENTION", "--kv-cache-dtype", "fp8"],
        _refused(
            "model",
            "ValueError: Selected backend AttentionBackendEnum.FLEX_ATTENTION is not valid for this "
            "configuration. Reason: ['kv_cache_dtype not supported']",
        ),
    ),
    # data/e2e-extra/README.md: further kinds, recorded by this oracle
    Recorded(
        "K1",
        "Jamba: Mamba1 layers from attn_layer_period/offset",
        EXTRA / "jamba_layers",
        [
            "--max-model-len",
            "32768",
            "--kv-cache-memory-bytes",
            "16468299081",
            "--max-num-batched-tokens",
            "8192",
            "-tp",
            "8",
        ],
        _ok(
            48,
            [
                ("FullAttention", 48, 12288, 1),
                ("Mamba", 48, 12288, 1),
                ("Mamba", 48, 12288, 1),
                ("Mamba", 48, 12288, 1),
                ("Mamba", 48, 12288, 1),
            ],
            1340193,
            63553464,
            1939.4978,
            32768,
        ),
    ),
    Recorded(
        "K2",
        "Mamba1-only model: mamba block = max_model_len",
        EXTRA / "mamba1_block",
        ["--max-model-len", "1024", "--kv-cache-memory-bytes", "193189858", "--max-num-batched-tokens", "8192"],
        _ok(16, [("Mamba", 1024, 58368, 4)], 827, 846848, 827.0, 1024),
    ),
    Recorded(
        "K3",
        "Mamba1 without max_position_embeddings under TP 8 (HF default 2048; no attention heads to divide)",
        EXTRA / "mamba1_no_mpe",
        ["--kv-cache-memory-bytes", "327467605", "--max-num-batched-tokens", "8192", "-tp", "8"],
        _ok(16, [("Mamba", 2048, 7296, 3)], 14961, 30640128, 14961.0, 2048),
    ),
    Recorded(
        "K4",
        "Qwen2 model class ignores config head_dim (hidden/heads)",
        EXTRA / "qwen2_head_dim",
        ["--max-model-len", "1024", "--kv-cache-memory-bytes", "1000000000", "--max-num-batched-tokens", "8192"],
        _ok(16, [("FullAttention", 16, 65536, 1)], 15258, 244128, 238.4062, 1024),
    ),
    Recorded(
        "K5",
        "Gemma-4 with fp8 KV: global-layer pages and sliding blocks",
        EXTRA / "gemma4_fp8",
        [
            "--max-model-len",
            "8192",
            "--kv-cache-memory-bytes",
            "1000000000",
            "--max-num-batched-tokens",
            "8192",
            "--kv-cache-dtype",
            "fp8",
        ],
        _ok(
            16,
            [
                ("FullAttention", 16, 65536, 1),
                ("SlidingWindow", 32, 65536, 1),
                ("SlidingWindow", 32, 65536, 1),
                ("SlidingWindow", 32, 65536, 1),
            ],
            15258,
            97422,
            11.8924,
            8192,
        ),
    ),
    Recorded(
        "K6",
        "MLA with fp8_e5m2: no attention backend",
        EXTRA / "deepseek_v3",
        [
            "--max-model-len",
            "8192",
            "--kv-cache-memory-bytes",
            "1000000000",
            "--max-num-batched-tokens",
            "8192",
            "--kv-cache-dtype",
            "fp8_e5m2",
        ],
        _refused(
            "model",
            "ValueError: No valid attention backend found for cuda with AttentionSelectorConfig(head_size=320, "
            "dtype=torch.bfloat16, kv_cache_dtype=fp8_e5m2, block_size=None, use_mla=True",
        ),
    ),
    Recorded(
        "K7",
        "Gemma-2 without layer_types: HF config class alternates sliding/full",
        EXTRA / "gemma2_default",
        ["--max-model-len", "8192", "--kv-cache-memory-bytes", "1000000000", "--max-num-batched-tokens", "8192"],
        _ok(
            16,
            [("FullAttention", 16, 32768, 2), ("SlidingWindow", 16, 32768, 1), ("SlidingWindow", 16, 32768, 2)],
            15258,
            81270,
            9.9207,
            8192,
        ),
    ),
    Recorded(
        "K8",
        "DFlash drafter on a hybrid target: the drafter's sliding layers join the hybrid block",
        EXTRA / "qnext_linear_only",
        [
            "--max-model-len",
            "65536",
            "--kv-cache-memory-bytes",
            "8596280247",
            "--max-num-batched-tokens",
            "8192",
            "--speculative-config",
            json.dumps({"method": "dflash", "num_speculative_tokens": 8, "model": str(EXTRA / "dflash_mixed")}),
        ],
        _ok(
            1200,
            [("Mamba", 1200, 1228800, 2), ("SlidingWindow", 16, 1228800, 1), ("SlidingWindow", 16, 1228800, 2)],
            3497,
            98954,
            1.5099,
            65536,
        ),
    ),
    Recorded(
        "K9",
        "--num-gpu-blocks-override before auto-fit (dense sliding model)",
        EXTRA / "mistral_override",
        [
            "--max-model-len",
            "-1",
            "--kv-cache-memory-bytes",
            "148947249424",
            "--max-num-batched-tokens",
            "2048",
            "--num-gpu-blocks-override",
            "16",
        ],
        _ok(16, [("SlidingWindow", 16, 8192, 3)], 16, 240, 1.0, 240),
    ),
    Recorded(
        "K10",
        "--max-model-len above the derived maximum: vLLM refuses",
        EXTRA / "gemma3_mml",
        ["--max-model-len", "262144", "--kv-cache-memory-bytes", "1000000000", "--max-num-batched-tokens", "8192"],
        _refused(
            "config",
            "ValidationError: 1 validation error for ModelConfig\n  Value error, User-specified max_model_len (262144) "
            "is greater than the derived max_model_len (max_position_embeddings=131072.0 or model_max_length=None",
        ),
    ),
    Recorded(
        "K11",
        "serve's default --max-num-batched-tokens on an H200 (8192) sizes sliding windows",
        EXTRA / "mistral_window",
        ["--max-model-len", "131072", "--kv-cache-memory-bytes", "3022475226"],
        _ok(16, [("SlidingWindow", 16, 32768, 5)], 18447, 2322656, 17.7205, 131072),
    ),
    Recorded(
        "K12",
        "Qwen3.5 MTP layer missing (TP 8)",
        EXTRA / "qwen3_5_mtp",
        [
            "--max-model-len",
            "8192",
            "--kv-cache-memory-bytes",
            "4805705655",
            "--max-num-batched-tokens",
            "8192",
            "-tp",
            "8",
            "--speculative-config",
            '{"method": "mtp", "num_speculative_tokens": 6}',
        ],
        _ok(224, [("FullAttention", 224, 229376, 5), ("Mamba", 224, 229376, 4)], 4190, 762766, 93.1111, 8192),
    ),
    # extract_hidden_states: the hidden-state cache layer (recorded by this oracle, which builds
    # ExtractHiddenStatesProposer and its CacheOnlyAttentionLayer as the GPU runner does)
    Recorded(
        "H1",
        "extract_hidden_states: one uniform-type group with the target's fp8 layers",
        EXTRA / "qwen2_head_dim",
        ["--max-model-len", "1024", *EHS_MNB, "--kv-cache-dtype", "fp8", "--speculative-config", _ehs([0, 1, 2])],
        _ok(16, [(FA, 16, 32768, 2)], 4359, 69744, 68.1094, 1024),
    ),
    Recorded(
        "H2",
        "extract_hidden_states: a hybrid (sliding) target, hidden layer aligned to the common page",
        EXTRA / "gemma2_default",
        ["--max-model-len", "2048", *EHS_MNB, "-tp", "2", "--speculative-config", _ehs([1])],
        _ok(
            16,
            [(SW, 16, 16384, 2), (SW, 16, 16384, 1), (FA, 16, 16384, 2), ("HiddenStateCache", 8, 16384, 1)],
            30517,
            97350,
            47.5343,
            2048,
        ),
    ),
    Recorded(
        "H3",
        "extract_hidden_states: a Mamba1 target",
        EXTRA / "mamba1_block",
        ["--max-model-len", "1024", *EHS_MNB, "--speculative-config", _ehs([0, 1])],
        _ok(16, [(MB, 1024, 58368, 4), ("HiddenStateCache", 16, 58368, 1)], 4283, 66451, 64.8939, 1024),
    ),
    Recorded(
        "H4",
        "extract_hidden_states: Jamba under TP 8, hidden block 6",
        EXTRA / "jamba_layers",
        ["--max-model-len", "32768", *EHS_MNB, "-tp", "8", "--speculative-config", _ehs([0])],
        _ok(
            48,
            [(MB, 48, 12288, 1)] * 4 + [(FA, 48, 12288, 1), ("HiddenStateCache", 6, 12288, 1)],
            81380,
            433110,
            13.2175,
            32768,
        ),
    ),
    Recorded(
        "H5",
        "extract_hidden_states with 2 speculative tokens",
        EXTRA / "qwen2_head_dim",
        ["--max-model-len", "1024", *EHS_MNB, "--speculative-config", _ehs([0], k=2)],
        _refused("model", "AssertionError: "),
    ),
    Recorded(
        "H6",
        "extract_hidden_states without layer ids",
        EXTRA / "qwen2_head_dim",
        ["--max-model-len", "1024", *EHS_MNB, "--speculative-config", _ehs(None)],
        _refused(
            "model",
            "ValueError: eagle_aux_hidden_state_layer_ids must be set in the draft model config for "
            "extract_hidden_states method",
        ),
    ),
    # pipeline parallelism: one worker per stage building its own layers (this oracle builds
    # each stage's model under its pipeline rank and plans the workers' specs together)
    Recorded(
        "P1",
        "PP 2: gemma2's 5 layers split 3/2, vLLM's split",
        EXTRA / "gemma2_default",
        ["--max-model-len", "2048", *EHS_MNB, "-pp", "2"],
        _ok(16, [(SW, 16, 32768, 1), (SW, 16, 32768, 1), (FA, 16, 32768, 1)], 30517, 161914, 79.0596, 2048),
    ),
    Recorded(
        "P2",
        "PP 2: Jamba's first stage has no attention layer, so its mamba block stays 16",
        EXTRA / "jamba_layers",
        ["--max-model-len", "8192", *EHS_MNB, "-pp", "2"],
        _ok(
            16,
            [(MB, 16, 98304, 1), (MB, 16, 98304, 1), (MB, 16, 98304, 1), (MB, 48, 98304, 0), (FA, 48, 98304, 0)],
            10172,
            465525,
            56.8268,
            8192,
        ),
    ),
    Recorded(
        "P3",
        "PP 3: DeepSeek-V3 MLA layers split 1/2/1",
        EXTRA / "deepseek_v3",
        ["--max-model-len", "4096", *EHS_MNB, "-pp", "3"],
        _ok(16, [("MLAAttention", 16, 10240, 1)], 48828, 781248, 190.7344, 4096),
    ),
    Recorded(
        "P4",
        "PP 2 with VLLM_PP_LAYER_PARTITION=1,4: the fuller stage sets the blocks",
        EXTRA / "gemma2_default",
        ["--max-model-len", "2048", *EHS_MNB, "-pp", "2"],
        _ok(16, [(SW, 16, 32768, 1), (SW, 16, 32768, 0), (FA, 16, 32768, 0)], 15258, 80954, 39.5285, 2048),
        env={"VLLM_PP_LAYER_PARTITION": "1,4"},
    ),
    Recorded(
        "P5",
        "VLLM_PP_LAYER_PARTITION that does not add up to the layers",
        EXTRA / "gemma2_default",
        ["--max-model-len", "2048", *EHS_MNB, "-pp", "2"],
        _refused("model", "ValueError: sum(partitions)=4 does not match num_hidden_layers=5."),
        env={"VLLM_PP_LAYER_PARTITION": "2,2"},
    ),
    Recorded(
        "Y1",
        "--hf-overrides yarn factor 4 on 262,144 positions: 1,048,576 tokens accepted",
        H.EXAMPLES / "Qwen3.5-27B.config.json",
        [
            "--max-model-len",
            "1048576",
            "--kv-cache-memory-bytes",
            "107374182400",
            "--hf-overrides",
            json.dumps(
                {
                    "text_config": {
                        "rope_parameters": {
                            "rope_type": "yarn",
                            "factor": 4.0,
                            "original_max_position_embeddings": 262144,
                            "rope_theta": 10000000,
                            "partial_rotary_factor": 0.25,
                            "mrope_section": [11, 11, 10],
                            "mrope_interleaved": True,
                        }
                    }
                }
            ),
        ],
        _ok(784, [(MB, 784, 3211264, 16)] * 3 + [(FA, 784, 3211264, 16)], 2089, 1629817, 1.5543, 1048576),
    ),
    Recorded(
        "P6",
        "PP 2 with async scheduling on the V2 runner: 3 batches' tokens in each sliding window",
        EXTRA / "gemma2_default",
        PP_GEMMA2,
        _ok(16, [(SW, 16, 32768, 1), (SW, 16, 32768, 1), (FA, 16, 32768, 1)], 30517, 177301, 21.6433, 8192),
    ),
    Recorded(
        "P7",
        "PP 2 without async scheduling: 2 batches in flight",
        EXTRA / "gemma2_default",
        [*PP_GEMMA2, "--no-async-scheduling"],
        _ok(16, [(SW, 16, 32768, 1), (SW, 16, 32768, 1), (FA, 16, 32768, 1)], 30517, 195004, 23.8042, 8192),
    ),
    # Gemma-4 cross-layer KV sharing: the last num_kv_shared_layers layers keep no cache
    Recorded(
        "S1",
        "Gemma-4, 6 layers of which the last 4 share earlier layers' KV caches",
        EXTRA / "gemma4_kv_shared4",
        [
            *("--max-model-len", "16384", "--kv-cache-memory-bytes", "77800048620", "--max-num-seqs", "8"),
            *("-tp", "4", "--kv-cache-dtype", "int4_per_token_head", "--block-size", "32", "--async-scheduling"),
        ],
        _ok(32, [(SW, 16, 66560, 1), (FA, 32, 66560, 1)], 1168870, 12459834, 760.488, 16384),
    ),
    Recorded(
        "S2",
        "Gemma-4, 6 layers of which the last 3 share, auto-fit",
        EXTRA / "gemma4_kv_shared3",
        [
            *("--max-model-len", "-1", "--kv-cache-memory-bytes", "4G", "--kv-cache-dtype", "fp8"),
            *("--no-enable-prefix-caching", "--no-async-scheduling"),
        ],
        _ok(16, [(SW, 32, 32768, 1), (SW, 32, 32768, 1), (FA, 16, 32768, 1)], 131072, 2029517, 7.742, 262144),
    ),
    Recorded(
        "S3",
        "PP 2 splits a KV-sharing layer from its target",
        EXTRA / "gemma4_kv_shared4",
        ["--max-model-len", "16384", "--kv-cache-memory-bytes", "77800048620", "-pp", "2", "--no-async-scheduling"],
        _refused(
            "model",
            "ValueError: Specified KV sharing target layer for language_model.model.layers.3.self_attn.attn is not "
            "valid: target layer language_model.model.layers.1.self_attn.attn is not a valid Attention layer in the "
            "model.",
        ),
    ),
    Recorded(
        "S4",
        "PP 2 with a drafter model (the hidden-state extractor): its class has no SupportsPP",
        EXTRA / "gemma4_kv_shared4",
        [
            "--max-model-len",
            "16384",
            "--kv-cache-memory-bytes",
            "77800048620",
            "-pp",
            "2",
            "--speculative-config",
            _ehs([1]),
        ],
        _refused(
            "config",
            "NotImplementedError: Pipeline parallelism is not supported for this model. Supported models implement "
            "the `SupportsPP` interface.",
        ),
    ),
    Recorded(
        "P8",
        "PP 2 on Mamba2ForCausalLM, whose class has no SupportsPP",
        ARCH / "Mamba2ForCausalLM.json",
        ["--max-model-len", "4096", "--kv-cache-memory-bytes", "1000000000", "-pp", "2"],
        _refused(
            "config",
            "NotImplementedError: Pipeline parallelism is not supported for this model. Supported models implement "
            "the `SupportsPP` interface.",
        ),
    ),
    Recorded(
        "P9",
        "PP 2 on Falcon-H1: attention and Mamba2 caches of a decoder layer stay on its stage",
        ARCH / "FalconH1ForCausalLM.json",
        ["--max-model-len", "4096", "--kv-cache-memory-bytes", "1000000000", "-pp", "2"],
        _ok(800, [(FA, 800, 409600, 2), (MB, 800, 409600, 2)], 1220, 624640, 152.5, 4096),
    ),
    Recorded(
        "P10",
        "PP 4 on LFM2-MoE leaves a stage without an MoE layer",
        ARCH / "Lfm2MoeForCausalLM.json",
        ["--max-model-len", "4096", "--kv-cache-memory-bytes", "1000000000", "-pp", "4"],
        _refused("model", "RuntimeError: No Lfm2MoeSparseMoeBlock layer found in the model.layers."),
    ),
    Recorded(
        "H7",
        "Kimi-Linear with every layer KDA plus the hidden-state cache: vLLM's use_mla still sizes the block",
        EXTRA / "kimi_no_mla",
        [
            *("--max-model-len", "8192", "--kv-cache-memory-bytes", "113437764238", "--tensor-parallel-size", "2"),
            *("--kv-cache-dtype", "bfloat16", "--async-scheduling", "--speculative-config", _ehs([0])),
        ],
        _ok(256, [(MB, 256, 294912, 5), ("HiddenStateCache", 128, 294912, 1)], 76929, 9406005, 1148.194, 8192),
    ),
    # sparse MLA (DeepSeek-V3.2's sparse-attention indexer): what the architecture flag sets do not draw
    Recorded(
        "D1",
        "DeepSeek-V3.2 with --kv-cache-dtype fp8_ds_mla named: FLASHMLA_SPARSE, 656-byte MLA tokens",
        ARCH / "DeepseekV32ForCausalLM.json",
        [*DSA, "--kv-cache-dtype", "fp8_ds_mla"],
        _ok(64, [(MLA, 64, 8448, 8)], 4957, 317248, 38.7266, 8192),
    ),
    Recorded(
        "D2",
        "DeepSeek-V3.2, fp8 KV cache on a float16 model: FLASHMLA_SPARSE serves bfloat16 models only",
        ARCH / "DeepseekV32ForCausalLM.json",
        [*DSA, "--kv-cache-dtype", "fp8", "--dtype", "float16"],
        _refused(
            "model",
            "ValueError: No valid attention backend found for cuda with AttentionSelectorConfig(head_size=576, "
            "dtype=torch.float16",
        ),
    ),
    Recorded(
        "D3",
        "DeepSeek-V3.2 with index_topk_pattern FSF: layer 1 keeps no indexer cache",
        EXTRA / "dsa_index_pattern",
        DSA,
        _ok(64, [(MLA, 64, 8448, 7)], 3122, 199808, 24.3906, 8192),
    ),
    Recorded(
        "D4",
        "index_topk_pattern with MTP: the MTP layer builds its indexer whatever the pattern",
        EXTRA / "dsa_index_pattern",
        [*DSA, "--speculative-config", json.dumps({"method": "mtp", "num_speculative_tokens": 1})],
        _ok(64, [(MLA, 64, 8448, 9)], 2484, 158976, 19.4062, 8192),
    ),
    Recorded(
        "D5",
        "DeepSeek-V3.2 under PP 2: each stage's indexer and MLA caches",
        ARCH / "DeepseekV32ForCausalLM.json",
        [*DSA, "-pp", "2"],
        _ok(64, [(MLA, 64, 8448, 4)], 6084, 389376, 47.5312, 8192),
    ),
    Recorded(
        "D6",
        "DeepSeek-V3.2 with the hidden-state cache: one uniform-type group with it",
        ARCH / "DeepseekV32ForCausalLM.json",
        [*DSA, "--speculative-config", _ehs([1, 2])],
        _ok(64, [(MLA, 64, 8448, 9)], 1692, 108288, 13.2188, 8192),
    ),
    Recorded(
        "D7",
        "DeepSeek-V3.2 with a dense MLA backend named",
        ARCH / "DeepseekV32ForCausalLM.json",
        [*DSA, "--attention-backend", "FLASH_ATTN_MLA"],
        _refused(
            "model",
            "ValueError: Selected backend AttentionBackendEnum.FLASH_ATTN_MLA is not valid for this configuration. "
            "Reason: ['sparse not supported']",
        ),
    ),
    Recorded(
        "D8",
        "index_topk_freq 0: the IndexCache rule divides by it",
        EXTRA / "dsa_freq_zero",
        DSA,
        _refused("model", "ZeroDivisionError: integer modulo by zero"),
    ),
    Recorded(
        "G3N1",
        "Gemma-3n, 4 layers of which the last 3 are KV-shared: the sliding ones target layer -1 and keep their own "
        "cache, the global one shares sliding layer 0's",
        EXTRA / "gemma3n_kv_shared_early",
        ["--max-model-len", "8192", "--kv-cache-memory-bytes", "1000000000", "--max-num-batched-tokens", "8192"],
        _ok(16, [(SW, 16, 32768, 3)], 10172, 162434, 19.8285, 8192),
    ),
    Recorded(
        "CLA1",
        "HunYuan dense with use_cla (cla_share_factor 2): the odd layers are encoder-decoder attention, whose KV "
        "cache spec vLLM asserts away",
        EXTRA / "hunyuan_cla",
        ["--max-model-len", "8192", "--kv-cache-memory-bytes", "1000000000", "--max-num-batched-tokens", "8192"],
        _refused("model", "AssertionError: "),
    ),
    # is_causal false: the model file builds EncoderOnlyAttention layers (a backend, no KV cache)
    Recorded(
        "EO1",
        "Qwen3-Next with is_causal false: its attention layers keep no cache, the hybrid block still aligns to them",
        EXTRA / "qwen3_next_not_causal",
        [
            *("--kv-cache-memory-bytes", "7286185027", "--max-num-batched-tokens", "4096"),
            *("--tensor-parallel-size", "4", "--kv-cache-dtype", "auto"),
        ],
        _ok(272, [(MB, 272, 278528, 3)], 8719, 285704192, 4359.5, 65536),
    ),
    Recorded(
        "EO2",
        "Qwen3-Next with is_causal false and fp8: the encoder-only layers' backend sizes the hybrid block",
        EXTRA / "qwen3_next_not_causal",
        [
            *("--max-model-len", "8192", "--kv-cache-memory-bytes", "1000000000", "--max-num-batched-tokens", "8192"),
            *("--kv-cache-dtype", "fp8"),
        ],
        _ok(1072, [(MB, 1072, 1097728, 3)], 303, 1241088, 151.5, 8192),
    ),
    Recorded(
        "EO3",
        "Qwen3-Next with is_causal false: FLASHINFER does not serve encoder-only attention",
        EXTRA / "qwen3_next_not_causal",
        [
            *("--max-model-len", "8192", "--kv-cache-memory-bytes", "1000000000", "--max-num-batched-tokens", "8192"),
            *("--attention-backend", "FLASHINFER"),
        ],
        _refused(
            "model",
            "ValueError: Selected backend AttentionBackendEnum.FLASHINFER is not valid for this configuration. "
            "Reason: ['attention type AttentionType.ENCODER_ONLY not supported']",
        ),
    ),
    Recorded(
        "EO4",
        "Qwen3.5 with is_causal false in its text config and an nvfp4 cache: no backend serves encoder-only attention",
        EXTRA / "qwen3_5_not_causal",
        [
            *("--max-model-len", "8192", "--kv-cache-memory-bytes", "825579725", "--tensor-parallel-size", "2"),
            *("--kv-cache-dtype", "nvfp4"),
        ],
        _refused("model", "ValueError: No valid attention backend found for cuda"),
    ),
    # multimodal-prefix LMs (ModelConfig.is_mm_prefix_lm): FlashInfer lacks it, FlashAttention needs FA4
    Recorded(
        "MP1",
        "Gemma-3 multimodal (an mm-prefix LM) on FLASH_ATTN: head size 256 runs FA3, which has no mm_prefix",
        ARCH / "Gemma3ForConditionalGeneration.json",
        [
            *("--max-model-len", "4096", "--kv-cache-memory-bytes", "1000000000", "--max-num-batched-tokens", "8192"),
            *("--attention-backend", "FLASH_ATTN"),
        ],
        _refused(
            "model",
            "ValueError: Selected backend AttentionBackendEnum.FLASH_ATTN is not valid for this configuration. "
            "Reason: ['mm_prefix (PrefixLM bidirectional attention) requires FlashAttention v4",
        ),
    ),
    Recorded(
        "MP2",
        "Gemma-3 multimodal on FLASHINFER: partial multimodal token full attention not supported",
        ARCH / "Gemma3ForConditionalGeneration.json",
        [
            *("--max-model-len", "4096", "--kv-cache-memory-bytes", "1000000000", "--max-num-batched-tokens", "8192"),
            *("--attention-backend", "FLASHINFER"),
        ],
        _refused(
            "model",
            "ValueError: Selected backend AttentionBackendEnum.FLASHINFER is not valid for this configuration. "
            "Reason: ['partial multimodal token full attention not supported']",
        ),
    ),
]


def _workdir() -> Path:
    d = H.default_workdir()
    d.mkdir(parents=True, exist_ok=True)
    return d


def _case(rec: Recorded, vllm: bool) -> H.Case:
    model = H.materialize_file(_workdir(), rec.model)
    argv = list(rec.vllm_argv if (vllm and rec.vllm_argv) else rec.argv)
    return H.Case(id=rec.id, family="e2e-min", model=model, argv=argv, source=str(rec.model), env=rec.env)


def _check(expect: dict[str, Any], got: dict[str, Any], vllm: bool) -> list[str]:
    """Differences between recorded figures and one tool's answer (empty = matches)."""
    refused = (not got.get("ok")) if vllm else bool(got.get("refused"))
    if "stage" in expect:
        if not refused:
            return [f"expected a refusal ({expect['error'][:80]}...), got {H._answer(got, vllm)}"]
        if not vllm:  # dryboot's wording is its own, but it must be the same refusal (e2e_harness.compare)
            verdict = H.compare({"ok": False, **expect}, got)
            return [] if verdict["agree"] else [f"another refusal than vLLM's: {verdict['diffs']}"]
        problems = []
        if got.get("stage") != expect["stage"]:
            problems.append(f"stage {got.get('stage')} != {expect['stage']}")
        if not str(got.get("error", "")).startswith(expect["error"]):
            problems.append(f"error {str(got.get('error'))[:300]!r} does not start with {expect['error']!r}")
        return problems
    if refused:
        return [f"expected figures, got a refusal: {str(got.get('error'))[:300]}"]
    v = {**expect, "ok": True}
    verdict = H.compare(v, got if not vllm else {**got, "refused": False})
    problems = [f"{k}: recorded {a} != {b}" for k, (a, b) in verdict["diffs"].items()]
    # recorded concurrency has 4 decimals: hold the oracle to them
    if vllm and round(got.get("concurrency") or 0, 4) != expect["concurrency"]:
        problems.append(f"concurrency {got.get('concurrency')} != {expect['concurrency']} (4 decimals)")
    return problems


# --------------------------------------------------------------------------- the oracle vs the record


@pytest.fixture(scope="session")
def recorded_oracle_results(vllm_python: str) -> dict[str, dict[str, Any]]:
    return H.OracleRunner(vllm_python, jobs=1).run([_case(r, vllm=True).oracle_input() for r in RECORDED])


@pytest.mark.parametrize("rec", RECORDED, ids=[r.id for r in RECORDED])
def test_oracle_reproduces_recorded(rec: Recorded, recorded_oracle_results: dict[str, dict[str, Any]]) -> None:
    got = recorded_oracle_results[rec.id]
    problems = _check(rec.oracle_expect or rec.expect, got, vllm=True)
    assert not problems, f"{_case(rec, vllm=True).command()}\n" + "\n".join(problems)


# --------------------------------------------------------------------------- dryboot vs the record


@pytest.mark.parametrize(
    "rec",
    [
        pytest.param(r, marks=pytest.mark.xfail(reason=r.dryboot_xfail, strict=True)) if r.dryboot_xfail else r
        for r in RECORDED
    ],
    ids=[r.id for r in RECORDED],
)
def test_dryboot_matches_recorded(rec: Recorded) -> None:
    case = _case(rec, vllm=False)
    got = H.run_dryboot(case)
    problems = _check(rec.expect, got, vllm=False)
    assert not problems, f"{case.command()}\n" + "\n".join(problems)


# --------------------------------------------------------------------------- generated cases


@pytest.mark.slow
def test_e2e_agreement(vllm_python: str) -> None:
    n = int(os.environ.get("DRYBOOT_E2E_CASES", "300"))
    seed = int(os.environ.get("DRYBOOT_E2E_SEED", "0"))
    jobs = H.oracle_jobs()
    report_path = Path(os.environ.get("DRYBOOT_E2E_REPORT") or (H.REPO / ".e2e-report.json"))
    cases = H.generate_cases(n, seed, _workdir())
    rep = H.run_harness(cases, vllm_python, jobs=jobs)
    report_path.write_text(json.dumps(rep.to_json(), indent=1, default=str))
    print()
    print(rep.format())
    print(f"\nreport: {report_path}")
    crashes = [r for r in rep.rows if r["vllm"].get("stage") == "crash"]
    assert not crashes, f"{len(crashes)} oracle crashes/timeouts, e.g. {crashes[0]['command']}"
    assert rep.rate() >= 0.995, (
        f"end-to-end agreement {100 * rep.rate():.2f}% < 99.5% ({rep.total - rep.agreed} disagreements; "
        f"report: {report_path})"
    )
