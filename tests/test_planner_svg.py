"""The picture of the KV pool (--svg), read back as XML: its rows, labels and proportions are
vLLM's figures (the README example's boot log, docs/kv-geometry-rules.md section 7)."""

from __future__ import annotations

import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
MODELS = REPO / "examples" / "models"
NS = {"svg": "http://www.w3.org/2000/svg"}
README_PLAN = [
    "plan",
    "--model",
    str(MODELS / "Qwen3-Next-80B-A3B-Thinking.config.json"),
    "--max-model-len",
    "262144",
    "--kv-cache-memory",
    "40G",
]


def dryboot(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "dryboot", *args], capture_output=True, text=True, cwd=REPO, timeout=120
    )


def by_class(root: ET.Element, cls: str) -> list[ET.Element]:
    return [e for e in root.iter() if cls in (e.get("class") or "").split()]


def texts(root: ET.Element) -> list[str]:
    return ["".join(t.itertext()) for t in root.iter(f"{{{NS['svg']}}}text")]


def width(e: ET.Element) -> float:
    return float(e.get("width", "0"))


@pytest.fixture(scope="module")
def readme_svg(tmp_path_factory: pytest.TempPathFactory) -> ET.Element:
    out = tmp_path_factory.mktemp("svg") / "pool.svg"
    r = dryboot(*README_PLAN, "--svg", str(out))
    assert r.returncode == 0, r.stderr
    assert "GPU KV cache size: 1,725,423 tokens" in r.stdout  # the report is printed as well
    return ET.parse(out).getroot()


def test_one_row_per_group_with_its_layers_and_page(readme_svg: ET.Element) -> None:
    # vLLM 0.28.0: three mamba groups and one full-attention group of 12 layers, page 1,114,112 B, block 544
    rows = by_class(readme_svg, "group-row")
    assert [r.get("data-kind") for r in rows] == ["mamba", "mamba", "mamba", "full"]
    assert {(r.get("data-layers"), r.get("data-page-bytes"), r.get("data-block-size")) for r in rows} == {
        ("12", "1114112", "544")
    }
    assert all(len(by_class(r, "layer")) == 12 for r in rows)
    assert by_class(readme_svg, "padding-layer") == []


def test_mamba_padding_inside_the_page_is_drawn_to_scale(readme_svg: ET.Element) -> None:
    # the GDN state is 1,097,728 B, padded by 16,384 B to the attention page: vLLM logs 1.49%
    mamba = by_class(readme_svg, "group-row")[0]
    [content] = by_class(mamba, "page-content")
    [padding] = by_class(mamba, "page-padding")
    assert (content.get("data-bytes"), padding.get("data-bytes")) == ("1097728", "16384")
    assert width(content) / (width(content) + width(padding)) == pytest.approx(1_097_728 / 1_114_112)
    assert any("1,114,112 (+1.49% padding)" in t for t in texts(mamba))
    full = by_class(readme_svg, "group-row")[3]
    assert by_class(full, "page-padding") == []
    assert width(by_class(full, "page-content")[0]) == pytest.approx(width(content) + width(padding))


def test_blocks_per_request_and_pool_are_to_scale(readme_svg: ET.Element) -> None:
    # one 262,144-token request: cdiv(262144, 544) = 482 blocks of full attention, 2 per mamba group
    rows = by_class(readme_svg, "group-row")
    bars = [by_class(r, "request-blocks")[0] for r in rows]
    assert [b.get("data-blocks") for b in bars] == ["2", "2", "2", "482"]
    assert width(bars[3]) / width(bars[0]) == pytest.approx(482 / 2)
    [pool] = by_class(readme_svg, "pool")
    assert (pool.get("data-num-blocks"), pool.get("data-blocks-per-request")) == ("3212", "488")
    share = width(by_class(pool, "request-share")[0]) / width(by_class(pool, "pool-bar")[0])
    assert share == pytest.approx(488 / 3212)
    labels = texts(readme_svg)
    assert (
        "vLLM: GPU KV cache size: 1,725,423 tokens, Maximum concurrency for 262,144 tokens per request: 6.58x" in labels
    )
    assert any("Setting attention block size to 544 tokens" in t for t in labels)


def test_profiles_draw_one_picture_per_profile_and_arm(tmp_path: Path) -> None:
    out = tmp_path / "pictures"
    r = dryboot("profiles", str(REPO / "examples" / "reference-deployment.toml"), "--svg", str(out))
    assert r.returncode == 1  # the upstream arm does not fit (README)
    names = sorted(p.name for p in out.iterdir())
    assert len(names) == 4 * 3
    assert "CTX=fast_DFLASH_TOKENS=15--main.svg" in names
    # section 7: the patched grouping makes 9 groups of 8 with 3 padding layers in the drafter's group
    main = ET.parse(out / "CTX=huge--main.svg").getroot()
    rows = by_class(main, "group-row")
    assert len(rows) == 9
    assert [len(by_class(r, "padding-layer")) for r in rows] == [0] * 8 + [3]
    assert rows[-1].get("data-kind") == "sliding"
    # the bf16 drafter at block 128 has its page padded up to the 1,827,840 B primary page
    [drafter_pad] = by_class(rows[-1], "page-padding")
    [drafter_content] = by_class(rows[-1], "page-content")
    assert int(drafter_pad.get("data-bytes", "0")) + int(drafter_content.get("data-bytes", "0")) == 1_827_840
    assert any("268,169 tokens" in t for t in texts(main))
    # upstream: group_size 5 over buckets 48 / 16 / 5 -> 15 groups, 2 + 4 padding layers
    upstream = ET.parse(out / "CTX=huge--upstream.svg").getroot()
    assert len(by_class(upstream, "group-row")) == 15
    assert len(by_class(upstream, "padding-layer")) == 6
    assert by_class(upstream, "needed-bar") and by_class(upstream, "available-bar")


def test_svg_is_not_on_the_command_lines_import_path() -> None:
    r = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "dryboot", *README_PLAN],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=60,
    )
    assert r.returncode == 0
    assert "dryboot.planner.svg" not in r.stderr and "drawsvg" not in r.stderr


def test_unwritable_svg_is_one_line_and_exit_2(tmp_path: Path) -> None:
    target = tmp_path / "no" / "such" / "dir" / "pool.svg"
    r = dryboot(*README_PLAN, "--svg", str(target))
    assert r.returncode == 2
    assert r.stderr.strip().splitlines() == [
        f"dryboot: error: --svg: {target}: cannot write: No such file or directory"
    ]
    assert r.stdout == ""
