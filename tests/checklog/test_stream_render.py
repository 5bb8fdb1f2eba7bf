"""check-log renders a log boot by boot (issue 28: memory grew with the boots in one file):
the streamed text and JSON are those of the whole report, and a boot is dropped once printed."""

from __future__ import annotations

import gc
import io
import json
import weakref
from collections.abc import Iterator
from pathlib import Path

from dryboot.checklog.check import BootResult, LogReport, iter_check_stream
from dryboot.checklog.render import log_to_dict, render_log, stream_log

from .public_verdicts import REPO, body

CONFIG = str(REPO / "examples" / "models" / "gpt-oss-20b.config.json")
NAME = "vllm-10517-llama31-8b-3090-three-boots.log"


def boots(tmp_path: Path) -> list[BootResult]:
    return list(iter_check_stream(io.BytesIO(body(NAME)), source=NAME, model_path=CONFIG))


def test_streamed_text_and_json_are_the_whole_reports(tmp_path: Path) -> None:
    all_boots = boots(tmp_path)
    assert len(all_boots) == 3
    report = LogReport(NAME, tuple(all_boots))
    text: list[str] = []
    code = stream_log(all_boots, NAME, text.append, as_json=False)
    assert "".join(text) == render_log(report) and code == report.exit_code
    out: list[str] = []
    stream_log(all_boots, NAME, out.append, as_json=True)
    assert json.loads("".join(out)) == json.loads(json.dumps(log_to_dict(report), default=str))


def test_a_printed_boot_is_not_held(tmp_path: Path) -> None:
    template = boots(tmp_path)
    refs: list[weakref.ref[BootResult]] = []
    alive_when_printed: list[int] = []

    def generate() -> Iterator[BootResult]:
        for i in range(30):
            b = BootResult(template[i % 3].facts, template[i % 3].report, template[i % 3].status)
            refs.append(weakref.ref(b))
            yield b

    def echo(_text: str) -> None:
        gc.collect()
        alive_when_printed.append(sum(r() is not None for r in refs))

    stream_log(generate(), NAME, echo, as_json=False)
    assert max(alive_when_printed) <= 3  # the boot printed, the one read ahead, and one in flight
