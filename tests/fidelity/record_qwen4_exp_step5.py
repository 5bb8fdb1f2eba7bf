"""Record a release's engine start on the tiny Qwen4-Exp and Step5 configs of
``qwen4_exp_step5_cases.py`` (what backs their refusals).

    python3 tests/fidelity/record_qwen4_exp_step5.py ~/.cache/dryboot/boot-env/0.33.0/bin/python
    python3 tests/fidelity/record_qwen4_exp_step5.py ~/.cache/dryboot/boot-env/0.33.0/bin/python --gpus

Runs ``src/dryboot/boot/engine_start.py`` in that environment over the release's cases (every one
on 0.33.0, the Qwen4-Exp ones on 0.29.0-0.32.0, whose registries list Qwen4-Exp but not Step5) and
writes ``data/refused-0.33/vllm-<release>.json``: served or refused (stage and error), the KV cache
groups and the layers in each. With ``--gpus`` (0.33.0) it records the QSA cases
``QSA_GPU_CASES`` as each of ``QSA_GPUS`` (``tests/data/gpus/run_oracle_as.py``) into
``data/refused-0.33/qsa-gpus-0.33.0.json``. Nothing recorded comes from dryboot.
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import e2e_harness as H
import qwen4_exp_step5_cases as Q

RUN_AS = Path(__file__).resolve().parents[1] / "data" / "gpus" / "run_oracle_as.py"


def record_gpus(python: str) -> int:
    """The QSA cases as each GPU of ``QSA_GPUS``; 1 (nothing written) when the oracle crashed."""
    doc: dict[str, object] = {"vllm": Q.VERSION, "gpus": {}}
    gpus: dict[str, dict[str, object]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        inputs = []
        for cid in Q.QSA_GPU_CASES:
            name, argv = Q.CASES[cid]
            inputs.append({"id": cid, "model": H._write_config(Path(tmp), name, Q.config(name)), "argv": argv})
        for gpu in Q.QSA_GPUS:
            res = H.OracleRunner(python, jobs=1, oracle_argv=[str(RUN_AS), gpu]).run(inputs)
            if H.crashed_cases(res):
                return 1
            gpus[gpu] = {
                cid: {
                    "config": Q.CASES[cid][0],
                    "argv": Q.CASES[cid][1],
                    "vllm": H.kept_answer(res[cid], Q.KEPT_FIELDS, 300),
                }
                for cid in Q.QSA_GPU_CASES
            }
            print(f"{gpu}: {len(gpus[gpu])} cases recorded")
    doc["gpus"] = gpus
    Q.GPU_RECORD.write_text(json.dumps(doc, indent=1) + "\n")
    return 0


def main() -> int:
    python = sys.argv[1]
    version = H.vllm_version(python)
    if "--gpus" in sys.argv[2:]:
        return record_gpus(python)
    if version != Q.VERSION and version not in Q.EARLIER:
        print(f"vLLM {version}: these cases are recorded on {Q.VERSION} and {Q.EARLIER} only", file=sys.stderr)
        return 1
    return H.record_config_cases(
        python, version, Q.cases_for(version), Q.config, Q.record_path(version), 300, Q.KEPT_FIELDS
    )


if __name__ == "__main__":
    sys.path.insert(0, str(H.REPO / "src"))
    sys.exit(main())
