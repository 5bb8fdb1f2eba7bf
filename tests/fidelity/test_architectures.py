"""Per-architecture verification: every architecture dryboot plans, against vLLM 0.28.0's own
engine start, on its tiny config under many flag sets.

``data/architectures/<Architecture>.json`` is the tiny config that verifies that architecture
(small layer counts and sizes, the field names of its Hugging Face config). Each one runs under
:data:`FLAG_SETS` flag sets drawn by the end-to-end harness's flag generator
(``e2e_harness._flags``: tensor parallelism, ``--kv-cache-dtype``, ``--block-size``,
``--max-model-len``, ``--max-num-seqs``, prefix caching, ``--attention-backend``...), seeded by the
architecture's name.

``data/architectures/recorded.json`` holds what vLLM 0.28.0 answered for every case (written by
``record_architectures.py`` from ``src/dryboot/boot/engine_start.py``; nothing in it comes from dryboot). The default
run checks dryboot against those figures; with ``DRYBOOT_VLLM_PYTHON`` set (a vLLM 0.28.0 venv),
``test_live_oracle`` re-runs the oracle and checks it still says what was recorded and that
dryboot agrees.
"""

from __future__ import annotations

import json
import os
import random
import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

import e2e_harness as H
import remote_code_table as R

pytestmark = pytest.mark.fidelity

DATA = Path(__file__).resolve().parent / "data" / "architectures"
RECORDED = DATA / "recorded.json"
#: flag sets per architecture
FLAG_SETS = 24
#: the oracle fields a case records
KEPT = ("ok", "stage", "error", "block_size", "groups", "num_blocks", "tokens", "concurrency", "max_model_len")


DEFAULTS = DATA / "defaults"
#: flag sets of the ``defaults/`` configs (what they test is the config class's defaults)
DEFAULTS_FLAG_SETS: list[list[str]] = [
    ["--kv-cache-memory-bytes", "2000000000"],
    ["--kv-cache-memory-bytes", "2000000000", "-tp", "2", "--kv-cache-dtype", "fp8"],
    ["--kv-cache-memory-bytes", "3000000000", "--max-model-len", "2048", "--block-size", "32"],
    ["--kv-cache-memory-bytes", "500000000", "-tp", "4", "--enable-prefix-caching", "--max-num-seqs", "64"],
]


def defaults_configs() -> dict[str, Path]:
    """architecture -> its config with only the keys its config class cannot default."""
    return {p.stem: p for p in sorted(DEFAULTS.glob("*.json"))}


FILES = DATA / "files"
#: of ``remote_code_table.DIRS``, the architectures whose first flag set records vLLM's refusal without
#: --trust-remote-code (every later set and the config-defaults cases give it); the others give it in
#: every set (their refusal without it is recorded in ``wrapper_cases.py``)
UNTRUSTED_FIRST = frozenset(
    {
        "InternLM2ForCausalLM",
        "MiniCPMForCausalLM",
        "MiMoForCausalLM",
        "BailingMoeForCausalLM",
        "Param2MoEForCausalLM",
        "BailingMoeV2ForCausalLM",
        "TeleChat2ForCausalLM",
    }
)
TRUST = "--trust-remote-code"


def materialize(architecture: str, path: Path) -> str:
    """A model directory: ``path`` as ``config.json``, with the files vLLM also reads for this
    architecture (``files/<architecture>/``: a multimodal model's ``preprocessor_config.json``, a tiny
    ``tokenizer.json`` where its processor loads one at engine start; its config Python files of
    ``remote_code_table.DIRS``)."""
    work = H.default_workdir()
    work.mkdir(parents=True, exist_ok=True)
    model = H.with_files(H.materialize_file(work, path), R.directory(architecture))
    extra = FILES / architecture
    if extra.is_dir():
        for f in sorted(extra.iterdir()):
            target = Path(model) / f.name
            if not target.exists() or target.read_bytes() != f.read_bytes():
                target.write_bytes(f.read_bytes())
    return model


def defaults_case(architecture: str, index: int, argv: list[str]) -> H.Case:
    model = materialize(architecture, defaults_configs()[architecture])
    if architecture in UNTRUSTED_FIRST:
        argv = [*argv, TRUST]
    return H.Case(id=f"{architecture}@defaults#{index}", family=f"defaults:{architecture}", model=model, argv=argv)


def tiny_configs() -> dict[str, Path]:
    """architecture -> its tiny config file."""
    return {p.stem: p for p in sorted(DATA.glob("*.json")) if p.name != "recorded.json"}


def newer_only() -> frozenset[str]:
    """The tiny configs of architectures vLLM 0.28.0's registry lacks (0.33.0's wrappers): not
    recorded here, but on the releases that have them (``test_release_architectures.ARCHITECTURES``)."""
    from dryboot.vllm.models.registry import LATER_ARCHITECTURES, registry_file

    return frozenset(a for a in tiny_configs() if a in LATER_ARCHITECTURES or registry_file(a) is None)


def recorded_tiny_configs() -> dict[str, Path]:
    """The tiny configs recorded on vLLM 0.28.0: all but :func:`newer_only`'s."""
    newer = newer_only()
    return {a: p for a, p in tiny_configs().items() if a not in newer}


#: drafter architecture -> the target it drafts for in its cases (``--speculative-config``)
DRAFTERS = {
    "DFlashDraftModel": ("Qwen3ForCausalLM", "dflash"),
    # a Gemma-4 assistant checkpoint (model_type gemma4_assistant), built by vLLM as Gemma4MTPModel
    "Gemma4MTPModel": ("Gemma4ForCausalLM", "mtp"),
    # EAGLE-1 / EAGLE-3 heads under the registry's names, each on a target it is published for
    "EagleLlamaForCausalLM": ("LlamaForCausalLM", "eagle"),
    "LlamaForCausalLMEagle3": ("LlamaForCausalLM", "eagle3"),
    "Eagle3LlamaForCausalLM": ("Qwen3ForCausalLM", "eagle3"),
    "Eagle3Qwen3ForCausalLM": ("Qwen3ForCausalLM", "eagle3"),
    "Eagle3Qwen2_5vlForCausalLM": ("Qwen2_5_VLForConditionalGeneration", "eagle3"),
    "Eagle3Qwen3vlForCausalLM": ("Qwen3VLForConditionalGeneration", "eagle3"),
    # no MiniMax-M2 target is planned at TP 1 by dryboot: the head drafts for a Llama target
    "Eagle3MiniMaxM2ForCausalLM": ("LlamaForCausalLM", "eagle3"),
    # EAGLE-3 heads of MLA layers (deepseek_eagle3.py) on an MLA target
    "Eagle3DeepseekV2ForCausalLM": ("DeepseekV3ForCausalLM", "eagle3"),
    "Eagle3DeepseekV3ForCausalLM": ("DeepseekV3ForCausalLM", "eagle3"),
}
#: stands for the drafter's directory in recorded flag sets
DRAFTER = "{drafter}"


def remote_code(architecture: str, cfg: dict[str, Any]) -> bool:
    """Whether ``architecture``'s tiny config is read with the checkpoint's own config class: its
    ``auto_map`` names an AutoConfig whose module ``remote_code_table.DIRS`` ships (the published Python
    file). vLLM reads such a config only with --trust-remote-code, which each of its flag
    sets then ends with (without it: refused, ``wrapper_cases.py``)."""
    auto = (cfg.get("auto_map") or {}).get("AutoConfig")
    where = R.directory(architecture)
    return isinstance(auto, str) and where is not None and (where / f"{auto.split('.')[0]}.py").is_file()


def flag_sets(architecture: str, path: Path, n: int = FLAG_SETS) -> list[list[str]]:
    """``n`` distinct flag sets for ``architecture``'s cases, deterministic (seeded by its name).
    A drafter's sets end with ``--speculative-config`` naming :data:`DRAFTER`."""
    work = H.default_workdir()
    cfg = json.loads(path.read_text())
    if architecture in DRAFTERS:
        cfg = json.loads(tiny_configs()[DRAFTERS[architecture][0]].read_text())
    from dryboot.vllm.models.wrappers import TEXT_CONFIG_PATHS

    if architecture in TEXT_CONFIG_PATHS:
        # the language model's config lives elsewhere (thinker_config.text_config, llm_config...):
        # the flag generator reads text_config
        text: Any = cfg
        for key in TEXT_CONFIG_PATHS[architecture]:
            text = text.get(key) if isinstance(text, dict) else None
        if isinstance(text, dict):
            cfg = {**cfg, "text_config": text}
    for key in ("n_positions", "max_seq_len", "max_target_positions"):
        if "max_position_embeddings" not in cfg and key in cfg:
            # the flag generator picks lengths within the model's own (GPT-2 style configs name it
            # n_positions, DBRX max_seq_len, Whisper max_target_positions)
            cfg = {**cfg, "max_position_embeddings": cfg[key]}
    out: list[list[str]] = []
    i = 0
    while len(out) < n:
        rng = random.Random(f"dryboot-arch:{architecture}:{i}")
        argv = H._flags(rng, f"arch:{architecture}", cfg, work, shipped=False)
        i += 1
        if architecture not in UNTRUSTED_FIRST and remote_code(architecture, cfg):
            argv.append(TRUST)
        if architecture in DRAFTERS:
            if "--speculative-config" in argv:
                at = argv.index("--speculative-config")
                del argv[at : at + 2]
            spec = {"method": DRAFTERS[architecture][1], "model": DRAFTER, "num_speculative_tokens": rng.randint(1, 8)}
            argv += ["--speculative-config", json.dumps(spec)]
        if argv not in out:
            out.append(argv)
    if architecture in UNTRUSTED_FIRST:
        out = [argv if i == 0 else [*argv, TRUST] for i, argv in enumerate(out)]
    return out


def make_case(architecture: str, index: int, argv: list[str]) -> H.Case:
    """The case running ``argv`` on ``architecture``'s tiny config (a drafter's: on its target,
    the drafter in ``--speculative-config``)."""
    path = tiny_configs()[architecture]
    model = materialize(architecture, path)
    if architecture in DRAFTERS:
        target = DRAFTERS[architecture][0]
        drafter, model = model, materialize(target, tiny_configs()[target])
        argv = [a.replace(DRAFTER, drafter) for a in argv]
    return H.Case(id=f"{architecture}#{index}", family=f"arch:{architecture}", model=model, argv=argv, source=path.name)


def cases_for(architecture: str, path: Path, n: int = FLAG_SETS) -> list[H.Case]:
    """``n`` deterministic cases of ``architecture``'s tiny config, distinct flag sets."""
    return [make_case(architecture, i, argv) for i, argv in enumerate(flag_sets(architecture, path, n))]


#: Stands for the harness's work directory in recorded flag sets (generated drafter configs live
#: there), so the record reads the same in any clone.
WORK_TOKEN = "<e2e-work>"


def portable(argv: list[str]) -> list[str]:
    """``argv`` with this clone's work directory written as :data:`WORK_TOKEN`."""
    work = str(H.default_workdir())
    return [a.replace(work, WORK_TOKEN) for a in argv]


def local(argv: list[str]) -> list[str]:
    """``argv`` with :data:`WORK_TOKEN` as this clone's work directory."""
    work = str(H.default_workdir())
    return [a.replace(WORK_TOKEN, work) for a in argv]


def load_recorded(section: str = "architectures") -> dict[str, list[dict[str, Any]]]:
    if not RECORDED.exists():
        return {}
    data: dict[str, list[dict[str, Any]]] = json.loads(RECORDED.read_text()).get(section, {})
    return data


def _recorded_cases(architecture: str) -> list[tuple[H.Case, dict[str, Any]]]:
    # generating the flag sets writes the drafter configs they name into this clone's work directory
    flag_sets(architecture, tiny_configs()[architecture])
    rec = load_recorded()[architecture]
    return [(make_case(architecture, i, local(r["argv"])), r["vllm"]) for i, r in enumerate(rec)]


#: Architectures whose flag sets vLLM mostly refuses, with the fewest served cases accepted; their
#: served cases are checked elsewhere.
FEW_SERVED: dict[str, int] = {
    # vLLM 0.28.0 builds it only with an fp8 KV cache: its fp8 cases are in test_deepseek_v4.py
    "DeepseekV4ForCausalLM": 4,
    # its V2-only model runner refuses the n-gram and hidden-state speculative flag sets, and it has
    # no pipeline parallelism; its served cases are the release cases' too (test_releases.py)
    "DiffusionGemmaForBlockDiffusion": 10,
    # only vLLM 0.33.0's registry has it (vllm/models/muse_spark): 0.28.0 refuses every case, and
    # dryboot too; its served cases are 0.33.0's (test_release_architectures.py)
    "MuseSparkForConditionalGeneration": 0,
    # its chunked_attention layers (a lookback chunk) build on TRITON_ATTN only: the default backend
    # fails vLLM's assertion; its TRITON_ATTN cases on every release are test_rnj1.py's
    "Rnj1ForCausalLM": 2,
}

#: Recorded cases dryboot is known to answer differently, by case id, with the kind: each must
#: still disagree (an agreement means the kind is fixed and the entry goes).
KNOWN: dict[str, str] = {
    **{
        f"MuseSparkForConditionalGeneration#{i}": (
            "both refuse, in another order: vLLM 0.28.0 (no MuseSpark class: its Transformers backend) fails loading "
            "the checkpoint's tokenizer first, dryboot refuses the nvfp4 KV cache on SM90 while selecting the backend"
        )
        for i in (10, 23)
    },
}


def disagreements(pairs: list[tuple[H.Case, dict[str, Any]]]) -> list[str]:
    out = []
    for c, v in pairs:
        d = H.run_dryboot(c, "0.28.0")
        verdict = H.compare(v, d)
        if c.id in KNOWN:
            if verdict["agree"]:
                out.append(f"{c.id} now agrees: remove it from KNOWN ({KNOWN[c.id][:60]}...)")
            continue
        if not verdict["agree"]:
            answers = f"vLLM:    {H._answer(v, vllm=True)}\n    dryboot: {H._answer(d, vllm=False)}"
            out.append(f"{c.command('0.28.0')}\n    {answers}")
    return out


@pytest.mark.parametrize("architecture", sorted(load_recorded()))
def test_dryboot_matches_recorded_oracle(architecture: str) -> None:
    pairs = _recorded_cases(architecture)
    assert len(pairs) >= 20, f"{architecture}: only {len(pairs)} recorded flag sets"
    served = sum(1 for _, v in pairs if v.get("ok"))
    assert served >= FEW_SERVED.get(architecture, 12), f"{architecture}: too few cases vLLM serves"
    problems = disagreements(pairs)
    assert not problems, f"{len(problems)}/{len(pairs)} disagree:\n" + "\n".join(problems)


@pytest.mark.parametrize("architecture", sorted(load_recorded("defaults")))
def test_config_class_defaults_match_recorded_oracle(architecture: str) -> None:
    """The architecture's config with every defaultable key left out: dryboot's defaults are the
    config class's, as vLLM reads them."""
    rec = load_recorded("defaults")[architecture]
    assert [r["argv"] for r in rec] == DEFAULTS_FLAG_SETS
    problems = disagreements([(defaults_case(architecture, i, r["argv"]), r["vllm"]) for i, r in enumerate(rec)])
    assert not problems, "\n".join(problems)


def later_architectures() -> frozenset[str]:
    """Architectures vLLM 0.28.0's registry lacks, planned on a later release only: recorded on that
    release (``test_release_architectures.py``), not here."""
    from dryboot.vllm.models.registry import LATER_ARCHITECTURES

    return frozenset(LATER_ARCHITECTURES)


def test_every_defaults_config_is_recorded() -> None:
    assert sorted(load_recorded("defaults")) == sorted(set(defaults_configs()) - later_architectures())


def test_every_tiny_config_is_recorded_with_its_flag_sets() -> None:
    """The record is of today's cases: same architectures, same flag sets."""
    recorded = load_recorded()
    assert sorted(recorded) == sorted(recorded_tiny_configs())
    for arch, path in recorded_tiny_configs().items():
        assert [r["argv"] for r in recorded[arch]] == [portable(a) for a in flag_sets(arch, path)], arch


def test_every_modelled_architecture_is_verified_here() -> None:
    """Every architecture dryboot plans has a tiny config (and so a recorded comparison), and
    every tiny config is of an architecture dryboot plans."""
    from dryboot.vllm.models.registry import ARCHITECTURES

    assert sorted(tiny_configs()) == sorted(ARCHITECTURES)


#: architectures recorded with a package on the oracle's path that vLLM's wheel does not require and
#: the boot environments do not ship (vLLM fails to inspect them without it): not re-recorded live
#: by test_live_oracle nor booted by tests/boot/recorded.py (docs/fidelity.md says how they were
#: recorded); test_live_oracle_extras re-records them in `dryboot boot-env --with-mm-extras`'s
#: environment (``DRYBOOT_VLLM_MM_PYTHON``)
RECORDED_WITH_EXTRAS = {
    "HCXVisionForCausalLM": "timm (hyperclovax_vision.py imports it)",
    "DeepseekVLV2ForCausalLM": "timm (deepseek_vl2.py builds its SigLIP tower with timm.create_model)",
    "OpenVLAForActionPrediction": "timm (openvla.py builds its DINOv2 and SigLIP towers with timm.create_model)",
    "Gemma3nForConditionalGeneration": "timm (transformers' TimmWrapperModel builds its MobileNetV5 tower)",
}


@pytest.mark.skipif(not os.environ.get("DRYBOOT_VLLM_PYTHON"), reason="needs DRYBOOT_VLLM_PYTHON (a vLLM venv)")
def test_live_oracle() -> None:
    _live(os.environ["DRYBOOT_VLLM_PYTHON"], [a for a in tiny_configs() if a not in RECORDED_WITH_EXTRAS], True)


@pytest.mark.skipif(
    not os.environ.get("DRYBOOT_VLLM_MM_PYTHON"),
    reason="needs DRYBOOT_VLLM_MM_PYTHON (`dryboot boot-env --vllm-version 0.28.0 --with-mm-extras`)",
)
def test_live_oracle_extras() -> None:
    """The architectures of :data:`RECORDED_WITH_EXTRAS`, in the environment with timm."""
    _live(os.environ["DRYBOOT_VLLM_MM_PYTHON"], sorted(RECORDED_WITH_EXTRAS), False)


def _live(python: str, architectures: list[str], with_defaults: bool) -> None:
    recorded = load_recorded()
    later = later_architectures()
    tiny = {arch: path for arch, path in recorded_tiny_configs().items() if arch in architectures}
    cases = [c for arch, path in tiny.items() for c in cases_for(arch, path)]
    if with_defaults:
        cases += [
            defaults_case(a, i, argv)
            for a in defaults_configs()
            if a not in later
            for i, argv in enumerate(DEFAULTS_FLAG_SETS)
        ]
    runner = H.OracleRunner(python, jobs=H.oracle_jobs())
    res = runner.run([c.oracle_input() for c in cases])
    problems = []
    for c in cases:
        arch, i = c.id.split("#")
        v = res[c.id]
        rec = load_recorded("defaults").get(arch.split("@")[0], []) if "@" in arch else recorded.get(arch, [])
        if int(i) >= len(rec) or {k: v.get(k) for k in KEPT if k != "error"} != {
            k: rec[int(i)]["vllm"].get(k) for k in KEPT if k != "error"
        }:
            problems.append(f"{c.id}: the oracle no longer says what was recorded")
    problems += disagreements([(c, res[c.id]) for c in cases])
    assert not problems, "\n".join(problems)
