"""Write the architecture table of an installed vLLM's model registry as JSON.

    python scripts/vllm_architectures.py SITE_PACKAGES/vllm > src/dryboot/data/vllm-0.28.0-architectures.json

Reads ``model_executor/models/registry.py`` as text (its ``_*_MODELS`` dictionaries: architecture
-> (module, class)), without importing vLLM. Only the text-generation, multimodal and
speculative-decoding tables are kept: those are the models whose KV cache ``dryboot plan`` plans.
"""

from __future__ import annotations

import ast
import json
import sys
from pathlib import Path

TABLES = {
    "_TEXT_GENERATION_MODELS": "text-generation",
    "_MULTIMODAL_MODELS": "multimodal",
    "_SPECULATIVE_DECODING_MODELS": "speculative-decoding",
}


def main(vllm_dir: str) -> None:
    tree = ast.parse((Path(vllm_dir) / "model_executor" / "models" / "registry.py").read_text())
    rows: dict[str, dict[str, str]] = {}
    for node in tree.body:
        target = node.targets[0] if isinstance(node, ast.Assign) else getattr(node, "target", None)
        value = getattr(node, "value", None)
        if not isinstance(target, ast.Name) or target.id not in TABLES or not isinstance(value, ast.Dict):
            continue
        for key, entry in zip(value.keys, value.values, strict=True):
            if isinstance(key, ast.Constant) and isinstance(entry, ast.Tuple):
                module = entry.elts[0]
                if isinstance(module, ast.Constant):
                    rows.setdefault(str(key.value), {"kind": TABLES[target.id], "file": f"{module.value}.py"})
    json.dump(dict(sorted(rows.items())), sys.stdout, indent=1)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main(sys.argv[1])
