"""Record vLLM's answers for the per-GPU cases of ``test_gpus.py``.

    .venv/bin/python tests/fidelity/record_gpus.py /work/venvs/vllm-0.28.0/bin/python [GPU...] [--arch ARCH...]

For each GPU (default :data:`test_gpus.GPUS`) it runs ``tests/data/gpus/run_oracle_as.py GPU``
(the e2e oracle answering as that row of ``gpus.toml``, FlashInfer arm ``cubin``) over the
recorded flag sets of :data:`test_gpus.ARCHITECTURES` (``data/architectures/recorded.json``'s
argv, the same cases ``test_architectures.py`` checks on the H200) and writes
``data/gpus/vllm-X.json`` (other GPUs' records kept; with ``--arch``, only those architectures'
cases are run and replaced, the GPU's other records kept). Nothing recorded comes from dryboot.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import e2e_harness as H
import test_architectures as T
import test_gpus as G

RUN_AS = Path(__file__).resolve().parents[1] / "data" / "gpus" / "run_oracle_as.py"


def main() -> int:
    args = sys.argv[2:]
    only = set(args[args.index("--arch") + 1 :]) if "--arch" in args else set()
    args = args[: args.index("--arch")] if "--arch" in args else args
    python, gpus = sys.argv[1], args or list(G.GPUS)
    cases = [(c, argv) for c, argv in G.cases() if not only or c.id.split("#")[0] in only]
    version = None
    for gpu in gpus:
        runner = H.OracleRunner(python, jobs=2, oracle_argv=[str(RUN_AS), gpu])
        res = runner.run([c.oracle_input() for c, _ in cases])
        version = next((m["vllm_version"] for m in runner.meta if m.get("vllm_version")), "?")
        crashed = sorted(k for k, v in res.items() if "OracleCrash" in str(v.get("error")))
        if crashed:
            print(f"{gpu}: oracle crashed on " + ", ".join(crashed) + "; not recorded", file=sys.stderr)
            continue
        path = G.recorded_path(version)
        doc = json.loads(path.read_text()) if path.exists() else {"vllm": version, "gpus": {}}
        # --arch: only those architectures' rows are replaced, the GPU's others kept
        rows = {k: r for k, r in doc["gpus"].get(gpu, {}).items() if k.split("#")[0] not in only} if only else {}
        for c, argv in cases:
            v = res[c.id]
            kept = {k: v.get(k) for k in T.KEPT if v.get(k) is not None}
            if "error" in kept:
                kept["error"] = str(kept["error"])[:500]
            rows[c.id] = {"argv": argv, "vllm": kept}
        doc["gpus"][gpu] = rows
        doc["gpus"] = dict(sorted(doc["gpus"].items()))
        path.write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n", encoding="utf-8")
        served = sum(1 for r in rows.values() if r["vllm"].get("ok"))
        print(f"{gpu:12} {len(rows)} cases recorded ({served} served by vLLM {version})", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
