"""Plant known bugs in a temporary copy of the repository, one at a time, and report which the
default test run catches (issue 38: a test suite is judged by the bugs it can fail on).

    python3 scripts/mutations.py [--only ID ...] [--list] [--keep]

Each mutation is one textual change to ``src/`` (the snippet must occur exactly once, else the
mutation is reported as not planted): the three bugs issue 38 names (a crash in a refusal path,
``min`` -> ``max`` across check-log's workers, ``ceil`` -> ``round`` in the requested memory) and
more over the core rules (KV geometry, page sizes and padding, block counts, concurrency, patch
placement and fuzz). For each, the tests of its area are run as the default run runs them
(``python3 -m pytest FILES -x -q -p no:cacheprovider``: no network, no vLLM, nothing deselected
beyond the files named): a subset of the default run, so "caught" means the default run fails,
and "missed" means this subset did not fail (the rest of the default run might still).

The copy is ``git ls-files --cached --others --exclude-standard`` of this checkout under a temporary
directory (removed afterwards unless ``--keep``); nothing in this checkout is changed. Prints one
line per mutation and a table at the end; exit 0 when every planted mutation is caught.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

#: the tests of each area: what the default run runs there (files, or file::test ids)
FIDELITY = [
    "tests/fidelity/test_harness_compare.py",
    "tests/fidelity/test_e2e_sample.py",
    "tests/fidelity/test_e2e.py",
    "tests/fidelity/test_releases.py",
    "tests/fidelity/test_hybrids.py",
]
GEOMETRY = [*FIDELITY, "tests/fidelity/test_deepseek_v4.py", "tests/test_planner_plan.py", "tests/test_vllm_models.py"]
BUDGET = ["tests/test_vllm_worker_utils.py", "tests/test_budget.py", "tests/test_vllm_gpus.py"]
CHECKLOG = ["tests/checklog"]
PATCHING = [
    "tests/patching/test_offline_sample.py",
    "tests/patching/test_placement_pinned.py",
    "tests/patching/test_differential.py",
    "tests/patching/test_fuzz_deletion.py",
    "tests/patching/test_series.py",
]


@dataclass(frozen=True)
class Mutation:
    id: str
    path: str
    old: str
    new: str
    what: str
    tests: tuple[str, ...]


MUTATIONS = [
    # --- the three bugs issue 38 names
    Mutation(
        "crash-in-refusal",
        "src/dryboot/vllm/distributed.py",
        '    return InputError("--pipeline-parallel-size", str(pp), f"{who}: {reason}")',
        '    raise TypeError(f"{who}: {reason}")',
        "the pipeline-parallel refusal crashes with TypeError (its message intact)",
        tuple(FIDELITY),
    ),
    Mutation(
        "checklog-workers-max",
        "src/dryboot/checklog/check.py",
        "        lo = min(i[0][0] for i in intervals)\n        hi = min(i[0][1] for i in intervals)",
        "        lo = max(i[0][0] for i in intervals)\n        hi = max(i[0][1] for i in intervals)",
        "check-log's budget of several workers from the largest worker, not the fewest blocks",
        tuple(CHECKLOG),
    ),
    Mutation(
        "requested-memory-round",
        "src/dryboot/vllm/worker/utils.py",
        "    return math.ceil(total_bytes * gpu_memory_utilization)",
        "    return round(total_bytes * gpu_memory_utilization)",
        "the requested memory ceil(total x util) rounded to nearest",
        tuple(BUDGET),
    ),
    # --- KV geometry and capacity
    Mutation(
        "sliding-window-extra-block",
        "src/dryboot/vllm/kv_cache_utils/capacity.py",
        "        return cdiv(tokens, spec.block_size) + 1",
        "        return cdiv(tokens, spec.block_size)",
        "a sliding-window layer's blocks per request lose the extra block",
        tuple(GEOMETRY),
    ),
    Mutation(
        "sliding-window-tokens",
        "src/dryboot/vllm/kv_cache_utils/capacity.py",
        "min(spec.sliding_window - 1 + limits.max_in_flight_tokens, length)",
        "min(spec.sliding_window + limits.max_in_flight_tokens, length)",
        "a sliding window counted as window + in-flight tokens (not window - 1 + ...)",
        tuple(GEOMETRY),
    ),
    Mutation(
        "mamba-align-spec-blocks",
        "src/dryboot/vllm/kv_cache_utils/capacity.py",
        "            return base + spec.num_speculative_blocks",
        "            return base",
        "mamba 'align' mode forgets the speculative blocks",
        tuple(GEOMETRY),
    ),
    Mutation(
        "concurrency-max-group",
        "src/dryboot/vllm/kv_cache_utils/capacity.py",
        "    concurrency = num_blocks / sum(per_group)",
        "    concurrency = num_blocks / max(per_group)",
        "maximum concurrency over the largest group instead of the sum of groups",
        tuple(GEOMETRY),
    ),
    Mutation(
        "num-blocks-largest-worker",
        "src/dryboot/vllm/kv_cache_utils/capacity.py",
        "    num_blocks = min(max(budget // pool, 0) for budget, pool in zip(budgets, pools, strict=True))",
        "    num_blocks = max(max(budget // pool, 0) for budget, pool in zip(budgets, pools, strict=True))",
        "the block count of the largest pipeline stage's pool, not the smallest",
        tuple(GEOMETRY),
    ),
    Mutation(
        "page-alignment-floor",
        "src/dryboot/vllm/kv_cache_interface.py",
        "            return -(-natural // self.alignment) * self.alignment",
        "            return natural // self.alignment * self.alignment",
        "an aligned attention page rounded down instead of up",
        tuple(GEOMETRY),
    ),
    Mutation(
        "kv-content-two-bytes",
        "src/dryboot/vllm/kv_cache_interface.py",
        "    return (head_size + head_size_v) * dtype_bytes(torch_dtype)",
        "    return (head_size + head_size_v) * 2",
        "every KV cache dtype taken as two bytes (fp8 pages doubled)",
        tuple(GEOMETRY),
    ),
    Mutation(
        "mamba2-groups-not-padded",
        "src/dryboot/vllm/kv_cache_interface.py",
        "    groups = n_groups if n_groups % tp == 0 else n_groups + (tp - n_groups)",
        "    groups = n_groups",
        "Mamba2's groups not padded for tensor parallelism",
        tuple(GEOMETRY),
    ),
    Mutation(
        "gdn-conv-dim",
        "src/dryboot/vllm/kv_cache_interface.py",
        "    conv_dim = head_k_dim * num_k_heads * 2 + head_v_dim * num_v_heads",
        "    conv_dim = head_k_dim * num_k_heads + head_v_dim * num_v_heads",
        "Gated DeltaNet's conv state counts the keys once (q and k share the conv)",
        tuple(GEOMETRY),
    ),
    Mutation(
        "short-conv-spec-rows",
        "src/dryboot/vllm/kv_cache_interface.py",
        '    return ((l_cache - 1 + num_spec, _divide(conv_dim, tp, "ShortConv conv_dim")),)',
        '    return ((l_cache - 1, _divide(conv_dim, tp, "ShortConv conv_dim")),)',
        "ShortConv's state without the speculative tokens' rows",
        tuple(GEOMETRY),
    ),
    # --- patch placement (GNU patch 2.7.6's rules)
    Mutation(
        "fuzz-levels-min",
        "src/dryboot/patching/place.py",
        "    return range(min(max_fuzz, max(h.lead, h.trail)) + 1)",
        "    return range(min(max_fuzz, min(h.lead, h.trail)) + 1)",
        "fuzz tried only up to the shorter context, not the longer",
        tuple(PATCHING),
    ),
    Mutation(
        "fuzz-trims-both-ends",
        "src/dryboot/patching/place.py",
        "    return level - (m - lead), level - (m - trail)",
        "    return level, level",
        "fuzz trims both ends by its level, ignoring unequal context",
        tuple(PATCHING),
    ),
    Mutation(
        "last-candidate-no-overhang",
        "src/dryboot/patching/place.py",
        "    return n_lines - old_len + max(bottom, 0) + 1",
        "    return n_lines - old_len + 1",
        "trimmed trailing context may not hang past the end of the file",
        tuple(PATCHING),
    ),
    Mutation(
        "anchor-top-anywhere",
        "src/dryboot/patching/place.py",
        "    if top < 0 and h.first <= 1:",
        "    if top < 0:",
        "a hunk with short lead context anchored to line 1 wherever its header points",
        tuple(PATCHING),
    ),
    Mutation(
        "search-earlier-first",
        "src/dryboot/patching/place.py",
        "            if expected + d <= last:\n                yield expected + d\n"
        "            if 0 < d <= room_back and expected - d <= last:\n                yield expected - d",
        "            if 0 < d <= room_back and expected - d <= last:\n                yield expected - d\n"
        "            if expected + d <= last:\n                yield expected + d",
        "of two positions equally far from the expected line, the earlier tried first",
        tuple(PATCHING),
    ),
]


def copy_checkout(dest: Path) -> None:
    """The files git would commit (tracked, and untracked but not ignored) copied to ``dest``."""
    out = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=REPO,
        capture_output=True,
        check=True,
    ).stdout
    for name in filter(None, out.decode().split("\0")):
        src = REPO / name
        if not src.is_file():  # deleted in the work tree
            continue
        (dest / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src, dest / name, follow_symlinks=False)


def run_tests(copy: Path, tests: tuple[str, ...]) -> tuple[bool, str, float]:
    """(some test failed, the failing test or the summary line, seconds)."""
    env = {k: v for k, v in os.environ.items() if k not in ("DRYBOOT_VLLM_PYTHON", "DRYBOOT_BOOT_PYTHON", "CI")}
    env.update(PYTHONPATH=str(copy / "src"), DRYBOOT_NETWORK="0", PYTHONDONTWRITEBYTECODE="1")
    t0 = time.monotonic()
    r = subprocess.run(
        [sys.executable, "-m", "pytest", *tests, "-x", "-q", "-p", "no:cacheprovider", "--no-header"],
        cwd=copy,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    lines = [ln for ln in r.stdout.splitlines() if ln.strip()]
    failed = [ln for ln in lines if ln.startswith(("FAILED", "ERROR"))]
    return r.returncode != 0, (failed[0] if failed else lines[-1] if lines else r.stderr[-200:]), time.monotonic() - t0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", nargs="*", help="mutation ids to run (default: all)")
    ap.add_argument("--list", action="store_true", help="list the mutations and exit")
    ap.add_argument("--keep", action="store_true", help="keep the temporary copy")
    ap.add_argument("--no-baseline", action="store_true", help="skip the unmutated run of every subset")
    args = ap.parse_args(argv)
    chosen = [m for m in MUTATIONS if not args.only or m.id in args.only]
    if args.list:
        for m in chosen:
            print(f"{m.id:28} {m.path:45} {m.what}")
        return 0
    work = Path(tempfile.mkdtemp(prefix="dryboot-mutations-"))
    rows: list[tuple[str, str, str, float]] = []
    try:
        copy = work / "repo"
        copy_checkout(copy)
        if not args.no_baseline:  # every subset passes unmutated, else a failure would judge nothing
            subsets = sorted({t for m in chosen for t in m.tests})
            failed, why, secs = run_tests(copy, tuple(subsets))
            print(f"baseline (unmutated, {len(subsets)} test paths): {'FAILS' if failed else 'passes'} in {secs:.0f} s")
            if failed:
                print(f"the unmutated copy fails ({why}): nothing to judge", file=sys.stderr)
                return 2
        for m in chosen:
            target = copy / m.path
            original = target.read_text(encoding="utf-8")
            if original.count(m.old) != 1:
                rows.append((m.id, "NOT PLANTED", f"snippet found {original.count(m.old)} times in {m.path}", 0.0))
                print(f"{m.id}: not planted", flush=True)
                continue
            target.write_text(original.replace(m.old, m.new), encoding="utf-8")
            try:
                caught, why, secs = run_tests(copy, m.tests)
            finally:
                target.write_text(original, encoding="utf-8")
            rows.append((m.id, "caught" if caught else "MISSED", why, secs))
            print(f"{m.id}: {'caught' if caught else 'MISSED'} in {secs:.0f} s: {why}", flush=True)
    finally:
        if args.keep:
            print(f"copy kept in {work}", file=sys.stderr)
        else:
            shutil.rmtree(work, ignore_errors=True)
    print()
    print("| mutation | result | seconds | first failing test (or the summary) |")
    print("| --- | --- | --- | --- |")
    for mid, result, why, secs in rows:
        print(f"| {mid} | {result} | {secs:.0f} | {why.replace('|', '/')[:140]} |")
    caught = sum(r[1] == "caught" for r in rows)
    print(f"\n{caught}/{len(rows)} caught")
    return 0 if caught == len(rows) else 1


if __name__ == "__main__":
    sys.exit(main())
