"""Write the architecture table of an installed vLLM's model registry as JSON.

    python scripts/vllm_architectures.py SITE_PACKAGES/vllm > src/dryboot/data/vllm-0.28.0-architectures.json
    python scripts/vllm_architectures.py /work/vllm-src/0.32.0/vllm > src/dryboot/data/vllm-0.32.0-architectures.json

Reads ``model_executor/models/registry.py`` as text (its ``_*_MODELS`` dictionaries: architecture
-> (module, class)), without importing vLLM. Only the text-generation, multimodal and
speculative-decoding tables are kept, and the architectures the registry serves through its
Transformers modeling backend (``_TRANSFORMERS_SUPPORTED_MODELS``, kind ``transformers-backend``):
those are the models whose KV cache ``dryboot plan`` plans.
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
    "_TRANSFORMERS_SUPPORTED_MODELS": "transformers-backend",
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
                    # the Transformers backend is a package (transformers/causal.py, multimodal.py...)
                    file = "transformers/" if module.value == "transformers" else f"{module.value}.py"
                    rows.setdefault(str(key.value), {"kind": TABLES[target.id], "file": file})
    json.dump(dict(sorted(rows.items())), sys.stdout, indent=1)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main(sys.argv[1])
