"""Record vLLM's answers for ``test_config_reading.py``'s cases.

    python tests/fidelity/record_config_reading.py /root/.cache/dryboot/boot-env/0.28.0/bin/python

Runs vLLM's own engine start (``src/dryboot/boot/engine_start.py`` in that environment) on every
case and writes ``data/config_reading/recorded.json``; prints each case dryboot disagrees with.
Nothing recorded comes from dryboot. Exits 1 (recording nothing) when the oracle process died.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import e2e_harness as H
import test_config_reading as T


def record(
    python: str, cases: list[H.Case], disagreement: Callable[[H.Case, dict[str, Any]], str | None]
) -> tuple[str, dict[str, dict[str, Any]]] | None:
    """vLLM's answer to each of ``cases`` (its :data:`T.KEPT` fields; an error cut at 500
    characters) by case id, and the vLLM version; each case printed with whether dryboot
    agrees (``disagreement``). ``None`` when the oracle process died (nothing to record)."""
    runner = H.OracleRunner(python, jobs=1)
    res = runner.run([c.oracle_input() for c in cases])
    version = next((m["vllm_version"] for m in runner.meta if m.get("vllm_version")), "?")
    if any("OracleCrash" in str(v.get("error")) for v in res.values()):
        print("the oracle crashed; nothing recorded, run again", file=sys.stderr)
        return None
    out: dict[str, dict[str, Any]] = {}
    for c in cases:
        v = res[c.id]
        kept = {k: v.get(k) for k in T.KEPT if v.get(k) is not None}
        if "error" in kept:
            kept["error"] = str(kept["error"])[:500]
        out[c.id] = kept
        problem = disagreement(c, kept)
        print(f"{c.id:60} {'agrees' if problem is None else 'DIFFERS'}")
        if problem:
            print("  " + problem)
    return version, out


def main() -> int:
    all_cases = T.cases()
    got = record(sys.argv[1], all_cases, T.disagreement)
    if got is None:
        return 1
    version, answers = got
    out: dict[str, list[dict[str, object]]] = {}
    for c in all_cases:
        name, i = c.id.split("#")
        out.setdefault(name, []).append({"argv": T.CASES[name][int(i)], "vllm": answers[c.id]})
    T.RECORDED.write_text(json.dumps({"vllm": version, "cases": out}, indent=1, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(H.REPO / "src"))
    sys.exit(main())
