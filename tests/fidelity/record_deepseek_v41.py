"""Record vLLM's engine start on the tiny DeepSeek-V4.1 configs of ``deepseek_v41_cases.py``.

    python3 tests/fidelity/record_deepseek_v41.py ~/.cache/dryboot/boot-env/0.33.0/bin/python
    python3 tests/fidelity/record_deepseek_v41.py ~/.cache/dryboot/boot-env/0.33.0/bin/python --gpus

Runs ``src/dryboot/boot/engine_start.py`` in that environment over the cases and writes
``data/deepseek_v41/vllm-<release>.json`` (``RECORD_OUT``: another file; ``--gpus``: the cases of
``GPU_CASES`` as their GPUs, ``tests/data/gpus/run_oracle_as.py``, into ``vllm-<release>-gpus.json``;
``--gpus CASE...``: those cases only, the others' answers kept):
served or refused (stage and error), the KV cache groups and the layers in each, the capacity vLLM
logs. Nothing recorded comes from dryboot.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import deepseek_v41_cases as C
import e2e_harness as H
import qwen4_exp_step5_cases as Q
import test_architectures as T


def main() -> int:
    python = sys.argv[1]
    version = H.vllm_version(python)
    if version not in C.RELEASES:
        print(f"vLLM {version}: these cases are recorded on {', '.join(C.RELEASES)} only", file=sys.stderr)
        return 1
    if sys.argv[2:3] == ["--gpus"]:
        out = Path(os.environ.get("RECORD_OUT") or C.DATA / f"vllm-{version}-gpus.json")
        return _record_gpus(python, version, out, set(sys.argv[3:]))
    out = Path(os.environ.get("RECORD_OUT") or C.DATA / f"vllm-{version}.json")
    cases = {cid: (name, T.local(argv)) for cid, (name, argv) in C.cases().items()}
    status = H.record_config_cases(python, version, cases, C.config, out, 300, Q.KEPT_FIELDS)
    if status == 0:  # the flag sets as the record keeps them: the work directory as its token
        doc = json.loads(out.read_text())
        for cid, row in doc["cases"].items():
            row["argv"] = C.cases()[cid][1]
        out.write_text(json.dumps(doc, indent=1) + "\n")
    return status


def _record_gpus(python: str, version: str, out: Path, only: set[str]) -> int:
    """The GPU cases (those of ``only`` where it names some: the release's other answers kept), each
    GPU's through ``run_oracle_as.py``."""
    run_as = H.REPO / "tests" / "data" / "gpus" / "run_oracle_as.py"
    todo = {cid: c for cid, c in C.GPU_CASES.items() if not only or cid in only}
    res: dict[str, dict[str, object]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for gpu in sorted({g for _, _, g in todo.values()}):
            inputs = [
                {"id": cid, "model": H._write_config(Path(tmp), cid, C.config(name)), "argv": argv}
                for cid, (name, argv, g) in todo.items()
                if g == gpu
            ]
            res.update(H.OracleRunner(python, jobs=1, oracle_argv=[str(run_as), gpu]).run(inputs))
    if H.crashed_cases(res):
        return 1
    old = C.DATA / f"vllm-{version}-gpus.json"
    cases = json.loads(old.read_text())["cases"] if only and old.exists() else {}
    for cid, (name, argv, gpu) in todo.items():
        kept = H.kept_answer(res[cid], Q.KEPT_FIELDS, 300)
        cases[cid] = {"config": name, "argv": argv, "gpu": gpu, "vllm": kept}
        print(f"{cid:24} {'served' if kept.get('ok') else str(kept.get('error', ''))[:100]}")
    cases = {cid: cases[cid] for cid in C.GPU_CASES if cid in cases}
    out.write_text(json.dumps({"vllm": version, "cases": cases}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(H.REPO / "src"))
    sys.exit(main())
