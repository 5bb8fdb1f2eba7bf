"""Record each release's engine start on the SM 9.0 sparse MLA cases of ``sm90_sparse_mla_cases.py``.

    python3 tests/fidelity/record_sm90_sparse_mla.py ~/.cache/dryboot/boot-env/0.31.0/bin/python [CASE...]

Writes each tiny config into a model directory (a published one is used as it is: its config.json and
hf_quant_config.json), runs the oracle as an H200 (``tests/data/gpus/run_oracle_as.py H200``) and writes
``data/sm90-sparse-mla/vllm-X.json`` (other cases' answers kept when only some are named; ``RECORD_OUT``
writes elsewhere). Nothing recorded comes from dryboot.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import e2e_harness as H
import release_records as R
import sm90_sparse_mla_cases as C


def model_dir(work: Path, name: str) -> str:
    """The model directory of config ``name``: the published directory, or the tiny config written."""
    if C.CONFIGS[name] is None:
        return str((C.PUBLISHED / name).resolve())
    return H._write_config(work, name, C.config(name))


def gpu_cases(release: str) -> dict[str, R.GpuCase]:
    """The release's cases, each run as :data:`sm90_sparse_mla_cases.GPU`."""
    return {cid: (name, flags, C.GPU) for cid, (name, flags) in C.cases(release).items()}


if __name__ == "__main__":
    sys.path.insert(0, str(H.REPO / "src"))
    sys.exit(
        R.record_gpu_cases(
            C, sys.argv[1:], cases=gpu_cases, model_dir=lambda work, _, name: model_dir(work, name), case_timeout=900
        )
    )
