"""Write ``src/dryboot/data/drafter-as-model.json`` from the records of
``tests/fidelity/data/drafter-as-model/`` (how each release's engine start fails on each
speculative-decoding class given as the model; ``tests/fidelity/record_drafter_as_model.py``).

    python3 scripts/drafter_as_model.py
"""

from __future__ import annotations

import json
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
RECORDS = REPO / "tests" / "fidelity" / "data" / "drafter-as-model"
OUT = REPO / "src" / "dryboot" / "data" / "drafter-as-model.json"
#: errors of the oracle's environment, not vLLM's answer on a GPU box: left out (dryboot refuses the class
#: by name on that release). A constructor that allocates on "cuda" (HY V3's MTP module on 0.32.0 and
#: 0.33.0); a module that does not import without numba (Inkling's processor on 0.28.0: the CUDA wheel's
#: dependencies have it, the boot environment does not; vLLM then says the class "failed to be inspected")
#: and answers that hold for the stand-in only: that name its own model_type (MiMo-V2's MTP on 0.27.1, whose
#: transformers lacks mimo_v2_flash): a user's checkpoint gets its own, so dryboot refuses the class by name there
ORACLE_GAPS = (
    "Found no NVIDIA driver",
    "Cannot access accelerator device",
    "failed to be inspected",
    "The checkpoint you are trying to load has model type",
    # Step-3.5's MTP on 0.27.1 / 0.28.0 indexes per-layer lists past the stand-in's (a published checkpoint lists
    # its MTP layers too), so the stand-in's answer is not a checkpoint's
    "IndexError: list index out of range",
)


def words(error: str) -> str:
    """vLLM's error on one line: a pydantic ValidationError by its message (``Value error, ...``)."""
    if error.startswith("ValidationError") and "Value error, " in error:
        return error.split("Value error, ", 1)[1].split(" [type=", 1)[0].strip()
    return error.split("\n")[0]


def main() -> None:
    table: dict[str, dict[str, list[str]]] = {}
    for path in sorted(RECORDS.glob("vllm-*.json")):
        doc = json.loads(path.read_text())
        rows = {}
        for arch, case in sorted(doc["cases"].items()):
            v = case["vllm"]
            if v["ok"]:
                raise SystemExit(f"{path.name}: vLLM served {arch}: plan it instead of refusing it")
            if any(gap in v["error"] for gap in ORACLE_GAPS):
                print(f"{doc['vllm']} {arch}: left out (the oracle's environment: {words(v['error'])[:80]})")
                continue
            rows[arch] = [v["stage"], words(v["error"])]
        table[doc["vllm"]] = rows
    OUT.write_text(json.dumps(table, indent=1, sort_keys=True) + "\n")
    print(f"{OUT.relative_to(REPO)}: {sum(len(r) for r in table.values())} classes on {', '.join(table)}")


if __name__ == "__main__":
    main()
