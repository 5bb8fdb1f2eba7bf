"""Record vLLM's answers for the published-config corpus of ``test_corpus.py``.

    .venv/bin/python tests/fidelity/record_corpus.py /work/venvs/vllm-0.28.0/bin/python [--jobs N] [DIR...]

Runs vLLM's own engine start (``src/dryboot/boot/engine_start.py`` in that venv, through :func:`run_oracle`) on every
config of ``tests/data/configs/public/`` (or only the named directories) under its flag sets,
writes the answers into ``data/corpus/vllm-<version>.json`` (other directories' records are kept)
and ``index.json`` beside the configs, and prints per directory how many cases vLLM serves and
how many dryboot agrees with (and every disagreement not in the known tables). Nothing recorded
comes from dryboot. A case whose oracle process died or hung is never recorded (its directory is
left out and the script exits 1: run it again); an answer that is the CPU oracle's environment
gap (a module missing from the venv, ``libcuda`` absent, a kernel handle called) is recorded with
``"env_gap": true`` and never compared; vLLM's refusal of a config whose class is remote code is
recorded with ``"remote_code": true``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import e2e_harness as H
import test_corpus as T


def run_oracle(python: str, cases: list[H.Case], jobs: int = 1) -> tuple[dict[str, dict[str, Any]], str]:
    """vLLM's answers for ``cases`` (by case id) and its version: the one place this script
    calls the end-to-end oracle."""
    runner = H.OracleRunner(python, jobs=jobs)
    res = runner.run([c.oracle_input() for c in cases])
    version = next((m["vllm_version"] for m in runner.meta if m.get("vllm_version")), "?")
    return res, version


def kept(answer: dict[str, Any]) -> dict[str, Any]:
    out = {k: answer.get(k) for k in T.KEPT if answer.get(k) is not None}
    if "error" in out:
        out["error"] = str(out["error"])[:500]
    return out


def main() -> int:
    args = sys.argv[1:]
    jobs = 1
    if "--jobs" in args:
        at = args.index("--jobs")
        jobs = int(args[at + 1])
        del args[at : at + 2]
    python, only = args[0], set(args[1:])
    names = [n for n in T.corpus_dirs() if not only or n in only]
    T.INDEX.write_text(json.dumps({n: T.classify(n) for n in T.corpus_dirs()}, indent=1, sort_keys=True) + "\n")
    sets = {n: T.flag_sets(n) for n in names}
    cases = {n: [T.make_case(n, i, argv) for i, argv in enumerate(s)] for n, s in sets.items()}
    res, version = run_oracle(python, [c for cs in cases.values() for c in cs], jobs)
    crashed = sorted(k for k, v in res.items() if v.get("stage") == "crash")
    if crashed:
        # the oracle process died or hung: not vLLM's answer; the rest is recorded, these are not
        print("oracle crashed on " + ", ".join(crashed) + "; their directories are not recorded", file=sys.stderr)
    bad_dirs = {c.split("#")[0] for c in crashed}
    recorded = T.load_recorded(version) if T.recorded_path(version).exists() else {}
    recorded = {n: r for n, r in recorded.items() if n in T.corpus_dirs()}
    total = agreed = 0
    for name in names:
        if name in bad_dirs:
            continue
        rows = []
        for c, argv in zip(cases[name], sets[name], strict=True):
            rows.append(T.mark({"argv": argv, "vllm": kept(res[c.id])}))
        recorded[name] = rows
        served = sum(1 for r in rows if r["vllm"].get("ok"))
        gaps = sum(1 for r in rows if r.get("env_gap"))
        compared = [(T.make_case(name, i, r["argv"]), r) for i, r in enumerate(rows) if not r.get("env_gap")]
        agree = sum(1 for c, r in compared if T.verdict(c, r["vllm"], version)[1]["agree"])
        total += len(compared)
        agreed += agree
        print(f"{name:60} {agree:3d}/{len(compared)} agree ({served} served by vLLM, {gaps} env gaps)")
        for problem in T.problems_of(name, rows, version):
            print("  " + problem.replace("\n", "\n  "))
    T.RECORDED_DIR.mkdir(parents=True, exist_ok=True)
    T.recorded_path(version).write_text(T.dump_recorded(version, recorded))
    print(f"vLLM {version}: {agreed}/{total} cases agree (env gaps left out)")
    return 1 if crashed else 0


if __name__ == "__main__":
    sys.path.insert(0, str(H.REPO / "src"))
    sys.exit(main())
