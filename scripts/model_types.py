"""Write ``src/dryboot/data/model-types.json``: each planned architecture's ``model_type`` (the
Hugging Face config class vLLM reads its checkpoints with), as its verifying tiny config gives it
(``tests/fidelity/data/architectures/<Architecture>.json``, checked against vLLM 0.28.0).

The config reader uses it to refuse a ``config.json`` whose ``model_type`` is another family's
config class. ``tests/test_vllm_transformers_utils_config.py`` checks the file is up to date.

    python scripts/model_types.py
"""

from __future__ import annotations

import json
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TINY = ROOT / "tests" / "fidelity" / "data" / "architectures"
OUT = ROOT / "src" / "dryboot" / "data" / "model-types.json"


def table() -> dict[str, str]:
    out = {}
    for path in sorted(TINY.glob("*.json")):
        if path.name == "recorded.json":
            continue
        out[path.stem] = str(json.loads(path.read_text(encoding="utf-8"))["model_type"])
    return out


def main() -> None:
    OUT.write_text(json.dumps(table(), indent=1, sort_keys=True) + "\n", encoding="utf-8")
    print(f"{OUT}: {len(table())} architectures")


if __name__ == "__main__":
    main()
