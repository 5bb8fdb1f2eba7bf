"""The weights of families built beside :mod:`..model_loader.weights`' walk, one module per
family as vLLM's ``model_executor/models/<family>.py``: vision-language wrappers composed of a
text model the walk (or another family here) builds and a tower of their own, decoders the walk
builds under another architecture's layout (:func:`.compose.built_as`), and decoder-only families
of one shared layout (:class:`.compose.Layout`), each with its deviations in its own module.

A module defining ``FAMILIES`` is found by name (no list to extend: a new family's module is
registered by existing). :data:`FAMILIES` maps an architecture to its :class:`~.compose.Family`; the walk
(``weights._walk``) dispatches to it for every architecture its own table does not name.
"""

from __future__ import annotations

import importlib
import pkgutil
from types import ModuleType

from dryboot.vllm.model_executor.model_loader import weights as W
from dryboot.vllm.model_executor.models.compose import Family


def _family_modules() -> tuple[ModuleType, ...]:
    """Every module of this package that defines ``FAMILIES`` (the helpers, e.g. ``compose``,
    ``clip``, ``siglip``, the drafters' ``mtp`` / ``llama_eagle``, define none), by name."""
    found = (importlib.import_module(f"{__name__}.{info.name}") for info in pkgutil.iter_modules(__path__))
    return tuple(sorted((m for m in found if hasattr(m, "FAMILIES")), key=lambda m: m.__name__))


#: the family modules, each with its ``FAMILIES`` (architecture -> how its weights are built)
MODULES: tuple[ModuleType, ...] = _family_modules()


def _families() -> dict[str, Family]:
    out: dict[str, Family] = {}
    for module in MODULES:
        for arch, family in module.FAMILIES.items():
            if arch in out:  # two modules claiming one architecture: a programming error
                raise RuntimeError(f"{arch} is built by two modules of {__name__} ({module.__name__})")
            out[arch] = family
    return out


FAMILIES: dict[str, Family] = _families()
W.register_families(FAMILIES)
#: planned architectures refused by name: the one vLLM module whose allocation is not sized
#: (a module's ``UNSIZED``: architecture -> reason)
UNSIZED: dict[str, str] = {arch: why for module in MODULES for arch, why in getattr(module, "UNSIZED", {}).items()}
W.register_unsized(UNSIZED)
