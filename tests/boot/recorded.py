"""Every recorded vLLM 0.28.0 fidelity case (``tests/fidelity/data/**``), as ``dryboot boot`` inputs.

Each :class:`Item` is one case of a fidelity test module, built by that module's own case
builder (so the model directory and flags are exactly what its oracle run was given), with the
check of that module against what vLLM 0.28.0 answered when it was recorded.

Sources: ``data/architectures/recorded.json`` (tiny configs and ``defaults/`` configs),
``data/hybrids-recorded.json``, ``data/deepseek_v4/recorded.json``, ``test_e2e.RECORDED``
(``data/e2e-min``, ``data/e2e-extra``) and the 0.28.0 rows of ``test_releases.RECORDED``.
"""

from __future__ import annotations

import atexit
import shutil
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

FIDELITY = Path(__file__).resolve().parent.parent / "fidelity"
sys.path.insert(0, str(FIDELITY))

import e2e_harness as H  # noqa: E402
import record_hybrids as RH  # noqa: E402
import test_architectures as TA  # noqa: E402
import test_deepseek_v4 as TD  # noqa: E402
import test_e2e as TE  # noqa: E402
import test_releases as TR  # noqa: E402


@dataclass
class Item:
    """One recorded case: its harness case, and ``check(answer)`` -> what differs from the record."""

    source: str
    case: H.Case
    check: Callable[[dict[str, Any]], list[str]]
    plan_known: str = ""  # a known dryboot disagreement with vLLM (the fidelity test's xfail)


def _same_kept(expect: dict[str, Any], keys: tuple[str, ...]) -> Callable[[dict[str, Any]], list[str]]:
    def check(got: dict[str, Any]) -> list[str]:
        return [
            f"{k}: recorded {expect.get(k)!r}, boot {got.get(k)!r}"
            for k in keys
            if k != "error" and expect.get(k) != got.get(k)
        ]

    return check


def items() -> list[Item]:
    out: list[Item] = []
    for arch in TA.recorded_tiny_configs():  # those recorded on 0.28.0 (not 0.33.0's wrappers)
        if arch in TA.RECORDED_WITH_EXTRAS:  # recorded with a package the boot environment lacks
            continue
        if arch in TA.later_architectures():  # recorded on its later release only
            continue
        for case, rec in TA._recorded_cases(arch):
            out.append(Item("architectures", case, _same_kept(rec, TA.KEPT)))
    for arch, rows in TA.load_recorded("defaults").items():
        for i, row in enumerate(rows):
            out.append(
                Item("architectures/defaults", TA.defaults_case(arch, i, row["argv"]), _same_kept(row["vllm"], TA.KEPT))
            )
    work = Path(tempfile.mkdtemp(prefix="dryboot-boot-hybrids-"))
    atexit.register(shutil.rmtree, work, ignore_errors=True)  # the cases' model directories live until exit
    doc = RH.json.loads(RH.RECORDED.read_text())
    for arch in RH.ARCHITECTURES:
        for i, row in enumerate(doc["cases"][arch]):
            out.append(Item("hybrids", RH.case(arch, i, row["argv"], work), _same_kept(row["vllm"], RH.KEEP)))
    for i, row in enumerate(TD.recorded()):
        case = TD.make_case(i, row["config"], TA.local(row["argv"]))
        out.append(Item("deepseek_v4", case, _same_kept(row["vllm"], TA.KEPT), TD._known(row) or ""))
    for rec in TE.RECORDED:
        expect = rec.oracle_expect or rec.expect
        out.append(
            Item(
                "e2e",
                TE._case(rec, vllm=True),
                lambda got, e=expect: TE._check(e, got, vllm=True),
                # where the engine start refuses earlier than the recorded message (oracle_expect:
                # vLLM's GPUModelRunner refuses the drafter first, other wording), dryboot's plan
                # gives the recorded message: the same stage, another check first (test_e2e says why)
                rec.dryboot_xfail or ("oracle refuses earlier (oracle_expect)" if rec.oracle_expect else ""),
            )
        )
    for (version, cid), expect in sorted(TR.RECORDED.items()):
        if version != "0.28.0":
            continue

        def check(got: dict[str, Any], e: dict[str, Any] = expect) -> list[str]:
            shaped = {**got, "refused": not got.get("ok"), "log": got.get("kv_log")}
            if e.get("says") and str(got.get("error")).strip() == "AssertionError:":
                return []  # vLLM 0.28.0's assertion has no message: the recorded words are dryboot's
            return TR._check(e, shaped)

        out.append(Item("releases", TR.case(cid), check, TR.XFAIL.get((version, cid), "")))
    return out


@dataclass
class Outcome:
    """What one run over recorded cases found."""

    cases: int = 0
    reproduced: int = 0  # boot answered what vLLM answered when recorded
    agree: int = 0  # dryboot's plan agrees with the boot (same figures, or both refuse)
    known: int = 0  # disagreements the fidelity tests already list (xfail)
    import_seconds: float = 0.0
    boot_seconds: float = 0.0  # summed engine starts in the child
    wall_seconds: float = 0.0
    problems: list[str] | None = None


def run(python: str, chosen: list[Item], limit_problems: int = 40, progress: bool = False) -> Outcome:
    """Boot every item in one process on the environment's pristine tree; check each answer
    against its record, and dryboot's plan against the answer."""
    import os
    import time

    from dryboot.boot.env import installed_vllm
    from dryboot.boot.session import BootSession, resolve_tree

    t0 = time.perf_counter()
    out = Outcome(problems=[])
    assert out.problems is not None
    tree = resolve_tree(str(installed_vllm(python).parent))
    session = BootSession(python, tree)
    out.import_seconds = session.import_seconds
    try:
        for item in chosen:
            answer = session.boot(item.case.model, item.case.argv, item.case.env or None)
            if answer.get("stage") == "crash":  # a fresh process for the rest
                session.close()
                session = BootSession(python, tree)
            out.cases += 1
            out.boot_seconds += float(answer.get("seconds") or 0)
            if progress and out.cases % 100 == 0:
                print(f"{out.cases} cases, {time.perf_counter() - t0:.0f} s", file=sys.stderr, flush=True)
            wrong = item.check(answer)
            if not wrong:
                out.reproduced += 1
            elif len(out.problems) < limit_problems:
                out.problems.append(f"{item.source} {item.case.command()}: boot != record: {'; '.join(wrong)[:300]}")
            saved = {k: os.environ.get(k) for k in item.case.env}
            os.environ.update(item.case.env)
            try:
                mine = H.run_dryboot(item.case, "0.28.0")
            finally:
                for k, v in saved.items():
                    if v is None:
                        os.environ.pop(k, None)
                    else:
                        os.environ[k] = v
            verdict = H.compare(answer, mine)
            if verdict["agree"]:
                out.agree += 1
            elif item.plan_known:
                out.known += 1
            elif len(out.problems) < limit_problems:
                out.problems.append(f"{item.source} {item.case.command()}: plan != boot: {verdict['diffs']}"[:400])
    finally:
        session.close()
    out.wall_seconds = round(time.perf_counter() - t0, 1)
    return out


def main() -> int:
    """``python tests/boot/recorded.py PYTHON [EVERY]``: the full run (or every EVERY-th case)."""
    import json
    import time
    from dataclasses import asdict

    python = sys.argv[1]
    every = int(sys.argv[2]) if len(sys.argv) > 2 else 1
    t0 = time.perf_counter()
    chosen = items()[::every]
    build = time.perf_counter() - t0
    res = run(python, chosen, progress=True)
    doc = asdict(res)
    doc["build_seconds"] = round(build, 1)
    doc["per_case_seconds"] = round(res.wall_seconds / max(res.cases, 1), 3)
    print(json.dumps(doc, indent=1))
    return 0 if res.reproduced == res.cases and res.agree + res.known == res.cases else 1


if __name__ == "__main__":
    sys.path.insert(0, str(FIDELITY.parent.parent / "src"))
    sys.exit(main())
