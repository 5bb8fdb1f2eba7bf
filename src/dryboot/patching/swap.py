"""``swap``: replace an applied patch by another one, as one transaction.

OLD is reversed within ``fuzz`` (GNU patch ``-R --fuzz N``: exactly by default; give the fuzz
OLD was applied with), then NEW is applied within the same fuzz on the result. Either both
happen or nothing is written.
"""

from __future__ import annotations

from dataclasses import dataclass

from dryboot.patching.apply import PatchOutcome, Tree, apply_patch
from dryboot.patching.parse import PatchFile


@dataclass
class SwapResult:
    """``reverse``: OLD reversed; ``forward``: NEW applied (None when OLD failed);
    ``ok`` when both succeeded (then ``forward.tree`` holds the result)."""

    reverse: PatchOutcome
    forward: PatchOutcome | None

    @property
    def ok(self) -> bool:
        return self.reverse.ok and self.forward is not None and self.forward.ok


def swap(tree: Tree, old: PatchFile, new: PatchFile, strip: int = 1, fuzz: int = 0) -> SwapResult:
    """Reverse ``old`` and apply ``new`` on ``tree`` in memory (see module docstring).

    :raises InputError: invalid patches or unsafe paths.
    """
    old.require_valid()
    new.require_valid()
    rev = apply_patch(tree, old, strip, reverse=True, fuzz=fuzz)
    if not rev.ok:
        return SwapResult(rev, None)
    fwd = apply_patch(rev.tree, new, strip, reverse=False, fuzz=fuzz)
    return SwapResult(rev, fwd)
