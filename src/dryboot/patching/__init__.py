"""Patch-stack integrity engine: parse, verify, apply and repair unified diffs.

Results follow GNU patch 2.7.6's observable behaviour (hunk placement: exact, offset, fuzz,
anchoring, misordered hunks, strip level, reverse) and git's (extended headers: creates, deletes,
renames, mode changes); the engine is dryboot's own, written from a behaviour spec
(``docs/hunk-placement.md``) and differential tests. Files are read as bytes and split on LF
only; a CR is content.

The hunk engine's public names are importable from here: :class:`FileRun`, :class:`HunkResult`,
:class:`HunkSides`, :func:`run_hunks`, :func:`sides`, :func:`split_keep`.

Modules (import the one you need; nothing heavy is imported here):

- :mod:`dryboot.patching.parse` -- tolerant, byte-exact parser of patch files.
- :mod:`dryboot.patching.recount` -- ``hunks check`` / ``hunks fix`` (the ``@@`` arithmetic).
- :mod:`dryboot.patching.place` -- the hunk engine: search order, fuzz trimming, anchoring,
  applying one hunk, per-hunk results (``match`` is an alias kept for older imports).
- :mod:`dryboot.patching.apply` -- applying one patch to a tree, per-hunk census.
- :mod:`dryboot.patching.paths` -- target-directory confinement (no absolute, ``..``, symlinks).
- :mod:`dryboot.patching.transaction` -- all-or-nothing writes with an (untrusted, checked)
  journal, under an advisory lock on the target.
- :mod:`dryboot.patching.series` -- quilt ``series`` files: entries, disabled and unlisted
  patches, every patch parsed.
- :mod:`dryboot.patching.state` -- the state of a tree under a series: the applied prefix,
  proven by reversal, the judgement of the patches after it, and a series run in memory.
- :mod:`dryboot.patching.check` -- ``series check`` against an upstream git tag.
- :mod:`dryboot.patching.stack` -- the typed entry points: apply a series (transactional), a
  tree's state under a series, swap one patch for another; results, never printing (the CLI's
  :mod:`dryboot.cli.patch_report` renders them).
"""

from dryboot.patching.place import FileRun, HunkResult, HunkSides, run_hunks, sides, split_keep

__all__ = ["FileRun", "HunkResult", "HunkSides", "run_hunks", "sides", "split_keep"]
