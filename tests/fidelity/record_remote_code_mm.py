"""Record a release's engine start on the remote-code wrapper cases of ``remote_code_cases.py``.

    python3 tests/fidelity/record_remote_code_mm.py ~/.cache/dryboot/boot-env/0.33.0/bin/python [CASE...]

Runs ``src/dryboot/boot/engine_start.py`` in that environment over every case (the config and the
checkpoint's config Python files in one directory) and writes ``data/remote-code/vllm-<release>.json``:
served or refused (stage and error), the KV cache groups, blocks, tokens and max model length.
Nothing recorded comes from dryboot.
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import e2e_harness as H
import remote_code_cases as Q


def main() -> int:
    python, only = sys.argv[1], set(sys.argv[2:])  # case ids given: only those re-recorded, the rest kept
    version = H.vllm_version(python)
    todo = {cid: c for cid, c in Q.CASES.items() if not only or cid in only}
    with tempfile.TemporaryDirectory() as tmp:
        inputs = [{"id": cid, "model": Q.model_dir(Path(tmp), cid), "argv": c[2]} for cid, c in todo.items()]
        res = H.OracleRunner(python, jobs=1).run(inputs)
    if H.crashed_cases(res):
        return 1
    out = Q.recorded(version) if only else {}
    for cid, (path, _, argv) in todo.items():
        kept = H.kept_answer(res[cid], H.LOGGED_KEPT, 500)
        kept.pop("kv_log", None)
        out[cid] = {"config": path, "argv": argv, "vllm": kept}
        print(f"{cid:28} {'served' if kept.get('ok') else kept.get('error', '')[:90]}")
    Q.record_path(version).write_text(json.dumps({"vllm": version, "cases": out}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(H.REPO / "src"))
    sys.exit(main())
