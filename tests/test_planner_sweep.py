"""The geometry sweep: failure kinds, shrinking, determinism, and the promotion rule itself.

Every expected number below is derived by hand from ``docs/kv-geometry-rules.md`` (sections 1-3
and 7) or is a worked example of that document; none is read back from the code.
"""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
from click.testing import CliRunner

from dryboot.planner.policies.promotion import choose_block
from dryboot.planner.sweep import (
    DRAFTER_NOT_16,
    KERNEL_BLOCK,
    UNIFY_ERROR,
    Arm,
    Geometry,
    Space,
    drafter_blocks,
    evaluate,
    format_report,
    plan_geometry,
    run_sweep,
    shrink,
    step_downs,
)

PROMOTERS = [Arm("promote-divisor"), Arm("promote-granular"), Arm("promote-kernel")]

#: A reduced space: one small target attention geometry, FLASH_ATTN drafters of a few sizes,
#: a few GDN state sizes and speculative token counts. 192 points, planned exhaustively.
SMALL = Space(
    target_kv_heads=(1,),
    target_head_dim=(64,),
    target_kv_dtype=("auto",),
    target_kernel_block=(16,),
    drafter_kind=("sliding",),
    drafter_kv_heads=(1, 2, 4),
    drafter_head_dim=(64, 128),
    drafter_kv_dtype=("auto",),
    drafter_kernel_block=(16,),
    drafter_start_block=(None,),
    num_speculative_tokens=(0, 1, 2, 3),
    gdn_k_heads=(8, 16),
    gdn_v_heads=(16, 32),
    gdn_head_dim=(64,),
    mamba_ssm_dtype=("float16", "float32"),
    block_size=(None,),
    prefix_match_unit=(None,),
    target_layers=(4,),
    drafter_layers=(1,),
)

#: A slice of the full space with custom kernels, per-token-head dtypes, start blocks and a
#: hash unit, sampled (for the determinism checks).
MIXED = replace(Space(), target_layers=(4,), drafter_layers=(2,))


@pytest.fixture(scope="module")
def small_result():  # type: ignore[no-untyped-def]
    return run_sweep(SMALL, PROMOTERS, limit=None, jobs=1, progress=False)


def test_worked_case_of_section_7() -> None:
    # divisors of 1840 from 96 up: 115, 184, 230, 368, 460, 920, 1840 (rules doc, section 7)
    div = choose_block("promote-divisor", primary_block=1840, covering=96, granularity=16)
    gran = choose_block("promote-granular", primary_block=1840, covering=96, granularity=16)
    kern = choose_block(
        "promote-kernel",
        primary_block=1840,
        covering=96,
        granularity=16,
        supports=lambda b: b % 16 == 0,  # FLASH_ATTN: MultipleOf(16), rules doc section 2
    )
    assert div.candidates == (115, 184, 230, 368, 460, 920, 1840)
    assert div.block == 115
    assert gran.block == 368
    assert kern.block == 368


def test_divisor_emits_non_16_drafter_blocks_granular_and_kernel_never(small_result) -> None:  # type: ignore[no-untyped-def]
    assert small_result.count("promote-divisor", DRAFTER_NOT_16) > 0
    assert small_result.count("promote-granular", DRAFTER_NOT_16) == 0
    assert small_result.count("promote-kernel", DRAFTER_NOT_16) == 0
    # for a FLASH_ATTN drafter (MultipleOf(16)) such a block is also unaddressable
    assert small_result.count("promote-divisor", KERNEL_BLOCK) > 0
    assert small_result.count("promote-granular", KERNEL_BLOCK) == 0
    assert small_result.count("promote-kernel", KERNEL_BLOCK) == 0


def test_shrunk_counterexample_fails_and_is_minimal(small_result) -> None:  # type: ignore[no-untyped-def]
    finding = small_result.finding("promote-divisor", DRAFTER_NOT_16)
    assert finding is not None
    ex = finding.counterexample
    arm = Arm("promote-divisor")
    p = plan_geometry(ex, arm)
    blocks = drafter_blocks(p)
    # it really fails: a drafter block that is not a multiple of 16 but divides the primary block
    assert any(b % 16 for b in blocks)
    assert all(p.block_size % b == 0 for b in blocks)
    # minimal: no single parameter step-down still produces a non-16 drafter block
    for smaller in step_downs(ex, SMALL):
        assert not any(b % 16 for b in drafter_blocks(plan_geometry(smaller, arm))), smaller


def test_minimal_counterexample_figures_from_the_rules() -> None:
    # Target: 1 KV head x 64, bf16 -> 256 B per token (section 1). GDN 8 key / 16 value heads
    # x 64, conv kernel 4, no speculative tokens: conv (3, 2*8*64 + 16*64 = 2048) x 2 B =
    # 12,288 B; temporal (16, 64, 64) x 2 B (float16) = 131,072 B; mamba page 143,360 B.
    # B = 16 * cdiv(143360, 16*256) = 560 (section 2), page 143,360 B, no padding.
    # Drafter: 2 KV heads x 128 bf16 -> 1024 B/token, start block 16 -> page 16,384 B, which
    # does not divide 143,360 (8.75x): covering block 16 * 9 = 144. Divisors of 560 from 144:
    # 280, 560 -> divisor picks 280 (not a multiple of 16), granular / kernel pick 560.
    g = Geometry(
        target_kv_heads=1,
        target_head_dim=64,
        drafter_kv_heads=2,
        drafter_head_dim=128,
        num_speculative_tokens=0,
        gdn_k_heads=8,
        gdn_v_heads=16,
        gdn_head_dim=64,
        target_layers=4,
        drafter_layers=1,
    )
    for unification, expected in (
        ("promote-divisor", 280),
        ("promote-granular", 560),
        ("promote-kernel", 560),
    ):
        p = plan_geometry(g, Arm(unification))
        assert p.block_size == 560
        assert p.mamba_page_size_bytes == 143360
        assert drafter_blocks(p) == (expected,), unification
    assert DRAFTER_NOT_16 in evaluate(g, Arm("promote-divisor"))
    assert DRAFTER_NOT_16 not in evaluate(g, Arm("promote-granular"))


def test_section_7_geometry_plans_clean_with_the_logged_block() -> None:
    # Geometry() defaults are the section-7 deployment (CTX=fast, k=7, bf16, float16 SSM):
    # the deployment logged 448 tokens per block under the divisor and granular rules.
    g = Geometry()
    for unification in ("upstream", "promote-divisor", "promote-granular", "promote-kernel"):
        arm = Arm(unification, "pad-sliding-window-buckets")
        assert plan_geometry(g, arm).block_size == 448
        assert evaluate(g, arm) == frozenset()


def test_unpaddable_drafter_cache_is_vllms_not_implemented_error() -> None:
    # Section 3: a page that does not divide the maximum and whose backend cannot pad is
    # vLLM's NotImplementedError. KVarN-like drafter, 1 head x 64: 210*64//256 = 52 B/token,
    # page 832 B at block 16; 143,360 / 832 is not an integer; no divisor of 560 covers
    # (covering block 16 * 173 = 2768 > 560), so no promotion policy rescues it.
    g = Geometry(
        target_kv_heads=1,
        target_head_dim=64,
        drafter_kv_heads=1,
        drafter_head_dim=64,
        drafter_kv_dtype="kvarn",
        num_speculative_tokens=0,
        gdn_k_heads=8,
        gdn_v_heads=16,
        gdn_head_dim=64,
        target_layers=4,
        drafter_layers=1,
    )
    for unification in ("upstream", "promote-divisor", "promote-granular", "promote-kernel"):
        assert UNIFY_ERROR in evaluate(g, Arm(unification)), unification
    # promote-cover alone promotes past the primary block: 2768 tokens x 52 B = 143,936 B
    # covers 143,360 B and becomes the maximum; FLASH_ATTN and mamba pages pad up to it.
    cover = plan_geometry(g, Arm("promote-cover"))
    assert cover.unify_error is None
    assert drafter_blocks(cover) == (2768,)
    assert cover.page_size_bytes == 143936


def test_shrinker_reaches_the_known_minimum() -> None:
    def fails(g: Geometry) -> bool:
        return g.drafter_kv_heads >= 4 and g.num_speculative_tokens >= 3 and g.gdn_v_heads != 16

    space = Space()
    start = Geometry(
        target_kv_heads=8,
        target_head_dim=256,
        drafter_kv_heads=16,
        num_speculative_tokens=16,
        gdn_v_heads=64,
        block_size=128,
        drafter_start_block=64,
    )
    got = shrink(start, fails, space)
    assert got == Geometry(
        target_kv_heads=1,
        target_head_dim=64,
        drafter_kv_heads=4,
        drafter_head_dim=64,
        num_speculative_tokens=3,
        gdn_k_heads=8,
        gdn_v_heads=32,
        gdn_head_dim=64,
        block_size=None,
        drafter_start_block=None,
    )
    with pytest.raises(ValueError):
        shrink(Geometry(drafter_kv_heads=1), fails, space)


def test_output_identical_across_runs_and_jobs() -> None:
    arms = [Arm("upstream"), *PROMOTERS]
    a = run_sweep(MIXED, arms, limit=150, seed=3, jobs=1, progress=False, chunk_size=16)
    b = run_sweep(MIXED, arms, limit=150, seed=3, jobs=2, progress=False, chunk_size=16)
    c = run_sweep(MIXED, arms, limit=150, seed=3, jobs=2, progress=False, chunk_size=7)
    assert a.to_dict() == b.to_dict() == c.to_dict()
    assert format_report(a) == format_report(b) == format_report(c)
    assert a.planned == 150


def test_workers_start_from_a_fork_server_while_other_threads_run() -> None:
    # forking a multi-threaded process can copy a lock another thread holds into the worker,
    # which then waits on it forever (a test run once hung so): the pool must not fork then
    import threading

    stop = threading.Event()
    waiter = threading.Thread(target=stop.wait, daemon=True)
    waiter.start()
    try:
        arms = [Arm("upstream"), *PROMOTERS]
        a = run_sweep(MIXED, arms, limit=60, seed=3, jobs=1, progress=False, chunk_size=16)
        b = run_sweep(MIXED, arms, limit=60, seed=3, jobs=2, progress=False, chunk_size=16)
    finally:
        stop.set()
        waiter.join()
    assert a.to_dict() == b.to_dict()


def test_cli_json_is_deterministic() -> None:
    from dryboot.cli import cli

    runner = CliRunner()
    base = [
        "sweep",
        "--limit",
        "60",
        "--seed",
        "1",
        "--target-layers",
        "4",
        "--drafter-layers",
        "1",
        "--policy",
        "promote-divisor",
        "--policy",
        "promote-kernel",
        "--no-progress",
        "--json",
    ]
    r1 = runner.invoke(cli, [*base, "--jobs", "1"])
    r2 = runner.invoke(cli, [*base, "--jobs", "2"])
    assert r1.exit_code == 0, r1.output
    assert r2.exit_code == 0, r2.output
    assert r1.output == r2.output
    data = json.loads(r1.output)
    assert data["geometries"] == 60
    assert [a["policy"] for a in data["arms"]] == ["promote-divisor", "promote-kernel"]


def test_limit_error_quotes_the_value_given() -> None:
    """A --limit above what a sweep plans is refused quoting the user's value, not the space size."""
    from dryboot.cli import cli

    r = CliRunner().invoke(cli, ["sweep", "--limit", "10000000000", "--no-progress"])
    assert r.exit_code == 2
    [line] = r.output.strip().splitlines()
    assert line.startswith("dryboot: error: --limit: 10,000,000,000: a sweep plans at most ")


def test_text_report_fits_80_columns_without_cutting() -> None:
    from dryboot.cli import cli

    args = ["sweep", "--limit", "60", "--seed", "1", "--target-layers", "4", "--drafter-layers", "1", "--no-progress"]
    narrow = CliRunner().invoke(cli, args, env={"COLUMNS": "80"})
    wide = CliRunner().invoke(cli, args, env={"COLUMNS": "1000"})
    assert narrow.exit_code == wide.exit_code == 0, narrow.output
    assert all(len(line) <= 80 and line == line.rstrip() for line in narrow.output.splitlines())
    assert any(len(line) > 80 for line in wide.output.splitlines())
    assert narrow.output.split() == wide.output.split()  # the same words: wrapped, nothing cut


@pytest.mark.parametrize("extra", [[], ["--policy", "promote-divisor", "--json"]])
def test_a_parallel_sweep_ends_its_workers_without_tracebacks(extra: list[str]) -> None:
    """Issue 35 item 7: the pool ended its forked workers with SIGTERM, and each, having inherited
    the CLI's SIGTERM handler, printed a ``_Terminated`` traceback while the sweep exited 0. The
    two shapes of docs/sweep.md, smaller, on two workers."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    repo = Path(__file__).resolve().parents[1]
    r = subprocess.run(
        [sys.executable, "-m", "dryboot", "sweep", "--limit", "400", "--jobs", "2", *extra],
        capture_output=True,
        text=True,
        cwd=repo,
        env={**os.environ, "PYTHONPATH": str(repo / "src")},
        timeout=120,
        check=False,
    )
    assert r.returncode == 0, r.stderr[-500:]
    assert "Traceback" not in r.stderr and "_Terminated" not in r.stderr, r.stderr[-500:]
    assert r.stderr == ""
