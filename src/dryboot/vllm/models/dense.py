"""Attention-only decoders whose every layer keeps one standard KV cache (full or sliding).

One table, :data:`DECODERS`, says per architecture what its vLLM model file and its Hugging Face
config class decide about the cache: which config keys hold the layer count, the attention and
KV heads and the hidden size (``n_layer``/``n_head``/``n_embd`` for GPT-2 style configs), whether
the model reads ``head_dim`` from the config or always computes ``hidden_size // heads``, whether
it has KV heads of its own at all (multi-head models ignore ``num_key_value_heads``), and how its
layers get a sliding window:

* every model gets vLLM's model-level window (``EngineArgs.create_engine_config``: the
  ``sliding_window`` of the text config, set as ``CacheConfig.sliding_window`` when
  ``layer_types`` is absent or all ``sliding_attention``; an ``Attention`` built with the cache
  config then uses it);
* models that pass ``per_layer_sliding_window`` (``olmo3.py``, ``commandr.py``, ``exaone4.py``)
  give each ``sliding_attention`` layer of ``layer_types`` the config's window;
* config classes that write ``layer_types`` themselves when a file has none (``Olmo3Config``,
  ``Cohere2Config``, ``Exaone4Config``, ``Qwen2MoeConfig``) are mirrored, as is the Qwen-MoE
  rule that keeps ``sliding_window`` only with ``use_sliding_window``.

KV heads per rank are ``max(1, total // TP)`` in every file listed (replicated below TP); MoE
blocks that refuse more TP ranks than routed experts are refused the same way (:func:`verify`).
Config features these files handle differently (dual-chunk attention, a pattern string) are
refused by name, and keys a config class derives by rules not mirrored here are required.

One more table: :data:`LLAMA4`, Llama-4's chunked local attention on its RoPE layers. Multimodal
wrappers whose language model is one of these decoders are :mod:`dryboot.vllm.models.wrappers`.

Each architecture here is verified against vLLM 0.28.0's engine start on a tiny config and on a
config leaving out every defaultable key (``tests/fidelity/test_architectures.py``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from dryboot.errors import InputError, missing_field
from dryboot.vllm.config.hf import ConfigFields, FamilyExtra, LayerKind, ModelGeometry, extra_of
from dryboot.vllm.distributed import UNNAMED_TEXT_CONFIG_PP
from dryboot.vllm.models.common import (
    MAX_LAYERS,
    check_partial_sliding_window,
    geometry,
    layer_types,
    partial_sliding_window,
)
from dryboot.vllm.versions import VersionRules

if TYPE_CHECKING:
    from dryboot.vllm.engine_args import EngineArgs

SLIDING = "sliding_attention"
FULL = "full_attention"


def _every(period: int) -> Callable[[ConfigFields, int], list[str]]:
    """``layer_types`` a config class writes when absent: layer ``i`` is full when ``(i + 1)``
    is a multiple of ``period`` (``Olmo3Config``: 4)."""

    def types(f: ConfigFields, n: int) -> list[str]:
        return [SLIDING if (i + 1) % period else FULL for i in range(n)]

    return types


def _laguna_types(f: ConfigFields, n: int) -> list[str]:
    """Laguna's ``layer_types`` when absent: every layer full attention (transformers' ``LagunaConfig``
    writes ``["full_attention"] * num_hidden_layers``), whatever ``sliding_window`` says: vLLM 0.28.0's and
    0.33.0's engine start build 40 full-attention layers for poolside/Laguna-XS.2-FP8 without it
    (``laguna-notypes`` in ``tests/fidelity/test_releases.py``)."""
    return [FULL] * n


def _cohere2_types(f: ConfigFields, n: int) -> list[str]:
    """``Cohere2Config``: every ``sliding_window_pattern``-th layer (default 4) is full."""
    period = f.integer("sliding_window_pattern", default=4)
    return [SLIDING if (i + 1) % period else FULL for i in range(n)]


def _exaone4_types(f: ConfigFields, n: int) -> list[str]:
    """``Exaone4Config``: every ``sliding_window_pattern``-th layer (default 4) is full; without a
    window the pattern is 0, which the class cannot expand (it divides by it)."""
    if f.get("sliding_window") is None:
        raise InputError(
            f.source,
            f.where("layer_types"),
            "Exaone4Config cannot derive layer_types without a sliding_window (its pattern becomes 0: "
            "integer modulo by zero); give layer_types",
        )
    value = f.get("sliding_window_pattern")
    if isinstance(value, str):
        raise InputError(
            f.source, f.where("sliding_window_pattern"), "a pattern string is not modelled (give layer_types)"
        )
    period = f.integer("sliding_window_pattern", default=4)
    return [SLIDING if (i + 1) % period else FULL for i in range(n)]


def _qwen2_moe_types(f: ConfigFields, n: int) -> list[str]:
    """``Qwen2MoeConfig``: odd-numbered layers below ``max_window_layers`` slide, only with
    ``use_sliding_window``."""
    use = f.boolean("use_sliding_window")
    below = f.integer("max_window_layers", minimum=0)
    return [SLIDING if (i + 1) % 2 and i < below and use else FULL for i in range(n)]


def _qwen2_vl_types(f: ConfigFields, n: int) -> list[str]:
    """``Qwen2VLTextConfig`` / ``Qwen2_5_VLTextConfig``: with ``use_sliding_window`` (and a window),
    layers from ``max_window_layers`` on slide; otherwise every layer is full."""
    use = f.boolean("use_sliding_window") and f.get("sliding_window") is not None
    first = f.integer("max_window_layers", minimum=0)
    return [SLIDING if use and i >= first else FULL for i in range(n)]


def _smollm3_types(f: ConfigFields, n: int) -> list[str]:
    """``SmolLM3Config``: with ``use_sliding_window`` (and a window), the NoPE layers slide
    (``no_rope_layers[i] == 0``; absent: every ``no_rope_layer_interval``-th layer is NoPE)."""
    use = f.boolean("use_sliding_window") and f.get("sliding_window") is not None
    rope = f.get("no_rope_layers")
    if rope is None:
        interval = f.integer("no_rope_layer_interval")
        rope = [int((i + 1) % interval != 0) for i in range(n)]
    if not isinstance(rope, list) or len(rope) != n or not all(isinstance(x, int) for x in rope):
        raise InputError(f.source, f.where("no_rope_layers"), f"must list one 0/1 per layer ({n})")
    return [SLIDING if use and not rope[i] else FULL for i in range(n)]


def _granite_swa_types(f: ConfigFields, n: int) -> list[str]:
    """``GraniteSWAConfig`` / ``GraniteMoeSWAConfig`` (transformers 5.20): layer ``i`` is full when
    ``i % 4 == 0``, else sliding."""
    return [FULL if i % 4 == 0 else SLIDING for i in range(n)]


#: the refusal of a name Telechat2Config also takes for one of its fields
_TELECHAT2_ALIAS = "Telechat2Config's other name for {} is not modelled (give that key instead)"
#: Telechat2Config pops ``num_key_value_heads`` from the file (None when absent), and vLLM's
#: ModelConfig validates the KV heads it reads from the config (recorded on 0.28.0 and 0.33.0)
TELECHAT2_NO_KV_HEADS = (
    "total_num_kv_heads: Input should be a valid integer, got None (the checkpoint's Telechat2Config leaves "
    "num_key_value_heads None when config.json omits it; vLLM's ModelConfig validation)"
)
#: Telechat2Config sets no ``tie_word_embeddings`` of its own (transformers 5's PretrainedConfig neither),
#: and llama.py's LlamaModel / LlamaForCausalLM read it (recorded on 0.28.0 and 0.33.0)
TELECHAT2_NO_TIE = (
    "AttributeError: 'Telechat2Config' object has no attribute 'tie_word_embeddings' (vLLM's llama.py reads it; "
    "the checkpoint's config class sets it only from config.json)"
)


#: bailing_moe.py's BailingMoE (0.27.1-0.33.0): its shared experts, a BailingMLP built with
#: reduce_results=False, whose RowParallelLinear refuses a bias (use_bias) at any TP
BAILING_SHARED_BIAS = (
    "ValueError: When not reduce the results, adding bias to the results can lead to incorrect results "
    "(vLLM's RowParallelLinear: BailingMoE's shared experts under use_bias)"
)
#: bailing_moe.py's BailingMoE (0.27.1-0.33.0): the router's score function and expert bias pairing it asserts
BAILING_SCORE_ASSERT = (
    "AssertionError: score_function and correction_bias should be in 2 combination (softmax, None) or "
    "(sigmoid, not None) (vLLM's BailingMoE, the expert bias from moe_router_enable_expert_bias)"
)


@dataclass(frozen=True)
class BailingMoeClass:
    """What a Bailing checkpoint's own config class defaults of the keys vLLM's ``BailingMoE`` reads.

    :param name: the config class.
    :param first_dense: ``first_k_dense_replace``'s default (the dense layers before the MoE ones).
    :param expert_bias: ``moe_router_enable_expert_bias``'s default (False: no attribute, which
        ``BailingMoE`` reads with getattr).
    :param norm_topk_prob: the class defines ``norm_topk_prob`` (else an absent key is an
        ``AttributeError`` in every MoE layer).
    :param use_bias: ``use_bias``'s default (biased ``BailingMLP`` layers, the shared experts' too).
    :param shared_experts: ``num_shared_experts``'s default.
    """

    name: str
    first_dense: int
    expert_bias: bool
    norm_topk_prob: bool
    use_bias: bool = False
    shared_experts: int = 0


#: architecture -> its checkpoints' config class (remote code: tests/fidelity/data/remote-code)
BAILING_MOE_CLASSES = {
    "BailingMoeForCausalLM": BailingMoeClass(
        "BailingMoeConfig", 0, expert_bias=False, norm_topk_prob=True, use_bias=True, shared_experts=0
    ),
    "BailingMoeV2ForCausalLM": BailingMoeClass(
        "BailingMoeV2Config", 1, expert_bias=True, norm_topk_prob=False, use_bias=False, shared_experts=1
    ),
}


def _bailing_moe(f: ConfigFields, n: int, cls: BailingMoeClass) -> None:
    """What vLLM's ``BailingMoE`` (``bailing_moe.py``: every layer from ``first_k_dense_replace`` on)
    reads of the checkpoint's own config class and fails on at construction.

    :param n: the decoder layers.
    :raises InputError: ``first_k_dense_replace`` not an integer (vLLM compares it with the layer
        index); with MoE layers, ``norm_topk_prob`` absent where the class sets none
        (``AttributeError``), or a ``score_function`` that does not pair with the expert bias as
        ``BailingMoE`` asserts.
    """
    first_dense = f.data.get("first_k_dense_replace", cls.first_dense)
    if not isinstance(first_dense, int) or isinstance(first_dense, bool):
        raise InputError(
            f.source, f.where("first_k_dense_replace"), f"must be an integer, got {first_dense!r} (vLLM's BailingMoe)"
        )
    if first_dense >= n:
        return  # every layer a dense BailingMLP
    if not cls.norm_topk_prob and "norm_topk_prob" not in f.data:
        raise InputError(
            f.source,
            f.where("norm_topk_prob"),
            f"AttributeError: '{cls.name}' object has no attribute 'norm_topk_prob' (vLLM's BailingMoE reads it "
            "in every layer from first_k_dense_replace on; the checkpoint's config class sets none)",
        )
    score = f.data.get("score_function")
    bias = bool(f.data.get("moe_router_enable_expert_bias", cls.expert_bias))
    if score is not None and (score, bias) not in (("softmax", False), ("sigmoid", True)):
        raise InputError(f.source, f.where("score_function"), BAILING_SCORE_ASSERT)
    shared = f.data.get("num_shared_experts", cls.shared_experts)
    if f.data.get("use_bias", cls.use_bias) and isinstance(shared, int) and shared > 0:
        raise InputError(f.source, f.where("use_bias"), BAILING_SHARED_BIAS)


def _telechat2_fields(f: ConfigFields) -> None:
    """The fields TeleChat2's own ``Telechat2Config`` leaves unset or None when ``config.json`` omits
    them, which vLLM's ``telechat2.py`` (``LlamaModel``) and ``ModelConfig`` need.

    :raises InputError: ``num_key_value_heads`` absent or null (ModelConfig's validation), or
        ``tie_word_embeddings`` absent (AttributeError at model construction).
    """
    if f.get("num_key_value_heads") is None:
        raise InputError(f.source, f.where("num_key_value_heads"), TELECHAT2_NO_KV_HEADS)
    if "tie_word_embeddings" not in f.data:  # an explicit null is an attribute vLLM reads as false
        raise InputError(f.source, f.where("tie_word_embeddings"), TELECHAT2_NO_TIE)


#: the ``vllm_file`` of the architectures vLLM serves through its Transformers modeling backend
TRANSFORMERS_BACKEND = "transformers/causal.py"


@dataclass(frozen=True)
class Decoder:
    """What one architecture's model file and config class decide about its KV cache.

    :param vllm_file: the ``vllm/model_executor/models/`` file.
    :param defaults: the HF config class's defaults for absent keys that change the cache.
    :param head_dim: ``"config"`` (``head_dim`` when set, else ``hidden // heads``: ``llama.py``,
        ``mixtral.py``...), ``"hidden"`` (always ``hidden // heads``: ``qwen2_moe.py``,
        ``commandr.py``...), ``"required"`` (``config.head_dim``: ``gemma.py``, ``seed_oss.py``) or
        ``"qk"`` (``qk_nope_head_dim + qk_rope_head_dim``: ``minicpm3.py``, whose latent projections
        are expanded to full heads before a standard ``Attention``).
    :param mha: the model has no KV heads of its own (one per attention head: ``gpt2.py``...).
    :param per_layer_window: the model passes ``per_layer_sliding_window`` from ``layer_types``.
    :param qwen_window: ``sliding_window`` counts only with ``use_sliding_window``.
    :param generated_types: the ``layer_types`` the config class writes when absent.
    :param keys: config keys for ``layers``, ``heads``, ``kv_heads`` and ``hidden``.
    :param refuse_keys: keys whose presence means attention this reader does not model.
    :param required: keys the file must give (the config class derives them by rules not modelled
        here, e.g. a ``layer_types`` pattern).
    :param multi_query_groups: KV heads are ``multi_query_group_num`` with ``multi_query_attention``,
        else one per attention head (``chatglm.py``).
    :param experts_key: the routed-expert count whose MoE block refuses more TP ranks than
        experts (``Qwen2MoeSparseMoeBlock``, ``Qwen3MoeSparseMoeBlock``, ``Ernie4_5_MoeMoE``).
    :param fixed_kv_heads: the model builds its ``Attention`` with this many KV heads whatever the
        config says (``step3_text.py``: one, on every rank).
    :param multi_query: the config class sets the KV heads from ``multi_query`` (one, else one per
        attention head), whatever ``num_key_value_heads`` says (``GPTBigCodeConfig``).
    :param windowless_class: the config class (named) has no ``sliding_window`` attribute, which
        the model reads for each ``sliding_attention`` layer: such a layer without the key in the
        file fails vLLM's build (``AttributeError``; ``apertus.py``).
    :param attention_suffix: the attention layer's module name under ``model.layers.<i>``
        (``internlm2.py``: ``attention.attn``).
    """

    vllm_file: str
    defaults: dict[str, Any] = field(default_factory=dict)
    head_dim: str = "config"
    mha: bool = False
    per_layer_window: bool = False
    qwen_window: bool = False
    generated_types: Callable[[ConfigFields, int], list[str]] | None = None
    keys: dict[str, str] = field(default_factory=dict)
    refuse_keys: dict[str, str] = field(default_factory=dict)
    experts_key: str | None = None
    required: tuple[str, ...] = ()
    multi_query_groups: bool = False
    fixed_kv_heads: int | None = None
    multi_query: bool = False
    windowless_class: str | None = None
    attention_suffix: str = "self_attn.attn"

    def key(self, name: str) -> str:
        return self.keys.get(name, name)


_GPT2_KEYS = {"num_hidden_layers": "n_layer", "num_attention_heads": "n_head", "hidden_size": "n_embd"}
_DCA = {"dual_chunk_attention_config": "dual-chunk attention (DualChunkFlashAttention) is not modelled"}
#: vLLM 0.29.0+'s granite.py / granitemoe.py (granite_layer_attn_params) slide the sliding_attention
#: layers of a plain Granite config's layer_types and give its layers sinks (attention_sinks, default
#: true with layer_types), which 0.27.1 / 0.28.0 ignore: refused by name on every release
_GRANITE_SWA = (
    "vLLM 0.29.0+'s Granite model classes slide the sliding_attention layers of layer_types and add attention "
    "sinks, where 0.27.1 / 0.28.0 ignore them: not modelled on a Granite config (a granite_swa / granitemoe_swa "
    "checkpoint declares GraniteSWAForCausalLM / GraniteMoeSWAForCausalLM)"
)
_GRANITE_SWA_KEYS = {"layer_types": _GRANITE_SWA, "attention_sinks": _GRANITE_SWA}

#: exaone_moe.py's decoder (per-layer windows from sliding_windows, read by the model class with no
#: config-class default), under both of its registry names
_EXAONE_MOE = Decoder(
    "exaone_moe.py",
    {
        "max_position_embeddings": 2048,
        "num_attention_heads": 32,
        "hidden_size": 4096,
        "num_key_value_heads": 32,
        "sliding_window": 4096,
        "num_experts": 64,
    },
    per_layer_window=True,
    generated_types=_exaone4_types,
    required=("sliding_windows",),
    experts_key="num_experts",
)

#: architecture -> its decoder facts (vLLM 0.28.0 model files, transformers 5 config classes).
#: the ``vllm_file`` of the multimodal architectures vLLM serves through its Transformers modeling
#: backend (``TransformersMultiModalForCausalLM``)
TRANSFORMERS_MULTIMODAL = "transformers/multimodal.py"

_BACKEND_SLIDING = (
    "sliding-window layers of a multimodal model served by the Transformers backend are not verified "
    "(0.27.1's create_attention_instances reads layer_types from the wrapper's config, 0.28+ from text_config)"
)

#: multimodal architectures vLLM 0.27.1-0.33.0 serve through the Transformers backend
#: (``TransformersMultiModalForCausalLM``): ``base.py``'s attention instances over the text config
#: (``get_text_config``), one ``Attention`` per decoder layer of ``text_config.num_hidden_layers``,
#: heads / KV heads / head size as ``ModelConfig`` reads the text config, every layer causal (a
#: multimodal config never builds ``EncoderOnlyAttention``); read on ``text_config`` with the
#: defaults of the text config class transformers builds (the same in the transformers of every
#: release's environment, 5.10.4-5.24.0). Sliding layers are refused by name (not verified).
BACKEND_MULTIMODAL: dict[str, Decoder] = {
    # transformers' Emu3Config: text_config an Emu3TextConfig (Llama's attention, no sliding window)
    "Emu3ForConditionalGeneration": Decoder(
        TRANSFORMERS_MULTIMODAL,
        {
            "max_position_embeddings": 9216,
            "num_hidden_layers": 32,
            "num_attention_heads": 32,
            "num_key_value_heads": 8,
            "hidden_size": 4096,
        },
        per_layer_window=True,
        refuse_keys={"sliding_window": _BACKEND_SLIDING, "layer_types": _BACKEND_SLIDING},
        required=("num_hidden_layers",),
    ),
    # transformers' VibeVoiceAsrConfig: text_config a Qwen2Config (sliding_window only under
    # use_sliding_window; layer_types written all full without it)
    "VibeVoiceAsrForConditionalGeneration": Decoder(
        TRANSFORMERS_MULTIMODAL,
        {
            "max_position_embeddings": 32768,
            "num_hidden_layers": 32,
            "num_attention_heads": 32,
            "num_key_value_heads": 32,
            "hidden_size": 4096,
        },
        per_layer_window=True,
        qwen_window=True,
        refuse_keys={"use_sliding_window": _BACKEND_SLIDING},
        required=("num_hidden_layers",),
    ),
}

#: the defaults of the checkpoints' own BailingMoeV2Config, which BharatGen's Param2MoEConfig repeats
#: (both remote code: ``tests/fidelity/data/remote-code/bailing_moe_v2``, ``param2moe``)
_BAILING_V2_DEFAULTS = {
    "max_position_embeddings": 32768,
    "num_hidden_layers": 20,
    "num_attention_heads": 16,
    "num_key_value_heads": 4,
    "hidden_size": 2048,
    "head_dim": 128,
}

DECODERS: dict[str, Decoder] = {
    "MixtralForCausalLM": Decoder("mixtral.py", {"max_position_embeddings": 131072, "num_key_value_heads": 8}),
    "Qwen2MoeForCausalLM": Decoder(
        "qwen2_moe.py",
        {
            "max_position_embeddings": 32768,
            "num_key_value_heads": 16,
            "use_sliding_window": False,
            "sliding_window": 4096,
            "max_window_layers": 28,
            "num_experts": 60,
        },
        head_dim="hidden",
        qwen_window=True,
        generated_types=_qwen2_moe_types,
        refuse_keys=_DCA,
        experts_key="num_experts",
    ),
    "Qwen3MoeForCausalLM": Decoder(
        "qwen3_moe.py",
        {
            "max_position_embeddings": 32768,
            "num_key_value_heads": 4,
            "use_sliding_window": False,
            "sliding_window": 4096,
            "num_experts": 128,
        },
        qwen_window=True,
        refuse_keys=_DCA,
        experts_key="num_experts",
    ),
    "Phi3ForCausalLM": Decoder("phi3.py", {"max_position_embeddings": 4096, "original_max_position_embeddings": 4096}),
    "GraniteForCausalLM": Decoder("granite.py", {"max_position_embeddings": 2048}, refuse_keys=_GRANITE_SWA_KEYS),
    "GraniteMoeForCausalLM": Decoder(
        "granitemoe.py", {"max_position_embeddings": 2048}, head_dim="hidden", refuse_keys=_GRANITE_SWA_KEYS
    ),
    "Olmo3ForCausalLM": Decoder(
        "olmo3.py",
        {"max_position_embeddings": 2048, "sliding_window": 4096},
        head_dim="hidden",
        per_layer_window=True,
        generated_types=_every(4),
    ),
    "CohereForCausalLM": Decoder("commandr.py", {"max_position_embeddings": 8192}, head_dim="hidden"),
    "Cohere2ForCausalLM": Decoder(
        "commandr.py",
        {"max_position_embeddings": 8192, "sliding_window": 4096},
        head_dim="hidden",
        per_layer_window=True,
        generated_types=_cohere2_types,
    ),
    "Exaone4ForCausalLM": Decoder(
        "exaone4.py",
        {"max_position_embeddings": 2048, "num_key_value_heads": 32, "sliding_window": 4096},
        per_layer_window=True,
        generated_types=_exaone4_types,
    ),
    "ExaoneForCausalLM": Decoder(
        "exaone.py",
        {"max_position_embeddings": 4096, "num_key_value_heads": 8},
        keys={"num_hidden_layers": "num_layers"},
    ),
    "Glm4ForCausalLM": Decoder(
        "glm4.py", {"max_position_embeddings": 131072, "num_key_value_heads": 2, "head_dim": 128}
    ),
    "GlmForCausalLM": Decoder("glm.py", {"max_position_embeddings": 131072, "num_key_value_heads": 2, "head_dim": 128}),
    # Glm4MoeConfig has no head_dim of its own: vLLM's Glm4MoeDecoderLayer reads config.head_dim
    "Glm4MoeForCausalLM": Decoder(
        "glm4_moe.py", {"max_position_embeddings": 131072, "num_key_value_heads": 8}, required=("head_dim",)
    ),
    "Ernie4_5ForCausalLM": Decoder(
        "ernie45.py", {"max_position_embeddings": 131072, "num_key_value_heads": 2, "head_dim": 128}
    ),
    "Ernie4_5_MoeForCausalLM": Decoder(
        "ernie45_moe.py",
        {"max_position_embeddings": 131072, "num_key_value_heads": 4, "moe_num_experts": 64},
        experts_key="moe_num_experts",
    ),
    "StableLmForCausalLM": Decoder(
        "stablelm.py", {"max_position_embeddings": 4096, "num_key_value_heads": 32}, head_dim="hidden"
    ),
    "GemmaForCausalLM": Decoder(
        "gemma.py", {"max_position_embeddings": 8192, "num_key_value_heads": 16, "head_dim": 256}, head_dim="required"
    ),
    "OlmoeForCausalLM": Decoder("olmoe.py", {"max_position_embeddings": 4096}, head_dim="hidden"),
    "SeedOssForCausalLM": Decoder(
        "seed_oss.py",
        {"max_position_embeddings": 524288, "num_key_value_heads": 8, "head_dim": 128},
        head_dim="required",
    ),
    "ArceeForCausalLM": Decoder("arcee.py", {"max_position_embeddings": 4096}),
    # apertus.py (0.27.1-0.33.0): Llama's attention (head_dim when set, else hidden // heads; the
    # sliding_attention layers of layer_types take sliding_window), an xIELU MLP; ApertusConfig
    # defaults the KV heads to the attention heads and has no head_dim, window or layer_types
    "ApertusForCausalLM": Decoder(
        "apertus.py", {"max_position_embeddings": 65536}, per_layer_window=True, windowless_class="ApertusConfig"
    ),
    "PhiForCausalLM": Decoder("phi.py", {"max_position_embeddings": 2048}, head_dim="hidden", mha=True),
    "PhiMoEForCausalLM": Decoder("phimoe.py", {"max_position_embeddings": 131072, "num_key_value_heads": 8}),
    "NemotronForCausalLM": Decoder("nemotron.py", {"max_position_embeddings": 4096}),
    "GPT2LMHeadModel": Decoder("gpt2.py", {"n_positions": 1024}, head_dim="hidden", mha=True, keys=_GPT2_KEYS),
    "GPTJForCausalLM": Decoder("gpt_j.py", {"n_positions": 2048}, head_dim="hidden", mha=True, keys=_GPT2_KEYS),
    "GPTNeoXForCausalLM": Decoder("gpt_neox.py", {"max_position_embeddings": 2048}, head_dim="hidden", mha=True),
    "OPTForCausalLM": Decoder("opt.py", {"max_position_embeddings": 2048}, head_dim="hidden", mha=True),
    "LLaMAForCausalLM": Decoder("llama.py", {"max_position_embeddings": 2048}, per_layer_window=True),
    "Ministral3ForCausalLM": Decoder(
        "mistral.py",
        {"max_position_embeddings": 262144, "num_key_value_heads": 8, "head_dim": 128},
        per_layer_window=True,
        required=("rope_parameters",),
    ),
    # internlm2.py (0.27.1-0.33.0): InternLM2Attention, hidden_size // num_attention_heads per head
    # (no head_dim read), num_key_value_heads split over TP (replicated below it), no window of its
    # own; the config class is the checkpoint's own InternLM2Config (remote code: auto_map, read
    # under --trust-remote-code), whose defaults these are (num_key_value_heads: the heads)
    "InternLM2ForCausalLM": Decoder(
        "internlm2.py",
        {"max_position_embeddings": 2048, "num_hidden_layers": 32, "num_attention_heads": 32, "hidden_size": 4096},
        head_dim="hidden",
        attention_suffix="attention.attn",
    ),
    # minicpm.py (0.27.1-0.33.0): MiniCPMAttention, hidden_size // num_attention_heads per head,
    # num_key_value_heads split over TP; its muP scales (scale_emb, dim_model_base, scale_depth) and
    # MoE MLP (num_experts) leave the cache alone. The checkpoint's own MiniCPMConfig (remote code,
    # auto_map) defaults the KV heads to the heads
    "MiniCPMForCausalLM": Decoder(
        "minicpm.py",
        {"max_position_embeddings": 2048, "num_hidden_layers": 32, "num_attention_heads": 32, "hidden_size": 4096},
        head_dim="hidden",
    ),
    # bailing_moe.py (0.27.1-0.33.0): BailingAttention, config.head_dim (the checkpoint's own
    # BailingMoeConfig writes hidden_size // num_attention_heads when absent), num_key_value_heads
    # split over TP. BailingMoeConfig keeps sliding_window (default 4096) whatever
    # use_sliding_window says, and vLLM takes it as the model-level window: every layer slides
    # (recorded). Its num_key_value_heads default (0) is not modelled: the file must give it
    "BailingMoeForCausalLM": Decoder(
        "bailing_moe.py",
        {
            "max_position_embeddings": 16384,
            "num_hidden_layers": 24,
            "num_attention_heads": 16,
            "hidden_size": 1024,
            "sliding_window": 4096,
        },
        required=("num_key_value_heads",),
        attention_suffix="attention.attn",
    ),
    # param2moe.py (0.27.1-0.33.0): Param2MoEAttention, config.head_dim (else hidden_size //
    # num_attention_heads), num_key_value_heads split over TP with no replication (TP must divide
    # them: asserted, :data:`KV_HEADS_SPLIT`), no window; the first first_k_dense_replace layers dense
    # (a stage needs an MoE layer). The config class is the checkpoint's own Param2MoEConfig (remote
    # code, auto_map: BharatGen's converter writes it beside config.json), whose defaults these are
    "Param2MoEForCausalLM": Decoder(
        "param2moe.py",
        _BAILING_V2_DEFAULTS,
    ),
    # bailing_moe.py (0.27.1-0.33.0): BailingMoeV2ForCausalLM is BailingMoeForCausalLM (the same
    # BailingAttention: config.head_dim, else hidden_size // num_attention_heads); the checkpoint's
    # own BailingMoeV2Config (remote code, auto_map) defaults head_dim 128 and 4 KV heads and has no
    # sliding_window of its own (a file's key is kept, and vLLM slides every layer by it, as for V1)
    "BailingMoeV2ForCausalLM": Decoder(
        "bailing_moe.py",
        _BAILING_V2_DEFAULTS,
        attention_suffix="attention.attn",
    ),
    # telechat2.py (0.27.1-0.33.0): TeleChat2Model is llama.py's LlamaModel on the checkpoint's own
    # Telechat2Config (remote code, auto_map), whose attribute_map reads the layers and heads as
    # n_layer / n_head (defaults 30, 32); LlamaAttention: head_dim, else hidden_size // heads; no
    # window, no layer_types
    "TeleChat2ForCausalLM": Decoder(
        "telechat2.py",
        {"n_layer": 30, "n_head": 32, "hidden_size": 4096},
        keys={"num_hidden_layers": "n_layer", "num_attention_heads": "n_head"},
        # the names Telechat2Config takes for them too (attribute_map, its n_embed kwarg): which one
        # the class keeps when a file gives both is not modelled
        refuse_keys={
            "num_hidden_layers": _TELECHAT2_ALIAS.format("n_layer"),
            "num_attention_heads": _TELECHAT2_ALIAS.format("n_head"),
            "n_embed": _TELECHAT2_ALIAS.format("hidden_size"),
        },
    ),
    "InternLM3ForCausalLM": Decoder(
        "llama.py",
        {"max_position_embeddings": 32768, "head_dim": 128},
        per_layer_window=True,
        required=("num_key_value_heads",),
    ),
    "IQuestCoderForCausalLM": Decoder(
        "llama.py",
        {"max_position_embeddings": 131072},
        per_layer_window=True,
        required=("num_key_value_heads", "head_dim"),
    ),
    "CwmForCausalLM": Decoder(
        "llama.py",
        {"max_position_embeddings": 131072, "num_key_value_heads": 8},
        per_layer_window=True,
        required=("layer_types", "sliding_window", "head_dim", "rope_parameters"),
    ),
    "GraniteMoeSharedForCausalLM": Decoder(
        "granitemoeshared.py", {"max_position_embeddings": 2048}, head_dim="hidden", refuse_keys=_GRANITE_SWA_KEYS
    ),
    "StableLMEpochForCausalLM": Decoder(
        "stablelm.py", {"max_position_embeddings": 4096, "num_key_value_heads": 32}, head_dim="hidden"
    ),
    "FlexOlmoForCausalLM": Decoder("flex_olmo.py", {"max_position_embeddings": 4096}, head_dim="hidden"),
    "DbrxForCausalLM": Decoder(
        "dbrx.py",
        {"max_seq_len": 2048, "attn_config": {"kv_n_heads": 1}},
        head_dim="hidden",
        required=("attn_config",),  # vLLM's DbrxAttention reads attn_config.rope_theta
        keys={
            "num_hidden_layers": "n_layers",
            "num_attention_heads": "n_heads",
            "hidden_size": "d_model",
            "num_key_value_heads": "attn_config.kv_n_heads",
        },
    ),
    "Cohere2MoeForCausalLM": Decoder(
        "cohere2_moe.py",
        {"max_position_embeddings": 8192, "sliding_window": 4096, "num_experts": 8, "head_dim": 128},
        per_layer_window=True,
        required=("layer_types",),  # num_key_value_heads: Cohere2MoeConfig's default, the attention heads
        experts_key="num_experts",
    ),
    "AfmoeForCausalLM": Decoder(
        "afmoe.py",
        {"max_position_embeddings": 16384, "sliding_window": 1024, "head_dim": 128},
        head_dim="required",
        per_layer_window=True,
        # num_key_value_heads absent: the attention heads in vLLM's AfmoeConfig (0.27.1-0.31.0) and transformers'
        required=("layer_types", "max_position_embeddings"),
    ),
    # MiniCPM3Attention: one standard Attention of num_heads / TP heads (K and V expanded from the
    # latent), head size qk_nope_head_dim + qk_rope_head_dim; num_key_value_heads is not read
    "MiniCPM3ForCausalLM": Decoder(
        "minicpm3.py",
        {
            "max_position_embeddings": 32768,
            "num_attention_heads": 40,
            "hidden_size": 2560,
            "qk_nope_head_dim": 64,
            "qk_rope_head_dim": 32,
        },
        head_dim="qk",
        mha=True,
    ),
    # Step3TextAttention: one KV head (num_kv_heads=1 on every rank), config.head_dim; the MoE
    # layers are parsed from the moe_layers_enum string (the class default, a tuple, fails)
    "Step3TextForCausalLM": Decoder(
        "step3_text.py",
        {"max_seq_len": 65536, "num_attention_heads": 64, "head_dim": 256, "moe_num_experts": 48},
        head_dim="required",
        fixed_kv_heads=1,
        required=("moe_layers_enum",),
        experts_key="moe_num_experts",
    ),
    # per-layer windows from sliding_windows (read by the model class, no config-class default)
    "ExaoneMoeForCausalLM": _EXAONE_MOE,
    # vLLM 0.33.0's registry also names exaone_moe.py's ExaoneMoeForCausalLM "ExaoneMoEForCausalLM"
    # (the same class, the same config class): read as ExaoneMoeForCausalLM
    "ExaoneMoEForCausalLM": _EXAONE_MOE,
    # vLLM 0.33.0: granite.py / granitemoeshared.py serve the granite_swa / granitemoe_swa
    # checkpoints: each sliding_attention layer of layer_types (which transformers' GraniteSWAConfig /
    # GraniteMoeSWAConfig write when absent: full when i % 4 == 0) passes the config's window as
    # per_layer_sliding_window, and every layer's Attention takes a per-head sink
    # (granite_layer_attn_params: attention_sinks, default true once layer_types is set)
    "GraniteSWAForCausalLM": Decoder(
        "granite.py",
        {"max_position_embeddings": 8192, "num_key_value_heads": 4, "sliding_window": 128},
        per_layer_window=True,
        generated_types=_granite_swa_types,
    ),
    # vLLM 0.33.0's vllm/models/beam (its own BeamConfig): each layer's Attention takes the config's
    # window on a sliding_attention layer of layer_types (all sliding when absent) and none on a full
    # one (the model clears CacheConfig.sliding_window first); head size head_dim or hidden // heads
    "BeamForCausalLM": Decoder(
        "vllm.models.beam",
        {"max_position_embeddings": 32768, "num_key_value_heads": 4, "sliding_window": 4096, "num_experts": 128},
        per_layer_window=True,
        generated_types=lambda f, n: [SLIDING] * n,
    ),
    "GraniteMoeSWAForCausalLM": Decoder(
        "granitemoeshared.py",
        {"max_position_embeddings": 2048, "sliding_window": 128},
        head_dim="hidden",
        per_layer_window=True,
        generated_types=_granite_swa_types,
    ),
    # MellumConfig is Qwen3MoeConfig under another model_type; the model reads layer_types,
    # mlp_layer_types and rope_parameters per layer type, none of which the class writes
    "MellumForCausalLM": Decoder(
        "mellum.py",
        {
            "max_position_embeddings": 32768,
            "num_attention_heads": 32,
            "hidden_size": 2048,
            "num_key_value_heads": 4,
            "use_sliding_window": False,
            "sliding_window": 4096,
            "num_experts": 128,
        },
        per_layer_window=True,
        qwen_window=True,
        required=("layer_types", "mlp_layer_types", "rope_parameters"),
        experts_key="num_experts",
    ),
    # LagunaConfig (vLLM's own): per-layer windows, sinks on the sliding layers with
    # swa_attention_sink_enabled, optional per-layer query heads
    "LagunaForCausalLM": Decoder(
        "laguna.py",
        {
            "max_position_embeddings": 131072,
            "num_attention_heads": 48,
            "num_key_value_heads": 8,
            "head_dim": 128,
            "hidden_size": 2048,
            "num_experts": 256,
        },
        per_layer_window=True,
        generated_types=_laguna_types,
    ),
    "Fairseq2LlamaForCausalLM": Decoder("fairseq2_llama.py", {"max_position_embeddings": 2048}, per_layer_window=True),
    "HyperCLOVAXForCausalLM": Decoder("hyperclovax.py", {"max_position_embeddings": 2048}),
    # sarvam.py's SarvamMoEForCausalLM is bailing_moe.py's BailingMoeForCausalLM (full attention,
    # head size config.head_dim or hidden // heads) on transformers' SarvamMoEConfig, which has no
    # use_bias or embedding_dropout (the model reads both: AttributeError without them)
    "SarvamMoEForCausalLM": Decoder(
        "sarvam.py",
        {
            "max_position_embeddings": 131072,
            "num_attention_heads": 64,
            "num_key_value_heads": 4,
            "hidden_size": 4096,
            "head_dim": 64,
        },
        required=("use_bias", "embedding_dropout"),
    ),
    "HYV3ForCausalLM": Decoder(
        "hy_v3.py",
        {"max_position_embeddings": 131072, "num_key_value_heads": 8, "head_dim": 128, "num_experts": 64},
        experts_key="num_experts",
        required=("num_experts",),
    ),
    "Jais2ForCausalLM": Decoder(
        "jais2.py",
        {},
        required=("num_key_value_heads", "max_position_embeddings"),
        refuse_keys={"interleaved_sliding_window": "per-layer interleaved sliding windows are not modelled"},
    ),
    # Qwen2VLTextConfig / Qwen2_5_VLTextConfig keep sliding_window only with use_sliding_window
    # (a published "use_sliding_window": false with "sliding_window": 32768 is full attention)
    **{
        arch: Decoder(
            file,
            {
                "max_position_embeddings": 32768,
                "num_key_value_heads": 8,
                "use_sliding_window": False,
                "sliding_window": 4096,
                "max_window_layers": 80,
            },
            head_dim="hidden",
            qwen_window=True,
            generated_types=_qwen2_vl_types,
        )
        for arch, file in (
            ("Qwen2VLForConditionalGeneration", "qwen2_vl.py"),
            ("Qwen2_5_VLForConditionalGeneration", "qwen2_5_vl.py"),
        )
    },
    "Glm4vForConditionalGeneration": Decoder(
        "glm4_1v.py", {"max_position_embeddings": 32768, "num_key_value_heads": 2}
    ),
    # Glm4vMoeTextConfig has no head_dim of its own: vLLM's Glm4MoeDecoderLayer reads config.head_dim
    "Glm4vMoeForConditionalGeneration": Decoder(
        "glm4_1v.py", {"max_position_embeddings": 65536, "num_key_value_heads": 8}, required=("head_dim",)
    ),
    **{
        arch: Decoder(
            "chatglm.py",
            {"seq_length": 2048, "multi_query_group_num": 1},
            head_dim="hidden",
            multi_query_groups=True,
            keys={"num_hidden_layers": "num_layers"},
            required=("tie_word_embeddings", "original_rope"),  # vLLM's ChatGLM reads them; no class default
        )
        for arch in ("ChatGLMModel", "ChatGLMForConditionalGeneration")
    },
    # chameleon.py's ChameleonModel: every layer full attention, head size hidden // heads
    "ChameleonForConditionalGeneration": Decoder(
        "chameleon.py", {"max_position_embeddings": 4096, "num_key_value_heads": 32}, head_dim="hidden"
    ),
    # glm4v.py: ChatGLM's model with an EVA2-CLIP vision tower (config.vision_config)
    "GLM4VForCausalLM": Decoder(
        "glm4v.py",
        {"seq_length": 2048, "multi_query_group_num": 1},
        head_dim="hidden",
        multi_query_groups=True,
        keys={"num_hidden_layers": "num_layers"},
        required=("tie_word_embeddings", "original_rope", "vision_config"),
    ),
    # served by vLLM's Transformers modeling backend (registry.py _TRANSFORMERS_SUPPORTED_MODELS ->
    # transformers/causal.py TransformersForCausalLM): base.py create_attention_instances builds one
    # Attention per layer, head size and KV heads as ModelConfig reads them, and a sliding_attention
    # entry of layer_types takes the config's sliding_window (per_layer_sliding_window)
    **{
        arch: Decoder(TRANSFORMERS_BACKEND, defaults, per_layer_window=True, **more)
        for arch, defaults, more in (
            ("OlmoForCausalLM", {"max_position_embeddings": 2048}, {}),
            ("Olmo2ForCausalLM", {"max_position_embeddings": 2048}, {}),
            ("Starcoder2ForCausalLM", {"max_position_embeddings": 4096, "num_key_value_heads": 2}, {}),
            (
                "SmolLM3ForCausalLM",
                {
                    "max_position_embeddings": 32768,
                    "num_key_value_heads": 4,
                    "use_sliding_window": False,
                    "no_rope_layer_interval": 4,
                },
                {"generated_types": _smollm3_types},
            ),
            (
                "VaultGemmaForCausalLM",
                {"max_position_embeddings": 8192, "num_key_value_heads": 4, "head_dim": 256, "sliding_window": 4096},
                {"generated_types": _every(2)},
            ),
            (
                "GPTBigCodeForCausalLM",
                {"n_positions": 1024},
                {"keys": _GPT2_KEYS, "multi_query": True},
            ),
            # vLLM 0.33.0 (TransformersMoEForCausalLM): transformers' Kolibri1Config writes layer_types
            # when absent (full when (i + 1) % 5 == 0) and refuses sliding layers without a positive window
            (
                "Kolibri1ForCausalLM",
                {"max_position_embeddings": 262144, "num_key_value_heads": 4, "head_dim": 128, "sliding_window": 513},
                {"generated_types": _every(5)},
            ),
        )
    },
    # multimodal models served by the Transformers backend (registry.py -> transformers/multimodal.py
    # TransformersMultiModalForCausalLM): the same create_attention_instances over text_config
    # (get_text_config), one Attention per decoder layer; read on text_config with its config class's
    # defaults
    **BACKEND_MULTIMODAL,
    # minimax_m2.py: every layer full attention (the model passes no attn_window_size), head_dim from
    # the config; verified at TP 1 only (see verify)
    "MiniMaxM2ForCausalLM": Decoder(
        "minimax_m2.py",
        {"max_position_embeddings": 196608, "num_key_value_heads": 8, "head_dim": 128, "num_local_experts": 256},
        experts_key="num_local_experts",
    ),
    "Qwen3VLForConditionalGeneration": Decoder(
        "qwen3_vl.py", {"max_position_embeddings": 128000, "num_key_value_heads": 32, "head_dim": 128}
    ),
    # cosmos3.py: Qwen3VLForConditionalGeneration with other weight names; Cosmos3OmniConfig
    # reads text_config as a Qwen3VLTextConfig
    "Cosmos3ForConditionalGeneration": Decoder(
        "cosmos3.py", {"max_position_embeddings": 128000, "num_key_value_heads": 32, "head_dim": 128}
    ),
    # alpamayo2_super.py (vLLM 0.33.0): Qwen3VLForConditionalGeneration with its own weights mapper;
    # Alpamayo2SuperConfig is a Qwen3VLConfig built from vlm_config's text_config
    "Alpamayo2Super": Decoder(
        "alpamayo2_super.py", {"max_position_embeddings": 128000, "num_key_value_heads": 32, "head_dim": 128}
    ),
    "Qwen3VLMoeForConditionalGeneration": Decoder(
        "qwen3_vl_moe.py",
        {"max_position_embeddings": 128000, "num_key_value_heads": 16, "num_experts": 60},
        experts_key="num_experts",
    ),
}


#: Qwen3-VL's model class and its subclass: the language model built from the text config
_UNNAMED_TEXT_MODEL = frozenset(
    {
        "Qwen3VLForConditionalGeneration",
        "Qwen3VLMoeForConditionalGeneration",
        "Cosmos3ForConditionalGeneration",
        "Alpamayo2Super",
    }
)


def _all_full(f: ConfigFields, n: int) -> list[str]:
    return [FULL] * n


#: architectures a release reads with transformers' own config class and serves with another model
#: class than 0.28.0's (switch ``hf_config_class_architectures``): their decoder facts there
HF_CLASS_DECODERS: dict[str, Decoder] = {
    # 0.33.0: vLLM's MellumConfig (Qwen3MoeConfig's defaults, use_sliding_window) is gone and
    # registry.py serves the architecture through the Transformers backend
    # (TransformersMoEForCausalLM): transformers' MellumConfig writes layer_types (all
    # full_attention), mlp_layer_types (all sparse) and the ropes when absent, and base.py's
    # create_attention_instances gives a sliding_attention layer config.sliding_window (default
    # 1024) whatever use_sliding_window says
    "MellumForCausalLM": Decoder(
        "transformers/moe.py",
        {
            "max_position_embeddings": 131072,
            "num_attention_heads": 32,
            "hidden_size": 2304,
            "num_key_value_heads": 4,
            "head_dim": 128,
            "sliding_window": 1024,
            "num_experts": 64,
        },
        per_layer_window=True,
        generated_types=_all_full,
        experts_key="num_experts",
    ),
}


@dataclass(frozen=True)
class HFClassReading(FamilyExtra):
    """The model as transformers' config class reads the file (:data:`HF_CLASS_DECODERS`)."""

    model: ModelGeometry


def _names_architectures(text: Any) -> bool:
    """Whether a text sub-config names its ``architectures`` (a non-empty list)."""
    return isinstance(text, dict) and isinstance(text.get("architectures"), list) and bool(text["architectures"])


def defaults(f: ConfigFields) -> dict[str, Any]:
    architecture = (f.root.get("architectures") or [""])[0]
    if architecture in LLAMA4:
        return dict(LLAMA4[architecture][1])
    spec = DECODERS.get(architecture)
    return dict(spec.defaults) if spec else {}


def heads(f: ConfigFields, spec: Decoder) -> tuple[int, int, int]:
    """(attention heads, KV heads, head size) as the model file builds its ``Attention``.

    :raises InputError: a missing or malformed field, or KV heads that do not divide the heads.
    """
    n_heads = f.integer(spec.key("num_attention_heads"))
    kv_key = spec.key("num_key_value_heads")
    if spec.fixed_kv_heads is not None:
        kv = spec.fixed_kv_heads
    elif spec.mha:
        kv = n_heads
    elif spec.multi_query:
        kv = 1 if f.boolean("multi_query", default=True) else n_heads
    elif spec.multi_query_groups:
        kv = f.integer("multi_query_group_num") if f.boolean("multi_query_attention") else n_heads
    elif "." in kv_key:  # a nested config (DBRX ``attn_config.kv_n_heads``)
        outer, inner = kv_key.split(".", 1)
        block = f.get(outer) or {}
        if not isinstance(block, dict):
            raise InputError(f.source, f.where(outer), "must be an object")
        kv = ConfigFields(f.source, block, f.where(outer) + ".", defaults=spec.defaults.get(outer) or {}).integer(inner)
    else:
        kv = f.integer(kv_key, default=n_heads)
    if spec.head_dim == "qk":
        head_dim = f.integer("qk_nope_head_dim", minimum=0) + f.integer("qk_rope_head_dim", minimum=0)
    elif spec.head_dim == "required" or (spec.head_dim == "config" and f.has("head_dim")):
        head_dim = f.integer("head_dim")
    else:
        head_dim = f.integer(spec.key("hidden_size")) // n_heads
    if n_heads % kv:
        raise InputError(
            f.source,
            f.where(spec.key("num_key_value_heads")),
            f"{kv} KV heads do not divide the {n_heads} attention heads; vLLM's Attention: "
            f"num_heads ({n_heads}) is not divisible by num_kv_heads ({kv})",
        )
    return n_heads, kv, head_dim


def _window(f: ConfigFields, spec: Decoder) -> int | None:
    value = f.get("sliding_window")
    if spec.qwen_window and not f.boolean("use_sliding_window"):
        return None
    if value is None or value == 0:
        return None
    return f.integer("sliding_window")


#: Llama-4 (``llama4.py``, ``mllama4.py``; ``Llama4TextConfig``): rope layers use chunked local
#: attention of ``attention_chunk_size`` tokens, the NoPE layers (``no_rope_layers[i] == 0``) full.
LLAMA4: dict[str, tuple[str, dict[str, Any]]] = {
    arch: (
        file,
        {
            "max_position_embeddings": 131072,
            "num_key_value_heads": 8,
            "head_dim": 128,
            "attention_chunk_size": 8192,
            "no_rope_layer_interval": 4,
        },
    )
    for arch, file in (("Llama4ForCausalLM", "llama4.py"), ("Llama4ForConditionalGeneration", "mllama4.py"))
}


def _llama4(f: ConfigFields, architecture: str) -> ModelGeometry:
    """``Llama4Attention``: ``ChunkedLocalAttention`` where the layer has RoPE and the config an
    ``attention_chunk_size``; ``no_rope_layers`` (absent or empty: a NoPE layer every
    ``no_rope_layer_interval``-th layer) says which do; the head size is ``config.head_dim``."""
    n = f.integer("num_hidden_layers", maximum=MAX_LAYERS)
    n_heads = f.integer("num_attention_heads")
    kv = f.integer("num_key_value_heads", default=n_heads)
    head_dim = f.integer("head_dim") if f.has("head_dim") else f.integer("hidden_size") // n_heads
    if n_heads % kv:
        raise InputError(f.source, f.where("num_key_value_heads"), f"{kv} KV heads do not divide {n_heads} heads")
    rope = f.get("no_rope_layers")
    if not rope:
        interval = f.integer("no_rope_layer_interval")
        rope = [int((i + 1) % interval != 0) for i in range(n)]
    if not isinstance(rope, list) or len(rope) != n or not all(isinstance(x, int) for x in rope):
        raise InputError(f.source, f.where("no_rope_layers"), f"must list one 0/1 per layer ({n})")
    chunk = f.get("attention_chunk_size")
    kinds = tuple(LayerKind.CHUNKED if r != 0 and chunk else LayerKind.FULL for r in rope)
    return geometry(f, architecture, "dense", kinds, heads=(n_heads, kv, head_dim))


def _exaone_moe_kinds(
    f: ConfigFields, types: list[str], window: int | None
) -> tuple[tuple[LayerKind, ...], int | None]:
    """EXAONE-MoE (``ExaoneMoeAttention``): a ``sliding_attention`` layer ``i`` slides over
    ``sliding_windows[i]`` (``per_layer_sliding_window``); a full layer, or a sliding one whose
    entry is null, takes the model-level window (``CacheConfig.sliding_window``: only when every
    layer slides), else none. (kinds, the one window of the sliding layers.)

    :raises InputError: ``sliding_windows`` not one entry per layer, or sliding layers of
        different windows (not modelled).
    """
    n = len(types)
    windows = f.get("sliding_windows")
    if not isinstance(windows, list) or len(windows) != n:
        raise InputError(f.source, f.where("sliding_windows"), f"must list one window (or null) per layer ({n})")
    model_window = window if all(t == SLIDING for t in types) else None
    effective: list[int | None] = []
    for i, t in enumerate(types):
        w = windows[i] if t == SLIDING else None
        if w is not None and (not isinstance(w, int) or isinstance(w, bool) or w < 0):
            raise InputError(f.source, f"{f.where('sliding_windows')}[{i}]", "must be a non-negative integer or null")
        effective.append(w if w is not None else model_window)
    distinct = {w for w in effective if w}
    if len(distinct) > 1:
        raise InputError(
            f.source,
            f.where("sliding_windows"),
            f"sliding layers of different windows {sorted(distinct)}: not modelled",
        )
    kinds = tuple(LayerKind.SLIDING if w else LayerKind.FULL for w in effective)
    return kinds, (distinct.pop() if distinct else None)


def read(f: ConfigFields, architecture: str) -> ModelGeometry:
    if architecture in LLAMA4:
        return _llama4(f, architecture)
    model = _read(f, architecture, DECODERS[architecture])
    if architecture in HF_CLASS_DECODERS:
        # as a release reading the file with transformers' class reads it (for_release)
        hf = HF_CLASS_DECODERS[architecture]
        model = replace(model, family_extra=HFClassReading(_read(f.with_defaults(dict(hf.defaults)), architecture, hf)))
    return model


def for_release(model: ModelGeometry, rules: VersionRules) -> ModelGeometry:
    """``model`` as transformers' config class reads it, on a release whose switch
    ``hf_config_class_architectures`` names it and whose reader differs (:data:`HF_CLASS_DECODERS`); without
    the tower heads of :data:`BACKEND_TOWER_HEADS` where the release builds them whole
    (``backend_splits_encoder_qkv``)."""
    if model.architecture in BACKEND_TOWER_HEADS and not rules.backend_splits_encoder_qkv:
        # 0.27.1's backend builds Emu3's VQ-VAE attention whole: TP need not divide its heads
        model = model.evolve(tower_heads=())
    extra = extra_of(model, HFClassReading)
    if extra is None:
        return model
    return (
        extra.model if model.architecture in rules.hf_config_class_architectures else replace(model, family_extra=None)
    )


def _read(f: ConfigFields, architecture: str, spec: Decoder) -> ModelGeometry:
    for key, why in spec.refuse_keys.items():
        if f.get(key):
            raise InputError(f.source, f.where(key), f"{architecture}: {why}")
    for key in spec.required:
        if not f.given(key):
            raise InputError(f.source, f.where(key), missing_field(f"{architecture}: dryboot does not derive it"))
    # a config class's attribute_map lets a file name the layer count either way (ExaoneConfig)
    layers_key = spec.key("num_hidden_layers")
    if not f.given(layers_key) and f.given("num_hidden_layers"):
        layers_key = "num_hidden_layers"
    n = f.integer(layers_key, maximum=MAX_LAYERS)
    if architecture == "TeleChat2ForCausalLM":
        _telechat2_fields(f)
    if architecture in BAILING_MOE_CLASSES:
        _bailing_moe(f, n, BAILING_MOE_CLASSES[architecture])
    attn = heads(f, spec)
    sw = _window(f, spec)
    types = layer_types(f, n)
    if types is None and spec.generated_types is not None:
        types = spec.generated_types(f, n)
    if types is not None and not set(types) <= {SLIDING, FULL}:
        raise InputError(f.source, f.where("layer_types"), f"{architecture} layers are {SLIDING} or {FULL}")
    if spec.windowless_class and types is not None and SLIDING in types and not f.given("sliding_window"):
        raise InputError(
            f.source,
            f.where("sliding_window"),
            f"AttributeError: '{spec.windowless_class}' object has no attribute 'sliding_window' (vLLM's "
            f"{spec.vllm_file} reads it for each {SLIDING} layer of layer_types)",
        )
    extra: dict[str, Any] = {}
    if architecture in ("ExaoneMoeForCausalLM", "ExaoneMoEForCausalLM"):
        assert types is not None  # the config class always writes them
        kinds, sw = _exaone_moe_kinds(f, types, sw)
        # its MTP module (ExaoneMoeMTP) is not modelled
        extra.update(num_mtp_layers=f.opt_int("num_nextn_predict_layers") or 0, mtp_kind=None)
        moe = ("num_experts", f.integer("num_experts"))
        return geometry(f, architecture, "dense", kinds, heads=attn, sliding_window=sw, moe_experts=moe, **extra)
    if spec.vllm_file in ("qwen2_vl.py", "qwen2_5_vl.py"):
        # the language model is qwen2.py's Qwen2Model, which asserts every layer or none slides
        # while it is built (verify_layers)
        extra["family_extra"] = partial_sliding_window(f, n, types)
    # EngineArgs.create_engine_config: the model-level window only without mixed layer types
    model_window = sw if types is None or all(t == SLIDING for t in types) else None
    kinds = tuple(
        LayerKind.SLIDING
        if model_window is not None or (spec.per_layer_window and types is not None and types[i] == SLIDING and sw)
        else LayerKind.FULL
        for i in range(n)
    )
    experts = (spec.experts_key, f.integer(spec.experts_key)) if spec.experts_key else None
    if architecture == "Param2MoEForCausalLM" and "num_experts" in f.data and f.data["num_experts"] is None:
        # param2moe.py then builds no MoE block at all (a dense model): not recorded, so not planned
        raise InputError(
            f.source,
            f.where("num_experts"),
            "Param2MoEForCausalLM without routed experts (num_experts null) is not modelled by dryboot",
        )
    if architecture in _FIRST_MOE_FIELD:
        key, default = _FIRST_MOE_FIELD[architecture]
        extra["first_moe_layer"] = f.integer(key, minimum=0) if f.given(key) else default
    if architecture in _SPARSE_STEP_MOE:
        sparse = sparse_step_moe_layers(f, n)
        extra.update(first_moe_layer=sparse[0] if sparse else n, moe_layers=sparse)
    if architecture == "MixtralForCausalLM":
        extra["first_moe_layer"] = 0  # every MixtralDecoderLayer holds its block_sparse_moe
    if architecture in NO_MOE_LAYER:
        extra["no_moe_layer"] = NO_MOE_LAYER[architecture]
    if architecture in _HF_CLASS_READS:
        extra["family_extra"] = UnsetClassFields(tuple(k for k in _HF_CLASS_READS[architecture][1] if not f.given(k)))
    if architecture in _UNNAMED_TEXT_MODEL and not _names_architectures(f.root.get("text_config")):
        # Qwen3-VL's model class (Cosmos-3's too) builds its language model from
        # vllm_config.with_hf_config(text_config),
        # whose validation under pipeline parallelism fails on a text config without architectures
        # (recorded on vLLM 0.27.1 and 0.28.0; 0.30+ names the architecture: pp_text_model_named)
        extra["pp_refusal"] = UNNAMED_TEXT_CONFIG_PP
    if architecture == "Ernie4_5_MoeForCausalLM" and (f.get("tie_word_embeddings") is not False):
        # Ernie4_5_MoeForCausalLM ties lm_head to embed_tokens on every rank, and a stage
        # other than the last holds a PPMissingLayer head
        extra["pp_refusal"] = (
            "tie_word_embeddings: AttributeError: 'PPMissingLayer' object has no attribute 'tie_weights'"
        )
    if architecture == "Ernie4_5_MoeForCausalLM":
        # ernie_mtp.py (ErnieMTP, "method": "mtp"): num_nextn_predict_layers Llama decoder layers
        # of the target's attention
        mtp = f.integer("num_nextn_predict_layers", minimum=0) if f.given("num_nextn_predict_layers") else 0
        extra.update(num_mtp_layers=mtp, mtp_kind=LayerKind.FULL)
    if architecture == "Glm4MoeForCausalLM":
        # glm4_moe_mtp.py (Glm4MoeMTP, "method": "mtp"): num_nextn_predict_layers decoder layers of
        # the target's attention
        mtp = f.integer("num_nextn_predict_layers", minimum=0) if f.given("num_nextn_predict_layers") else 0
        extra.update(num_mtp_layers=mtp, mtp_kind=LayerKind.FULL)
    if architecture == "MellumForCausalLM":
        # transformers' MellumConfig writes every layer "sparse" when mlp_layer_types is absent
        extra["first_moe_layer"] = _first_sparse(f, n) if f.has("mlp_layer_types") or spec.required else 0
    if architecture == "LagunaForCausalLM":
        extra.update(_laguna(f, n, types, attn))
        if f.integer("num_experts", minimum=0):
            experts = ("num_experts", f.integer("num_experts"))
    if architecture in ("GraniteSWAForCausalLM", "GraniteMoeSWAForCausalLM"):
        # granite_layer_attn_params: a sink on every layer unless the file says attention_sinks false
        extra["attention_sinks"] = f.boolean("attention_sinks", default=True)
    if architecture == "Kolibri1ForCausalLM" and types and SLIDING in types and not (sw and sw > 0):
        raise InputError(
            f.source,
            f.where("sliding_window"),
            f"Sliding-attention layers need a positive `sliding_window`, got {f.get('sliding_window')} "
            "(transformers' Kolibri1Config)",
        )
    if spec.vllm_file == TRANSFORMERS_MULTIMODAL:
        if not isinstance(f.root.get("text_config"), dict):
            raise InputError(
                f.source,
                "text_config",
                f"{architecture}: the text config is read from text_config (an object; its config class's "
                "defaults without it are not verified)",
            )
        if types is not None and SLIDING in types:
            raise InputError(f.source, f.where("layer_types"), f"{architecture}: {_BACKEND_SLIDING}")
    if spec.vllm_file in (TRANSFORMERS_BACKEND, TRANSFORMERS_MULTIMODAL):
        # base.py names each layer's Attention f"{i}.attn" and passes it the config's
        # attn_logit_softcapping
        extra["layer_names"] = tuple(f"{i}.attn" for i in range(n))
        if f.get("attn_logit_softcapping"):
            extra["logits_soft_cap"] = True
    if architecture in _VISION_TOWERS:
        extra["tower_heads"] = _vision_towers(f, architecture)
    if architecture in BACKEND_TOWER_HEADS:
        extra["tower_heads"] = _backend_tower_heads(f, architecture)
    if architecture == "Step3TextForCausalLM" and not f.given("tie_word_embeddings"):
        # Step3TextModel reads config.tie_word_embeddings on a stage other than the first, and
        # Step3TextConfig sets none of its own
        extra["pp_refusal"] = "AttributeError: 'Step3TextConfig' object has no attribute 'tie_word_embeddings'"
    if spec.attention_suffix != "self_attn.attn":
        extra["attention_suffix"] = spec.attention_suffix
    return geometry(f, architecture, "dense", kinds, heads=attn, sliding_window=sw, moe_experts=experts, **extra)


#: multimodal architectures of :data:`BACKEND_MULTIMODAL` -> (config path, its config class default)
#: of the encoder attention heads the Transformers backend's QKV fuser splits over TP (one
#: ``QKVParallelLinear`` of them: AssertionError "H is not divisible by TP" while building): Emu3's
#: VQ-VAE attention blocks (``Emu3VQVAEConfig.num_attention_heads``, default 1; recorded on 0.28.0 and
#: 0.33.0, every TP above 1 refused over the default)
BACKEND_TOWER_HEADS: dict[str, tuple[str, int]] = {
    "Emu3ForConditionalGeneration": ("vq_config.num_attention_heads", 1),
}


def _backend_tower_heads(f: ConfigFields, architecture: str) -> tuple[tuple[str, int], ...]:
    """The :data:`BACKEND_TOWER_HEADS` entry of ``architecture`` as the file sets it.

    :raises InputError: a head count that is not a positive integer, or a width it does not divide
        (transformers' attention block refuses it on any TP)."""
    path, default = BACKEND_TOWER_HEADS[architecture]
    outer, key = path.split(".", 1)
    block = f.root.get(outer)
    block = block if isinstance(block, dict) else {}
    heads = block.get(key, default)
    if isinstance(heads, bool) or not isinstance(heads, int) or heads <= 0:
        raise InputError(f.source, path, f"must be a positive integer, got {heads!r}")
    width = block.get("hidden_size", 1024)  # Emu3VQVAEConfig's default
    if isinstance(width, int) and not isinstance(width, bool) and width % heads:
        raise InputError(
            f.source, path, f"{outer}.hidden_size {width} is not divisible by {heads} heads (transformers' ValueError)"
        )
    return ((path, heads),)


#: Qwen2-VL / Qwen2.5-VL vision towers (``qwen2_vl.py``, ``qwen2_5_vl.py``): what each splits across
#: tensor-parallel ranks (attention heads, the MLP's width, the patch merger's width), as
#: ``vision_config`` key -> its vision config class's default (``Qwen2VLVisionConfig``,
#: ``Qwen2_5_VLVisionConfig``)
_VISION_TOWERS: dict[str, dict[str, int | float]] = {
    "Qwen2VLForConditionalGeneration": {"num_heads": 16, "embed_dim": 1280, "mlp_ratio": 4, "spatial_merge_size": 2},
    "Qwen2_5_VLForConditionalGeneration": {
        "num_heads": 16,
        "hidden_size": 1280,
        "intermediate_size": 3420,
        "spatial_merge_size": 2,
    },
}


def _vision_towers(f: ConfigFields, architecture: str) -> tuple[tuple[str, int], ...]:
    """(config path, size) of each vision-tower dimension vLLM's model class divides by the
    tensor-parallel size while building the tower (``dist_utils.divide``, ``MergedColumnParallelLinear``,
    ``RowParallelLinear``: an AssertionError when TP does not divide it), with the vision config
    class's defaults for absent keys.

    :raises InputError: a size that is not a positive number.
    """
    vision = f.root.get("vision_config")
    vision = vision if isinstance(vision, dict) else {}
    defaults = _VISION_TOWERS[architecture]

    def size(key: str) -> int | float:
        value = vision.get(key, defaults[key])
        if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
            raise InputError(f.source, f"vision_config.{key}", f"must be a positive number, got {value!r}")
        return value

    merge = int(size("spatial_merge_size")) ** 2
    width_key = "embed_dim" if architecture == "Qwen2VLForConditionalGeneration" else "hidden_size"
    heads, width = int(size("num_heads")), int(size(width_key))
    if width % heads:
        # the vision attention's head size: dist_utils.divide(width, num_heads), on any TP
        raise InputError(
            f.source,
            f"vision_config.{width_key}",
            f"{width} is not divisible by {heads} (vision_config.num_heads): vLLM's {architecture} fails building "
            "its vision attention (AssertionError)",
        )
    if architecture == "Qwen2VLForConditionalGeneration":
        # Qwen2VisionBlock: an MLP of int(embed_dim * mlp_ratio); the merger embed_dim * merge**2
        dim = width
        return (
            ("vision_config.num_heads", int(size("num_heads"))),
            ("vision_config.embed_dim * vision_config.mlp_ratio", int(dim * size("mlp_ratio"))),
            ("vision_config.embed_dim * vision_config.spatial_merge_size**2", dim * merge),
        )
    return (
        ("vision_config.num_heads", int(size("num_heads"))),
        ("vision_config.intermediate_size", int(size("intermediate_size"))),
        ("vision_config.hidden_size * vision_config.spatial_merge_size**2", int(size("hidden_size")) * merge),
    )


#: MoE models whose class looks for an MoE layer among its pipeline stage's layers and fails
#: without one (``RuntimeError: No ... layer found in model.layers``): the field naming how many
#: leading layers are dense, and its config-class default.
#: MoE model classes whose ``set_moe_parameters`` (``extract_moe_parameters``) raises while the model
#: is built when its pipeline stage holds no MoE block (an empty stage included) -> vLLM's words
#: (the RuntimeError's message; read in vLLM 0.27.1-0.33.0, alike in each). Not listed, as their
#: classes build such a stage (``example_moe`` None: no MoE parameters, a warning at most):
#: ``Qwen2MoeForCausalLM``, ``OlmoeForCausalLM``, ``DeepseekV2ForCausalLM`` /
#: ``DeepseekV3ForCausalLM``, ``Ernie4_5_MoeForCausalLM``, ``Llama4ForCausalLM``
NO_MOE_LAYER: dict[str, str] = {
    "Qwen3MoeForCausalLM": "No Qwen3MoE layer found in the model.layers.",
    "Qwen3VLMoeForConditionalGeneration": "No Qwen3Moe layer found in the language_model.",
    "MixtralForCausalLM": "No MixtralMoE layer found  in model.layers.",
    "Glm4MoeForCausalLM": "No Glm4MoE layer found in model.layers.",
    # glm4_1v.py builds its language model as Glm4MoeForCausalLM (init_vllm_registered_model)
    "Glm4vMoeForConditionalGeneration": "No Glm4MoE layer found in model.layers.",
    "AfmoeForCausalLM": "No AfmoeMoE layer found in model.layers.",
    "HYV3ForCausalLM": "No MoE layer found in model.layers.",
    # mellum.py until 0.31.0 (the transformers backend from 0.32.0 builds such a stage)
    "MellumForCausalLM": "No MoE layer found in the model.layers.",
    "Param2MoEForCausalLM": "No Param2MoEMoEBlock found in model.layers. Check first_k_dense_replace and num_experts "
    "in config.",
}

#: classes whose decoder layer builds the sparse MoE block by ``qwen3_moe.py``'s
#: ``Qwen3MoeDecoderLayer`` rule (:func:`sparse_step_moe_layers`)
_SPARSE_STEP_MOE = frozenset({"Qwen3MoeForCausalLM", "Qwen3VLMoeForConditionalGeneration"})


def sparse_step_moe_layers(f: ConfigFields, n: int) -> tuple[int, ...]:
    """The decoder layers of ``n`` that ``Qwen3MoeDecoderLayer`` builds with the sparse MoE block
    (``Qwen3MoeSparseMoeBlock``): those not in ``mlp_only_layers`` whose ``layer_idx + 1`` is a
    multiple of ``decoder_sparse_step``, when ``num_experts`` > 0 (transformers' ``Qwen3MoeConfig``
    and ``Qwen3VLMoeTextConfig`` defaults: ``[]``, 1).

    :raises InputError: ``mlp_only_layers`` not a list, ``decoder_sparse_step`` not a positive
        integer, ``num_experts`` negative."""
    dense = f.get("mlp_only_layers") or []
    if not isinstance(dense, list):
        raise InputError(f.source, f.where("mlp_only_layers"), "must be a list of layer indices")
    step = f.integer("decoder_sparse_step", minimum=1) if f.given("decoder_sparse_step") else 1
    experts = f.integer("num_experts", minimum=0)
    return tuple(i for i in range(n) if i not in dense and experts > 0 and (i + 1) % step == 0)


_FIRST_MOE_FIELD: dict[str, tuple[str, int]] = {
    "AfmoeForCausalLM": ("num_dense_layers", 1),
    "Param2MoEForCausalLM": ("first_k_dense_replace", 1),
    "HYV3ForCausalLM": ("first_k_dense_replace", 1),
    "Glm4MoeForCausalLM": ("first_k_dense_replace", 1),
    "Glm4vMoeForConditionalGeneration": ("first_k_dense_replace", 1),
}


def _laguna(f: ConfigFields, n: int, types: list[str] | None, attn: tuple[int, int, int]) -> dict[str, Any]:
    """Laguna (``LagunaDecoderLayer``): attention sinks on the ``sliding_attention`` layers when
    ``swa_attention_sink_enabled``; ``num_attention_heads_per_layer`` overrides each layer's query
    heads (each checked against TP as the layer asserts).

    :raises InputError: per-layer heads that are not one positive count per layer, that KV heads
        do not divide, or that change the head size (no ``head_dim``: not modelled).
    """
    extra: dict[str, Any] = {
        "attention_sinks": bool(types) and SLIDING in (types or []) and f.boolean("swa_attention_sink_enabled")
    }
    per_layer = f.get("num_attention_heads_per_layer")
    if per_layer is None:
        return extra
    where = f.where("num_attention_heads_per_layer")
    if not isinstance(per_layer, list) or len(per_layer) != n:
        raise InputError(f.source, where, f"must list one head count per layer ({n})")
    if any(not isinstance(h, int) or isinstance(h, bool) or h < 1 for h in per_layer):
        raise InputError(f.source, where, "must be positive integers")
    if not f.has("head_dim") and set(per_layer) != {attn[0]}:
        raise InputError(f.source, where, "without head_dim the head size differs by layer: not modelled")
    for h in per_layer:
        if h % attn[1]:
            raise InputError(f.source, where, f"{attn[1]} KV heads do not divide {h} attention heads")
    extra["extra_attention_heads"] = tuple(sorted({h for h in per_layer if h != attn[0]}))
    return extra


def _first_sparse(f: ConfigFields, n: int) -> int:
    """The first ``"sparse"`` entry of ``mlp_layer_types`` (Mellum: the first MoE layer).

    :raises InputError: not one entry per layer, or no sparse layer (``MellumForCausalLM``
        raises "No MoE layer found in the model.layers").
    """
    types = f.get("mlp_layer_types")
    if not isinstance(types, list) or len(types) != n:
        raise InputError(f.source, f.where("mlp_layer_types"), f"must list one MLP type per layer ({n})")
    if "sparse" not in types:
        raise InputError(
            f.source, f.where("mlp_layer_types"), "no sparse layer: vLLM finds no MoE layer in the model.layers"
        )
    return types.index("sparse")


#: model classes that read fields their vLLM config class defaults but transformers' own class
#: lacks: (that class's name, the fields in the order the model class reads them). Releases whose
#: switch ``hf_config_class_architectures`` names the architecture read the config with
#: transformers' class (vLLM's is gone: 0.33.0's ``transformers_utils/configs`` has no ``afmoe.py``
#: or ``hy_v3.py``), so a file without one of these fields fails while the model is built.
_HF_CLASS_READS: dict[str, tuple[str, tuple[str, ...]]] = {
    # afmoe.py AfmoeMoE.__init__ (route_scale is transformers' too)
    "AfmoeForCausalLM": ("AfmoeConfig", ("score_func", "route_norm", "n_group", "topk_group")),
    # hy_v3.py: the decoder layer checks first_k_dense_replace, then HYV3MoE reads the others
    "HYV3ForCausalLM": ("HYV3Config", ("first_k_dense_replace", "expert_hidden_dim", "route_norm", "qk_norm")),
}
#: fields read with a default of the model class's own that differs from vLLM's config class:
#: hy_v3.py reads ``getattr(config, "qk_norm", False)`` (vLLM's HYV3Config defaulted it to true)
_OPTIONAL_READS = {"qk_norm": "builds its attention without q/k norms (getattr(config, 'qk_norm', False))"}


@dataclass(frozen=True)
class UnsetClassFields(FamilyExtra):
    """The fields of ``_HF_CLASS_READS`` the file leaves unset (in the model class's read order)."""

    fields: tuple[str, ...]


def verify_release(model: ModelGeometry, rules: VersionRules) -> None:
    """A release that reads the config with transformers' class (switch
    ``hf_config_class_architectures``) fails building a model whose file leaves a field unset
    that only vLLM's own config class defaulted (``_HF_CLASS_READS``).

    :raises InputError: naming the first such field and vLLM's error.
    """
    extra = extra_of(model, UnsetClassFields)
    if extra is None or not extra.fields or model.architecture not in rules.hf_config_class_architectures:
        return
    cls, _ = _HF_CLASS_READS[model.architecture]
    key = extra.fields[0]
    if key in _OPTIONAL_READS:
        raise InputError(
            model.source,
            key,
            f"vLLM {rules.version} reads {model.architecture}'s config with transformers' {cls}, which has no "
            f"{key}: the model class {_OPTIONAL_READS[key]}, which dryboot does not model",
        )
    error = (
        "ValueError: first_k_dense_replace not exist,please check config"
        if key == "first_k_dense_replace"
        else f"AttributeError: '{cls}' object has no attribute '{key}'"
    )
    raise InputError(
        model.source,
        key,
        f"vLLM {rules.version} reads {model.architecture}'s config with transformers' {cls}, which has no "
        f"default for it: the model class fails while it is built ({error})",
    )


def verify_layers(model: ModelGeometry, args: EngineArgs) -> None:
    """What Qwen2-VL's and Qwen2.5-VL's language model (``qwen2.py``'s ``Qwen2Model``) asserts while
    it is built: a partial sliding window
    (:func:`~dryboot.vllm.models.common.check_partial_sliding_window`).

    :raises InputError: naming ``max_window_layers`` and vLLM's AssertionError."""
    check_partial_sliding_window(model)


#: architectures whose attention splits ``num_key_value_heads`` over the tensor-parallel ranks with
#: no replication below TP: TP must divide them (``param2moe.py``'s ``Param2MoEAttention`` asserts it)
KV_HEADS_SPLIT = frozenset({"Param2MoEForCausalLM"})


def verify(model: ModelGeometry, tensor_parallel_size: int) -> None:
    """The MoE block's refusal of more tensor-parallel ranks than routed experts, and an attention
    that splits its KV heads over TP without replicating them (:data:`KV_HEADS_SPLIT`).

    :raises InputError: naming the experts key (or ``num_key_value_heads``) and vLLM's message.
    """
    if model.architecture in KV_HEADS_SPLIT and model.num_kv_heads % tensor_parallel_size:
        raise InputError(
            model.source,
            "num_key_value_heads",
            f"num_key_value_heads ({model.num_kv_heads}) must be divisible by tensor-parallel world size "
            f"({tensor_parallel_size}). (vLLM's {model.architecture} attention, AssertionError while building the "
            "model)",
        )
    for path, heads in model.parallel.tower_heads:
        if heads % tensor_parallel_size:
            raise InputError(
                model.source,
                path,
                f"{heads} is not divisible by tensor parallel size {tensor_parallel_size}: vLLM's "
                f"{model.architecture} splits this encoder dimension across ranks (AssertionError while building "
                "the model)",
            )
    if model.parallel.moe_experts is not None and tensor_parallel_size > model.parallel.moe_experts[1]:
        key, n = model.parallel.moe_experts
        raise InputError(
            model.source,
            key,
            f"Tensor parallel size {tensor_parallel_size} is greater than the number of experts {n} "
            f"(vLLM's {model.architecture} MoE block)",
        )
