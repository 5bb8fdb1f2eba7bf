"""Record vLLM's answers for the per-architecture cases of ``test_architectures.py``.

    .venv/bin/python tests/fidelity/record_architectures.py /work/venvs/vllm-0.28.0/bin/python [ARCH...]

Runs ``src/dryboot/boot/engine_start.py`` in that venv over every tiny config in ``data/architectures/`` (or only
the named architectures) under its flag sets, writes the oracle's answers into
``data/architectures/recorded.json`` (other architectures' records are kept) and prints, per
architecture, how many cases vLLM serves and how many dryboot agrees with. Nothing recorded
comes from dryboot.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import e2e_harness as H
import test_architectures as T


def main() -> int:
    python, only = sys.argv[1], set(sys.argv[2:])
    # 0.33.0's wrappers (not in 0.28.0's registry) are recorded by record_release_architectures.py
    configs = {a: p for a, p in T.recorded_tiny_configs().items() if not only or a in only}
    sets = {a: T.flag_sets(a, p) for a, p in configs.items()}
    cases = {a: [T.make_case(a, i, argv) for i, argv in enumerate(s)] for a, s in sets.items()}
    dconfigs = [a for a in T.defaults_configs() if not only or a in only]
    dcases = {a: [T.defaults_case(a, i, argv) for i, argv in enumerate(T.DEFAULTS_FLAG_SETS)] for a in dconfigs}
    runner = H.OracleRunner(python, jobs=1)
    res = runner.run([c.oracle_input() for cs in [*cases.values(), *dcases.values()] for c in cs])
    version = next((m["vllm_version"] for m in runner.meta if m.get("vllm_version")), "?")
    crashed = sorted(k for k, v in res.items() if "OracleCrash" in str(v.get("error")))
    if crashed:  # the oracle process died: that is not vLLM's answer, and nothing is recorded
        print("oracle crashed on " + ", ".join(crashed) + "; nothing recorded, run again", file=sys.stderr)
        return 1
    doc = json.loads(T.RECORDED.read_text()) if T.RECORDED.exists() else {"architectures": {}}
    doc["vllm"] = version
    doc["architectures"] = {a: r for a, r in doc["architectures"].items() if a in T.recorded_tiny_configs()}
    total = agreed = 0
    for arch, cs in sorted(cases.items()):
        rows = []
        for c in cs:
            v = res[c.id]
            kept = {k: v.get(k) for k in T.KEPT if v.get(k) is not None}
            if "error" in kept:
                kept["error"] = str(kept["error"])[:500]
            rows.append({"argv": T.portable(sets[arch][int(c.id.split("#")[1])]), "vllm": kept})
        doc["architectures"][arch] = rows
        pairs = [(c, r["vllm"]) for c, r in zip(cs, rows, strict=True)]
        bad = T.disagreements(pairs)
        served = sum(1 for r in rows if r["vllm"].get("ok"))
        total += len(cs)
        agreed += len(cs) - len(bad)
        print(f"{arch:40} {len(cs) - len(bad):3d}/{len(cs)} agree ({served} served by vLLM)")
        for b in bad:
            print("  " + b.replace("\n", "\n  "))
    doc["architectures"] = dict(sorted(doc["architectures"].items()))
    defaults = {a: r for a, r in doc.get("defaults", {}).items() if a in T.defaults_configs()}
    for arch, cs in sorted(dcases.items()):
        rows = []
        for c, argv in zip(cs, T.DEFAULTS_FLAG_SETS, strict=True):
            kept = {k: res[c.id].get(k) for k in T.KEPT if res[c.id].get(k) is not None}
            if "error" in kept:
                kept["error"] = str(kept["error"])[:500]
            rows.append({"argv": argv, "vllm": kept})
        defaults[arch] = rows
        bad = T.disagreements([(c, r["vllm"]) for c, r in zip(cs, rows, strict=True)])
        total += len(cs)
        agreed += len(cs) - len(bad)
        print(f"{arch + ' (defaults)':40} {len(cs) - len(bad):3d}/{len(cs)} agree")
        for b in bad:
            print("  " + b.replace("\n", "\n  "))
    doc["defaults"] = dict(sorted(defaults.items()))
    T.RECORDED.write_text(json.dumps(doc, indent=1) + "\n")
    print(f"vLLM {version}: {agreed}/{total} cases agree")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(H.REPO / "src"))
    sys.exit(main())
