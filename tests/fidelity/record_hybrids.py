"""Record vLLM's answers for the hybrid architectures' tiny configs under many flag sets.

    python3 tests/fidelity/record_hybrids.py /work/venvs/vllm-0.28.0/bin/python [Arch ...]

For each architecture of :data:`ARCHITECTURES` (its tiny config is
``data/architectures/<Arch>.json``), :data:`FLAG_SETS` flag sets drawn by the harness's own
flag generator (``e2e_harness._flags``, seeded by the architecture and the index) run through
``src/dryboot/boot/engine_start.py``; the answers (vLLM's figures or its refusal) are written to
``data/hybrids-recorded.json``. ``test_hybrids.py`` checks dryboot against them without vLLM,
and the oracle against them with it. Nothing in the file comes from dryboot.
"""

from __future__ import annotations

import json
import random
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import e2e_harness as H

DATA = Path(__file__).resolve().parent / "data"
CONFIGS = DATA / "architectures"
RECORDED = DATA / "hybrids-recorded.json"

#: The hybrid / non-attention-state architectures recorded here.
ARCHITECTURES = (
    "GraniteMoeHybridForCausalLM",
    "FalconH1ForCausalLM",
    "Lfm2ForCausalLM",
    "Lfm2MoeForCausalLM",
    "Zamba2ForCausalLM",
    "KimiLinearForCausalLM",
    "Mamba2ForCausalLM",
    "Lfm2VlForConditionalGeneration",
)
FLAG_SETS = 24
KEEP = ("ok", "stage", "error", *H.COMPARED)


def flag_sets(arch: str, workdir: Path) -> list[list[str]]:
    """The flag sets of ``arch``: deterministic, by the harness's generator, leaving out those
    naming a drafter model (its config would live in a temporary directory)."""
    cfg = json.loads((CONFIGS / f"{arch}.json").read_text())
    sets: list[list[str]] = []
    i = 0
    while len(sets) < FLAG_SETS:
        argv = H._flags(random.Random(f"dryboot-hybrids:{arch}:{i}"), arch, cfg, workdir, False)
        i += 1
        if not any('"model"' in a for a in argv):
            sets.append(argv)
    return sets


def case(arch: str, i: int, argv: list[str], workdir: Path) -> H.Case:
    model = H.materialize_file(workdir, CONFIGS / f"{arch}.json")
    return H.Case(id=f"{arch}-{i}", family=arch, model=model, argv=argv)


def main() -> int:
    python = sys.argv[1]
    wanted = sys.argv[2:] or list(ARCHITECTURES)
    doc: dict[str, Any] = json.loads(RECORDED.read_text()) if RECORDED.exists() else {"cases": {}}
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        cases = [case(a, i, argv, work) for a in wanted for i, argv in enumerate(flag_sets(a, work))]
        runner = H.OracleRunner(python, jobs=1)
        res = runner.run([c.oracle_input() for c in cases])
    doc["vllm_version"] = next((m["vllm_version"] for m in runner.meta if m.get("vllm_version")), "?")
    for a in wanted:
        doc["cases"][a] = [
            {"argv": c.argv, "vllm": {k: res[c.id].get(k) for k in KEEP}} for c in cases if c.family == a
        ]
    RECORDED.write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n")
    for a in wanted:
        rows = doc["cases"][a]
        print(f"{a}: {len(rows)} flag sets, {sum(1 for r in rows if r['vllm']['ok'])} planned by vLLM")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(H.REPO / "src"))
    sys.exit(main())
