"""The cache's keys: every input counts, nothing else does; errors are never stored."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from matrix_help import QWEN3_06B, QWEN25_15B

from dryboot.matrix.cache import Cache, task_key, tree_digest
from dryboot.matrix.model import TaskResult

ARGV = ("--max-model-len", "4096", "--kv-cache-memory-bytes", "2G")


def _tree(root: Path) -> Path:
    (root / "vllm" / "v1").mkdir(parents=True)
    (root / "vllm" / "__init__.py").write_text("")
    (root / "vllm" / "v1" / "kv.py").write_text("BLOCK = 16\n")
    (root / "vllm" / "_C.so").write_bytes(b"\x7fELF")
    return root


def test_a_trees_digest_is_its_python_files(tmp_path: Path) -> None:
    a, b = _tree(tmp_path / "a"), _tree(tmp_path / "b")
    assert tree_digest(str(a)) == tree_digest(str(b))  # the content, not the place
    (b / "vllm" / "_C.so").write_bytes(b"other")  # compiled code is never called: not hashed
    (b / "vllm" / "__pycache__").mkdir()
    (b / "vllm" / "__pycache__" / "x.py").write_text("junk")
    assert tree_digest(str(a)) == tree_digest(str(b))
    (b / "vllm" / "v1" / "kv.py").write_text("BLOCK = 32\n")
    assert tree_digest(str(a)) != tree_digest(str(b))
    (b / "vllm" / "v1" / "kv.py").write_text("BLOCK = 16\n")
    (b / "vllm" / "v1" / "new.py").write_text("")
    assert tree_digest(str(a)) != tree_digest(str(b))


def test_every_input_changes_the_key() -> None:
    base = task_key("tree:py:abc", str(QWEN3_06B), ARGV, "L40S")
    assert base == task_key("tree:py:abc", str(QWEN3_06B), ARGV, "NVIDIA L40S")  # the same GPU, spelt otherwise
    others = {
        task_key("tree:py:abd", str(QWEN3_06B), ARGV, "L40S"),
        task_key("tree:py:abc", str(QWEN25_15B), ARGV, "L40S"),
        task_key("tree:py:abc", str(QWEN3_06B), (*ARGV, "--enable-prefix-caching"), "L40S"),
        task_key("tree:py:abc", str(QWEN3_06B), ARGV, "RTX 4090"),
        task_key("tree:py:abc", str(QWEN3_06B), ARGV, "sm89:48G"),
    }
    assert base not in others and len(others) == 5


def test_a_config_is_keyed_by_its_bytes(tmp_path: Path) -> None:
    copy = tmp_path / "copy"
    copy.mkdir()
    (copy / "config.json").write_bytes((QWEN3_06B / "config.json").read_bytes())
    assert task_key("c", str(copy), ARGV, "L40S") == task_key("c", str(QWEN3_06B), ARGV, "L40S")
    (copy / "config.json").write_bytes((QWEN3_06B / "config.json").read_bytes() + b" ")
    assert task_key("c", str(copy), ARGV, "L40S") != task_key("c", str(QWEN3_06B), ARGV, "L40S")


def test_results_round_trip_and_errors_are_never_stored(tmp_path: Path) -> None:
    cache = Cache(tmp_path)
    ok = TaskResult("m|L40S|f", "a", "ok", 18720, 16, 1170, 4096, ("GPU KV cache size: 18,720 tokens",), None, 0.3,
                    False, "1@h")  # fmt: skip
    cache.put("k1", ok)
    got = cache.get("k1", "m|H100|f", "b")
    assert got == replace(ok, cell_id="m|H100|f", arm="b", cached=True)
    cache.put("k2", replace(ok, status="error", reason="timed out"))
    assert cache.get("k2", "x", "y") is None
    assert Cache(None).get("k1", "x", "y") is None
