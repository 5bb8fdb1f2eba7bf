"""Record the layer names vLLM gives drafter layers (``data/drafter_layer_names.json``).

    .venv/bin/python tests/fidelity/record_drafter_names.py /path/to/vllm-0.28.0/bin/python

Runs vLLM's own engine start (``src/dryboot/boot/engine_start.py``) on the cases of
``drafter_names_cases.py`` and keeps, per case, the names of every layer in its KV cache groups
(or vLLM's refusal). Nothing recorded comes from dryboot.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import drafter_names_cases as N
import e2e_harness as H


def main() -> int:
    python = sys.argv[1]
    cases = [N.case(i) for i in N.all_ids()]
    runner = H.OracleRunner(python)
    res = runner.run([c.oracle_input() for c in cases])
    version = next((m["vllm_version"] for m in runner.meta if m.get("vllm_version")), "?")
    out = {}
    for c in cases:
        v = res[c.id]
        if v.get("stage") == "crash":
            print(f"oracle crashed on {c.id}; nothing recorded", file=sys.stderr)
            return 1
        answer: dict[str, object] = {"ok": bool(v.get("ok"))}
        if v.get("ok"):
            answer["layer_names"] = sorted(n for g in v["group_layers"] for n in g)
        else:
            answer["error"] = str(v.get("error"))[:300]
        out[c.id] = {"vllm": answer}
    N.DATA.write_text(json.dumps({"vllm": version, "cases": out}, indent=1) + "\n")
    print(f"vLLM {version}: {len(out)} cases recorded")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(H.REPO / "src"))
    sys.exit(main())
