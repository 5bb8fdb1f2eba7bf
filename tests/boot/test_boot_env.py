"""dryboot boot in the vLLM 0.28.0 boot environment: trees' own code, patched and pristine.

Needs the environment (``tests/boot/conftest.py``); CI builds it. The patches are dryboot's own
(``examples/patches``, ``tests/boot/data/patches``), applied with ``dryboot series apply`` to a
scratch copy of the environment's installed (pristine) vLLM 0.28.0.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from dryboot.boot.session import BootSession, resolve_tree
from dryboot.boot.trees import scratch_copy

REPO = Path(__file__).resolve().parents[2]
PATCHES = Path(__file__).resolve().parent / "data" / "patches"
MODELS = REPO / "examples" / "models"
LLAMA = REPO / "tests" / "fidelity" / "data" / "releases" / "nullblk"
SMALL = ["--max-model-len", "1024", "--kv-cache-memory-bytes", "13107200"]

pytestmark = pytest.mark.slow


def dryboot(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "dryboot", *args], capture_output=True, text=True, check=False)


def patched(pristine: Path, series: Path, dest: Path) -> Path:
    """``series`` applied by ``dryboot series apply`` to a scratch copy of the pristine tree."""
    scratch_copy(pristine, dest)
    r = dryboot("series", "apply", str(series), "--to", str(dest))
    assert r.returncode == 0, r.stdout + r.stderr
    return dest


def boot_json(python: str, tree: Path, model: Path, argv: list[str], *extra: str) -> tuple[int, dict[str, Any]]:
    r = dryboot("boot", "--vllm", str(tree), "--python", python, "--model", str(model), *extra, "--json", *argv)
    assert r.returncode in (0, 1), r.stderr
    return r.returncode, json.loads(r.stdout)


#: The reference deployment's CTX=long profile at a 16,384-token max model length (both trees
#: start): int8 per token-head on Triton, the DFlash drafter too; its drafter page does not divide
#: the hybrid's attention page.
LONG_16K = [
    "--max-model-len", "16384", "--kv-cache-memory-bytes", "5583457484", "--kv-cache-dtype", "int8_per_token_head",
    "--attention-backend", "TRITON_ATTN", "--mamba-ssm-cache-dtype", "float16", "--max-num-batched-tokens", "2048",
    "--enable-prefix-caching", "--async-scheduling", "--max-num-seqs", "4", "--mamba-cache-mode", "align",
    "--speculative-config", json.dumps({
        "method": "dflash", "model": str(MODELS / "dflash2-drafter-sw5.config.json"), "num_speculative_tokens": 7,
        "kv_cache_dtype": "int8_per_token_head", "attention_backend": "TRITON_ATTN",
    }),
]  # fmt: skip


def _sliding(doc: dict[str, Any]) -> list[int]:
    return sorted({g[1] for g in doc["boot"]["groups"] if g[0] == "SlidingWindow"})


def test_a_patched_rule_shows_and_plan_with_its_policy_agrees(boot_python: str, pristine: Path, tmp_path: Path) -> None:
    tree = patched(pristine, PATCHES / "promote-divisor-only", tmp_path / "tree")
    model = MODELS / "Qwen3.5-27B.config.json"
    rc, base = boot_json(boot_python, pristine, model, LONG_16K)
    assert rc == 0 and base["agrees"] and "agrees with vLLM 0.28.0's rules" in base["verdict"]
    assert _sliding(base) == [16]  # pristine 0.28.0 pads the drafter's page at its block
    rc, mine = boot_json(boot_python, tree, model, LONG_16K)
    # the patched tree's own code ran (first on sys.path), and changed the rule
    assert mine["boot"]["ok"] and Path(mine["import_root"]) == tree.resolve()
    assert _sliding(mine) == [864] and rc == 1 and not mine["agrees"]
    assert any(d.startswith(("KV cache groups", "GPU KV cache tokens")) for d in mine["differences"])
    assert mine["figures"]["tokens"] != base["figures"]["tokens"]
    rc, modelled = boot_json(boot_python, tree, model, LONG_16K, "--unification", "promote-divisor")
    assert rc == 0 and modelled["agrees"], modelled["differences"]
    plan = dryboot("plan", "--model", str(model), "--unification", "promote-divisor", "--json", *LONG_16K)
    assert json.loads(plan.stdout)["capacity"]["kv_cache_size_tokens"] == mine["figures"]["tokens"]


EXAMPLE = REPO / "examples" / "reference-deployment-boot.toml"


def _rows(python: str, a: str, b: str, toml: Path = EXAMPLE) -> dict[str, dict[str, Any]]:
    r = dryboot("profiles", str(toml), "--compare", a, b, "--boot", "--python", python, "--json")
    assert r.returncode in (0, 1), r.stderr
    doc = json.loads(r.stdout)
    assert doc["seconds"][a]["processes"] == 1 and doc["seconds"][a]["profiles"] == 4
    return {p["profile"]: p for p in doc["profiles"]}


def test_reference_deployment_rows_from_the_arms_own_code(boot_python: str) -> None:
    rows = _rows(boot_python, "main", "pr")
    want = {"CTX=fast": "448/3.23%/68,605", "CTX=long": "864/1.09%/136,429",
            "CTX=fast DFLASH_TOKENS=15": "480/1.27%/57,669"}  # fmt: skip
    for name, row in want.items():
        assert rows[name]["main"]["row"] == row and rows[name]["pr"]["row"] == row, name
        assert rows[name]["identical"] and rows[name]["dryboot_model"] == {"main": "agrees", "pr": "agrees"}
    # KVarN needs the deployment's custom cache, which no patch here registers: vLLM refuses the dtype
    assert "invalid choice: 'kvarn'" in str(rows["CTX=huge"]["main"]["refusal"])


def test_the_pristine_tree_refuses_each_profile(boot_python: str, pristine: Path, tmp_path: Path) -> None:
    # the upstream arm as a tree: the environment's installed (pristine) vllm, named by path
    text = (
        EXAMPLE.read_text()
        .replace('"models/', f'"{REPO}/examples/models/')
        .replace('"patches/', f'"{REPO}/examples/patches/')
    )
    text = text.replace('series = "' + f"{REPO}/examples/patches/none" + '"\nbase = "0.28.0"', f'tree = "{pristine}"')
    toml = tmp_path / "deploy.toml"
    toml.write_text(text)
    assert f'tree = "{pristine}"' in text
    rows = _rows(boot_python, "upstream", "main", toml)
    for name, length in (("CTX=fast", "56,000"), ("CTX=long", "31,104"), ("CTX=fast DFLASH_TOKENS=15", "46,080")):
        assert rows[name]["upstream"]["row"] == f"does not start (max len {length})", name
        assert not rows[name]["identical"]
        assert rows[name]["dryboot_model"]["upstream"] == "agrees"


def test_a_model_class_needing_cuda_is_refused_by_name(boot_python: str, pristine: Path, tmp_path: Path) -> None:
    tree = patched(pristine, PATCHES / "cuda-at-construction", tmp_path / "tree")
    r = dryboot("boot", "--vllm", str(tree), "--python", boot_python, "--model", str(LLAMA), *SMALL)
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert "model: the model class needs CUDA at construction" in r.stderr and "Torch not compiled" in r.stderr


def test_a_patch_that_breaks_import_is_refused_by_name(boot_python: str, pristine: Path, tmp_path: Path) -> None:
    tree = patched(pristine, PATCHES / "breaks-import", tmp_path / "tree")
    r = dryboot("boot", "--vllm", str(tree), "--python", boot_python, "--model", str(LLAMA), *SMALL)
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert "the tree does not import: ModuleNotFoundError" in r.stderr
    assert "vllm/v1/core/kv_cache_utils.py:39" in r.stderr


def test_a_release_outside_the_range_is_refused(boot_python: str, pristine: Path, tmp_path: Path) -> None:
    tree = patched(pristine, PATCHES / "release-0.34.0", tmp_path / "tree")
    # refused before the environment's python runs at all: this one leaves a mark when it does
    marked = tmp_path / "python"
    marked.write_text(f'#!/bin/sh\ntouch "{tmp_path / "ran"}"\nexec "{boot_python}" "$@"\n')
    marked.chmod(0o755)
    r = dryboot("boot", "--vllm", str(tree), "--python", str(marked), "--model", str(LLAMA), *SMALL)
    assert r.returncode == 2 and "0.34.0: dryboot boot runs vLLM 0.27.1 to 0.33.x" in r.stderr
    assert not (tmp_path / "ran").exists()


def test_one_process_serves_many_engine_starts(boot_python: str, pristine: Path) -> None:
    with BootSession(boot_python, resolve_tree(str(pristine))) as s:
        pid = s._proc.pid
        answers = [s.boot(str(LLAMA), SMALL) for _ in range(3)]
        assert s._proc.pid == pid and s.cases == 3
    assert [a["num_blocks"] for a in answers] == [100, 100, 100]


def test_a_syntax_error_is_reported_at_the_trees_file_and_line(
    boot_python: str, pristine: Path, tmp_path: Path
) -> None:
    """Issue 28: the line reported was dryboot's own engine_start.py, where the import ran."""
    tree = tmp_path / "tree"
    scratch_copy(pristine, tree)
    broken = tree / "vllm" / "v1" / "core" / "kv_cache_utils.py"
    lines = broken.read_text().count("\n")
    broken.write_text(broken.read_text() + "def broken(:\n")
    r = dryboot("boot", "--vllm", str(tree), "--python", boot_python, "--model", str(LLAMA), *SMALL)
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert "the tree does not import: SyntaxError" in r.stderr
    assert f"kv_cache_utils.py:{lines + 1}" in r.stderr and "engine_start.py" not in r.stderr


def test_inputs_only_dryboot_cannot_model_are_not_compared_exit_3(boot_python: str, pristine: Path) -> None:
    """The tree starts (vLLM takes --disable-log-stats; dryboot plan has no such flag): what the
    tree printed is shown, nothing is compared, exit 3 (was 'not compared', exit 1)."""
    r = dryboot(
        "boot", "--vllm", str(pristine), "--python", boot_python, "--model", str(LLAMA), *SMALL, "--disable-log-stats"
    )
    assert r.returncode == 3, r.stdout + r.stderr
    assert "GPU KV cache size: 1,600 tokens" in r.stdout
    assert "not compared: the tree started, but dryboot cannot model these inputs" in r.stdout


def test_inputs_both_refuse_are_bad_input_in_one_line(boot_python: str, pristine: Path) -> None:
    r = dryboot(
        "boot",
        "--vllm",
        str(pristine),
        "--python",
        boot_python,
        "--model",
        str(LLAMA),
        *SMALL,
        "--kv-cache-dtype",
        "bogus",
    )
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1, r.stdout + r.stderr
    assert "--kv-cache-dtype" in r.stderr and "the tree refuses it too" in r.stderr
