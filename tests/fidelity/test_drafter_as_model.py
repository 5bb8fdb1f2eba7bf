"""A speculative-decoding class given as the model of its own (issue 37): vLLM serves none, and
dryboot refuses each as vLLM fails on it, in vLLM's words.

``data/drafter-as-model/vllm-<release>.json`` holds vLLM's engine start on every drafter class of that
release's registry that has a stand-in (``drafter_as_model_cases.py``), recorded by
``record_drafter_as_model.py`` from ``src/dryboot/boot/engine_start.py`` (with its profile-run call of
the model). ``src/dryboot/data/drafter-as-model.json`` is those records' failures
(``scripts/drafter_as_model.py``); dryboot's refusals quote them.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

import drafter_as_model_cases as N
import e2e_harness as H

pytestmark = pytest.mark.fidelity

RELEASES = N.recorded_releases()


def _script() -> object:
    spec = importlib.util.spec_from_file_location("drafter_as_model_script", H.REPO / "scripts" / "drafter_as_model.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_recorded_on_028_and_033() -> None:
    assert {"0.28.0", "0.33.0"} <= set(RELEASES)


@pytest.mark.parametrize("version", RELEASES)
def test_every_drafter_class_of_the_release_is_recorded_or_named(version: str) -> None:
    classes = set(N.drafter_classes(version))
    recorded = set(N.recorded(version))
    assert recorded <= classes
    assert classes - recorded <= set(N.NOT_RECORDED), sorted(classes - recorded - set(N.NOT_RECORDED))


@pytest.mark.parametrize("version", RELEASES)
def test_vllm_serves_no_drafter_class_as_its_own_model(version: str) -> None:
    served = sorted(a for a, c in N.recorded(version).items() if c["vllm"]["ok"])
    assert not served, served


@pytest.mark.parametrize("version", RELEASES)
def test_the_shipped_table_is_the_records(version: str) -> None:
    script = _script()
    table = json.loads((H.REPO / "src" / "dryboot" / "data" / "drafter-as-model.json").read_text())[version]
    for arch, case in N.recorded(version).items():
        error = case["vllm"]["error"]
        if any(gap in error for gap in script.ORACLE_GAPS):  # type: ignore[attr-defined]
            assert arch not in table, arch
        else:
            assert table[arch] == [case["vllm"]["stage"], script.words(error)], arch  # type: ignore[attr-defined]


@pytest.mark.parametrize(("version", "architecture"), [(v, a) for v in RELEASES for a in sorted(N.recorded(v))])
def test_dryboot_refuses_it_as_vllm_fails(version: str, architecture: str) -> None:
    from dryboot.vllm.models.drafter_as_model import recorded_failures

    d = H.run_dryboot(N.case(architecture), version)
    assert d.get("refused") and d["rc"] == 2, d
    failure = recorded_failures()[version].get(architecture)
    if failure is not None:  # vLLM's words
        assert f"{architecture} is a speculative-decoding draft model" in d["error"], d
        assert failure[1].removesuffix(": ") in d["error"], d
    else:  # the oracle's environment gap: refused by name
        assert architecture in d["error"], d


@pytest.mark.parametrize("version", ["0.27.1", "0.28.0", "0.29.0", "0.30.0", "0.31.0", "0.32.0", "0.33.0"])
def test_every_drafter_class_of_every_release_is_refused_as_the_model(version: str) -> None:
    """No release serves a drafter class as its own model: dryboot refuses every one, quoting vLLM's
    failure where it is recorded."""
    from dryboot.vllm.models.drafter_as_model import drafter_as_model_refusal, recorded_failures
    from dryboot.vllm.models.registry import ARCHITECTURES, is_draft_model

    failures = recorded_failures().get(version, {})
    for arch in N.drafter_classes(version):
        why = drafter_as_model_refusal(arch, version)
        if arch in failures:
            assert why is not None and failures[arch][1].removesuffix(": ") in why, (arch, why)
        else:
            # refused by name (no family: family_for), or as a draft model (resolve's check)
            assert why is None and (arch not in ARCHITECTURES or is_draft_model(arch)), arch


#: classes re-run by the live check: one per place vLLM fails (building, the profile run, its config)
LIVE = ("DeepSeekMTPModel", "DFlashDraftModel", "Qwen3NextMTP", "ExaoneMoeMTP")


def test_live_oracle(vllm_python: str) -> None:
    """With ``DRYBOOT_VLLM_PYTHON`` set, the oracle still answers as recorded for that release."""
    version = H.vllm_version(vllm_python)
    recorded = N.recorded(version)
    if not recorded:
        pytest.skip(f"vLLM {version} is not recorded")
    cases = [N.case(a) for a in LIVE if a in recorded]
    res = H.OracleRunner(vllm_python).run([c.oracle_input() for c in cases])
    for c in cases:
        v, want = res[c.id], recorded[c.id]["vllm"]
        assert not v.get("ok") and v.get("stage") == want["stage"], (c.id, v.get("stage"), v.get("error"))
        assert str(v.get("error"))[:400] == want["error"], c.id


@pytest.mark.parametrize("case_id", sorted(N.RENAMED))
def test_a_config_class_that_names_its_own_architecture_is_planned_as_that(case_id: str) -> None:
    """A ``muse_spark`` config naming MuseSparkDSparkModel: vLLM 0.33.0's MuseSparkConfig sets its own
    architectures, so it starts MuseSparkForConditionalGeneration; dryboot plans that, as recorded."""
    version = N.RENAMED[case_id][0]
    vllm = json.loads(N.record_path(version).read_text())["renamed"][case_id]["vllm"]
    assert vllm["ok"], vllm
    got = H.run_dryboot(N.renamed_case(case_id), version)
    assert H.compare(vllm, got)["agree"], (vllm, got)
