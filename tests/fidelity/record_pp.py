"""Record one release's answers to the pipeline-parallel cases of ``pp_cases.py``.

    python3 tests/fidelity/record_pp.py ~/.cache/dryboot/boot-env/0.28.0/bin/python [--single] [ARCH...]

Runs ``src/dryboot/boot/engine_start.py`` in that environment over every tiny config of
``data/architectures/`` under ``--pipeline-parallel-size 2`` and writes its answers into
``data/pipeline/vllm-<release>.json`` (other architectures' records are kept); prints, per
architecture, vLLM's answer. Nothing recorded comes from dryboot. ``--single`` records the same
cases on one stage (no ``--pipeline-parallel-size``) into ``data/single-stage/vllm-<release>.json``.
``--minimax`` records MiniMax-M3's further PP cases (``pp_cases.minimax_cases``) into
``data/pipeline/minimax-m3/vllm-<release>.json``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import e2e_harness as H
import pp_cases as P
import test_architectures as T


def main() -> int:
    python, rest = sys.argv[1], sys.argv[2:]
    if "--minimax" in rest:
        # MiniMax-M3's extra PP cases, as the frontier cases are recorded (one GPU)
        import record_frontier as R

        R.record(python, [P.MINIMAX_GPU], P.minimax_cases(), P.MINIMAX_DATA)
        return 0
    single = "--single" in rest
    only = set(rest) - {"--single"}
    archs = [a for a in T.tiny_configs() if not only or a in only]
    cases = {a: P.case(a, single) for a in archs}
    runner = H.OracleRunner(python, jobs=1)
    res = runner.run([c.oracle_input() for c in cases.values()])
    version = next((m["vllm_version"] for m in runner.meta if m.get("vllm_version")), "?")
    crashed = sorted(k for k, v in res.items() if "OracleCrash" in str(v.get("error")))
    if crashed:
        print("oracle crashed on " + ", ".join(crashed) + "; nothing recorded, run again", file=sys.stderr)
        return 1
    path = P.record_path(version, single)
    argv = P.SINGLE_ARGV if single else P.ARGV
    doc = json.loads(path.read_text()) if path.exists() else {"vllm": version, "argv": argv, "cases": {}}
    from dryboot.vllm.models.registry import absent_from_release

    # a later release's wrapper (0.33.0's) is not recorded on a release whose registry lacks it
    cases = {a: c for a, c in cases.items() if absent_from_release(a, version) is None}
    for arch, c in cases.items():
        v = res[c.id]
        kept = {k: v.get(k) for k in T.KEPT if v.get(k) is not None}
        if "error" in kept:
            kept["error"] = str(kept["error"])[:500]
        doc["cases"][arch] = kept
        print(f"{arch:48} {'served' if kept.get('ok') else kept.get('error', '?')[:100]!s}")
    doc["cases"] = dict(sorted(doc["cases"].items()))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc, indent=1) + "\n")
    print(f"vLLM {version}: {len(cases)} cases recorded into {path}")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(H.REPO / "src"))
    sys.exit(main())
