"""Which attention backend name a speculative drafter's layers are built with
(``dryboot.vllm.config.resolve.drafter_backend_name``), read from each release's proposer and speculator
loaders; the recorded cases ``dbk-*`` of ``tests/fidelity/test_releases.py`` pin the figures."""

from __future__ import annotations

import pytest

from dryboot.vllm.config.resolve import drafter_backend_name

FI, FA = "FLASHINFER", "FLASH_ATTN"


@pytest.mark.parametrize(
    "method,arch,model_type,v2,version,named,target,want",
    [
        # V1: SpecDecodeBaseProposer._create_draft_vllm_config never inherits the target's
        ("dflash", "DFlashDraftModel", "qwen3", False, "0.28.0", None, FI, None),
        ("eagle3", "LlamaForCausalLMEagle3", "llama", False, "0.28.0", None, FI, None),
        ("draft_model", "Qwen3ForCausalLM", "qwen3", False, "0.30.0", FA, FI, FA),
        ("eagle", "LlamaForCausalLMEagle", "llama", False, "0.33.0", "auto", FI, None),
        # Gemma-4 MTP: the target's, V1 falling back to the named one, V2 never reading it
        ("mtp", "Gemma4MTPModel", "gemma4", False, "0.30.0", FA, "TRITON_ATTN", "TRITON_ATTN"),
        ("mtp", "Gemma4MTPModel", "gemma4", False, "0.30.0", FA, None, FA),
        ("mtp", "Gemma4MTPModel", "gemma4", True, "0.30.0", FA, None, None),
        # V2 DFlash: load_dflash_model sets the named one (None: auto) on every release
        ("dflash", "DFlashDraftModel", "qwen3", True, "0.27.1", None, FI, None),
        ("dflash", "DFlashDraftModel", "qwen3", True, "0.33.0", FA, FI, FA),
        # V2 EAGLE / MTP: load_eagle_model keeps the target's; reads the named one from 0.30
        ("eagle3", "LlamaForCausalLMEagle3", "llama", True, "0.29.0", FA, FI, FI),
        ("mtp", "Qwen3_5MTP", "qwen3_5_mtp", True, "0.29.0", FA, None, None),
        ("eagle3", "LlamaForCausalLMEagle3", "llama", True, "0.30.0", FA, FI, FA),
        ("eagle3", "LlamaForCausalLMEagle3", "llama", True, "0.30.0", None, FI, FI),
        # V2 DSpark: named; the target's over none in 0.28.0, then for DeepSeek-V4 drafters only
        ("dspark", "DSparkModel", "qwen3", True, "0.27.1", None, FI, None),
        ("dspark", "DSparkModel", "qwen3", True, "0.28.0", None, FI, FI),
        ("dspark", "DSparkModel", "qwen3", True, "0.29.0", None, FI, None),
        ("dspark", "DSparkModel", "deepseek_v4", True, "0.29.0", None, FI, FI),
        ("dspark", "DSparkModel", "deepseek_v41", True, "0.29.0", None, FI, None),
        ("dspark", "DSparkModel", "deepseek_v41", True, "0.30.0", None, FI, FI),
        # V2 plain draft model (0.31+): the target's, the named one unread
        ("draft_model", "Qwen3ForCausalLM", "qwen3", True, "0.31.0", FA, FI, FI),
        ("draft_model", "Qwen3ForCausalLM", "qwen3", True, "0.33.0", FA, None, None),
    ],
)
def test_drafter_backend_name(
    method: str,
    arch: str,
    model_type: str,
    v2: bool,
    version: str,
    named: str | None,
    target: str | None,
    want: str | None,
) -> None:
    assert drafter_backend_name(method, arch, model_type, v2, version, named, target) == want
