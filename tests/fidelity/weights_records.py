"""Reading the recorded weights expectations (``data/weights/*.json``, written by
``record_weights.py``): the cases of a family over several record files, and the flags of a
recorded argv. Shared by the per-family weights tests."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from dryboot.errors import InputError
from dryboot.vllm.model_executor.model_loader.weights import Parallel

DATA = Path(__file__).resolve().parent / "data" / "weights"


def int_flag(argv: list[str], name: str, default: int = 1) -> int:
    """The integer value of ``name`` in a recorded argv, ``default`` where the flag is absent."""
    return int(argv[argv.index(name) + 1]) if name in argv else default


def stage_parallel(argv: list[str], stage: int, version: str, **extra: Any) -> Parallel:
    """The rank of pipeline stage ``stage`` that a recorded case's flags ``argv`` build on vLLM
    ``version`` (its TP, PP and expert parallelism); ``extra``: other :class:`Parallel` fields."""
    return Parallel(
        tp=int_flag(argv, "--tensor-parallel-size"),
        pp=int_flag(argv, "--pipeline-parallel-size"),
        pp_rank=stage,
        expert_parallel="--enable-expert-parallel" in argv,
        vllm_version=version,
        **extra,
    )


def assert_in_sweep(version: str, architecture: str, cases: Mapping[str, Any]) -> None:
    """A family's own record of its tiny config at TP 1 (in ``cases``, a record file's cases) is the
    release's weights sweep row (``recorded-<version>-sweep.json``), timing aside."""
    cid = f"arch--{architecture} --tensor-parallel-size 1"
    row = json.loads((DATA / f"recorded-{version}-sweep.json").read_text())["cases"][cid]
    assert {k: x for k, x in row.items() if k != "seconds"} == {k: x for k, x in cases[cid].items() if k != "seconds"}


def recorded_cases(
    files: Mapping[str, str], keep: Callable[[dict[str, Any]], bool], *, key_by: str = "version"
) -> dict[tuple[str, str], dict[str, Any]]:
    """The kept rows of every record file: ``files`` maps a release to its file name
    (``key_by="version"``) or a file name to its release (``key_by="file"``); each row is keyed by
    (release or file name, case id)."""
    out: dict[tuple[str, str], dict[str, Any]] = {}
    for a, b in files.items():
        version, name = (a, b) if key_by == "version" else (b, a)
        for cid, row in json.loads((DATA / name).read_text())["cases"].items():
            if keep(row):
                out[(version if key_by == "version" else name, cid)] = row
    return out


def overlaid_tiny(architecture: str, doc: Mapping[str, Any]) -> dict[str, Any]:
    """``architecture``'s tiny config (``data/architectures/<arch>.json``) with the record file
    ``doc``'s ``overlay`` for it (the fields ``RECORD_WEIGHTS_OVERLAY`` set when it was recorded)."""
    tiny: dict[str, Any] = json.loads((DATA.parent / "architectures" / f"{architecture}.json").read_text())
    return {**tiny, **doc.get("overlay", {}).get(architecture, {})}


def assert_stages(row: Mapping[str, Any], rank_of: Callable[[int], Any]) -> None:
    """dryboot against a recorded row, stage by stage: where vLLM failed (``ok`` false) dryboot's first
    stage refuses (``InputError``); else every pipeline stage's ``rank_of(stage)`` has the row's
    parameter, buffer and allocated bytes (``stages``, or the row's own figures at one stage)."""
    if not row["ok"]:
        with pytest.raises(InputError):
            rank_of(0)
        return
    assert built_stages(row, rank_of) == recorded_stages(row)


def recorded_stages(row: Mapping[str, Any]) -> list[list[int]]:
    """A recorded row's [parameter, buffer, allocated] bytes per pipeline stage (``stages``, or the
    row's own figures at one stage)."""
    stages: list[list[int]] = row.get("stages") or [[row["param_bytes"], row["buffer_bytes"], row["allocated_bytes"]]]
    return stages


def built_stages(row: Mapping[str, Any], rank_of: Callable[[int], Any]) -> list[list[int]]:
    """dryboot's [parameter, buffer, allocated] bytes of every pipeline stage of ``row``'s flags."""
    out = []
    for stage in range(int_flag(row["argv"], "--pipeline-parallel-size")):
        w = rank_of(stage)
        out.append([w.param_bytes, w.buffer_bytes, w.allocated_bytes])
    return out


def broken_cases(
    recorded: Mapping[tuple[str, str], Mapping[str, Any]],
    release_of: Mapping[str, str],
    version: str,
    rank_of: Callable[[str, Mapping[str, Any], int], Any],
) -> list[str]:
    """The case ids of ``recorded`` ((file, case id) -> row; ``release_of``: each file's release) on
    ``version`` that dryboot refuses or sizes otherwise than recorded (``rank_of(file, row, stage)``):
    what a flipped release switch breaks."""
    broken = []
    for (name, cid), row in recorded.items():
        if release_of[name] != version:
            continue
        try:
            if built_stages(row, partial(rank_of, name, row)) != recorded_stages(row):
                broken.append(cid)
        except InputError:
            broken.append(cid)
    return broken
