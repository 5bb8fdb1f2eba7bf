"""Record the verdict dryboot check-log gives each public log in tests/data/checklog/public/INDEX.json
(tests/checklog/public_verdicts.py says what is recorded), keeping the hand-written fields (config,
config_note, features, release, verdict_note). Run after a deliberate change, then read the diff:
tests/checklog/test_public_corpus_change_detector.py compares dryboot's output with the file (a
change detector: what it records is dryboot's own verdict, never vLLM's; the posted figures are
checked against vLLM's in tests/checklog/test_posted_figures.py).

    HF_HUB_CACHE=/nonexistent python scripts/checklog_corpus_verdicts.py
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "checklog"))
from public_verdicts import PUBLIC, verdict  # the tests' own definition

KEPT = ("config", "config_note", "features", "release", "verdict_note")


def main() -> None:
    index_path = PUBLIC / "INDEX.json"
    old = json.loads(index_path.read_text()) if index_path.exists() else {}
    out = {}
    for path in sorted(PUBLIC.glob("*.log")):
        entry = old.get(path.name, {})
        kept = {k: entry.get(k, [] if k == "features" else None if k == "config" else "") for k in KEPT}
        out[path.name] = {**kept, **verdict(path.name, kept["config"])}
    index_path.write_text(json.dumps(out, indent=1, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
