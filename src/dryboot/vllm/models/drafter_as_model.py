"""A speculative-decoding drafter class given as the model of its own (issue 37).

vLLM's registry lists its drafters (``_SPECULATIVE_DECODING_MODELS``) beside the models it serves, so
``vllm serve DIR`` on a checkpoint whose ``architectures`` names one resolves the class and tries to
start it as a target. No recorded release (0.27.1, 0.28.0, 0.32.0, 0.33.0) serves one: either the class cannot be
built without a speculative config (it reads ``vllm_config.speculative_config``, ``None`` without
``--speculative-config``, or asserts it is set), or it is built and the worker's profile run
(``Worker.determine_available_memory``, run with ``--kv-cache-memory-bytes`` too) fails calling it:
``GPUModelRunner._dummy_run`` calls the model with ``input_ids``, ``positions``,
``intermediate_tensors`` and ``inputs_embeds``, and a drafter's ``forward`` needs the target's
``hidden_states`` (MTP, EAGLE) or takes no ``intermediate_tensors`` (DFlash, DSpark). Either way no KV
cache line is printed.

``data/drafter-as-model.json`` holds, per release, how vLLM's engine start fails on each class
(``[stage, error]``, the stage ``config``, ``model`` or ``profile``), recorded on stand-in configs by
``tests/fidelity/record_drafter_as_model.py`` (written by ``scripts/drafter_as_model.py``).
"""

from __future__ import annotations

import json
from functools import cache

from dryboot.vllm import DATA
from dryboot.vllm.models.registry import REGISTRY_RELEASES, in_release_registry, release_registry_kind

#: the recorded failures: release -> class -> (stage, error)
TABLE = DATA / "drafter-as-model.json"


@cache
def recorded_failures() -> dict[str, dict[str, tuple[str, str]]]:
    """release -> drafter class -> (stage, vLLM's error), as recorded (read once per process)."""
    raw: dict[str, dict[str, list[str]]] = json.loads(TABLE.read_text(encoding="utf-8"))
    return {v: {a: (s, e) for a, (s, e) in rows.items()} for v, rows in raw.items()}


def is_drafter_class(architecture: str, version: str) -> bool:
    """Whether vLLM ``version``'s registry lists ``architecture`` among its speculative-decoding models
    (``False`` for a release whose table dryboot does not ship)."""
    if version not in REGISTRY_RELEASES or not in_release_registry(architecture, version):
        return False
    return release_registry_kind(architecture, version) == "speculative-decoding"


def _how(stage: str, error: str) -> str:
    """vLLM's failure in words: ``error`` is ``Type: message`` (an empty message: the type alone)."""
    error = error.removesuffix(": ")
    if stage == "config":
        return f"refuses its config ({error})"
    if stage == "profile":
        return f"builds it, then its profile run fails calling it ({error}; a drafter's forward takes its own inputs)"
    return f"fails building it ({error})"


def drafter_as_model_refusal(architecture: str, version: str) -> str | None:
    """Why vLLM ``version`` does not serve ``architecture`` given as the model (``vllm serve`` on a
    checkpoint naming a speculative-decoding class), in vLLM's words as recorded for that class and
    release (:func:`recorded_failures`); ``None`` for any other architecture, and for a drafter class
    whose failure is not recorded on that release (dryboot refuses it by name then:
    :func:`dryboot.vllm.models.registry.refusal_reason`, or as a draft model in ``resolve``)."""
    if not is_drafter_class(architecture, version):
        return None
    failure = recorded_failures().get(version, {}).get(architecture)
    if failure is None:
        return None
    return (
        f"{architecture} is a speculative-decoding draft model: vLLM builds it only as a target's drafter; "
        f"given as the model, vLLM {version} {_how(*failure)}; give it as the --speculative-config model of its target"
    )
