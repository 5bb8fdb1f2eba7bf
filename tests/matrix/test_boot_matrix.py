"""Matrices booted on vLLM 0.28.0's own code (needs the boot environment, see conftest.py).

* 204 cells (17 published configs of the corpus x 6 GPUs x 2 flag sets, 2 arms: the release and
  its installed tree) give, figure by figure and KV line by KV line, what ``dryboot boot``'s path
  gives for each cell: one :class:`~dryboot.boot.session.BootSession` per GPU (the GPU fixed for
  the session, as ``boot_cmd`` starts it), the budget from ``boot_cmd``'s own helper.
* The cache: a re-run answers every task from it; after one tree's file changes, only that tree's
  cells boot again.
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest
from matrix_help import CONFIGS, QWEN3_06B, write_matrix

from dryboot.boot.arms import model_dir
from dryboot.boot.budget import needs_budget
from dryboot.boot.compare import Figures, boot_figures
from dryboot.boot.session import BootSession, parse_gpu, resolve_tree
from dryboot.boot.trees import scratch_copy
from dryboot.cli.boot_cmd import _boot_budget, _child_argv
from dryboot.errors import InputError
from dryboot.matrix.cache import Cache
from dryboot.matrix.local import LocalBackend
from dryboot.matrix.run import run_matrix
from dryboot.matrix.spec import load_matrix

pytestmark = pytest.mark.slow

MODELS = (
    "Qwen--Qwen3-0.6B",
    "Qwen--Qwen3-1.7B",
    "Qwen--Qwen2.5-1.5B",
    "Qwen--Qwen2.5-7B",
    "Qwen--Qwen3-8B",
    "Qwen--Qwen3.5-35B-A3B",
    "openai--gpt-oss-20b",
    "meta-llama--Llama-2-7b-hf",
    "meta-llama--Llama-2-13b-hf",
    "meta-llama--Meta-Llama-3-8B-Instruct",
    "meta-llama--Meta-Llama-3.1-8B",
    "mistralai--Mistral-Nemo-Base-2407",
    "mistralai--Mixtral-8x7B-v0.1",
    "google--gemma-2-9b-it",
    "XiaomiMiMo--MiMo-7B-Base",
    "CohereForAI--c4ai-command-r-v01",
    "Qwen--Qwen3-VL-2B-Instruct",
)
#: Six GPUs, named (sm86, sm89, sm89, sm80, sm90, sm100).
GPUS = ("RTX 3090", "RTX 4090", "L40S", "A100-80GB", "H100", "B200")
FLAGS = {
    "pinned": ("--max-model-len", "8192", "--kv-cache-memory-bytes", "3G"),
    "util": ("--max-model-len", "8192", "--gpu-memory-utilization", "0.85"),
}


def _reference(python: str, pristine: Path, work: Path) -> dict[tuple[str, str, str], Figures | str]:
    """``dryboot boot``'s answer for every cell (its figures, or the line it refuses the budget
    with): a session per GPU, two GPUs at a time."""
    tree = resolve_tree(str(pristine.parent))
    out: dict[tuple[str, str, str], Figures | str] = {}

    def one_gpu(gpu_name: str) -> None:
        gpu = parse_gpu(gpu_name)
        with BootSession(python, tree, gpu) as session:
            for m in MODELS:
                path = str(CONFIGS / m)
                for fs, argv in FLAGS.items():
                    flags = list(argv)
                    budget = None
                    if needs_budget(flags):
                        gpu_flags = [*flags, "--gpu", gpu_name]
                        try:
                            budget = _boot_budget(path, gpu_flags, session.release, "upstream", "upstream")
                        except InputError as exc:  # dryboot boot: exit 2, the term it cannot bound named
                            out[(m, gpu_name, fs)] = exc.line()
                            continue
                    child = _child_argv(flags, work, model_dir)
                    answer = session.boot(model_dir(path, work), child, budget=budget.case() if budget else None)
                    fig = boot_figures(answer)
                    tree_budget = answer.get("budget") or {}
                    if budget is not None and tree_budget:
                        load = budget.load_verdict(list(tree_budget.get("weights_bytes") or []))
                        if load is not None:
                            fig = Figures(refusal=f"won't: {load.reason}", kv_log=fig.kv_log)
                    out[(m, gpu_name, fs)] = fig

    failed: list[BaseException] = []

    def gpus(names: tuple[str, ...]) -> None:
        try:
            for g in names:
                one_gpu(g)
        except BaseException as exc:  # re-raised in the test's thread
            failed.append(exc)

    threads = [threading.Thread(target=gpus, args=(GPUS[i::2],)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if failed:
        raise failed[0]
    return out


def test_204_cells_give_what_dryboot_boot_gives(boot_python: str, pristine: Path, tmp_path: Path) -> None:
    models = "\n".join(f'"{m}" = "{CONFIGS / m}"' for m in MODELS)
    flags = "\n".join(f'{k} = "vllm serve {" ".join(v)}"' for k, v in FLAGS.items())
    text = (
        f"gpus = {list(GPUS)!r}\n".replace("'", '"')
        + f"[models]\n{models}\n[flags]\n{flags}\n"
        + f'[arms.release]\nrelease = "0.28.0"\npython = "{boot_python}"\n'
        + f'[arms.tree]\ntree = "{pristine.parent}"\npython = "{boot_python}"\n'
    )
    matrix = load_matrix(write_matrix(tmp_path, text), tmp_path / "models")
    assert len(matrix.models) * len(matrix.gpus) * len(matrix.flag_sets) == 204
    t0 = time.perf_counter()
    with LocalBackend(os.cpu_count() or 2) as backend:
        res = run_matrix(matrix, backend, Cache(None), None, tmp_path / "work")
    t_matrix = time.perf_counter() - t0
    ref = _reference(boot_python, pristine, tmp_path / "ref")
    t_ref = time.perf_counter() - t0 - t_matrix
    assert len(res.cells) == 204
    mismatches = []
    refused = errors = 0
    for c in res.cells:
        model = dict(zip((m.name for m in matrix.models), MODELS, strict=True))[c.model]
        want = ref[(model, c.gpu, c.flag_set)]
        for arm, r in c.arms.items():
            if isinstance(want, str):  # dryboot boot refuses to estimate the budget: the cell says why
                errors += 1
                if r.status != "error" or want.split("cannot estimate the budget: ")[-1] not in (r.reason or ""):
                    mismatches.append(f"{c.id} {arm}: matrix {r.status} {r.reason}; dryboot boot: {want}")
                continue
            got = r.figures
            if got is None or got != want or got.kv_log != want.kv_log:
                mismatches.append(f"{c.id} {arm}: matrix {got and got.row()} {r.reason}; dryboot boot {want.row()}")
            refused += r.status == "refused"
        assert c.agreement in ("identical", "both refuse", "error")
    assert not mismatches, "\n".join(mismatches[:20])
    print(f"\n204 cells: matrix {t_matrix:.1f} s, dryboot boot's path {t_ref:.1f} s; {refused} arm answers refused, "
          f"{errors} budgets dryboot cannot estimate")  # fmt: skip
    assert refused + errors < len(res.cells)  # most cells start


def test_only_the_changed_trees_cells_boot_again(boot_python: str, pristine: Path, tmp_path: Path) -> None:
    tree = tmp_path / "fork"
    scratch_copy(pristine, tree)
    text = (
        f'gpus = ["L40S", "RTX 4090"]\n[models]\nsmall = "{QWEN3_06B}"\n'
        '[flags]\npinned = "vllm serve --max-model-len 4096 --kv-cache-memory-bytes 2G"\n'
        f'[arms.upstream]\nrelease = "0.28.0"\npython = "{boot_python}"\n'
        f'[arms.fork]\ntree = "{tree}"\npython = "{boot_python}"\n'
    )
    matrix = load_matrix(write_matrix(tmp_path, text), tmp_path / "models")
    cache = Cache(tmp_path / "cache")
    with LocalBackend(2) as backend:
        first = run_matrix(matrix, backend, cache, None, tmp_path / "work")
        assert first.exit_code == 0 and first.cache_hits == 0
        assert all(c.agreement == "identical" for c in first.cells)
        again = run_matrix(matrix, backend, cache, None, tmp_path / "work")
        assert again.cache_hits == 6 and again.exit_code == 0  # 2 cells x (plan + 2 arms)
        # one file of the fork changes (a comment: same figures, new code)
        f = tree / "vllm" / "v1" / "core" / "kv_cache_utils.py"
        f.write_text(f.read_text() + "\n# the fork's change\n")
        third = run_matrix(matrix, backend, cache, None, tmp_path / "work")
    assert third.cache_hits == 4
    booted = sorted((c.id, a) for c in third.cells for a, r in c.arms.items() if not r.cached)
    assert booted == [("small|L40S|pinned", "fork"), ("small|RTX 4090|pinned", "fork")]
    assert [c.arms["fork"].tokens for c in third.cells] == [c.arms["fork"].tokens for c in first.cells]
