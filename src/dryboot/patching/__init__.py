"""Patch-stack integrity engine: parse, verify, apply and repair unified diffs.

Semantics follow GNU patch 2.7 (hunk location: exact, offset, fuzz, BOF/EOF anchoring, strip
level, reverse) and git (extended headers: creates, deletes, renames, mode changes). Files are
read as bytes and split on LF only; a CR is content.

Modules (import the one you need; nothing heavy is imported here):

- :mod:`dryboot.patching.parse` -- tolerant, byte-exact parser of patch files.
- :mod:`dryboot.patching.recount` -- ``hunks check`` / ``hunks fix`` (the ``@@`` arithmetic).
- :mod:`dryboot.patching.match` -- GNU patch's hunk locator (offset, fuzz, anchoring).
- :mod:`dryboot.patching.apply` -- applying one patch to a tree, per-hunk census.
- :mod:`dryboot.patching.paths` -- target-directory confinement (no absolute, ``..``, symlinks).
- :mod:`dryboot.patching.transaction` -- all-or-nothing writes with a journal.
- :mod:`dryboot.patching.series` -- quilt ``series`` files; apply and status of a stack.
- :mod:`dryboot.patching.state` -- the state of a tree under a series: the applied prefix,
  proven by reversal, and the judgement of the patches after it.
- :mod:`dryboot.patching.check` -- ``series check`` against an upstream git tag.
- :mod:`dryboot.patching.swap` -- replace one applied patch by another in one transaction.
"""
