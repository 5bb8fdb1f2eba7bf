"""Record Mellum's tiny config under TP 2 x PP 3 (stage 0 holds its dense layer 0 only) with vLLM's
own engine start, into ``data/pipeline/mellum-tp2-pp3.json`` (``test_mellum_pp3.py``).

Usage: ``python3 tests/fidelity/record_mellum_pp3.py RELEASE...`` (each release's boot
environment under ``~/.cache/dryboot/boot-env``). 0.31.0 serves Mellum with ``mellum.py``, which
finds no MoE layer on that stage; 0.32.0+ with the Transformers backend, which builds it."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import e2e_harness as H
import pp_cases as P
import test_architectures as T

PATH = P.DATA / "mellum-tp2-pp3.json"
ARCH = "MellumForCausalLM"
ARGV = [*P.ARGV[:-1], "3", "--tensor-parallel-size", "2"]


def case() -> H.Case:
    c = T.make_case(ARCH, 0, ARGV)
    return H.Case(id=f"{ARCH}@tp2pp3", family="pp", model=c.model, argv=c.argv, source=c.source)


def main() -> int:
    doc = json.loads(PATH.read_text()) if PATH.exists() else {"argv": ARGV, "cases": {}}
    for version in sys.argv[1:]:
        python = str(Path.home() / ".cache" / "dryboot" / "boot-env" / version / "bin" / "python")
        c = case()
        res = H.OracleRunner(python, jobs=1).run([c.oracle_input()])[c.id]
        doc["cases"][version] = {k: res.get(k) for k in T.KEPT if res.get(k) is not None}
        print(version, doc["cases"][version])
    doc["cases"] = dict(sorted(doc["cases"].items()))
    PATH.write_text(json.dumps(doc, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(H.REPO / "src"))
    sys.exit(main())
