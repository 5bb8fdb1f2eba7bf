"""RayBackend on a local Ray cluster (``ray start --head`` on loopback, two CPUs: two actors):
every task answered once, with the figures the same task gives in this process, whatever the
placement; an actor killed mid-matrix loses no task; a task that kills every actor it runs on is
named; a tree the node "lacks" travels in the runtime_env. One cluster for the module."""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from ray_cluster import local_cluster, need_ray

from dryboot.matrix.model import BootTask, TaskResult
from dryboot.matrix.worker import TEST_HOOK, run_task

MODELS = Path(__file__).resolve().parents[2] / "examples" / "models"
# named explicitly: dryboot's default GPU row may change
GPUS = ("rtx3090", "h100")


@pytest.fixture(scope="module")
def cluster() -> Iterator[str]:
    need_ray()
    with local_cluster(cpus=2) as address:
        yield address


@pytest.fixture(scope="module")
def tasks(tmp_path_factory: pytest.TempPathFactory) -> list[BootTask]:
    """2 models × 2 GPUs × 2 flag sets × 2 modelled arms: 16 tasks, planned (no vLLM needed)."""
    root = tmp_path_factory.mktemp("models")
    out = []
    for name in ("Qwen3.5-27B", "gpt-oss-20b"):
        model = root / name
        model.mkdir()
        shutil.copy(MODELS / f"{name}.config.json", model / "config.json")
        for gpu in GPUS:
            for flags in (("--max-model-len", "8192"), ("--max-model-len", "32768", "--max-num-seqs", "8")):
                for arm, policy in (("main", "upstream"), ("pr", "upstream")):
                    out.append(
                        BootTask(
                            cell_id=f"{name}|{gpu}|{flags[1]}",
                            arm=arm,
                            env_key=("", f"dryboot:{policy}", gpu),
                            model=str(model),
                            argv=(*flags, "--kv-cache-memory-bytes", "5583457484"),
                            gpu=gpu,
                            cache_key=f"{name}{gpu}{flags}{arm}",
                            timeout_s=120,
                            version="0.28.0",
                        )
                    )
    return out


def figures(r: TaskResult) -> tuple[object, ...]:
    return (r.status, r.tokens, r.block_size, r.num_blocks, r.max_model_len, r.lines, r.reason)


@pytest.fixture(scope="module")
def reference(tasks: list[BootTask]) -> dict[tuple[str, str], tuple[object, ...]]:
    """Each task run in this process."""
    return {(t.cell_id, t.arm): figures(run_task(t)) for t in tasks}


def run(address: str, tasks: list[BootTask], **kw: object) -> tuple[list[TaskResult], object]:
    from dryboot.matrix.ray_backend import RayBackend

    backend = RayBackend(address, **kw)  # type: ignore[arg-type]
    got: list[TaskResult] = []
    try:
        backend.run(tasks, got.append)
    finally:
        backend.close()
    return got, backend


def check(got: list[TaskResult], reference: dict[tuple[str, str], tuple[object, ...]]) -> None:
    keys = [(r.cell_id, r.arm) for r in got]
    assert sorted(keys) == sorted(reference), "every task answered exactly once"
    for r in got:
        want = reference[(r.cell_id, r.arm)]
        assert figures(r) == want, f"{r.cell_id} {r.arm} on {r.worker}: {r.status} ({r.reason}), expected {want[0]}"


def test_same_figures_as_in_process_on_two_actors(cluster: str, tasks: list[BootTask], reference: dict) -> None:
    assert {s for s, *_ in reference.values()} == {"ok"}
    got, _ = run(cluster, tasks)
    check(got, reference)
    assert len({r.worker for r in got}) == 2, "both actors took tasks"
    assert all(str(os.getpid()) != r.worker.split("@")[0] for r in got)


def test_actor_killed_mid_matrix_loses_no_task(
    cluster: str, tasks: list[BootTask], reference: dict, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the 6th task kills the actor running it (once); the tasks after it are already queued there
    victim = tasks[5]
    marker = tmp_path / "killed"
    monkeypatch.setenv(TEST_HOOK, f"kill-once:{victim.cell_id}|{victim.arm}:{marker}")
    got, _ = run(cluster, tasks)
    assert marker.is_file(), "the actor was killed"
    check(got, reference)
    killed = marker.read_text()
    retried = next(r for r in got if (r.cell_id, r.arm) == (victim.cell_id, victim.arm))
    assert retried.worker != killed


def test_a_task_that_kills_every_worker_is_named(
    cluster: str, tasks: list[BootTask], reference: dict, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    victim = tasks[2]
    kills = tmp_path / "kills"
    monkeypatch.setenv(TEST_HOOK, f"kill:{victim.cell_id}|{victim.arm}:{kills}")
    got, _ = run(cluster, tasks)
    # run twice, no more: beside its neighbour, then alone on the other actor (Ray's first word on
    # a killed actor, ActorUnavailableError, is a death too, or it runs again among the others)
    ran = kills.read_text().split()
    assert len(ran) == 2 and len(set(ran)) == 2, ran
    bad = [r for r in got if (r.cell_id, r.arm) == (victim.cell_id, victim.arm)]
    assert len(bad) == 1 and bad[0].status == "error"
    assert bad[0].reason is not None and bad[0].reason.startswith("worker died twice")
    check(
        [r for r in got if r is not bad[0]], {k: v for k, v in reference.items() if k != (victim.cell_id, victim.arm)}
    )


def test_tree_travels_in_the_runtime_env(cluster: str, tmp_path: Path) -> None:
    """A tree shipped to the node (``ship="always"`` on one machine): the actor boots the unpacked
    copy (the error names the tree it opened), which lacks the compiled extensions."""
    tree = tmp_path / "tree"
    (tree / "vllm").mkdir(parents=True)
    init = 'raise ImportError("the shipped stand-in tree")\n'
    (tree / "vllm" / "__init__.py").write_text(init)
    (tree / "vllm" / "_C.abi3.so").write_bytes(b"\0" * 4096)  # left out of the shipment
    task = BootTask(
        cell_id="m|h100|f",
        arm="tree",
        env_key=(sys.executable, str(tree), "h100"),
        model=str(tmp_path),
        argv=("--max-model-len", "8192", "--kv-cache-memory-bytes", "5583457484"),
        gpu="h100",
        cache_key="k",
        timeout_s=120,
    )
    got, backend = run(cluster, [task], ship="always")
    assert [str(tree)] in backend.shipped.values()  # type: ignore[attr-defined]
    (r,) = got
    assert r.status == "error" and r.reason is not None
    opened = Path(r.reason.split(": ")[0])  # "<tree>: the tree does not import: ..."
    assert "runtime_resources" in opened.parts, r.reason
    assert (opened / "vllm" / "__init__.py").read_text() == init
    assert not (opened / "vllm" / "_C.abi3.so").exists()


def _without_placement(doc: dict) -> dict:
    """The ``--json`` document less what says where and how long a task ran."""
    for c in doc["cells"]:
        for task in [c["plan"], *c["arms"].values()]:
            for k in ("worker", "seconds", "cached"):
                task.pop(k)
    doc.pop("seconds")
    return doc


def test_cli_on_ray_gives_the_local_json(cluster: str, tmp_path: Path) -> None:
    """``dryboot matrix --ray ADDRESS --json --html`` equals ``--workers 2``'s document, and its page
    holds the same cells."""
    import json

    from chromium import Cells, check_cells
    from reports_sample import cli_matrix, run_cli

    matrix = str(cli_matrix(tmp_path))
    code, out, _ = run_cli("matrix", matrix, "--no-cache", "--workers", "2", "--json")
    local = json.loads(out)
    html = tmp_path / "ray.html"
    rcode, rout, rerr = run_cli("matrix", matrix, "--no-cache", "--ray", cluster, "--json", "--html", str(html))
    on_ray = json.loads(rout)
    assert rcode == code == 1, rerr
    assert {t["worker"] for c in on_ray["cells"] for t in c["arms"].values()}.isdisjoint(
        {t["worker"] for c in local["cells"] for t in c["arms"].values()}
    )
    assert _without_placement(on_ray) == _without_placement(local)
    check_cells(Cells(html.read_text(encoding="utf-8")), on_ray)


def test_release_arm_boots_on_the_actors(cluster: str, tmp_path: Path) -> None:
    """vLLM 0.28.0's own engine start in the actors (each keeps its warm boot process), against
    dryboot's model of the same release: every cell identical to the token. Needs the 0.28.0 boot
    environment named by ``DRYBOOT_BOOT_PYTHON`` (a skip without it, a failure in CI)."""
    import json

    from reports_sample import run_cli

    python = os.environ.get("DRYBOOT_BOOT_PYTHON")
    if not python:
        why = "no vLLM 0.28.0 boot environment named: set DRYBOOT_BOOT_PYTHON (dryboot boot-env --vllm-version 0.28.0)"
        if os.environ.get("CI"):
            pytest.fail(why)
        pytest.skip(why)
    configs = Path(__file__).resolve().parents[1] / "data" / "configs" / "public"
    matrix = tmp_path / "boot.toml"
    matrix.write_text(
        f"""gpus = ["RTX 3090", "H100"]
expect = {{ all = "identical" }}
[models]
small = "{configs}/Qwen--Qwen3-0.6B"
[flags]
short = "vllm serve --max-model-len 4096 --kv-cache-memory-bytes 2G"
long = "vllm serve --max-model-len 16384 --kv-cache-memory-bytes 3G --max-num-seqs 16"
[arms.booted]
release = "0.28.0"
python = "{python}"
[arms.modelled]
vllm-version = "0.28.0"
""",
        encoding="utf-8",
    )
    code, out, err = run_cli("matrix", str(matrix), "--no-cache", "--ray", cluster, "--json")
    doc = json.loads(out)
    assert code == 0, err + out[-3000:]
    assert len(doc["cells"]) == 4
    for c in doc["cells"]:
        booted = c["arms"]["booted"]
        assert c["status"] == "met" and c["agreement"] == "identical", c["id"]
        assert booted["status"] == "ok" and booted["tokens"] == c["arms"]["modelled"]["tokens"], c["id"]
        assert booted["lines"], c["id"]  # the KV lines the tree logged
