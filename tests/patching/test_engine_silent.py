"""The patch engine returns results and prints nothing (issue 20): no module of
``dryboot.patching`` writes to stdout or stderr or imports the CLI; the ``dryboot series`` /
``swap`` commands render what :mod:`dryboot.patching.stack` returns."""

from __future__ import annotations

import ast
from pathlib import Path

import dryboot.patching

PKG = Path(dryboot.patching.__file__).parent


#: what the engine may import from dryboot (the import contract in pyproject.toml)
ALLOWED = {"patching", "errors", "units", "textout", "inputs"}


def test_no_module_of_the_engine_prints_or_imports_upward() -> None:
    for path in sorted(PKG.glob("*.py")):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
                assert node.func.id != "print", f"{path.name}:{node.lineno}: print()"
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
                assert (node.value.id, node.attr) not in {("sys", "stdout"), ("sys", "stderr")}, (
                    f"{path.name}:{node.lineno}: sys.{node.attr}"
                )
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("dryboot"):
                top = node.module.split(".")[1]
                assert top in ALLOWED, f"{path.name}: imports {node.module}"
            if isinstance(node, ast.Import):
                for a in node.names:
                    assert a.name.split(".")[0] != "click", f"{path.name}: imports click"
                    if a.name.startswith("dryboot."):
                        assert a.name.split(".")[1] in ALLOWED, a.name


def test_apply_series_returns_what_happened(tmp_path: Path) -> None:
    from dryboot.patching.stack import Options, apply_series, series_state

    s, t = tmp_path / "s", tmp_path / "t"
    s.mkdir()
    t.mkdir()
    (t / "f").write_bytes(b"a\nb\nc\n")
    (s / "1.patch").write_bytes(b"--- a/f\n+++ b/f\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n")
    (s / "series").write_text("1.patch\n")
    res = apply_series(str(s), str(t), Options(fuzz=0))
    assert res.ok and res.written and res.applied() == ["1.patch"] and res.already() == []
    again = apply_series(str(s), str(t))
    assert again.ok and not again.written and again.already() == ["1.patch"]
    st = series_state(str(s), str(t))
    assert st.ok and st.state.prefix == 1
