"""The public Python API: ``from dryboot import plan, load_model, EngineArgs`` and the example of
docs/plan.md (the README's before it moved there)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def test_public_names() -> None:
    import dryboot

    assert sorted(dryboot.__all__) == sorted(
        [
            "Drafter",
            "EngineArgs",
            "InputError",
            "ModelGeometry",
            "Plan",
            "Policies",
            "__version__",
            "load_model",
            "plan",
        ]
    )
    for name in dryboot.__all__:
        assert getattr(dryboot, name) is not None
    from dryboot.planner.plan import Plan, plan

    assert dryboot.Plan is Plan
    assert dryboot.plan is not plan and callable(dryboot.plan)


def test_plan_stays_the_function_after_its_module_is_imported() -> None:
    code = (
        "import dryboot.planner.plan, dryboot.planner.report, dryboot; from dryboot import plan; "
        "print(callable(plan), type(plan).__name__)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["True", "function"]


def test_the_package_root_imports_nothing_heavy() -> None:
    code = "import sys, dryboot; print(sorted(m for m in sys.modules if m.startswith('dryboot')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "['dryboot']"


def test_readme_python_example_runs() -> None:
    readme = (REPO / "docs" / "plan.md").read_text()
    [block] = [b for b in re.findall(r"```python\n(.*?)```", readme, re.S) if "from dryboot import" in b]
    out = subprocess.run([sys.executable, "-c", block], capture_output=True, text=True, cwd=REPO, check=True).stdout
    # vLLM 0.28.0 on this config and budget: block 544, 3,212 blocks, 1,725,423 tokens
    assert out.splitlines() == ["544 True", "3212 1725423"]


def test_readme_python_example_handles_no_capacity() -> None:
    readme = (REPO / "docs" / "plan.md").read_text()
    [block] = [b for b in re.findall(r"```python\n(.*?)```", readme, re.S) if "from dryboot import" in b]
    no_budget = block.replace(", kv_cache_memory_bytes=40 << 30", "")
    does_not_fit = block.replace("40 << 30", "2 << 30")
    out = subprocess.run([sys.executable, "-c", no_budget], capture_output=True, text=True, cwd=REPO, check=True)
    assert out.stdout.splitlines() == ["544 True", "no KV budget: give kv_cache_memory_bytes"]
    out = subprocess.run([sys.executable, "-c", does_not_fit], capture_output=True, text=True, cwd=REPO, check=True)
    first, second = out.stdout.splitlines()
    assert first == "544 False"
    assert "the estimated maximum model length is 83776" in second  # vLLM's own message at 2 GiB
