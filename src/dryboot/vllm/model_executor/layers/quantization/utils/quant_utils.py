"""Which linear / MoE layers a quantization config leaves unquantized: each method's own matching
of its ignore list against vLLM's layer names (``prefix``, e.g. ``model.layers.0.self_attn.qkv_proj``),
as vLLM 0.27.1-0.33.0 do it. The rules differ per method (and compressed-tensors' per release):

* :func:`is_layer_skipped`: ``utils/quant_utils.py`` ``is_layer_skipped``, used by ``Fp8Config``
  (``ignored_layers`` / ``modules_to_not_convert``: ``exact``), AWQ (``modules_to_not_convert``:
  ``substring``) and first by ModelOpt.
* :func:`should_ignore_layer`: compressed-tensors' ``ignore`` (``compressed_tensors/utils.py``).
* :func:`is_layer_excluded`: ModelOpt's ``exclude_modules`` (``modelopt.py``
  ``ModelOptQuantConfigBase.is_layer_excluded``).

A fused layer (``qkv_proj``, ``gate_up_proj``, ...: the model's ``packed_modules_mapping``,
:data:`FUSED_MAPPING`) is matched on its own name first, then on its checkpoint shards', which must
agree: where they do not, vLLM raises ``ValueError`` and dryboot refuses (:class:`ShardsDiffer`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from fnmatch import fnmatch

from dryboot.errors import InputError

#: the fused layers of vLLM's models (``packed_modules_mapping``) and their checkpoint shards: the
#: decoders' ``qkv_proj`` / ``gate_up_proj``, Gated DeltaNet's ``in_proj_qkvz`` / ``in_proj_ba``,
#: MLA's ``fused_qkv_a_proj`` (``deepseek_v2.py``)
FUSED_MAPPING: Mapping[str, tuple[str, ...]] = {
    "qkv_proj": ("q_proj", "k_proj", "v_proj"),
    "gate_up_proj": ("gate_proj", "up_proj"),
    "in_proj_qkvz": ("in_proj_qkv", "in_proj_z"),
    "in_proj_ba": ("in_proj_b", "in_proj_a"),
    "fused_qkv_a_proj": ("q_a_proj", "kv_a_proj_with_mqa"),
}
#: ``is_layer_skipped``'s match modes (``exact``: ``Fp8Config``; ``substring``: AWQ; ``suffix``:
#: ``bailing_moe_v3``'s fp8 config, 0.28.0-0.33.0)
MATCH_MODES = ("exact", "substring", "suffix")
#: the releases whose compressed-tensors ``should_ignore_layer`` tries a pattern on the fused
#: layer's own name before its shards (``config_utils.find_matching_patterns``); before, the fused
#: name is tried only as a literal ``ignore`` entry
CT_FUSED_NAME_PATTERN_RELEASES = ("0.30.0", "0.31.0", "0.32.0", "0.33.0")


class ShardsDiffer(InputError):
    """Some but not all checkpoint shards of a fused layer are on the ignore list: vLLM refuses
    the model (``ValueError`` at build)."""

    def __init__(self, key: str, prefix: str) -> None:
        super().__init__(
            "quantization_config",
            key,
            f"some but not all shards of {prefix} are on it (vLLM refuses it: the shards of a fused layer "
            "must share one precision)",
        )


def fused_shards(prefix: str, fused_mapping: Mapping[str, Sequence[str]] = FUSED_MAPPING) -> tuple[str, ...] | None:
    """The checkpoint shard names of fused layer ``prefix`` (its last component in
    ``fused_mapping``), each with that component replaced as vLLM replaces it (``str.replace``,
    every occurrence), else ``None``."""
    proj = prefix.rsplit(".", 1)[-1]
    shards = fused_mapping.get(proj)
    return None if shards is None else tuple(prefix.replace(proj, s) for s in shards)


def _layer_match(prefix: str, ignored: Sequence[str], mode: str) -> bool:
    if mode == "exact":
        return prefix in ignored
    if mode == "substring":
        return any(i in prefix for i in ignored)
    return any(prefix == i or prefix.endswith("." + i) for i in ignored)


def is_layer_skipped(
    prefix: str,
    ignored: Sequence[str],
    fused_mapping: Mapping[str, Sequence[str]] = FUSED_MAPPING,
    *,
    match_mode: str = "exact",
    key: str = "modules_to_not_convert",
) -> bool:
    """Whether vLLM's layer ``prefix`` is on ``ignored`` (``utils/quant_utils.py`` ``is_layer_skipped``,
    0.27.1's ``skip_with_substr`` is ``substring``): ``exact`` (the name itself), ``substring``
    (an entry inside the name) or ``suffix`` (the name, or a ``.``-boundary tail of it). A fused
    layer matches on its own name, else on its shards, which must agree; a layer with ``experts``
    in its name, in ``exact`` mode, is skipped when its name is inside an entry that names experts
    (``model.layers.3.mlp.experts`` by ``model.layers.3.mlp.experts.0.gate_proj``).

    :raises ShardsDiffer: some but not all shards of a fused layer match (``key``: the config's
        list, for the message).
    :raises ValueError: an unknown ``match_mode`` (a caller's bug)."""
    if match_mode not in MATCH_MODES:
        raise ValueError(match_mode)
    shards = fused_shards(prefix, fused_mapping)
    if shards is not None:
        if _layer_match(prefix, ignored, match_mode):
            return True
        found = {_layer_match(s, ignored, match_mode) for s in shards}
        if len(found) > 1:
            raise ShardsDiffer(key, prefix)
        return found.pop()
    if "experts" in prefix and match_mode == "exact":
        return any(prefix in i for i in ignored if "experts" in i)
    return _layer_match(prefix, ignored, match_mode)


def _equal_or_regex(value: str, target: str, *, use_fnmatch: bool = False) -> bool:
    """compressed-tensors' ``is_equal_or_regex_match``: ``re:`` patterns by ``re.match`` (a match
    at the start), else equality (or ``fnmatch`` where asked)."""
    if target.startswith("re:"):
        return re.match(target[3:], value) is not None
    return target == value or (use_fnmatch and fnmatch(value, target))


def should_ignore_layer(layer_name: str, ignore: Iterable[str], version: str, key: str = "ignore") -> bool:
    """Whether compressed-tensors' ``ignore`` leaves vLLM's layer ``layer_name`` unquantized
    (``compressed_tensors/utils.py`` ``should_ignore_layer``): entries are names (equal) or ``re:``
    patterns (``re.match``). A fused layer: from 0.30.0 (:data:`CT_FUSED_NAME_PATTERN_RELEASES`,
    ``find_matching_patterns``) any entry matching its own name ignores it, else its shards decide;
    0.27.1-0.29.0 take its own name only where it is an entry verbatim, else its shards decide (a
    pattern matching the fused name alone ignores nothing).

    :raises ShardsDiffer: some but not all shards of a fused layer match."""
    ignore = tuple(ignore)
    shards = fused_shards(layer_name)
    if version in CT_FUSED_NAME_PATTERN_RELEASES:
        if any(_equal_or_regex(layer_name, i) for i in ignore):
            return True
    elif shards is None or layer_name in ignore:
        return any(_equal_or_regex(layer_name, i) for i in ignore)
    if shards is None:
        return False
    found = {any(_equal_or_regex(s, i) for i in ignore) for s in shards}
    if len(found) > 1:
        raise ShardsDiffer(key, layer_name)
    return found.pop()


def is_layer_excluded(prefix: str, exclude_modules: Sequence[str]) -> bool:
    """Whether ModelOpt's ``exclude_modules`` leave vLLM's layer ``prefix`` unquantized
    (``modelopt.py`` ``ModelOptQuantConfigBase.is_layer_excluded``, 0.27.1-0.33.0):
    :func:`is_layer_skipped` (exact, fused shards, experts), else an entry that is a substring of
    the name (or of the name less a leading ``language_model.``), else an entry as a shell
    wildcard (``fnmatch``: ``*`` crosses dots). ``model.layers.1`` thus excludes layers 1 and
    10-19 too.

    :raises ShardsDiffer: some but not all shards of a fused layer are named exactly."""
    if not exclude_modules:
        return False
    if is_layer_skipped(prefix, exclude_modules, key="exclude_modules"):
        return True
    bare = prefix.removeprefix("language_model.") if prefix.startswith("language_model.") else None
    for e in exclude_modules:
        if e != prefix and (e in prefix or (bare is not None and e in bare)):
            return True
    return any(fnmatch(prefix, e) for e in exclude_modules)
