"""The architecture table: every architecture of vLLM 0.28.0's registry is verified or refused by
name with a reason, ``--list-architectures`` prints it, ``docs/architectures.md`` publishes it.

Which architectures vLLM serves, and the figures it prints for them, are checked in
``tests/fidelity/test_architectures.py`` (recorded from vLLM 0.28.0's engine start); here: the
refusals (exit 2, one line, the reason), and that the table and the document agree with the code.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from dryboot.vllm.models.drafter_as_model import drafter_as_model_refusal
from dryboot.vllm.models.refusals import REASONS
from dryboot.vllm.models.registry import ARCHITECTURES, NOT_MODELLED, absent_from_release, architecture_table

REPO = Path(__file__).resolve().parents[1]


def dryboot(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "dryboot", *args], capture_output=True, text=True, cwd=REPO, timeout=60
    )


def _config(tmp_path: Path, architecture: str, **extra: object) -> str:
    cfg = {
        "architectures": [architecture],
        "num_hidden_layers": 2,
        "hidden_size": 512,
        "num_attention_heads": 8,
        "num_key_value_heads": 2,
        "max_position_embeddings": 4096,
        **extra,
    }
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    return str(path)


@pytest.mark.parametrize(
    ("architecture", "words"),
    [
        ("NemotronHPuzzleForCausalLM", "per-layer configs"),
        ("FireRedLIDForConditionalGeneration", "encoder-decoder"),
        ("IQuestLoopCoderForCausalLM", "looped layers"),
        ("BloomForCausalLM", "meta device"),
        ("NoSuchModelForCausalLM", "not in the model registry of any vLLM release dryboot ships (0.27.1 to 0.33.0)"),
    ],
)
def test_refused_architecture_exits_2_naming_it_and_why(tmp_path: Path, architecture: str, words: str) -> None:
    r = dryboot("plan", "--model", _config(tmp_path, architecture), "--kv-cache-memory-bytes", "1G")
    assert r.returncode == 2, r.stdout + r.stderr
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, r.stderr
    assert f"architectures: {architecture} is not modelled by dryboot" in lines[0]
    assert words in lines[0]


@pytest.mark.parametrize("release", ["0.28.0", "0.33.0"])
def test_a_pooling_model_is_refused_as_one_of_every_registry(tmp_path: Path, release: str) -> None:
    """OpenAI's privacy filter (``OpenAIPrivacyFilterForTokenClassification``) is in every release's
    ``_TOKEN_CLASSIFICATION_MODELS`` (vLLM 0.27.1 to 0.33.0, ``openai_privacy_filter.py``: gpt-oss as a
    bidirectional encoder, ``EncoderOnlyAttention``): a pooling model, no generation KV cache. It was refused
    as "not in vLLM 0.28.0's model registry", whatever ``--vllm-version`` said."""
    cfg = _config(tmp_path, "OpenAIPrivacyFilterForTokenClassification", model_type="openai_privacy_filter")
    r = dryboot("plan", "--model", cfg, "--kv-cache-memory-bytes", "1G", "--vllm-version", release)
    assert r.returncode == 2, r.stdout + r.stderr
    assert "token-classification model of vLLM 0.27.1 to 0.33.0's model registry (openai_privacy_filter.py)" in r.stderr
    assert "no generation KV cache to plan" in r.stderr and "0.28.0's model registry" not in r.stderr


def test_a_later_registry_model_names_its_releases() -> None:
    """An architecture only later registries list, without a refusal of its own, names those releases."""
    from dryboot.vllm.models.registry import REGISTRY_RELEASES, _release_registry, unregistered_reason

    earlier = REGISTRY_RELEASES[:-1]
    later = next(a for a in _release_registry("0.33.0") if not any(a in _release_registry(v) for v in earlier))
    assert unregistered_reason(later) == "in vLLM 0.33.0's model registry, its model class not modelled"


def test_every_row_is_verified_or_refused_with_a_reason() -> None:
    rows = architecture_table()
    assert {r.status for r in rows} == {"verified", "refused"}
    for r in rows:
        if r.status == "verified":
            assert r.architecture in ARCHITECTURES and not r.reason
            assert (REPO / r.tiny_config).is_file(), r.tiny_config
        elif r.architecture in ARCHITECTURES:
            # planned on a later release only (Inkling: 0.28.0's engine start cannot build it;
            # Kimi-K3: recorded on 0.33.0 only)
            assert r.reason == absent_from_release(r.architecture, "0.28.0"), r.architecture
        else:
            # a specific reason (NOT_MODELLED) where one is known, else the category's
            assert r.reason == NOT_MODELLED.get(r.architecture, REASONS.get(r.architecture)), r.architecture
    # every reason names a registry architecture (0.28.0's or a later release's, as that
    # release's table lists it) that dryboot still refuses (none is stale)
    from dryboot.vllm.models.registry import REGISTRY_RELEASES

    any_release = {r.architecture for v in REGISTRY_RELEASES for r in architecture_table(v)}
    assert set(REASONS) <= any_release
    assert not set(REASONS) & set(ARCHITECTURES), sorted(set(REASONS) & set(ARCHITECTURES))


def test_list_architectures_prints_status_and_reason() -> None:
    r = dryboot("plan", "--list-architectures")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    rows = architecture_table()
    verified = sum(x.status == "verified" for x in rows)
    assert lines[-1] == f"{len(rows)} architectures: {verified} verified, {len(rows) - verified} refused"
    by_name = {ln.split()[0]: ln for ln in lines[:-1]}
    assert len(by_name) == len(rows)
    bailing = by_name["BailingMoeV3ForCausalLM"]
    assert "  refused  " in bailing and "Kimi Delta Attention + MLA layers" in bailing
    assert "  verified  bailing_moe_linear  " in by_name["BailingMoeV2_5ForCausalLM"]
    assert "  verified  olmo_hybrid  " in by_name["OlmoHybridForCausalLM"]
    assert "  verified  zamba2  " in by_name["Zamba2ForCausalLM"]
    assert "  verified  dense  " in by_name["MixtralForCausalLM"]
    assert "tests/fidelity/data/architectures/MixtralForCausalLM.json" in by_name["MixtralForCausalLM"]


def test_published_table_is_up_to_date() -> None:
    r = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "architectures_doc.py"), "--check"],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=60,
    )
    assert r.returncode == 0, r.stderr


#: what only their family's hooks read (``registry.Family``): the traits each family keeps in its
#: own ``FamilyExtra`` (and the ones it used to keep on ModelGeometry), and the family-specific
#: traits of the parallel checks
FAMILY_PRIVATE = (
    "family_extra",
    "diffkv",
    "cache_config_ignored",
    "global_kv_heads_unset",
    "layer_kinds_hf_class",
    "all_layers_indexed",
    "fa4_all_layers",
    "deepseek_v4",
    "tower_heads",
    "vision_num_heads",
    "moe_experts",
    "DeepseekV4Caches",
    "Gemma4Extra",
    "Qwen3NextExtra",
    "MiMoV2Extra",
    "AllLayersIndexed",
)


def test_generic_code_reads_no_family_private_field() -> None:
    """A family's own rule lives in its module, behind a ``Family`` hook: the generic stages
    (config resolution, specs, the planner) never test its fields."""
    import re

    src = Path(__file__).resolve().parents[1] / "src" / "dryboot"
    # the packed grouping code is DeepSeek-V4's path (its caches are its input)
    own = {"hf.py", "packed.py"}
    generic = [p for p in src.rglob("*.py") if "models" not in p.parts and p.name not in own]
    found = [
        f"{p.relative_to(src)}: {name}"
        for p in generic
        for name in FAMILY_PRIVATE
        # a field read, a keyword or a class named; a Family hook of the same name is a call, a
        # vLLM path (``vllm/models/deepseek_v4/``) a citation
        if re.search(rf"(?<![/\w]){name}\b(?![(/])", p.read_text(encoding="utf-8"))
    ]
    assert not found, found


@pytest.mark.parametrize(
    "architecture",
    [
        "LlamaForCausalLMEagle3",
        "Eagle3LlamaForCausalLM",
        "EagleLlamaForCausalLM",
        "Eagle3Qwen3ForCausalLM",
        # drafter classes no family plans: refused as drafters given as the model, not as unmodelled
        "DeepSeekV4MTPModel",
        "EagleMiniCPMForCausalLM",
        "Qwen3NextMTP",
    ],
)
def test_a_draft_model_as_the_target_is_refused(tmp_path: Path, architecture: str) -> None:
    """vLLM builds its speculative-decoding classes only as a target's drafter (their
    constructors read the speculative config, or the profile run's call fails:
    tests/fidelity/test_drafter_as_model.py): one line, exit 2."""
    r = dryboot("plan", "--model", _config(tmp_path, architecture), "--kv-cache-memory-bytes", "1G")
    assert r.returncode == 2, r.stdout + r.stderr
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, r.stderr
    assert f"{architecture} is a speculative-decoding draft model" in lines[0]


#: vLLM 0.33.0's Qwen4-Exp and Step5 (vllm/models/qwen4_exp, vllm/models/step5): refused by the
#: cache kinds they add (read in the release's source), not by the generic "model file" line (Qwen4-Exp's
#: text model and wrapper are planned in their plain layout, Step5's text model on the repeat-pattern
#: packing, its wrapper through its text rules: tests/fidelity/test_qwen4_exp_step5.py)
QWEN4_EXP_STEP5 = {
    "Qwen4ExpMTP": ("drafter", "qwen_sparse_attention", "hc_count"),
    "Step5MTP": ("drafter", "layer_types_with_mtp", "DSA layer"),
}


@pytest.mark.parametrize("architecture", ["Step5ForCausalLM", "Step5ForConditionalGeneration"])
def test_step5_text_model_is_verified_on_0_33_only(architecture: str) -> None:
    """Step5ForCausalLM and its multimodal wrapper (through Step5's text rules) are planned on
    0.33.0 (the release whose registry has them)."""
    row = next(r for r in architecture_table("0.33.0") if r.architecture == architecture)
    assert row.status == "verified"
    assert all(r.architecture != architecture for r in architecture_table("0.32.0"))


@pytest.mark.parametrize("architecture", sorted(QWEN4_EXP_STEP5))
def test_qwen4_exp_and_step5_refused_by_their_cache_kinds(tmp_path: Path, architecture: str) -> None:
    row = next(r for r in architecture_table("0.33.0") if r.architecture == architecture)
    assert row.status == "refused" and row.reason == NOT_MODELLED[architecture]
    assert all(words in row.reason for words in QWEN4_EXP_STEP5[architecture]), row.reason
    assert "its model file is not modelled" not in row.reason
    r = dryboot(
        "plan",
        "--model",
        _config(tmp_path, architecture),
        "--kv-cache-memory-bytes",
        "1G",
        "--vllm-version",
        "0.33.0",
    )
    assert r.returncode == 2, r.stdout + r.stderr
    # given as the model, the drafter is refused as vLLM 0.33.0 fails on it (test_drafter_as_model.py)
    assert f"architectures: {architecture} is a speculative-decoding draft model" in r.stderr
    assert "given as the model, vLLM 0.33.0" in r.stderr


#: vLLM 0.33.0's architectures of issue 37 that dryboot refuses, each with the words of its reason
RELEASE_033_REFUSALS = {
    "Glm5NextMTPModel": "MTP drafter",
    "MuseSparkDSparkModel": "DSpark drafter",
    "BailingMoeV3VLForConditionalGeneration": "BailingMoeV3ForCausalLM",
}


@pytest.mark.parametrize(("architecture", "words"), sorted(RELEASE_033_REFUSALS.items()))
def test_release_033_architectures_are_refused_by_name(tmp_path: Path, architecture: str, words: str) -> None:
    """Each is listed on 0.33.0 with its own reason, not the generic "its model file is not modelled"
    line, and ``plan --vllm-version 0.33.0`` refuses it with that reason."""
    rows = {r.architecture: r for r in architecture_table("0.33.0")}
    assert rows[architecture].status == "refused"
    assert words in rows[architecture].reason and "model file is not modelled" not in rows[architecture].reason
    r = dryboot(
        "plan", "--model", _config(tmp_path, architecture), "--kv-cache-memory-bytes", "1G", "--vllm-version", "0.33.0"
    )
    assert r.returncode == 2, r.stdout + r.stderr
    if drafter_as_model_refusal(architecture, "0.33.0") is not None:
        # a drafter class given as the model: refused as vLLM 0.33.0 fails on it (test_drafter_as_model.py)
        assert f"{architecture} is a speculative-decoding draft model" in r.stderr, r.stderr
    else:
        assert f"{architecture} is not modelled by dryboot" in r.stderr and words in r.stderr


def test_the_pooling_table_is_the_boot_environments_registries() -> None:
    """``data/vllm-pooling-architectures.json`` is what ``scripts/vllm_architectures.py --pooling`` reads
    from every release's ``registry.py`` (each boot environment's vLLM, where all are installed)."""
    from dryboot.vllm.models.registry import REGISTRY_RELEASES, _pooling_registry

    envs = Path.home() / ".cache" / "dryboot" / "boot-env"
    dirs = [envs / r / "lib" / "python3.11" / "site-packages" / "vllm" for r in REGISTRY_RELEASES]
    if not all((d / "model_executor" / "models" / "registry.py").is_file() for d in dirs):
        pytest.skip("needs every release's boot environment")
    words = [f"{r}={d}" for r, d in zip(REGISTRY_RELEASES, dirs, strict=True)]
    out = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "vllm_architectures.py"), "--pooling", *words],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout
    assert json.loads(out) == _pooling_registry()
