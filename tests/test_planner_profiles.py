"""Section 7 of docs/kv-geometry-rules.md: the reference deployment's logged boot figures."""

import shutil
from pathlib import Path

import pytest

from dryboot.errors import InputError
from dryboot.planner.profiles import compare, load_profiles, run

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "examples" / "reference-deployment.toml"
#: what the patched 0.27.1 tree with the block-promotion patch logs for the reference deployment
PATCH_LINE = (
    "Raising block size of model.layers.64.self_attn.attn from 16 to 864 tokens so its page (1824768 B) covers "
    "the maximum (1797120 B) instead of being padded to it at block 16."
)

# (attention block, mamba pad %, GPU KV cache size tokens), as the deployment logged them
LOGGED = {
    "CTX=fast": (448, 3.23, 68_605),
    "CTX=long": (864, 1.09, 136_429),
    "CTX=huge": (2176, 2.82, 268_169),
    "CTX=fast DFLASH_TOKENS=15": (480, 1.27, 57_669),
}


@pytest.mark.parametrize("arm", ["main", "pr"])
def test_reference_deployment_reproduces_logged_figures(arm: str) -> None:
    results = run(load_profiles(EXAMPLE), [arm])
    got = {}
    for profile, _, p in results:
        assert p.capacity is not None, profile.name
        assert p.block_decision is not None and p.block_decision.padding_pct is not None
        got[profile.name] = (p.block_size, round(p.block_decision.padding_pct, 2), p.capacity.kv_cache_size_tokens)
        assert p.ok, (profile.name, [i for i in p.invariants if not i.ok])
    assert got == LOGGED


def test_group_sizing_patch_gives_nine_groups() -> None:
    # 16 full / 48 GDN / 5 drafter: g = 8, 3 padding layers on the drafter group (section 7)
    ((_, _, p),) = [r for r in run(load_profiles(EXAMPLE), ["main"]) if r[0].name == "CTX=fast"]
    assert p.grouping is not None and len(p.grouping.groups) == 9 and p.grouping.group_size == 8
    assert "Add 3 padding layers, may waste at most 60.00% KV cache memory" in p.grouping.log


def test_long_profile_promotes_drafter_to_864() -> None:
    ((_, _, p),) = [r for r in run(load_profiles(EXAMPLE), ["main"]) if r[0].name == "CTX=long"]
    # the line the patched 0.27.1 tree with the block-promotion patch logs (issue 37)
    assert p.layer("model.layers.64.self_attn.attn").spec.block_size == 864
    assert any(d.message == PATCH_LINE for d in p.decisions)
    assert PATCH_LINE in p.log


def test_huge_profile_pads_drafter_at_128() -> None:
    # KVarN cannot take a padded page, so no promotion is possible; the bf16 drafter pads
    ((_, _, p),) = [r for r in run(load_profiles(EXAMPLE), ["pr"]) if r[0].name == "CTX=huge"]
    d = p.layer("model.layers.64.self_attn.attn").spec
    assert d.block_size == 128 and d.page_size_bytes == 2176 * 4 * 210


def test_main_and_pr_identical_to_the_token() -> None:
    pset = load_profiles(EXAMPLE)
    results = run(pset, ["main", "pr"])
    by = {(p.name, a.name): pl for p, a, pl in results}
    for prof in pset.profiles:
        assert compare(by[(prof.name, "main")], by[(prof.name, "pr")]) == []


def test_upstream_still_plans_and_shows_the_difference() -> None:
    pset = load_profiles(EXAMPLE)
    results = run(pset, ["main", "upstream"])
    by = {(p.name, a.name): pl for p, a, pl in results}
    up = by[("CTX=long", "upstream")]
    # upstream pads the int8 drafter at block 16 (Triton indexes by block stride) and uses 15 groups
    assert up.layer("model.layers.64.self_attn.attn").spec.block_size == 16
    assert up.grouping is not None and len(up.grouping.groups) == 15
    diffs = compare(by[("CTX=long", "main")], up)
    assert any(d.startswith("groups: 9 -> 15") for d in diffs)


def test_bad_profile_file_names_the_key(tmp_path: Path) -> None:
    shutil.copytree(REPO / "examples" / "models", tmp_path / "models")
    bad = tmp_path / "p.toml"
    bad.write_text(EXAMPLE.read_text().replace("max-model-len = 65536", "max-model-len = 'lots'"))
    with pytest.raises(InputError) as info:
        load_profiles(bad)
    assert info.value.where == "profiles.CTX=fast.max-model-len"
    bad.write_text(EXAMPLE.read_text().replace('unification = "promote-divisor"', 'unification = "promote-magic"'))
    with pytest.raises(InputError, match="unknown policy 'promote-magic'"):
        load_profiles(bad)
