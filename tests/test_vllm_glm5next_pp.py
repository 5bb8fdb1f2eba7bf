"""GLM-5.3-Flash's KDA groups under pipeline parallelism (vLLM 0.30.0 ``_pp_balanced_mamba_group_count``); the
engine starts are checked in ``tests/fidelity/test_glm5next.py`` (``data/glm5next/kdapp-<release>.json``)."""

from __future__ import annotations

from dryboot.vllm.models.glm5next import kda_group_count

KDA = ["model.layers.0.self_attn", "model.layers.1.self_attn", "model.layers.3.self_attn", "model.layers.4.self_attn"]
MLA = ["model.layers.2.self_attn.attn", "model.layers.5.self_attn.attn"]


def test_one_stage_deals_kda_over_the_mla_layers() -> None:
    assert kda_group_count(KDA, MLA, None) == 2
    assert kda_group_count(KDA[:1], MLA, None) == 1


def test_each_stage_raises_the_count_to_its_own() -> None:
    stages = [frozenset([*KDA[:3], MLA[0]]), frozenset([KDA[3], MLA[1]])]
    assert kda_group_count(KDA, MLA, stages) == 3


def test_a_stage_of_kda_layers_without_mla_has_no_count() -> None:
    stages = [frozenset(KDA[:2]), frozenset([MLA[0], *KDA[2:], MLA[1]])]
    assert kda_group_count(KDA, MLA, stages) is None
    # a stage of MLA layers only adds nothing
    assert kda_group_count(KDA, MLA, [frozenset(MLA), frozenset(KDA + MLA)]) == 2
