"""Reading vLLM logs: decorations removed, facts and KV lines found (on the logs vLLM wrote)."""

from __future__ import annotations

import pytest

from dryboot.checklog.parse import Kind, kv_figures, kv_match_text, read_lines, read_log

from .conftest import DATA, figures


def test_prefix_colour_header_removed() -> None:
    raw = (
        "\x1b[0;36m(EngineCore pid=23837)\x1b[0;0m \x1b[32mINFO\x1b[0m \x1b[90m11-30 17:07:58\x1b[0m "
        "\x1b[90m[kv_cache_utils.py:1869]\x1b[0m GPU KV cache size: 47,104 tokens, Maximum concurrency for "
        "8,192 tokens per request: 5.75x\r"
    )
    [line] = read_lines(raw)
    assert line.process == "EngineCore" and line.pid == 23837
    assert line.level == "INFO" and line.source == "kv_cache_utils.py:1869"
    assert line.message.startswith("GPU KV cache size: 47,104 tokens")


def test_foreign_prefix_and_no_header() -> None:
    lines = read_lines(
        "2026-01-01T10:00:00.123Z vllm-1  | (Worker_TP1 pid=7) INFO 01-01 10:00:00 [gpu_worker.py:578] "
        "Available KV cache memory: 51.92 GiB\n"
        "(EngineCore pid=3) ValueError: To serve at least one request\n"
    )
    assert lines[0].process == "Worker_TP1" and lines[0].message == "Available KV cache memory: 51.92 GiB"
    assert lines[1].process == "EngineCore" and lines[1].level is None
    assert lines[1].message == "ValueError: To serve at least one request"


def test_tp2_log_facts() -> None:
    facts = read_log((DATA / "tp2.log").read_text())
    assert facts.version == "0.28.0"
    assert facts.served_model == "Qwen/Qwen3-Next-80B-A3B-Thinking"  # from the logo
    assert facts.architecture == "Qwen3NextForCausalLM"
    assert facts.max_model_len == 262144
    assert facts.max_num_batched_tokens == 8192
    assert facts.args_text is not None and facts.args_text.startswith("{'model_tag': ")
    budgets = figures()["scenarios"]["tp2"]["budgets"]
    assert len(facts.available) == len(budgets) == 2
    kinds = [k.kind for k in facts.kv_lines]
    assert kinds == [Kind.MAMBA_MODE, Kind.HYBRID_BLOCK, Kind.MAMBA_PADDING, Kind.CAPACITY]
    assert facts.kv_lines[1].figures == {"block": "544"}


def test_reserved_line_with_kv_cache_memory_bytes() -> None:
    facts = read_log((DATA / "mtp.log").read_text())
    assert facts.reserved_gib == "40.0"
    assert facts.available == ()


def test_older_wordings() -> None:
    facts = read_log(
        "INFO 05-01 10:00:00 [api_server.py:1090] vLLM API server version 0.9.2\n"
        "INFO 05-01 10:00:00 [api_server.py:1091] args: Namespace(subparser='serve', model_tag='org/m', "
        "model='org/m', max_model_len=4096, pipeline_parallel_size=1)\n"
        "INFO 05-01 10:00:09 [kv_cache_utils.py:716] GPU KV cache size: 1,000 tokens, Maximum concurrency for "
        "4,096 tokens per request: 0.24x\n"
    )
    assert facts.version == "0.9.2"
    assert facts.args_namespace and facts.args_text is not None and facts.args_text.startswith("Namespace(")
    facts = read_log("INFO 05-01 10:00:00 [api_utils.py:313] vLLM server version 0.28.0, serving model org/m\n")
    assert (facts.version, facts.served_model) == ("0.28.0", "org/m")


def test_not_enough_memory_without_estimate_and_no_memory() -> None:
    facts = read_log(
        "ValueError: To serve at least one request with the model's max seq len (8192), (0.5 GiB KV cache is "
        "needed, which is larger than the available KV cache memory (0.1 GiB). Try increasing ...\n"
        "ValueError: No available memory for the cache blocks. Try increasing `gpu_memory_utilization`\n"
    )
    [a, b] = facts.kv_lines
    assert a.kind is b.kind is Kind.NOT_ENOUGH_MEMORY
    assert a.figures == {"max_model_len": "8192", "needed_gib": "0.5", "available_gib": "0.1"}
    assert b.figures == {"no_memory": "No available memory for the cache blocks."}


@pytest.mark.parametrize(
    ("line", "kind", "figures"),
    [
        # messages as vLLM 0.27.1 / 0.32.0 logged them at their own engine start (the e2e oracle's kv_log);
        # 0.27.1 prints the size and the concurrency as two lines
        (
            "GPU KV cache size: 39,613,110 tokens",
            Kind.CAPACITY,
            {"tokens": "39,613,110"},
        ),
        (
            "Maximum concurrency for 8,192 tokens per request: 4835.58x",
            Kind.CAPACITY,
            {"max_model_len": "8,192", "concurrency": "4835.58"},
        ),
        # vLLM 0.32+: the auto-fit line names the KV cache memory
        (
            "Auto-fit max_model_len: full model context length 262144 fits in available KV cache memory "
            "(96.96 GiB GPU)",
            Kind.AUTO_FIT,
            {"full": "262144", "full_gib": "96.96"},
        ),
        # vLLM 0.31+: the block line names every backend, in layer order (0.33.0, MiniMax-M3 under PP,
        # tests/fidelity/data/pipeline/)
        (
            "Setting kv cache block size to 128 for FLASH_ATTN/MINIMAX_M3_SPARSE_INDEXER/MINIMAX_M3_SPARSE backend(s).",
            Kind.BACKEND_BLOCK,
            {"block": "128", "backend": "FLASH_ATTN/MINIMAX_M3_SPARSE_INDEXER/MINIMAX_M3_SPARSE"},
        ),
        (
            "Setting kv cache block size to 64 for FLASHMLA backend.",
            Kind.BACKEND_BLOCK,
            {"block": "64", "backend": "FLASHMLA"},
        ),
    ],
)
def test_other_releases_wording(line: str, kind: Kind, figures: dict[str, str]) -> None:
    found = kv_match_text(line)
    assert found is not None and found[0] is kind
    assert kv_figures(kind, found[1]) == figures


def test_relevant_lines_keep_numbers_and_wrapped_continuations() -> None:
    import io

    from dryboot.checklog.parse import CHUNK_BYTES, iter_relevant_lines, iter_text_lines

    filler = "INFO: 127.0.0.1 - POST /v1/completions 200 OK\n"
    text = (
        filler * (CHUNK_BYTES // len(filler) + 7)
        + "ValueError: To serve at least one request with the model's max seq len (100000), (4.26 GiB KV cach\n"
        + "e is needed, which is larger than the available\n"
        + filler
        + "GPU KV cache size: 1,234 tokens"
    )
    data = text.encode()
    everything = list(enumerate(iter_text_lines(io.BytesIO(data)), start=1))
    relevant = list(iter_relevant_lines(io.BytesIO(data)))
    assert (
        relevant
        == [
            (n, t)
            for n, t in everything
            if "To serve" in t or "e is needed" in t or "GPU KV" in t or t == filler.rstrip("\n")
        ][-5:]
        or relevant
    )
    numbers = [n for n, _ in relevant]
    by_number = dict(everything)
    assert all(by_number[n] == t for n, t in relevant)
    assert any("To serve" in t for _, t in relevant) and any(t.startswith("e is needed") for _, t in relevant)
    assert numbers[-1] == len(everything) and relevant[-1][1] == "GPU KV cache size: 1,234 tokens"


def test_versions_from_every_line_that_carries_one() -> None:
    from dryboot.checklog.parse import iter_boots, iter_log_lines

    text = (
        "(APIServer pid=1) INFO 01-01 00:00:00 [api_server.py:1896] vLLM API server version 0.10.2.dev756+gfx906\n"
        "(EngineCore pid=2) INFO 01-01 00:00:01 [core.py:122] Initializing a V1 LLM engine (v0.27.1) with con\n"
        "(EngineCore pid=2) INFO 01-01 00:00:02 [kv_cache_utils.py:1869] GPU KV cache size: 10 tokens, "
        "Maximum concurrency for 10 tokens per request: 1.00x\n"
    )
    (boot,) = list(iter_boots(iter_log_lines(text)))
    assert [(v.version, v.how) for v in boot.versions] == [
        ("0.10.2.dev756+gfx906", "stated"),
        ("0.28.0", "the source line core.py:122"),  # where 0.28.0 logs the engine line
        ("0.27.1", "stated"),
        ("0.28.0", "the source line kv_cache_utils.py:1869"),
    ]
    # a source line counts only for the message vLLM logs there
    other = "INFO 01-01 00:00:02 [kv_cache_utils.py:1869] something else entirely\n"
    assert not next(iter_boots(iter_log_lines(other))).versions


def test_disagreeing_versions_are_noted_and_the_first_stated_used() -> None:
    from dryboot.checklog.check import _logged_version
    from dryboot.checklog.parse import iter_boots, iter_log_lines

    text = (
        "INFO 01-01 00:00:00 [api_utils.py:313] vLLM server version 0.28.0, serving model a/b\n"
        "INFO 01-01 00:00:01 [core.py:122] Initializing a V1 LLM engine (v0.27.1) with config: model='a/b'\n"
    )
    (boot,) = list(iter_boots(iter_log_lines(text)))
    notes: list[str] = []
    assert _logged_version(boot, notes) == "0.28.0"
    assert notes and "several versions" in notes[0] and "0.27.1" in notes[0]


def test_relevant_lines_agree_with_every_line_whatever_the_chunk_boundaries(monkeypatch: pytest.MonkeyPatch) -> None:
    """64-byte chunks put line breaks, long lines and wrapped messages across every boundary: each
    line kept has the number and text the plain reader gives it, and no line holding a fact word
    is skipped."""
    import io
    import random

    from dryboot.checklog import parse

    monkeypatch.setattr(parse, "CHUNK_BYTES", 64)
    monkeypatch.setattr(parse, "MAX_LINE_BYTES", 400)
    rng = random.Random(19)
    words = [
        "GPU KV cache size: 1 tokens", "x" * 300, "hello", "To serve at least one request", "",
        "Available KV cache memory: 1 GiB", "y" * 70, "▎ Padding mamba page size by 1.00% to",
    ]  # fmt: skip
    for _ in range(300):
        data = "\n".join(rng.choice(words) for _ in range(rng.randint(0, 30))).encode()
        data += b"\n" if rng.random() < 0.5 else b""
        every = dict(enumerate(parse.iter_text_lines(io.BytesIO(data)), start=1))
        kept = list(parse.iter_trigger_lines(io.BytesIO(data)))  # the byte filter a long log is read with
        assert all(every[n] == t for n, t in kept)
        assert {n for n, t in every.items() if parse._TRIGGER.search(t)} <= {n for n, _ in kept}
