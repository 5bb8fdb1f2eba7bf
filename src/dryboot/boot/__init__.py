"""``dryboot boot``: a (patched) vLLM tree's own engine start, run offline on a faked GPU.

* :mod:`dryboot.boot.engine_start` -- the child script, run by path in the boot environment's
  interpreter (never imported here).
* :mod:`dryboot.boot.session` -- one child process, many engine starts.
* :mod:`dryboot.boot.trees` -- trees named by path or built from a patch series, interpreters.
* :mod:`dryboot.boot.env` -- building the boot environment (``dryboot boot-env``).
* :mod:`dryboot.boot.compare` -- a tree's figures against dryboot's model of its release.
* :mod:`dryboot.boot.arms` -- launcher-profile arms evaluated on their own code.
"""
