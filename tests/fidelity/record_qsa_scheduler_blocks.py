"""Record the scheduler's and the prefix-cache hash block of a few QSA cases (vLLM's
``resolve_kv_cache_block_sizes``), which ``data/refused-0.33/vllm-<release>.json`` does not keep.

    python3 tests/fidelity/record_qsa_scheduler_blocks.py ~/.cache/dryboot/boot-env/0.33.0/bin/python ...

Writes (merges by release) ``data/refused-0.33/qsa-scheduler-blocks.json``: release -> case id ->
``[scheduler_block_size, hash_block_size, final_block_size]``. Nothing recorded comes from dryboot.
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import e2e_harness as H
import qwen4_exp_step5_cases as Q

RECORD = Q.DATA / "qsa-scheduler-blocks.json"
#: prefix caching on and off (a Mamba group then keeps max_model_len tokens a block), n-gram rings
CASES = ("qwen4-qsa-512", "qwen4-qsa-512-no-prefix", "qwen4-qsa-512-ngram3", "qwen4-qsa-ratio8-ngram5")


def main() -> int:
    doc = json.loads(RECORD.read_text()) if RECORD.exists() else {}
    for python in sys.argv[1:]:
        version = H.vllm_version(python)
        with tempfile.TemporaryDirectory() as tmp:
            inputs = [
                {
                    "id": c,
                    "model": H._write_config(Path(tmp), Q.CASES[c][0], Q.config(Q.CASES[c][0])),
                    "argv": Q.CASES[c][1],
                }
                for c in CASES
            ]
            res = H.OracleRunner(python, jobs=1).run(inputs)
        if H.crashed_cases(res):
            return 1
        doc[version] = {
            c: [res[c].get("scheduler_block_size"), res[c].get("hash_block_size"), res[c].get("final_block_size")]
            for c in CASES
        }
        print(version, doc[version])
    RECORD.write_text(json.dumps(dict(sorted(doc.items())), indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(H.REPO / "src"))
    sys.exit(main())
