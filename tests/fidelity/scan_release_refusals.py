"""List the tiny configs dryboot refuses on a release (a survey, not a test).

    PYTHONPATH=src python3 tests/fidelity/scan_release_refusals.py [--oracle] [VERSION...]   # default 0.29.0-0.32.0

Runs every tiny config of ``data/architectures/`` (and its ``defaults/`` config, where there is
one) through ``dryboot plan --vllm-version V --json`` under one plain flag set
(``--kv-cache-memory-bytes 2000000000``; a drafter on its target, as ``test_architectures`` runs
it) and prints, per release, each refusal with dryboot's reason. Refusals of the KV budget (the
model's length does not fit the 2 GB) are left out: vLLM makes them too. With ``--oracle`` each
refused case also runs through that release's own engine start
(``~/.cache/dryboot/boot-env/<release>/bin/python``) and vLLM's answer is printed under it; what
a release builds is then recorded by ``record_release_architectures.py``.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import e2e_harness as H
import test_architectures as T

FLAGS = ["--kv-cache-memory-bytes", "2000000000"]


def cases() -> list[H.Case]:
    """One case per tiny config and per defaults config, under :data:`FLAGS`."""
    out = []
    for arch in T.tiny_configs():
        argv = list(FLAGS)
        if arch in T.DRAFTERS:
            argv = [*FLAGS, *T.flag_sets(arch, T.tiny_configs()[arch], 1)[0][-2:]]
        out.append(T.make_case(arch, 0, argv))
        if arch in T.defaults_configs():
            out.append(T.defaults_case(arch, 0, list(FLAGS)))
    return out


#: a refusal of the budget, not of the model (vLLM's own words)
BUDGET = "To serve at least one request"


def _vllm(version: str, refused: list[H.Case]) -> dict[str, Any]:
    python = Path.home() / ".cache" / "dryboot" / "boot-env" / version / "bin" / "python"
    return H.OracleRunner(str(python), jobs=1).run([c.oracle_input() for c in refused])


def main() -> int:
    args = sys.argv[1:]
    oracle = "--oracle" in args
    versions = [a for a in args if a != "--oracle"] or ["0.29.0", "0.30.0", "0.31.0", "0.32.0"]
    all_cases = cases()
    for v in versions:
        answers = [(c, H.run_dryboot(c, v)) for c in all_cases]
        refused = [(c, got) for c, got in answers if got.get("refused") and BUDGET not in str(got.get("error"))]
        print(f"== vLLM {v}: {len(refused)}/{len(all_cases)} refused (budget refusals left out)")
        res = _vllm(v, [c for c, _ in refused]) if oracle else {}
        for c, got in refused:
            print(f"  {c.id:56} {str(got.get('error'))[:400]}")
            if c.id in res:
                r = res[c.id]
                said = f"serves: {r.get('groups')}" if r.get("ok") else f"refuses: {str(r.get('error'))[:300]}"
                print(f"  {'':56} vLLM {v} {said}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
