"""dryboot: know what a (patched) vLLM boot will do before you boot.

Two capabilities, each importable on its own:

* KV-cache geometry, offline (:mod:`dryboot.plan` and the rule modules it composes).
* Patch-stack integrity (:mod:`dryboot.patching`).

The package root imports nothing heavy so that ``dryboot`` answers in a fraction of a second.
"""

__version__ = "0.1.0"
