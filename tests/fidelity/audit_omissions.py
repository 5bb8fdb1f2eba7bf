"""Field-omission audit: published configs with one optional field dropped, dryboot against vLLM.

A published ``config.json`` of the corpus (``tests/data/configs/public/``, ``test_corpus.py``) with one
field left out (``num_key_value_heads``, ``head_dim``, ``rope_scaling``, ``sliding_window``,
``tie_word_embeddings``, ``max_position_embeddings``, ``intermediate_size``...: :data:`FIELDS`) is what
a hand-written or trimmed config looks like. Each such config must be planned as vLLM plans it (its
config class's default) or refused by name; a figure that differs from vLLM's engine start is a silent
wrong answer. The field is dropped where the config holds it: at the top level, else in ``text_config``.

    DRYBOOT_VLLM_PYTHON=~/.cache/dryboot/boot-env/0.28.0/bin/python \\
        python tests/fidelity/audit_omissions.py --configs 8 --seed 0 --jobs 1 [--fields head_dim,...]

runs every (config, field) case of ``--configs`` corpus configs drawn by ``--seed`` (or those named by
``--config``; drafters and configs whose recorded 0.28.0 answer is not served are left out) through the
end-to-end harness (``e2e_harness.run_harness``: the oracle, ``dryboot plan --json``, ``compare``), and
prints each disagreement by kind: ``silent`` (both serve, figures differ), ``dryboot-serves`` (vLLM
refuses), ``dryboot-refuses`` (vLLM serves: a gap, refused by name) and ``refusals-differ``. The
report (every row, both answers) goes to ``--report``. Nothing here is recorded: a finding becomes a recorded case in
``test_releases.py`` (``CASES``).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import e2e_harness as H
import test_corpus as C

#: the optional fields dropped, one at a time (each only where the config holds it)
FIELDS = (
    "num_key_value_heads",
    "head_dim",
    "rope_scaling",
    "rope_parameters",
    "rope_theta",
    "partial_rotary_factor",
    "sliding_window",
    "use_sliding_window",
    "max_window_layers",
    "layer_types",
    "tie_word_embeddings",
    "max_position_embeddings",
    "intermediate_size",
    "moe_intermediate_size",
    "num_experts_per_tok",
    "torch_dtype",
    "dtype",
)
#: the flags of every case: a KV budget, and vLLM's own max_model_len (derived from what is left)
ARGV = ["--kv-cache-memory-bytes", "20000000000"]


def served_on_record(name: str) -> bool:
    """Whether vLLM 0.28.0's recorded answer to corpus config ``name``'s first flag set is served."""
    rows = C.RECORDED.get(name) or []
    return bool(rows) and bool(rows[0].get("vllm", {}).get("ok"))


def without(cfg: dict[str, Any], key: str) -> dict[str, Any] | None:
    """``cfg`` with ``key`` left out (the top level's, else ``text_config``'s), or ``None`` if it holds none."""
    if key in cfg:
        return {k: v for k, v in cfg.items() if k != key}
    text = cfg.get("text_config")
    if isinstance(text, dict) and key in text:
        return {**cfg, "text_config": {k: v for k, v in text.items() if k != key}}
    return None


def omission_cases(name: str, fields: tuple[str, ...], argv: list[str]) -> list[H.Case]:
    """One case per field of ``fields`` that corpus config ``name`` holds: its published files
    (``test_corpus.materialize``) with that field left out of ``config.json``."""
    base = Path(C.materialize(name))
    cfg = C.read_config(name)
    cases = []
    for key in fields:
        changed = without(cfg, key)
        if changed is None:
            continue
        d = H.default_workdir() / "omissions" / f"{name}--no-{key}"
        d.mkdir(parents=True, exist_ok=True)
        for f in base.iterdir():
            if f.is_file() and f.name != "config.json":
                (d / f.name).write_bytes(f.read_bytes())
        (d / "config.json").write_text(json.dumps(changed, indent=1))
        cases.append(H.Case(id=f"{name}-no-{key}", family=f"omit:{key}", model=str(d), argv=list(argv), source=name))
    return cases


def kind(row: dict[str, Any]) -> str:
    """A disagreement's kind (see the module's docstring)."""
    v_ok, d_ok = bool(row["vllm"].get("ok")), not row["dryboot"].get("refused")
    if v_ok and d_ok:
        return "silent"
    if d_ok:
        return "dryboot-serves"
    if v_ok:
        return "dryboot-refuses"
    return "refusals-differ"


def pick(configs: int, seed: int, named: list[str]) -> list[str]:
    """The corpus configs audited: ``named``, else ``configs`` drawn by ``seed`` among the served ones."""
    if named:
        return named
    pool = [n for n in C.corpus_dirs() if n not in C.DRAFTERS and served_on_record(n)]
    return sorted(random.Random(f"dryboot-omit:{seed}").sample(pool, min(configs, len(pool))))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--configs", type=int, default=8, help="corpus configs drawn (default 8)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--config", action="append", default=[], help="a corpus directory to audit (repeatable)")
    ap.add_argument("--fields", default=",".join(FIELDS), help="comma-separated fields to drop")
    ap.add_argument("--max-cases", type=int, default=0, help="keep the first N cases (0: all)")
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--python", default=os.environ.get("DRYBOOT_VLLM_PYTHON"))
    ap.add_argument("--vllm-version", default=None, help="dryboot's --vllm-version (default: the oracle's)")
    ap.add_argument("--report", default=str(H.REPO / ".omissions-report.json"))
    ap.add_argument("--oracle-results", help="as e2e_harness.py's: saved oracle answers, reused when present")
    args = ap.parse_args(argv)
    if not args.python:
        ap.error("give --python or set DRYBOOT_VLLM_PYTHON")
    fields = tuple(f for f in args.fields.split(",") if f)
    cases = [c for n in pick(args.configs, args.seed, args.config) for c in omission_cases(n, fields, ARGV)]
    if args.max_cases:
        cases = cases[: args.max_cases]
    print(f"{len(cases)} cases", flush=True)
    rep = H.run_harness(
        cases,
        args.python,
        jobs=args.jobs,
        vllm_version=args.vllm_version,
        oracle_results=Path(args.oracle_results) if args.oracle_results else None,
    )
    Path(args.report).write_text(
        json.dumps({"vllm_version": rep.vllm_version, "rows": rep.rows}, indent=1, default=str)
    )
    bad = [r for r in rep.rows if not r["verdict"]["agree"]]
    served = sum(1 for r in rep.rows if r["verdict"]["agree"] and not r["verdict"]["both_refuse"])
    print(f"{rep.agreed}/{rep.total} agree ({served} served, {rep.agreed - served} refused by both)")
    print(f"disagreements by kind: {dict(Counter(kind(r) for r in bad))}")
    for r in sorted(bad, key=kind):
        print(f"\n[{kind(r)}] {r['id']}\n  vllm:    {r['vllm_answer']}\n  dryboot: {r['dryboot_answer']}")
        print(f"  {r['command']}")
    print(f"\nreport: {args.report}")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(H.REPO / "src"))
    sys.exit(main())
