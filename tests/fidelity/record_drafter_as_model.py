"""Record what vLLM does with each speculative-decoding class given as the model of its own
(``data/drafter-as-model/vllm-<release>.json``; cases: ``drafter_as_model_cases.py``).

    python3 tests/fidelity/record_drafter_as_model.py ~/.cache/dryboot/boot-env/0.33.0/bin/python [ARCH...]

Runs ``src/dryboot/boot/engine_start.py`` (vLLM's own engine start, with the profile run's call of
the model: stage "profile") on each class of that release's registry that has a stand-in; keeps
``ok``, ``stage`` and ``error`` (other classes' records are kept). Nothing recorded comes from dryboot.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import drafter_as_model_cases as N
import e2e_harness as H
import test_architectures as T


def main() -> int:
    python, only = sys.argv[1], set(sys.argv[2:])
    version = H.vllm_version(python)
    archs = [a for a in N.drafter_classes(version) if a in N.STAND_INS and (not only or a in only)]
    renamed = [N.renamed_case(i) for i, (v, _, a) in N.RENAMED.items() if v == version and (not only or a in only)]
    cases = [N.case(a) for a in archs]
    runner = H.OracleRunner(python, jobs=1)
    res = runner.run([c.oracle_input() for c in [*cases, *renamed]])
    crashed = sorted(a for a in archs if res[a].get("stage") == "crash" or "OracleCrash" in str(res[a].get("error")))
    if crashed:
        print("oracle crashed on " + ", ".join(crashed) + "; nothing recorded, run again", file=sys.stderr)
        return 1
    path = N.record_path(version)
    doc = json.loads(path.read_text()) if path.exists() else {"vllm": version, "argv": N.ARGV, "cases": {}}
    for c in cases:
        v = res[c.id]
        answer = {"ok": bool(v.get("ok")), "stage": v.get("stage"), "error": str(v.get("error"))[:400]}
        if v.get("ok"):
            answer = {"ok": True, "groups": v.get("groups")}
        doc["cases"][c.id] = {"stand_in": c.source.removeprefix("stand-in:"), "vllm": answer}
        print(f"{c.id:34} {'served' if answer['ok'] else answer['stage'] + ': ' + answer['error'][:110]}")
    doc["cases"] = dict(sorted(doc["cases"].items()))
    for c in renamed:  # served as the class the config class names: every figure kept
        v = res[c.id]
        doc.setdefault("renamed", {})[c.id] = {"vllm": {k: v.get(k) for k in T.KEPT if v.get(k) is not None}}
        print(f"{c.id:34} {'served' if v.get('ok') else v.get('stage')}")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc, indent=1) + "\n")
    print(f"vLLM {version}: {len(cases)} cases recorded into {path}")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(H.REPO / "src"))
    sys.exit(main())
