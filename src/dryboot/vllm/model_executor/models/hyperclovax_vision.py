"""HyperCLOVA X SEED vision V1 (``hyperclovax_vision.py``, ``HCXVisionForCausalLM``, vLLM 0.27.1),
unquantized.

The language model: the architecture ``text_config`` names (``init_vllm_registered_model``:
:func:`.compose.wrapped_text_architecture`). Under ``_mark_tower_model`` (image and video: dropped by
``--language-model-only`` or both limited to 0), on every rank, in the model dtype:

* the vision tower, CLIP's or SigLIP's by ``vision_config.model_type``
  (``init_vision_tower_for_hcxvision``) without its post LayerNorm (``require_post_norm=False``) or
  pooling head, building ``use_nth_layer + 1`` encoder layers (``num_hidden_layers + use_nth_layer +
  1`` when negative; ``HCXVisionConfig``'s default -2);
* ``mm_projector`` (``_init_mm_projector``) by ``mm_projector_type``: ``linear`` (``nn.Linear``
  ``[H_text, D]`` with its bias) or ``cabstractor`` (:func:`c_abstractor`); vLLM 0.27.1 cannot build
  its ``HCXVisionMlp`` types (:data:`WHY_MLP`, recorded), refused by name as other types are;

and ``image_newline`` ``[H_text]`` under ``anyres``, a parameter the tower's removal keeps.

``D`` is the tower's ``hidden_size``; the tower's layers split over TP as the LLaVA family's; the
projector and the newline are whole on every rank."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dryboot.errors import InputError
from dryboot.vllm.model_executor.model_loader import weights as W
from dryboot.vllm.model_executor.models import clip, siglip
from dryboot.vllm.model_executor.models.compose import Family, WalkArgs, vision_language, wrapped_text_architecture
from dryboot.vllm.model_executor.models.towers import linear, tensors

ARCH = "HCXVisionForCausalLM"
MODALITIES = ("image", "video")
#: the release its weights are recorded on (``data/weights/recorded-0.27.1-hcx-vision.json``); vLLM 0.28.0
#: serves it too (not recorded), 0.29+ dropped it (``_PREVIOUSLY_SUPPORTED_MODELS``)
RELEASES = ("0.27.1",)
#: ``HCXVisionConfig``'s defaults (vLLM's own config class) the weights read
DEFAULTS: dict[str, Any] = {"use_nth_layer": -2, "anyres": False, "proj_pos_emb": True, "proj_prenorm": False}
#: the vision configs ``init_vision_tower_for_hcxvision`` builds (``model_type``)
TOWERS = ("clip_vision_model", "siglip_vision_model")
#: C-Abstractor's two ``RegStage``s (timm ``regnet.py``), each of this many ``Bottleneck`` blocks
REG_DEPTH = 3
#: C-Abstractor's readout: ``mlp_depth`` linear layers
READOUT_DEPTH = 2
#: timm's ``Bottleneck`` squeeze-excitation ratio (``se_ratio``) of its input channels
SE_RATIO = 0.25


def _field(config: Mapping[str, Any], key: str) -> Any:
    """A wrapper field the model class reads without a config-class default (``mm_projector_type``,
    ``num_queries_vis_abstractor_image``).

    :raises InputError: the field absent (vLLM's AttributeError)."""
    if key not in config:
        raise InputError("config.json", key, f"{ARCH} reads {key}, which HCXVisionConfig does not default")
    return config[key]


def _bottleneck(chs: int) -> list[int]:
    """One timm regnet ``Bottleneck`` of ``chs`` channels in and out, stride 1, as C-Abstractor
    builds it (bottle ratio 1, group size 1, SiLU, ``LayerNorm2d``): ``conv1`` 1x1 ``[chs, chs]``
    and its norm (weight, bias), the depthwise ``conv2`` ``[chs, 1, 3, 3]`` and its norm, the
    squeeze-excitation ``fc1`` ``[se, chs]`` + bias and ``fc2`` ``[chs, se]`` + bias (``se``: the
    input's channels x 0.25, rounded half to even), ``conv3`` 1x1 and its norm; no downsample (in ==
    out); convolutions without bias. Element counts."""
    se = round(chs * SE_RATIO)
    return [chs * chs, chs, chs, chs * 9, chs, chs, se * chs, se, chs * se, chs, chs * chs, chs, chs]


def c_abstractor(config: Mapping[str, Any], d: int, h_text: int) -> list[int]:
    """``HCXVisionCAbstractor`` (``num_input_tokens`` = (image_size / patch_size)^2, encoder and
    hidden width ``d``, output ``h_text``): ``pos_emb`` ``[1, tokens, d]`` under ``proj_pos_emb``, timm's
    ``LayerNorm`` (weight, bias) under ``proj_prenorm``, two ``RegStage``s of :data:`REG_DEPTH`
    :func:`_bottleneck` blocks (the adaptive pooling between them has no weights), the readout's
    ``Linear(d, h_text)`` and ``Linear(h_text, h_text)`` with biases. Element counts.

    :raises InputError: ``num_queries_vis_abstractor_image`` absent or not a square (vLLM's assertion)."""
    queries = _field(config, "num_queries_vis_abstractor_image")
    if isinstance(queries, bool) or not isinstance(queries, int) or queries < 0 or int(queries**0.5) ** 2 != queries:
        raise InputError(
            "config.json", "num_queries_vis_abstractor_image", f"n_queries must be square number, got {queries!r}"
        )
    v = {**siglip.DEFAULTS, **config["vision_config"]}
    tokens = (W._int(v, "image_size") // W._int(v, "patch_size")) ** 2
    out: list[int] = []
    if config.get("proj_pos_emb", DEFAULTS["proj_pos_emb"]):
        out.append(tokens * d)
    if config.get("proj_prenorm", DEFAULTS["proj_prenorm"]):
        out += [d, d]
    out += _bottleneck(d) * (2 * REG_DEPTH)
    out += linear(h_text, d) + linear(h_text, h_text) * (READOUT_DEPTH - 1)
    return out


def layers_built(config: Mapping[str, Any], total: int) -> int:
    """``init_vision_tower_for_hcxvision``'s encoder layers: ``use_nth_layer + 1``, or
    ``total + use_nth_layer + 1`` when negative (a non-integer: all ``total``)."""
    nth = config.get("use_nth_layer", DEFAULTS["use_nth_layer"])
    if isinstance(nth, bool) or not isinstance(nth, int):
        return total
    return nth + 1 if nth >= 0 else total + nth + 1


def _checks(config: Mapping[str, Any]) -> None:
    """What ``HCXVisionForCausalLM.__init__`` refuses, the tower on or off (``_mark_tower_model``
    builds its modules either way, then swaps them out).

    :raises InputError: ``anyres`` without ``possible_resolutions`` or ``max_num_grids`` > 0 (vLLM's
        assertion), a vision config other than CLIP's or SigLIP's, ``mm_projector_type`` absent, an
        MLP projector (:data:`WHY_MLP`) or another type, a C-Abstractor's queries not a square."""
    if config.get("anyres", DEFAULTS["anyres"]):
        grids = config.get("max_num_grids", -1)
        if not config.get("possible_resolutions") and not (isinstance(grids, int) and grids > 0):
            raise InputError("config.json", "max_num_grids", f"{ARCH} with anyres needs max_num_grids > 0 (vLLM's)")
    vision = config.get("vision_config")
    if not isinstance(vision, Mapping):
        raise InputError("config.json", "vision_config", f"{ARCH} needs a vision_config object")
    if vision.get("model_type") not in TOWERS:
        kind = vision.get("model_type")
        raise InputError("config.json", "vision_config.model_type", f"Unsupported vision config: {kind!r} (vLLM's)")
    projector = _field(config, "mm_projector_type")
    if projector in ("mlp", "inverted_mlp"):
        raise InputError("config.json", "mm_projector_type", f"{projector}: {WHY_MLP}")
    if projector not in ("linear", "cabstractor"):
        raise InputError("config.json", "mm_projector_type", f"{projector} is not implemented (vLLM's HCXVisionMlp)")


#: vLLM 0.27.1's ``HCXVisionMlp`` projector: ``_init_mm_projector`` reads ``self.text_config``, which the
#: wrapper sets after building it (recorded: AttributeError, with or without the tower)
WHY_MLP = (
    "vLLM 0.27.1 cannot build HCXVisionForCausalLM with an HCXVisionMlp projector ('HCXVisionForCausalLM' object "
    "has no attribute 'text_config')"
)


def _tower(config: Mapping[str, Any], text: Mapping[str, Any], tp: int, ab: int) -> W.RankWeights:
    """The tower and the projector (module docstring), one rank (the config checked by :func:`_checks`)."""
    vision = config["vision_config"]
    kind = vision.get("model_type")
    defaults = clip.DEFAULTS if kind == "clip_vision_model" else siglip.DEFAULTS
    d = W._int({**defaults, **vision}, "hidden_size")
    n = layers_built(config, W._int({**defaults, **vision}, "num_hidden_layers"))
    if kind == "clip_vision_model":
        w = clip.vision_tower(vision, tp, ab, layers=n, post_norm=False)
    else:
        w = siglip.vision_tower(vision, tp, ab, post_norm=False, layers=n)
    h_text = W._int(text, "hidden_size")
    counts = linear(h_text, d) if config["mm_projector_type"] == "linear" else c_abstractor(config, d, h_text)
    return tensors("vision", counts, ab, into=w)


def _walk(config: Mapping[str, Any], par: W.Parallel, args: WalkArgs) -> W.RankWeights:
    """The wrapper on one rank; ``image_newline`` (a parameter, not a module: ``_mark_tower_model``
    keeps it when the tower is off) under ``anyres``.

    :raises InputError: another release (recorded on vLLM 0.27.1 only), what :func:`_checks` refuses."""
    if par.vllm_version not in RELEASES:
        raise InputError(
            "config.json",
            "architectures",
            f"{ARCH}: weights recorded on vLLM {', '.join(RELEASES)} only, not {par.vllm_version} (vLLM 0.28.0 "
            "serves it too, 0.29+ no longer)",
        )
    _checks(config)
    text_arch = wrapped_text_architecture(config, ARCH)
    w = vision_language(text_arch, _tower, modalities=MODALITIES, tower_of=lambda c: c).walk(config, par, args)
    if config.get("anyres", DEFAULTS["anyres"]):
        text = config.get("text_config")
        h_text = W._int(text if isinstance(text, Mapping) else {}, "hidden_size")
        w.add(
            "vision",
            h_text * W.model_dtype_bytes({**(text if isinstance(text, Mapping) else {}), **config}, args.dtype),
        )
    return w


FAMILIES: dict[str, Family] = {ARCH: Family(_walk, MODALITIES)}
