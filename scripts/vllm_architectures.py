"""Write the architecture table of an installed vLLM's model registry as JSON.

    python scripts/vllm_architectures.py SITE_PACKAGES/vllm > src/dryboot/data/vllm-0.28.0-architectures.json
    python scripts/vllm_architectures.py /work/vllm-src/0.32.0/vllm > src/dryboot/data/vllm-0.32.0-architectures.json

Reads ``model_executor/models/registry.py`` as text (its ``_*_MODELS`` dictionaries: architecture
-> (module, class)), without importing vLLM. Only the text-generation, multimodal and
speculative-decoding tables are kept, and the architectures the registry serves through its
Transformers modeling backend (``_TRANSFORMERS_SUPPORTED_MODELS``, kind ``transformers-backend``):
those are the models whose KV cache ``dryboot plan`` plans.

    python scripts/vllm_architectures.py --pooling 0.27.1=DIR ... 0.33.0=DIR \
        > src/dryboot/data/vllm-pooling-architectures.json

writes the pooling tables of those releases instead (embedding, late-interaction, reward, token and
sequence classification: a pooling runner, no generation KV cache), architecture -> its table, model
file and the releases listing it, so that dryboot refuses such a model as what it is.
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

#: vLLM's pooling tables (``--pooling``): served by a pooling runner, no generation KV cache
POOLING_TABLES = {
    "_EMBEDDING_MODELS": "embedding",
    "_LATE_INTERACTION_MODELS": "late-interaction",
    "_REWARD_MODELS": "reward",
    "_TOKEN_CLASSIFICATION_MODELS": "token-classification",
    "_SEQUENCE_CLASSIFICATION_MODELS": "sequence-classification",
}


def read_tables(vllm_dir: str, tables: dict[str, str]) -> dict[str, dict[str, str]]:
    """architecture -> its ``kind`` (``tables``' name for the first table listing it) and model file."""
    tree = ast.parse((Path(vllm_dir) / "model_executor" / "models" / "registry.py").read_text())
    rows: dict[str, dict[str, str]] = {}
    for node in tree.body:
        target = node.targets[0] if isinstance(node, ast.Assign) else getattr(node, "target", None)
        value = getattr(node, "value", None)
        if not isinstance(target, ast.Name) or target.id not in tables or not isinstance(value, ast.Dict):
            continue
        for key, entry in zip(value.keys, value.values, strict=True):
            if isinstance(key, ast.Constant) and isinstance(entry, ast.Tuple):
                module = entry.elts[0]
                if isinstance(module, ast.Constant):
                    # the Transformers backend is a package (transformers/causal.py, multimodal.py...)
                    file = "transformers/" if module.value == "transformers" else f"{module.value}.py"
                    rows.setdefault(str(key.value), {"kind": tables[target.id], "file": file})
    return rows


def pooling(releases: list[str]) -> dict[str, dict[str, object]]:
    """``RELEASE=VLLM_DIR`` words -> architecture -> kind, file (its newest release's) and releases, for
    the architectures only the pooling tables list (a generative table's are the main table's)."""
    out: dict[str, dict[str, object]] = {}
    for word in releases:
        release, _, vllm_dir = word.partition("=")
        generative = read_tables(vllm_dir, TABLES)
        for arch, row in read_tables(vllm_dir, POOLING_TABLES).items():
            if arch not in generative:
                seen = out.setdefault(arch, {"releases": []})
                seen.update(row)
                seen["releases"] = [*seen["releases"], release]  # type: ignore[misc]
    return dict(sorted(out.items()))


def main(argv: list[str]) -> None:
    rows: object = pooling(argv[1:]) if argv[0] == "--pooling" else dict(sorted(read_tables(argv[0], TABLES).items()))
    json.dump(rows, sys.stdout, indent=1)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main(sys.argv[1:])
