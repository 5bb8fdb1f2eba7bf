"""``dryboot matrix`` on the modelled example (no boot environment): the reference deployment's
profiles x four GPUs, vLLM 0.28.0's rules against the deployment's, its published rows."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from dryboot.cli import cli
from dryboot.matrix.cache import Cache
from dryboot.matrix.local import LocalBackend
from dryboot.matrix.run import run_matrix
from dryboot.matrix.spec import load_matrix
from dryboot.matrix.table import render_table

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "policies-matrix.toml"
#: The deployment's rows (docs/kv-geometry-rules.md section 7): block size, GPU KV cache tokens.
ROWS = {"CTX=fast": (448, 68605), "CTX=long": (864, 136429), "CTX=fast DFLASH_TOKENS=15": (480, 57669)}


def test_the_example_gives_the_deployments_rows_on_every_gpu(tmp_path: Path) -> None:
    res = CliRunner().invoke(cli, ["matrix", str(EXAMPLE), "--json", "--cache-dir", str(tmp_path), "--workers", "1"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.output)
    assert doc["gpus"] == ["RTX 3090", "RTX 4090", "L40S", "H100"] and doc["arms"] == ["0.28.0", "deployment"]
    assert len(doc["cells"]) == 16 and doc["exit_code"] == 0
    for cell in doc["cells"]:
        mine, theirs = cell["arms"]["deployment"], cell["arms"]["0.28.0"]
        if cell["flag_set"] == "CTX=huge":
            assert cell["agreement"] == "both refuse" and "kvarn" in mine["reason"]
            continue
        assert (mine["block_size"], mine["tokens"]) == ROWS[cell["flag_set"]]
        assert theirs["status"] == "refused" and "max seq len" in theirs["reason"]
        assert cell["agreement"] == "differs" and cell["status"] == "met"
        assert any("engine start: 0.28.0 refuses, deployment starts" in c for c in cell["changes"])
    # the second run answers every task from the cache
    again = CliRunner().invoke(cli, ["matrix", str(EXAMPLE), "--json", "--cache-dir", str(tmp_path), "--workers", "1"])
    assert json.loads(again.output)["cache_hits"] == 16 * 3


def test_an_unmet_expectation_is_exit_1_and_named(tmp_path: Path) -> None:
    text = EXAMPLE.read_text().replace('all = "differs"', 'all = "identical"')
    p = tmp_path / "m.toml"
    p.write_text(text.replace('profiles = "', f'profiles = "{EXAMPLE.parent}/'))
    res = CliRunner().invoke(cli, ["matrix", str(p), "--no-cache", "--workers", "1"])
    assert res.exit_code == 1
    assert "0 of 16 cells met" not in res.output and "4 of 16 cells met; 12 not" in " ".join(res.output.split())
    assert "expected identical, the arms differs" in " ".join(res.output.split())


@pytest.mark.parametrize("width", [60, 100, 240])
def test_the_table_fits_the_width(tmp_path: Path, width: int) -> None:
    m = load_matrix(EXAMPLE, tmp_path / "models")
    with LocalBackend(1) as backend:
        res = run_matrix(m, backend, Cache(None), None, tmp_path / "work")
    lines = render_table(res, width)
    assert all(len(line) <= width for line in lines if "/" not in line), [x for x in lines if len(x) > width][:3]
    assert any("448/68,605" in line for line in lines)


@pytest.mark.skipif(
    importlib.util.find_spec("dryboot.matrix.report_html") is not None, reason="this build has the HTML report"
)
def test_a_report_this_build_lacks_is_exit_2(tmp_path: Path) -> None:
    res = CliRunner().invoke(cli, ["matrix", str(EXAMPLE), "--html", str(tmp_path / "r.html"), "--no-cache"])
    assert res.exit_code == 2 and "not available in this build" in res.output
