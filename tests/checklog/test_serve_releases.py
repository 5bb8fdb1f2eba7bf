"""``plan --serve`` reads the command line with the planned release's parser: one options table
per release 0.27.1-0.33.0 (``data/vllm-<release>-serve-options.json``, written by
``scripts/vllm_serve_options.py`` from each boot environment's vLLM), and ``--engram-config``
(0.30.0+) mapped onto the weights walk's ``Parallel.engram_cpu_offload``.

The Qwen4-Exp PLE figures are vLLM's own (``tests/fidelity/data/weights/qwen4-exp-side/
recorded-0.33.0.json``, ``arch--qwen4-ple`` with ``--engram-config '{"cpu_offload": false}'``).
"""

from __future__ import annotations

import json
import re
import shutil
from importlib import resources
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from dryboot.checklog.serve import PARSER_VERSION, _table, parse_serve, parser_release
from dryboot.cli import cli
from dryboot.errors import InputError
from dryboot.vllm.versions import VERSIONS

from .conftest import REPO

RELEASES = tuple(VERSIONS)
FIDELITY = REPO / "tests" / "fidelity" / "data"
PLE_CONFIG = FIDELITY / "refused-0.33" / "configs" / "qwen4-ple.json"
QWEN_NEXT = REPO / "examples" / "models" / "Qwen3-Next-80B-A3B-Thinking.config.json"
ENGRAM_OFF = "--engram-config '{\"cpu_offload\": false}'"


def _doc(release: str) -> dict[str, Any]:
    text = resources.files("dryboot").joinpath("data", f"vllm-{release}-serve-options.json").read_text()
    out: dict[str, Any] = json.loads(text)
    return out


def _strings(release: str) -> set[str]:
    return {s for o in _doc(release)["options"] if not o.get("positional") for s in o["options"]}


@pytest.mark.parametrize("release", RELEASES)
def test_every_release_has_its_table(release: str) -> None:
    doc = _doc(release)
    assert doc["vllm"] == release
    assert 280 <= len(doc["options"]) <= 330 and len(doc["environment"]) >= 280


def test_the_tables_differ_as_the_releases_do() -> None:
    """What each release added or removed (read from the tables, checked here by name)."""
    assert "--calculate-kv-scales" in _strings("0.27.1") and "--calculate-kv-scales" not in _strings("0.28.0")
    assert "--engram-config" not in _strings("0.29.0")
    assert all("--engram-config" in _strings(r) for r in ("0.30.0", "0.31.0", "0.32.0", "0.33.0"))
    assert "--disable-prefix-caching" in _strings("0.33.0") and "--disable-prefix-caching" not in _strings("0.32.0")


def test_an_option_only_a_newer_release_has() -> None:
    line = f"vllm serve m/x {ENGRAM_OFF}"
    assert parse_serve(line, {}, version="0.33.0").args["engram_config"] == {"cpu_offload": False}
    for old in ("0.28.0", "0.29.0"):
        with pytest.raises(InputError, match=re.escape(f"vLLM {old}'s 'vllm serve' has no such option")) as e:
            parse_serve(line, {}, version=old)
        assert str(e.value).startswith("--serve: --engram-config: ")
    # the default stays 0.28.0's parser
    with pytest.raises(InputError, match=re.escape("vLLM 0.28.0's")):
        parse_serve(line, {})


def test_an_option_a_newer_release_removed() -> None:
    assert parse_serve("vllm serve m/x --calculate-kv-scales", {}, version="0.27.1").args["calculate_kv_scales"]
    with pytest.raises(InputError, match=re.escape("vLLM 0.28.0's 'vllm serve' has no such option")):
        parse_serve("vllm serve m/x --calculate-kv-scales", {}, version="0.28.0")


def test_a_patch_release_reads_its_minor_release_table() -> None:
    assert parser_release("0.31.2") == "0.31.0" and parser_release("0.34.1") == "0.33.0"
    assert parse_serve("vllm serve m/x", {}, version="0.31.2").version == "0.31.0"
    with pytest.raises(InputError, match=re.escape("vLLM 0.31.0's")):
        parse_serve("vllm serve m/x --device-memory-utilization-x 1", {}, version="0.31.2")
    with pytest.raises(InputError, match=re.escape("0.27.1 and later")):
        parse_serve("vllm serve m/x", {}, version="0.26.0")


def test_033_enable_disable_pairs() -> None:
    """0.33.0's ``EnableDisableAction``: ``--disable-X`` sets ``enable_X`` false and the reverse;
    the old ``--no-`` forms still parse (hidden from help); 0.32.0 has no ``--disable-`` pair."""
    a = parse_serve(
        "vllm serve m/x --disable-prefix-caching --enable-cascade-attn --no-enable-chunked-prefill",
        {},
        version="0.33.0",
    ).args
    assert a["enable_prefix_caching"] is False and a["disable_cascade_attn"] is False
    assert a["enable_chunked_prefill"] is False
    assert (
        parse_serve("vllm serve m/x --enable-sliding-window", {}, version="0.33.0").args["disable_sliding_window"]
        is False
    )
    with pytest.raises(InputError, match=re.escape("vLLM 0.32.0's")):
        parse_serve("vllm serve m/x --disable-prefix-caching", {}, version="0.32.0")


@settings(max_examples=150, deadline=None)
@given(st.sampled_from(RELEASES), st.data())
def test_every_option_of_a_release_parses_there(release: str, data: st.DataObject) -> None:
    """Any option string of a release's table is read by that release's parser: a boolean one
    sets its destination to whether the string is not a negative form, a value one takes a word."""
    options, _ = _table(release)
    # --model and --config are read before the options (the model moved first, the file's keys inserted)
    free = sorted(s for s, o in options.items() if s.startswith("--") and o.dest not in ("model", "config"))
    name = data.draw(st.sampled_from(free))
    opt = options[name]
    if opt.kind == "bool-optional":
        assert parse_serve(["vllm", "serve", "m/x", name], {}, version=release).args[opt.dest] is (
            name not in opt.negative
        )
    elif opt.kind == "flag":
        assert opt.dest in parse_serve(["vllm", "serve", "m/x", name], {}, version=release).args
    elif opt.nargs != "?" and opt.nargs != 0:
        words = ["vllm", "serve", "m/x", name, "1"]
        assert opt.dest in parse_serve(words, {}, version=release).args


@pytest.fixture
def ple_model(tmp_path: Path) -> Path:
    """The tiny Qwen4-Exp PLE config vLLM's figures were recorded on (a stand-in, no checkpoint)."""
    shutil.copy(PLE_CONFIG, tmp_path / "config.json")
    return tmp_path


def _plan(*args: str) -> tuple[int, dict[str, Any], str]:
    r = CliRunner().invoke(cli, ["plan", "--json", *args], catch_exceptions=False)
    out = r.stdout if hasattr(r, "stdout") else r.output
    start = out.find("{")
    return r.exit_code, (json.loads(out[start:]) if start >= 0 else {}), r.output


def _recorded(tp: int) -> int:
    doc = json.loads((FIDELITY / "weights" / "qwen4-exp-side" / "recorded-0.33.0.json").read_text())
    cases = doc.get("cases", doc)
    for row in cases.values():
        if row["config"] == "arch--qwen4-ple" and row["argv"] == [
            "--tensor-parallel-size",
            str(tp),
            "--engram-config",
            '{"cpu_offload": false}',
        ]:
            return int(row["allocated_bytes"])
    raise AssertionError(tp)


@pytest.mark.parametrize("tp", [1, 2])
def test_engram_cpu_offload_false_sizes_the_tables_on_the_gpu(ple_model: Path, tp: int) -> None:
    base = ["--vllm-version", "0.33.0", "--gpu", "H100"]
    code, doc, out = _plan(*base, "--serve", f"vllm serve {ple_model} -tp {tp} {ENGRAM_OFF}")
    assert code in (0, 4), out
    stages = doc["weights"]["stages"]
    assert doc["weights"]["refused"] is None and stages[0]["allocated_bytes"] == _recorded(tp)
    assert "engram_config cpu_offload false" in out
    # vLLM's default (cpu_offload true) stays refused by name; the KV figures do not move
    code, default, out = _plan(*base, "--serve", f"vllm serve {ple_model} -tp {tp}")
    assert "--engram-config" in (default["weights"]["refused"] or "")
    assert "--engram-config" in json.dumps(default["budget"])  # no weights: no budget predicted from --gpu
    for key in ("layers", "grouping", "block_size", "mamba_page_size_bytes", "max_model_len"):
        assert default[key] == doc[key], key


@pytest.mark.parametrize(
    ("value", "match"),
    [
        ('{"cpu_offload": false, "use_thp": true}', "use_thp: requires cpu_offload true"),
        ('{"cpu_offload": false, "dp_shared_memory": true}', "dp_shared_memory: requires cpu_offload true"),
        ('{"dp_shared_memory": true}', "requires data_parallel_size > 1"),
        ('{"offload": false}', "EngramConfig has no such field"),
        ('{"cpu_offload": "no"}', "expected true or false"),
    ],
)
def test_engram_config_refusals(ple_model: Path, value: str, match: str) -> None:
    code, _, out = _plan("--vllm-version", "0.33.0", "--serve", f"vllm serve {ple_model} --engram-config '{value}'")
    assert code == 2 and match in out, out


def test_engram_across_dp_with_several_ranks_refused(ple_model: Path) -> None:
    line = f'vllm serve {ple_model} -dp 2 --engram-config \'{{"cpu_offload": false, "embedding_across_dp": true}}\''
    code, _, out = _plan("--vllm-version", "0.33.0", "--serve", line)
    assert code == 2 and "engram_config.embedding_across_dp" in out, out


def test_engram_config_on_a_model_without_ngram_layers(tmp_path: Path) -> None:
    """vLLM's ``EngramConfig.verify_model_config`` refuses it; so does dryboot, by name."""
    shutil.copy(QWEN_NEXT, tmp_path / "config.json")
    code, _, out = _plan("--vllm-version", "0.33.0", "--serve", f"vllm serve {tmp_path} {ENGRAM_OFF}")
    assert code == 2 and "engram_config" in out and "no n-gram embedding layers" in out, out


def test_default_parser_release_unchanged() -> None:
    assert PARSER_VERSION == "0.28.0" and parse_serve("vllm serve m/x", {}).version == "0.28.0"


def test_check_log_notes_a_logged_engram_config() -> None:
    """check-log's logged args line (any form, an ``EngramConfig(...)`` repr too) is noted, not parsed:
    the logged boot's weights already hold where the tables live, and no KV figure reads it."""
    from dryboot.checklog.argmap import map_args
    from dryboot.checklog.literal import Opaque

    logged = map_args({"engram_config": Opaque("EngramConfig(cpu_offload=False)")}, "log")
    assert logged.notes == (
        "ignored engram_config: where the n-gram embedding tables live (the weights), not the KV cache",
    )
    assert logged.engram_cpu_offload is True


@pytest.mark.parametrize("release", RELEASES)
def test_every_option_of_every_release_is_classified(release: str) -> None:
    """No option of any release's parser falls to the "not an argument dryboot knows" note: each
    is mapped, located, refused (with its neutral values), measured, or known not to touch the KV cache."""
    from dryboot.checklog.argmap import HARMLESS_PATTERNS, MAPPED, MEASURED, PLANNED_ONLY, REFUSED

    special = {"model", "model_tag", "hf_config_path", "revision", "speculative_config", "attention_config"}
    special |= {"spec_method", "spec_model", "spec_tokens"}
    special |= {"performance_mode", "engram_config", "cudagraph_capture_sizes", "max_cudagraph_capture_size"}
    known = set(MAPPED) | set(REFUSED) | set(MEASURED) | set(PLANNED_ONLY) | special
    dests = {o["dest"] for o in _doc(release)["options"] if not o.get("positional")}
    assert sorted(d for d in dests if d not in known and not HARMLESS_PATTERNS.match(d)) == []


def test_a_newer_release_option_that_changes_the_cache_is_refused() -> None:
    line = "vllm serve m/x --enable-mamba-shared-prefix-checkpoint"
    cmd = parse_serve(line, {}, version="0.33.0")
    from dryboot.checklog.argmap import map_args

    with pytest.raises(InputError, match="enable_mamba_shared_prefix_checkpoint: True changes the KV cache"):
        map_args(cmd.args, "--serve", label="", plan=True)
    with pytest.raises(InputError, match=re.escape("vLLM 0.30.0's")):
        parse_serve(line, {}, version="0.30.0")
