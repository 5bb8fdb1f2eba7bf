"""Compatibility name for :mod:`dryboot.patching.place` (the hunk engine moved there).

Code written against the earlier module name keeps working: the public names are the same
objects as in :mod:`dryboot.patching.place` and :mod:`dryboot.patching`.
"""

from dryboot.patching.place import FileRun, HunkResult, HunkSides, run_hunks, sides, split_keep

__all__ = ["FileRun", "HunkResult", "HunkSides", "run_hunks", "sides", "split_keep"]
