"""Record the verdict dryboot check-log gives each public log in tests/data/checklog/public/INDEX.json
(exit code, each boot's status, each KV line's status, the flag combinations that explain it),
keeping the hand-written fields (config, config_note, features, release, verdict_note). Run after a
deliberate change, then read the diff: tests/checklog/test_public_corpus.py checks the file.

    HF_HUB_CACHE=/nonexistent python scripts/checklog_corpus_verdicts.py
"""

from __future__ import annotations

import io
import json
from pathlib import Path

from dryboot.checklog.check import check_stream
from dryboot.errors import InputError


def main() -> None:
    idx_path = Path("tests/data/checklog/public/INDEX.json")
    old = json.loads(idx_path.read_text()) if idx_path.exists() else {}
    out = {}
    for f in sorted(Path("tests/data/checklog/public").glob("*.log")):
        e = old.get(f.name, {})
        body = f.read_bytes().split(b"\n", 1)[1]
        cfg = e.get("config")
        try:
            r = check_stream(io.BytesIO(body), source=f.name, model_path=cfg)
            code = r.exit_code
            boots = [b.status for b in r.boots]
            first = next((b.reason for b in r.boots if b.reason), None)
            lines = [[c.status for c in b.report.comparison.checks] if b.report else [] for b in r.boots]
            explained = [
                [c.describe() for c in b.report.search.explaining] if b.report and b.report.search else []
                for b in r.boots
            ]
        except InputError as ex:
            code, boots, first, lines, explained = 2, ["refused"], ex.reason, [], []
        out[f.name] = {
            "config": cfg,
            "config_note": e.get("config_note", ""),
            "features": e.get("features", []),
            "release": e.get("release", ""),
            "exit": code,
            "boots": boots,
            "reason": first,
            "lines": lines,
            "explained_by": explained,
            "verdict_note": e.get("verdict_note", ""),
        }
    idx_path.write_text(json.dumps(out, indent=1, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
