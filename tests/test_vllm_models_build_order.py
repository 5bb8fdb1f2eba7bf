"""Issue 37 (refusal order): refusals vLLM makes while it builds the model come after its parallel and
model config checks, as dryboot's ``verify_layers`` (and the pipeline stages' checks) do.

- ``qwen2.py``'s ``Qwen2Model`` asserts that a config whose ``layer_types`` mix sliding and full
  layers has ``max_window_layers == num_hidden_layers`` (vLLM 0.27.1-0.33.0 alike): Qwen2, Qwen3, MiMo
  and every wrapper whose language model is one of them (built with ``init_vllm_registered_model``,
  or Qwen2-VL's own ``Qwen2ForCausalLM``). Their config classes all compute ``layer_types`` from
  ``use_sliding_window`` / ``max_window_layers`` (transformers' ``Qwen2Config``, ``Qwen3Config``,
  ``Qwen2_5OmniTextConfig``; vLLM's ``BagelConfig`` a ``Qwen2Config``, ``IsaacConfig`` a
  ``Qwen3Config``, ``CheersTextConfig`` the same rule), so the assertion holds for each; the
  wrappers whose config class defines no window (Moss-Transcribe, Qwen3-ASR) are refused by name.
  Recorded: ``tests/fidelity/test_releases.py`` ``qwen2-partwin-*``, ``tests/fidelity/test_e2e.py`` R3.
- ``set_moe_parameters`` of Qwen3-Next / Qwen3.5-MoE finds no MoE block on a pipeline stage without
  one, an empty stage included (recorded: ``qnext-2l-pp*``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from dryboot.cli import cli
from dryboot.vllm.models.dense import DECODERS
from dryboot.vllm.models.wrappers import BUILT_AS, TEXT_CONFIG_PATHS, WRAPPERS

TINY = Path(__file__).resolve().parent / "fidelity" / "data" / "architectures"
QWEN2_MODEL = {"Qwen2ForCausalLM", "Qwen3ForCausalLM", "MiMoForCausalLM"}
PARTIAL = "Sliding window for some but all layers is not supported"

#: every planned wrapper whose language model is built on Qwen2Model
QWEN_WRAPPERS = sorted(
    {a for a, (_, inner) in WRAPPERS.items() if QWEN2_MODEL & set(inner.values())}
    | {a for a, spec in BUILT_AS.items() if spec.inner in QWEN2_MODEL}
    | {a for a, spec in DECODERS.items() if spec.vllm_file in ("qwen2_vl.py", "qwen2_5_vl.py")}
)
#: wrappers refusing any window key by name first (their config classes define none)
WINDOW_KEYS_REFUSED = {
    "MossTranscribeDiarizeForConditionalGeneration": "use_sliding_window",
    "Qwen3ASRForConditionalGeneration": "sliding_window",
    "Qwen3ASRRealtimeGeneration": "sliding_window",
}


def plan(tmp_path: Path, config: dict[str, Any], *flags: str) -> tuple[int, str]:
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    argv = ["plan", "--model", str(path), "--max-model-len", "4096", "--kv-cache-memory-bytes", "4G", *flags]
    res = CliRunner().invoke(cli, argv)
    return res.exit_code, " ".join(res.output.split())


def _partial_window(architecture: str) -> dict[str, Any]:
    """The architecture's tiny config, its language model a Qwen2 / Qwen3 sliding from its last layer."""
    config: dict[str, Any] = json.loads((TINY / f"{architecture}.json").read_text())
    default_path = ("text_config",) if architecture not in DECODERS or "text_config" in config else ()
    text = config
    for key in TEXT_CONFIG_PATHS.get(architecture, default_path):
        text = text.setdefault(key, {})
    if architecture in WRAPPERS:
        inner = WRAPPERS[architecture][1]
        named = (text.get("architectures") or [""])[0]
        if text.get("model_type") not in ("qwen2", "qwen3") and named not in QWEN2_MODEL:
            text["model_type"] = "qwen2" if "qwen2" in inner else "qwen3"
            text.pop("architectures", None)
    n = int(text.get("num_hidden_layers", 3))
    text.pop("layer_types", None)
    text.update(use_sliding_window=True, sliding_window=512, max_window_layers=n - 1, num_hidden_layers=n)
    return config


def test_every_qwen2_model_wrapper_is_listed() -> None:
    assert len(QWEN_WRAPPERS) == 30 and "LlavaOnevisionForConditionalGeneration" in QWEN_WRAPPERS


@pytest.mark.parametrize("architecture", QWEN_WRAPPERS)
def test_wrapper_keeps_qwen2_model_partial_window_refusal(tmp_path: Path, architecture: str) -> None:
    """The assertion moved from reading the config to building the model: no wrapper plans it."""
    rc, out = plan(tmp_path, _partial_window(architecture), "--trust-remote-code")
    assert rc == 2, out
    if architecture in WINDOW_KEYS_REFUSED:
        assert f"{WINDOW_KEYS_REFUSED[architecture]}: {architecture}:" in out and "not modelled" in out
    else:
        assert f"max_window_layers: {PARTIAL}" in out and "(vLLM's Qwen2Model, AssertionError" in out


def _qwen3(**extra: Any) -> dict[str, Any]:
    return {
        "architectures": ["Qwen3ForCausalLM"],
        "model_type": "qwen3",
        "num_hidden_layers": 4,
        "num_attention_heads": 16,
        "num_key_value_heads": 8,
        "hidden_size": 2048,
        "vocab_size": 1024,
        "max_position_embeddings": 8192,
        "use_sliding_window": True,
        "sliding_window": 512,
        "max_window_layers": 3,
        **extra,
    }


def test_parallel_config_refuses_before_the_model_is_built(tmp_path: Path) -> None:
    """Audit seed 260312 case 140: ParallelConfig's world size first (vLLM 0.31.0 recorded)."""
    rc, out = plan(tmp_path, _qwen3(), "-tp", "4", "-pp", "4")
    assert rc == 2 and "World size (16) is larger than the number of available GPUs" in out, out
    rc, out = plan(tmp_path, _qwen3(), "-pp", "2")
    assert rc == 2 and PARTIAL in out, out
    rc, out = plan(tmp_path, _qwen3(max_window_layers=4))
    assert rc == 0, out


def test_draft_model_keeps_the_refusal(tmp_path: Path) -> None:
    drafter = tmp_path / "drafter"
    drafter.mkdir()
    (drafter / "config.json").write_text(json.dumps(_qwen3(num_hidden_layers=2, max_window_layers=1)))
    spec = json.dumps({"method": "draft_model", "model": str(drafter), "num_speculative_tokens": 2})
    rc, out = plan(tmp_path, _qwen3(max_window_layers=4), "--speculative-config", spec)
    assert rc == 2 and f"{drafter}/config.json: max_window_layers: {PARTIAL}" in out, out


def _qwen3_next(n: int, **extra: Any) -> dict[str, Any]:
    config: dict[str, Any] = json.loads((TINY / "Qwen3NextForCausalLM.json").read_text())
    config.pop("layer_types", None)
    return {**config, "num_hidden_layers": n, **extra}


@pytest.mark.parametrize(
    ("n", "extra", "pp", "stage", "held"),
    [
        (2, {}, "4", 0, "no decoder layer"),  # audit seed 260283 case 0
        (2, {}, "3", 2, "no decoder layer"),  # audit seed 260323 case 542
        (4, {"decoder_sparse_step": 2}, "4", 0, "only dense layers (0 to 0)"),
        (4, {"mlp_only_layers": [2, 3]}, "2", 1, "only dense layers (2 to 3)"),
    ],
)
def test_qwen3_next_stage_without_moe_block(
    tmp_path: Path, n: int, extra: dict[str, Any], pp: str, stage: int, held: str
) -> None:
    rc, out = plan(tmp_path, _qwen3_next(n, **extra), "-pp", pp)
    assert rc == 2, out
    assert f"pipeline stage {stage} holds {held}: vLLM's Qwen3NextForCausalLM finds no MoE layer" in out
    assert "(RuntimeError: No Qwen3Next layer found in the model.layers.)" in out


def test_qwen3_next_moe_blocks_on_every_stage_plan(tmp_path: Path) -> None:
    rc, out = plan(tmp_path, _qwen3_next(4, decoder_sparse_step=2), "-pp", "2")
    assert rc == 0, out
    rc, out = plan(tmp_path, _qwen3_next(4, mlp_only_layers=[0, 1]), "-pp", "2")
    assert rc == 2 and "pipeline stage 0 holds only dense layers (0 to 1)" in out, out


def test_qwen3_next_without_any_moe_block_is_refused_unsplit(tmp_path: Path) -> None:
    rc, out = plan(tmp_path, _qwen3_next(4, num_experts=0))
    assert rc == 2 and "num_experts: no decoder layer holds an MoE block" in out, out
    assert "No Qwen3Next layer found in the model.layers." in out


@pytest.mark.parametrize("architecture", ["Qwen3_5MoeForCausalLM", "Qwen3_5MoeForConditionalGeneration"])
def test_qwen3_5_moe_empty_stage(tmp_path: Path, architecture: str) -> None:
    """``qwen3_5.py``: every layer of a ``qwen3_5_moe_text`` model holds the MoE block; a stage of no
    layer builds none, and the language model's ``set_moe_parameters`` (``QwenNextMixtureOfExperts``)
    fails first, the wrapper's included (recorded: ``q35moe-2l-pp4``)."""
    config: dict[str, Any] = json.loads((TINY / f"{architecture}.json").read_text())
    text = config.get("text_config", config)
    text.update(num_hidden_layers=2, layer_types=["linear_attention", "full_attention"])
    rc, out = plan(tmp_path, config, "-pp", "4")
    assert rc == 2 and f"pipeline stage 0 holds no decoder layer: vLLM's {architecture} finds" in out, out
    assert "(RuntimeError: No Qwen3Next layer found in the model.layers.)" in out


def _tiny(architecture: str, **text: Any) -> dict[str, Any]:
    config: dict[str, Any] = json.loads((TINY / f"{architecture}.json").read_text())
    config.get("text_config", config).update(text)
    return config


#: (architecture, its text config's changes, pipeline size, the stage and what it holds, vLLM's words)
MOE_STAGES = [
    ("Qwen3MoeForCausalLM", {"num_hidden_layers": 2}, "3", "2 holds no decoder layer", "No Qwen3MoE layer found"),
    (
        "Qwen3MoeForCausalLM",
        {"num_hidden_layers": 4, "max_window_layers": 4, "mlp_only_layers": [0, 1]},
        "2",
        "0 holds only dense layers (0 to 1)",
        "No Qwen3MoE layer found in the model.layers.",
    ),
    (
        "Qwen3MoeForCausalLM",
        {"num_hidden_layers": 4, "max_window_layers": 4, "decoder_sparse_step": 4},
        "2",
        "0 holds only dense layers (0 to 1)",
        "No Qwen3MoE layer found in the model.layers.",
    ),
    ("MixtralForCausalLM", {"num_hidden_layers": 2}, "3", "2 holds no decoder layer", "No MixtralMoE layer found"),
    (
        "Glm4MoeForCausalLM",
        {"num_hidden_layers": 4, "first_k_dense_replace": 2},
        "2",
        "0 holds only dense layers (0 to 1)",
        "No Glm4MoE layer found in model.layers.",
    ),
    (
        "Glm4vMoeForConditionalGeneration",
        {"num_hidden_layers": 4, "first_k_dense_replace": 2},
        "2",
        "0 holds only dense layers (0 to 1)",
        "No Glm4MoE layer found in model.layers.",
    ),
    (
        "Qwen3VLMoeForConditionalGeneration",
        {"num_hidden_layers": 4, "mlp_only_layers": [0, 1]},
        "2",
        "0 holds only dense layers (0 to 1)",
        "No Qwen3Moe layer found in the language_model.",
    ),
]


@pytest.mark.parametrize(("architecture", "text", "pp", "held", "words"), MOE_STAGES)
def test_moe_class_needs_an_moe_block_on_every_stage(
    tmp_path: Path, architecture: str, text: dict[str, Any], pp: str, held: str, words: str
) -> None:
    """Issue 37: these classes' ``set_moe_parameters`` raises on a stage without an MoE block (before
    any KV cache check; a stage of dense layers was planned, an empty one refused in dryboot's words).
    Recorded: ``qwen3moe-*``, ``mixtral-2l-pp3``, ``glm4moe-*``, ``glm45v-dense2-pp2``, ``q3vlmoe-*``."""
    rc, out = plan(tmp_path, _tiny(architecture, **text), "-pp", pp, "--vllm-version", "0.30.0")
    assert rc == 2 and f"pipeline stage {held}: vLLM's {architecture} finds no MoE layer" in out, out
    assert words in out, out


@pytest.mark.parametrize(
    ("architecture", "text"),
    [
        # Qwen2MoeForCausalLM and DeepseekV2ForCausalLM build a stage without an MoE block (no MoE parameters)
        ("Qwen2MoeForCausalLM", {"num_hidden_layers": 4, "mlp_only_layers": [0, 1]}),
        ("DeepseekV2ForCausalLM", {"num_hidden_layers": 4, "first_k_dense_replace": 2}),
    ],
)
def test_moe_class_builds_a_dense_stage(tmp_path: Path, architecture: str, text: dict[str, Any]) -> None:
    rc, out = plan(tmp_path, _tiny(architecture, **text), "-pp", "2")
    assert rc == 0, out


def test_qwen3_omni_thinker_skips_the_moe_lookup(tmp_path: Path) -> None:
    """Qwen3-Omni's thinker (``Qwen3MoeLLMForCausalLM``) skips ``Qwen3MoeForCausalLM.__init__``: it
    keeps no MoE-stage rule of its language model."""
    from dryboot.vllm.models.wrappers import BUILT_AS

    fields = BUILT_AS["Qwen3OmniMoeForConditionalGeneration"].model_fields
    assert fields["first_moe_layer"] is None and fields["no_moe_layer"] is None
