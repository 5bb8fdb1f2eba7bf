"""``dryboot boot`` agrees with ``dryboot plan`` on the recorded vLLM 0.28.0 fidelity cases.

Every case of ``tests/fidelity/data/**`` recorded for 0.28.0 (4,903: see ``recorded.py``;
HCXVision left out, recorded with timm) is booted on the environment's pristine tree in one
process; each answer must be what vLLM answered when recorded, and dryboot's plan must agree with
it (same figures, or both refuse), except the disagreements the fidelity tests already mark
(xfail). The full run (4,903 cases; 3,995 took 568 s on a loaded 2-core machine) runs with
``DRYBOOT_BOOT_FULL=1``, as CI sets it, or as ``python tests/boot/recorded.py PYTHON``; otherwise
a fixed sample (every :data:`EVERY`-th case) runs.
"""

from __future__ import annotations

import os

import pytest
import recorded as R  # this directory is on sys.path (pytest prepends it)

#: CI's sample: every EVERY-th recorded case (all sources represented).
EVERY = 20

pytestmark = pytest.mark.slow


def _assert_all_agree(out: R.Outcome) -> None:
    assert out.cases and out.reproduced == out.cases and out.agree + out.known == out.cases, "\n".join(
        out.problems or []
    )


@pytest.mark.skipif(bool(os.environ.get("DRYBOOT_BOOT_FULL")), reason="the full run covers it")
def test_recorded_sample(boot_python: str) -> None:
    chosen = R.items()[::EVERY]
    assert {i.source for i in chosen} >= {"architectures", "architectures/defaults", "hybrids", "deepseek_v4", "e2e"}
    out = R.run(boot_python, chosen)
    print(f"\nboot: {out.cases} recorded cases, {out.reproduced} as recorded, {out.agree} agree with plan "
          f"({out.known} known); import {out.import_seconds:.1f} s, engine starts {out.boot_seconds:.1f} s, "
          f"wall {out.wall_seconds:.1f} s")  # fmt: skip
    _assert_all_agree(out)


@pytest.mark.skipif(not os.environ.get("DRYBOOT_BOOT_FULL"), reason="the full run: DRYBOOT_BOOT_FULL=1")
def test_recorded_all(boot_python: str) -> None:
    out = R.run(boot_python, R.items())
    print(f"\nboot: {out.cases} recorded cases, {out.reproduced} as recorded, {out.agree} agree with plan "
          f"({out.known} known); wall {out.wall_seconds:.1f} s")  # fmt: skip
    _assert_all_agree(out)
