"""Architecture name -> model family, as ``vllm/model_executor/models/registry.py`` maps
architectures to model files. An architecture not listed here is refused by name (exit 2):
dryboot never plans a model whose layer structure it has not been taught.
"""

from __future__ import annotations

import importlib
import json
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache, lru_cache
from types import ModuleType
from typing import TYPE_CHECKING, Any

from dryboot.errors import InputError
from dryboot.vllm import DATA
from dryboot.vllm.models.dense import DECODERS, LLAMA4
from dryboot.vllm.models.encoder_tp import data_mode_towers
from dryboot.vllm.models.llama import EAGLE_HEADS, eagle_head_refusal
from dryboot.vllm.models.wrappers import BUILT_AS, VERIFIED_BY_TEXT_FAMILY, WRAPPERS
from dryboot.vllm.versions import rules_for, unverified_reason

if TYPE_CHECKING:
    from dryboot.vllm.backends import AttentionBackend
    from dryboot.vllm.config.hf import ConfigFields, ModelGeometry
    from dryboot.vllm.engine_args import EngineArgs
    from dryboot.vllm.kv_cache_interface import LayerKind, LayerSpec
    from dryboot.vllm.versions import VersionRules


#: the module of the generic family: it defines no hook
_NO_HOOKS = ModuleType("dryboot.vllm.models.generic")


@dataclass(frozen=True)
class Family:
    """A model family: the dryboot module that reads its configs and the vLLM file it mirrors.

    What differs between families is a hook here, each an optional function of the family's
    module with the generic rule as its default (generic code calls the hook, never tests a
    family's own fields): ``defaults`` and ``read`` (config reading), ``engine_args`` (flags the
    model's layers decide for themselves), ``for_release`` (how a
    release's config class reads the file), ``verify`` and ``verify_release`` (refusals while vLLM
    builds the model), ``built_towers`` (the encoder towers its class builds under the multimodal
    flags, which ``verify`` checks), ``kv_cache_dtype`` (the dtype the attention layers are built with) and
    ``attention_backend`` (a backend the model hands its layers itself), ``check_backend`` (what the
    model's layers refuse while probing for a backend: HY V4's sparse probe), ``verify_backend``
    (what they refuse of the backend selected: RNJ-1's), ``verify_built`` (what they refuse of the
    flags after it: Flint's), ``head_size_is_widest`` (vLLM's whole-model head size is the widest
    layer's: Gemma-4), ``fa4_all_layers`` (the model's config hook
    puts every layer on FlashAttention 4), ``handed_on_every_gpu`` (the handed backend was read from
    vLLM on every GPU generation), ``verify_layers`` (refusals while its layers are built, after the
    drafter's proposer), ``backend_assumption`` (why the
    layers choose their backend themselves, as the plan states it) and ``kv_cache_layout``
    (``"grouped"``: vLLM's KV cache groups; ``"packed"``: the packed groups of
    :mod:`dryboot.vllm.kv_cache_utils.packed`; ``"repeat-packed"``: vLLM 0.33.0's repeat-pattern
    packing, :mod:`dryboot.vllm.kv_cache_utils.repeat_packed`), ``forward_config`` (where the
    profile run's widths lie in the family's config file). The hooks that apply to
    a built model are looked up by :attr:`ModelGeometry.family` (:func:`family_of`): the family
    whose rules laid out its layers, a wrapper's language model's included.

    :param name: module under :mod:`dryboot.vllm.models`.
    :param vllm_files: the ``vllm/model_executor/models/`` files whose layer structure it follows.
    :param architectures: the ``architectures`` names it serves.
    :param delegates: it reads a language model through another architecture's family (the
        multimodal wrappers): its ``read`` takes the registry's table of families.
    """

    name: str
    vllm_files: tuple[str, ...]
    architectures: tuple[str, ...]
    delegates: bool = False

    def module(self) -> ModuleType:
        if not self.name:
            return _NO_HOOKS
        # imported on first use; after that, the loaded module (a plan asks ~8 hooks)
        name = f"dryboot.vllm.models.{self.name}"
        return sys.modules.get(name) or importlib.import_module(name)

    def defaults(self, f: ConfigFields) -> dict[str, Any]:
        """The HF config class defaults for ``f``'s ``model_type``."""
        result: dict[str, Any] = self.module().defaults(f)
        return result

    def read(self, f: ConfigFields, architecture: str) -> ModelGeometry:
        """The model's geometry.

        :raises InputError: a field is missing or malformed, or vLLM refuses the config.
        """
        if self.delegates:
            delegated: ModelGeometry = self.module().read(f, architecture, ARCHITECTURES)
            return delegated
        model: ModelGeometry = self.module().read(f, architecture)
        return model

    def engine_args(self, model: ModelGeometry, args: EngineArgs) -> EngineArgs:
        """The flags as the model's layers take them, where they decide for themselves (default:
        as given).

        :raises InputError: a flag the model's layers refuse.
        """
        hook = getattr(self.module(), "engine_args", None)
        return args if hook is None else hook(model, args)

    def for_release(self, model: ModelGeometry, rules: VersionRules) -> ModelGeometry:
        """``model`` as ``rules``' release reads its config (default: as read)."""
        hook = getattr(self.module(), "for_release", None)
        return model if hook is None else hook(model, rules)

    def verify_release(self, model: ModelGeometry, rules: VersionRules) -> None:
        """Refusals only some releases make while building the model (default: none).

        :raises InputError: naming the config field and the release's failure.
        """
        hook = getattr(self.module(), "verify_release", None)
        if hook is not None:
            hook(model, rules)

    def verify_layers(self, model: ModelGeometry, args: EngineArgs) -> None:
        """Refusals of the model's layers as vLLM builds them, after the drafter's proposer and
        before their attention backends (default: none; Inkling's conv states against TP).

        :raises InputError: naming the config field or flag and vLLM's failure.
        """
        hook = getattr(self.module(), "verify_layers", None)
        if hook is not None:
            hook(model, args)

    def kv_cache_dtype(self, model: ModelGeometry, requested: str) -> str:
        """The KV cache dtype the attention layers are built with (default: ``requested``)."""
        hook = getattr(self.module(), "kv_cache_dtype", None)
        return requested if hook is None else hook(model, requested)

    def attention_backend(self, model: ModelGeometry, requested: str | None) -> AttentionBackend | None:
        """The backend the model hands its attention layers itself, or ``None``: vLLM's selection
        (default)."""
        hook = getattr(self.module(), "attention_backend", None)
        return None if hook is None else hook(model, requested)

    def check_backend(self, model: ModelGeometry, args: EngineArgs) -> None:
        """Refusals the model's layers make while probing for their attention backend, before
        vLLM's selection (default: none; HY V4's sparse-backend probe).

        :raises InputError: in the model's words."""
        hook = getattr(self.module(), "check_backend", None)
        if hook is not None:
            hook(model, args)

    def handed_backend(self, model: ModelGeometry, args: EngineArgs, requested: str | None) -> AttentionBackend | None:
        """The backend the model hands its attention layers on the GPU ``args`` plans, where that
        choice depends on the flags (GLM-5.3-Flash's sparse MLA backend by GPU generation); default
        :meth:`attention_backend`."""
        hook = getattr(self.module(), "handed_backend", None)
        return self.attention_backend(model, requested) if hook is None else hook(model, args, requested)

    def handed_on_every_gpu(self, model: ModelGeometry) -> bool:
        """Whether the backend the model hands its layers (:meth:`attention_backend`) was read from
        vLLM on every GPU generation, not Hopper only (default: no; Inkling's FlashAttention)."""
        hook = getattr(self.module(), "handed_on_every_gpu", None)
        return False if hook is None else bool(hook(model))

    def fa4_all_layers(self, model: ModelGeometry, requested: str | None) -> bool:
        """Whether the model's config hook runs every attention layer on FlashAttention 4 when
        ``requested`` (``--attention-backend``, ``None``: unset) lets FlashAttention serve it
        (default: no)."""
        hook = getattr(self.module(), "fa4_all_layers", None)
        return False if hook is None else bool(hook(model, requested))

    def head_size_is_widest(self, model: ModelGeometry) -> bool:
        """Whether vLLM's whole-model head size (``ModelConfig.get_head_size``) is the widest layer's:
        the model config is converted layer by layer and differing fields collapse with ``max``
        (``ModelArchitectureConfig.from_layers``, ``get_per_layer_hf_configs``: Gemma-4); default no
        (the text config's ``head_dim``, not modelled beside narrower heads)."""
        hook = getattr(self.module(), "head_size_is_widest", None)
        return False if hook is None else bool(hook(model))

    def backend_assumption(self, model: ModelGeometry) -> str | None:
        """Why the model's layers choose their attention backend themselves, whatever
        ``--attention-backend`` names (the assumption the plan states), or ``None``: vLLM's
        selection (default)."""
        hook = getattr(self.module(), "backend_assumption", None)
        return None if hook is None else hook(model)

    def alignment_mamba_pages(self, model: ModelGeometry, args: EngineArgs, conv_dtype: str) -> tuple[int, ...]:
        """Other Mamba pages (bytes) the hybrid alignment sizes the attention block to, beside the
        mamba layers' own (``get_mamba_specs_from_config``: Qwen4-Exp's PLE state; default none).

        :param conv_dtype: the convolution state's torch dtype."""
        hook = getattr(self.module(), "alignment_mamba_pages", None)
        return () if hook is None else tuple(hook(model, args, conv_dtype))

    def indexer_block_alignment(self, model: ModelGeometry, args: EngineArgs) -> int | None:
        """A multiple the hybrid block is rounded up to after the backends' alignment, in mamba cache mode
        ``none`` / ``align`` (``Platform._get_indexer_block_alignment``: GLM-5.3-Flash's kpool indexer on
        vLLM 0.30.0 / 0.31.0); default ``None``."""
        hook = getattr(self.module(), "indexer_block_alignment", None)
        return None if hook is None else hook(model, args)

    def block_backends(
        self, model: ModelGeometry, args: EngineArgs, backend: AttentionBackend
    ) -> list[AttentionBackend]:
        """Every attention backend the cache block is chosen over, first built first
        (``Platform._find_non_ssm_backends``), where the family's layers bring their own beside the
        selected ``backend`` (GLM-5.3-Flash's indexer and tail ring); default ``[]``: the planner's
        own choice."""
        hook = getattr(self.module(), "block_backends", None)
        return [] if hook is None else list(hook(model, args, backend))

    def side_cache_specs(
        self,
        model: ModelGeometry,
        args: EngineArgs,
        rules: VersionRules,
        model_dtype: str,
        layers: list[tuple[str, LayerSpec]],
    ) -> dict[str, LayerSpec]:
        """Every cache layer of a repeat-packed model whose layers the hybrid layout builds, with
        the caches its attention layers keep beside their KV, in vLLM's order (Qwen4-Exp's QSA
        index-key rings and compressed keys); default ``layers`` as they are. The planner calls it
        first with no layers (its refusals: vLLM builds the layers before it lays out the caches).

        :raises InputError: what vLLM refuses of those caches, or what was not verified."""
        hook = getattr(self.module(), "side_cache_specs", None)
        return dict(layers) if hook is None else dict(hook(model, args, rules, model_dtype, layers))

    def own_groups(
        self, model: ModelGeometry, specs: dict[str, LayerSpec], stages: Sequence[frozenset[str]] | None = None
    ) -> tuple[tuple[str, ...], ...] | None:
        """A repeat-packed model's KV cache groups (member layers, vLLM's order) where the release groups them
        its own way (GLM-5.3-Flash's KDA layers beside indexed ones on vLLM 0.30.0 / 0.31.0); default
        ``None``: the repeat pattern's groups. ``stages``: each pipeline stage's cache layers (``None``:
        no pipeline parallelism); the groups span every stage's layers.

        :raises InputError: a grouping the release refuses (a stage of KDA layers without an MLA layer)."""
        hook = getattr(self.module(), "own_groups", None)
        return None if hook is None else hook(model, specs, stages)

    def grouped_side_caches(
        self, model: ModelGeometry, args: EngineArgs, layers: list[tuple[str, LayerSpec]]
    ) -> dict[str, LayerSpec] | None:
        """Every cache layer of a model whose caches take vLLM's KV cache groups, with the caches
        its attention layers keep beside their KV, in vLLM's order (GLM-5.3-Flash's indexer key
        caches and tail rings on vLLM 0.30.0 / 0.31.0); default ``None``: ``layers`` as they are.

        :raises InputError: what vLLM refuses of those caches."""
        hook = getattr(self.module(), "grouped_side_caches", None)
        return None if hook is None else dict(hook(model, args, layers))

    def side_mamba_states(
        self, model: ModelGeometry, args: EngineArgs, conv_dtype: str
    ) -> dict[LayerKind, tuple[tuple[tuple[int, ...], ...], tuple[str, ...]]]:
        """The (shapes, dtypes) of each mamba layer kind whose state is not the model's mamba
        layers' (Qwen4-Exp's PLE layers; default none).

        :param conv_dtype: the convolution state's torch dtype."""
        hook = getattr(self.module(), "side_mamba_states", None)
        return {} if hook is None else dict(hook(model, args, conv_dtype))

    def kv_cache_layout(self, model: ModelGeometry) -> str:
        """How the model's KV caches are laid out: ``"grouped"`` (vLLM's KV cache groups,
        default), ``"packed"`` (DeepSeek-V4's packed groups) or ``"repeat-packed"`` (Step5's)."""
        hook = getattr(self.module(), "kv_cache_layout", None)
        return "grouped" if hook is None else str(hook(model))

    def has_packed_layers(self) -> bool:
        """Whether the family lays out its repeat-packed caches itself (:meth:`packed_layers`: Step5,
        Dots3-Note); else the hybrid layout's layers with :meth:`side_cache_specs` are packed."""
        return getattr(self.module(), "packed_layers", None) is not None

    def packed_layers(self, cfg: Any, log: list[str]) -> Any:
        """The cache layers, their groups and stages the repeat-packed planner sizes, for a family
        whose :meth:`kv_cache_layout` is ``"repeat-packed"`` (vLLM's log lines go to ``log``).
        ``cfg`` is the ``EngineConfig`` (:mod:`dryboot.vllm.config.resolve`), the answer a
        ``PackedLayers`` (:mod:`dryboot.vllm.kv_cache_utils.repeat_packed`): the planner types both;
        the registry, which both modules import, cannot import them back.

        :raises InputError: what vLLM refuses of them (named), or a family without the hook."""
        hook = getattr(self.module(), "packed_layers", None)
        if hook is None:
            raise InputError("--model", cfg.model.source, f"{cfg.model.architecture}: no packed KV caches to plan")
        return hook(cfg, log)

    def built_towers(self, model: ModelGeometry, args: EngineArgs) -> ModelGeometry:
        """``model`` with only the encoder towers its model class builds under ``args``' multimodal
        flags, for the tensor-parallel checks (default: every tower: a tower marked by
        ``_mark_tower_model`` is built on the meta device even under ``--language-model-only`` or
        a zero ``--limit-mm-per-prompt``, so its sharded layers still assert that TP divides them;
        recorded in ``tests/fidelity/data/wrappers/``), then as ``--mm-encoder-tp-mode`` leaves
        them sharded (:func:`~dryboot.vllm.models.encoder_tp.data_mode_towers`)."""
        hook = getattr(self.module(), "built_towers", None)
        return data_mode_towers(model if hook is None else hook(model, args), args)

    def forward_config(self, config: Mapping[str, Any]) -> Mapping[str, Any]:
        """``config`` (the file's top level) as the profile run's widths are read from it
        (:func:`~dryboot.vllm.worker.profile_run.forward_shape`: the sampler's vocabulary, the
        hidden, MLP and attention widths, the encoder keys), for a family whose config class lays
        them out under its own names (default: ``config`` itself).

        :raises InputError: a width the family's config class reads, malformed (named)."""
        hook = getattr(self.module(), "forward_config", None)
        return config if hook is None else hook(config)

    def served_architecture(self, model: ModelGeometry, version: str) -> str:
        """The architecture vLLM ``version`` serves ``model`` as, which its ``Resolved architecture``
        line names (default: the declared one; DeepSeek-V4's text config with a tower is served as
        its wrapper on 0.30.0+)."""
        hook = getattr(self.module(), "served_architecture", None)
        return model.architecture if hook is None else str(hook(model, version))

    def verify_backend(self, model: ModelGeometry, backend: str, flag: str) -> None:
        """Refusals the model's attention layers make of the backend selected for them (or named by
        ``flag``) when vLLM builds them (default: none).

        :raises InputError: naming ``flag`` and vLLM's reason."""
        check = getattr(self.module(), "verify_backend", None)
        if check is not None:
            check(model, backend, flag)

    def verify_built(self, model: ModelGeometry, args: EngineArgs, backend: str) -> None:
        """Refusals the model's layers make of the flags once their backend is selected (after
        :meth:`verify_backend`; default: none): Flint's dtype assertions follow its FlashInfer one.

        :raises InputError: naming the flag and vLLM's reason."""
        check = getattr(self.module(), "verify_built", None)
        if check is not None:
            check(model, args, backend)

    def verify(self, model: ModelGeometry, tensor_parallel_size: int) -> None:
        """Refusals vLLM makes while building the model on ``tensor_parallel_size`` ranks.

        A wrapper of :data:`~dryboot.vllm.models.wrappers.VERIFIED_BY_TEXT_FAMILY` is checked by
        its language model's family (:func:`family_of`), which makes its tower's checks too.

        :raises InputError: naming the field and vLLM's reason.
        """
        if self.delegates and model.architecture in VERIFIED_BY_TEXT_FAMILY:
            family_of(model).verify(model, tensor_parallel_size)
            return
        check = getattr(self.module(), "verify", None)
        if check is not None:
            check(model, tensor_parallel_size)


FAMILIES: tuple[Family, ...] = (
    Family(
        "llama",
        (
            "llama.py",
            "mistral.py",
            "qwen2.py",
            "mimo.py",
            "qwen3.py",
            "qwen3_dflash.py",
            *sorted(set(EAGLE_HEADS.values())),
        ),
        (
            "LlamaForCausalLM",
            "MistralForCausalLM",
            "Qwen2ForCausalLM",
            "MiMoForCausalLM",
            "Qwen3ForCausalLM",
            "DFlashDraftModel",
            *EAGLE_HEADS,
        ),
    ),
    Family(
        "gemma",
        ("gemma2.py", "gemma3.py", "gemma4.py", "gemma4_mtp.py"),
        (
            "Gemma2ForCausalLM",
            "Gemma3ForCausalLM",
            "Gemma3ForConditionalGeneration",
            "Gemma4ForCausalLM",
            "Gemma4ForConditionalGeneration",
            "Gemma4MTPModel",
        ),
    ),
    Family("gpt_oss", ("gpt_oss.py",), ("GptOssForCausalLM",)),
    Family(
        "qwen3_next",
        ("qwen3_next.py", "qwen3_5.py", "qwen3_next_mtp.py", "qwen3_5_mtp.py"),
        (
            "Qwen3NextForCausalLM",
            "Qwen3_5ForConditionalGeneration",
            "Qwen3_5MoeForConditionalGeneration",
            # the text-only model an AutoRound / GPTQ export of Qwen3.5 / 3.6 declares
            "Qwen3_5ForCausalLM",
            # its MoE twin (Qwen3.5 / 3.6-35B-A3B text-only exports): the same class over a
            # qwen3_5_moe_text config (the decoder layer's MLP follows the model type)
            "Qwen3_5MoeForCausalLM",
            # minicpmv4_6.py builds Qwen3_5ForCausalLM on the text config (a Qwen3.5 hybrid)
            "MiniCPMV4_6ForConditionalGeneration",
            # minicpmv4_7.py (0.32+) subclasses 4.6's class: the same Qwen3_5ForCausalLM
            "MiniCPMV4_7ForConditionalGeneration",
        ),
    ),
    Family("nemotron_h", ("nemotron_h.py",), ("NemotronHForCausalLM",)),
    Family(
        "deepseek",
        (
            "deepseek_v2.py",
            "deepseek_mtp.py",
            "deepseek_eagle3.py",
            "AXK1.py",
            "sarvam.py",
            "glm4_moe_lite.py",
            "longcat_flash.py",
        ),
        (
            # EAGLE-3 heads of MLA layers (deepseek_eagle3.py): the head's own config read as a
            # DeepSeek decoder of num_hidden_layers MLA layers
            "Eagle3DeepseekV2ForCausalLM",
            "Eagle3DeepseekV3ForCausalLM",
            "DeepseekV2ForCausalLM",
            "DeepseekV3ForCausalLM",
            "DeepseekV32ForCausalLM",
            "GlmMoeDsaForCausalLM",
            "AXK1ForCausalLM",
            "SarvamMLAForCausalLM",
            "Glm4MoeLiteForCausalLM",
            "LongcatFlashForCausalLM",
        ),
    ),
    Family("mamba", ("mamba.py",), ("MambaForCausalLM", "FalconMambaForCausalLM")),
    Family("jamba", ("jamba.py",), ("JambaForCausalLM",)),
    Family("granitemoehybrid", ("granitemoehybrid.py",), ("GraniteMoeHybridForCausalLM",)),
    Family("falcon_h1", ("falcon_h1.py",), ("FalconH1ForCausalLM",)),
    Family(
        "lfm2",
        ("lfm2.py", "lfm2_moe.py", "lfm2_vl.py"),
        ("Lfm2ForCausalLM", "Lfm2MoeForCausalLM", "Lfm2VlForConditionalGeneration"),
    ),
    Family("zamba2", ("zamba2.py",), ("Zamba2ForCausalLM",)),
    Family("kimi_linear", ("vllm.models.kimi_k3",), ("KimiLinearForCausalLM",)),
    # lightning (linear) attention layers with an MLA layer closing each layer_group_size group
    Family("bailing_moe_linear", ("bailing_moe_linear.py",), ("BailingMoeV2_5ForCausalLM",)),
    Family("mamba2", ("mamba2.py",), ("Mamba2ForCausalLM",)),
    Family("gemma3n", ("gemma3n.py",), ("Gemma3nForCausalLM",)),
    Family("hunyuan", ("hunyuan_v1.py",), ("HunYuanDenseV1ForCausalLM", "HunYuanMoEV1ForCausalLM")),
    Family("step3p5", ("step3p5.py",), ("Step3p5ForCausalLM",)),
    # Qwen4-Exp (vLLM 0.29.0 on: LATER_ARCHITECTURES): its plain layout, QSA and PLE layers
    # the wrapper (qwen4_exp/<vendor>/model.py Qwen4ExpForConditionalGeneration) builds
    # Qwen4ExpForCausalLM on its text_config beside Qwen3-VL's vision tower
    Family("qwen4_exp", ("vllm.models.qwen4_exp",), ("Qwen4ExpForCausalLM", "Qwen4ExpForConditionalGeneration")),
    Family("falcon", ("falcon.py",), ("FalconForCausalLM", "RWForCausalLM")),
    Family("mimo_v2", ("mimo_v2.py",), ("MiMoV2FlashForCausalLM",)),
    Family("hrm_text", ("hrm_text.py",), ("HrmTextForCausalLM",)),
    # an encoder-decoder: the decoder's self-attention and cross-attention caches (CrossAttentionSpec)
    Family("whisper", ("whisper.py",), ("WhisperForConditionalGeneration",)),
    # the wrapper (deepseek_v4/common/vl_model.py, vLLM 0.30.0 on: LATER_ARCHITECTURES) builds
    # DeepseekV4ForCausalLM on its own config beside its DeepseekV4ViT tower
    # DeepSeek-V4.1 (vllm/models/deepseek_v41, vLLM 0.30.0 on: LATER_ARCHITECTURES): a wrapper whose
    # language model keeps compressed caches on its KV source layers only, on 0.33.0's repeat-pattern packing
    Family(
        "deepseek_v4",
        ("vllm.models.deepseek_v4", "vllm.models.deepseek_v41"),
        ("DeepseekV4ForCausalLM", "DeepseekV4ForConditionalGeneration", "DeepseekV41ForCausalLM"),
    ),
    # Step5 (vLLM 0.33.0: LATER_ARCHITECTURES): DSA layers on 0.33.0's repeat-pattern packing
    Family("step5", ("vllm.models.step5",), ("Step5ForCausalLM",)),
    # Dots3-Note (vLLM 0.33.0 planned: LATER_ARCHITECTURES): sliding-window MLA beside padded sparse MLA
    # layers on 0.33.0's repeat-pattern packing
    Family("dots3_note", ("vllm.models.dots3_note",), ("Dots3NoteForCausalLM",)),
    Family("glm5next", ("vllm.models.glm5next",), ("Glm5NextForCausalLM",)),
    # RNJ-1: Gemma-3's decoder whose chunked_attention layers slide, with a lookback chunk only
    # TRITON_ATTN builds (verify_backend refuses any other backend in vLLM's words)
    Family("rnj1", ("rnj1.py",), ("Rnj1ForCausalLM",)),
    # Flint (vLLM 0.33.0: LATER_ARCHITECTURES): sliding / full layers with sinks, which assert FlashInfer
    # (verify_backend refuses any other backend in vLLM's words; vLLM picks FlashInfer on SM 10.x only)
    Family("flint", ("vllm.models.flint",), ("FlintForCausalLM",)),
    Family("olmo_hybrid", ("olmo_hybrid.py",), ("OlmoHybridForCausalLM",)),
    # HY V4 (vLLM 0.32.0, 0.33.0: LATER_ARCHITECTURES): DeepSeek-V3.2's sparse MLA, indexers where
    # indexer_types says full, FLASHMLA_SPARSE handed by its learned sinks
    Family("hy_v4", ("vllm.models.hy_v4",), ("HYV4ForCausalLM",)),
    # Inkling (vLLM 0.33.0: LATER_ARCHITECTURES): each layer's short-conv state as a sliding-window cache
    # beside its attention; the wrapper (InklingMMConfig) builds the same text model on text_config
    Family("inkling", ("vllm.models.inkling",), ("InklingForCausalLM", "InklingForConditionalGeneration")),
    Family(
        "muse_glimmer",
        ("muse_glimmer.py", "vllm.models.muse_spark"),
        ("MuseGlimmerForCausalLM", "MuseGlimmerForConditionalGeneration", "MuseSparkForConditionalGeneration"),
    ),
    Family(
        "minimax_m3",
        ("vllm.models.minimax_m3",),
        ("MiniMaxM3SparseForCausalLM", "MiniMaxM3SparseForConditionalGeneration"),
    ),
    # UnlimitedOCR's language model (DeepSeek-V2 on RSWAAttention), read through the wrappers
    # family: its hooks (the config hook's backend and prefix caching), none of its own names
    Family("unlimited_ocr", ("unlimited_ocr.py",), ()),
)

FAMILIES += (
    Family(
        "dense",
        tuple(sorted({d.vllm_file for d in DECODERS.values()} | {w[0] for w in LLAMA4.values()})),
        (*DECODERS, *LLAMA4),
    ),
    Family(
        "wrappers",
        tuple(sorted({w[0] for w in WRAPPERS.values()} | {b.vllm_file for b in BUILT_AS.values()})),
        (*WRAPPERS, *BUILT_AS),
        delegates=True,
    ),
)

ARCHITECTURES: dict[str, Family] = {arch: fam for fam in FAMILIES for arch in fam.architectures}
_BY_NAME: dict[str, Family] = {fam.name: fam for fam in FAMILIES}
#: the hooks' defaults, for a geometry no family read (built by hand through the API)
_GENERIC = Family("", (), ())


def family_of(model: ModelGeometry) -> Family:
    """The family whose rules laid out ``model``'s layers (:attr:`ModelGeometry.family`)."""
    return _BY_NAME.get(model.family, _GENERIC)


#: DeepSeek-V4's drafters (``vllm/models/deepseek_v4/``)
_DEEPSEEK_V4 = (
    "DeepSeek-V4 drafter: dryboot plans DeepSeek-V4's MTP layer only as the target's own (DeepseekV4ForCausalLM "
    "with --speculative-config method mtp); this drafter class is not modelled; given as the model, vLLM does not "
    "serve it either (dryboot quotes vLLM's failure: docs/speculative.md)"
)

#: Qwen4-Exp (vLLM 0.29.0 on; read in 0.33.0's ``vllm/models/qwen4_exp/nvidia``, config class
#: vLLM's own ``Qwen4ExpTextConfig`` on 0.29-0.31, transformers' from 0.32; recorded on 0.29.0-0.33.0):
#: the cache kinds its QSA and PLE layers add to its plain layout (planned: ``models/qwen4_exp.py``,
#: which refuses QSA layers by name and plans PLE layers on 0.33.0), as the records of
#: ``tests/fidelity/data/refused-0.33/`` and ``data/qwen4-ple/`` show
QWEN4_EXP_LAYERS = (
    "Qwen4-Exp (vllm/models/qwen4_exp; its Qwen4ExpTextConfig is vLLM's own on 0.29-0.31, qwen4_exp/config.py, "
    "which refuses QSA layers unless indexer_budget / indexer_compress_ratio is 512 or 2048, and transformers' "
    "from 0.32): its plain layout (Qwen3.5's Gated DeltaNet layers beside full attention, no indexer_* field and "
    "no ple_layer_ids) is planned as Qwen4ExpForCausalLM and its wrapper Qwen4ExpForConditionalGeneration; "
    "with indexer_n_heads set its attention layers are QSA layers (Qwen4ExpQSAAttention), each "
    "keeping beside its KV cache a ring of raw index keys (QSAKeyStateCache: a CircularBufferSpec) and a "
    "compressed key cache of one row per indexer_compress_ratio tokens (QSACompressedKeyCache: an MLAAttentionSpec "
    "with tokens_per_state), which vLLM 0.29.0-0.33.0 group as a CircularBuffer group and an MLAAttention group "
    "with the layer's own KV (recorded on tiny configs; planned on 0.29.0-0.33.0's "
    "repeat-pattern packing, models/qwen4_exp.py); its PLE layers "
    "(ple_layer_ids) keep a TP-replicated short-convolution state hc_count x hidden_size wide (a second MambaSpec: "
    "a Mamba group of its own on 0.29.0-0.33.0, recorded) and, from 0.30.0, an n-gram embedding (Engram CPU "
    "offload requires UVA, which the meta-device harness lacks; without the offload it builds): planned on "
    "0.29.0-0.33.0, beside QSA layers too"
)
_STEP5 = (
    "Step5ForCausalLM is planned on vLLM 0.33.0 (models/step5.py: its DSA layers' summary caches and tail rings "
    "on 0.33.0's repeat-pattern packing, kv_cache_utils/repeat_packed.py, every recorded flag set of "
    "tests/fidelity/data/refused-0.33/ agreeing)"
)
#: GLM-5.3-Flash's text model (``vllm/models/glm5next/common``, vLLM 0.33.0)

#: Why an architecture is refused, where more can be said than "not modelled".
NOT_MODELLED: dict[str, str] = {
    "DeepSeekV4MTPModel": _DEEPSEEK_V4,
    "DSparkDraftModel": _DEEPSEEK_V4,
    "BailingMoeV3ForCausalLM": (
        "its Kimi Delta Attention + MLA layers are not verified against vLLM 0.28.0: the model class reads "
        "checkpoint keys that BailingHybridConfig does not define (no_kda_lora, use_bias, ...)"
    ),
    "NemotronHPuzzleForCausalLM": (
        "its layers take per-layer configs (block_configs through the checkpoint's own config code, "
        "get_nemotron_h_config_for_layer), so attention heads and mixer sizes may differ by layer: not modelled"
    ),
    # minicpm_ocr.py (0.33.0 only): MiniCPM-V 4.6's class keeping every vision layer
    "MiniCPMOcrForConditionalGeneration": (
        "multimodal wrapper of Qwen3_5ForCausalLM (minicpm_ocr.py: MiniCPM-V 4.6's model class keeping every "
        "vision layer), not verifiable: its config class (model_type minicpm_ocr) is in neither the transformers "
        "vLLM 0.33.0 pins (>=5.16.1, <5.21.0; 5.20.2 has no minicpm_ocr) nor vLLM's config registry, so vLLM "
        "0.33.0 cannot read its checkpoints (the Hub's openbmb/MiniCPM-OCR-1.0 is tagged minicpm_ocr, no "
        "custom_code): not planned"
    ),
    # vLLM 0.28.0's _PREVIOUSLY_SUPPORTED_MODELS: its registry refuses them
    **{
        arch: "vLLM 0.28.0 refuses it: it was supported in vLLM until v0.23.0, and is not supported anymore"
        for arch in ("BambaForCausalLM", "MiniMaxForCausalLM", "MiniMaxText01ForCausalLM", "MiniMaxM1ForCausalLM")
    },  # Qwen4-Exp (vLLM 0.29.0 on) and Step5 (0.33.0) (vllm/models/qwen4_exp, vllm/models/step5)
    "Qwen4ExpMTP": (
        "Qwen4-Exp drafter (qwen4_exp/nvidia/mtp.py: mtp_num_hidden_layers, else num_nextn_predict_layers, "
        "Qwen4ExpDecoderLayers of type qwen_sparse_attention on the hc_count-wide hyper-connection stream, QSA "
        "layers with their index-key ring and compressed key cache when indexer_n_heads is set; every QSA ring then "
        "holds indexer_compress_ratio + num_speculative_tokens rows rounded up to a multiple of the ratio, recorded "
        "on tiny configs, 0.29.0-0.33.0); not modelled (its target's plain layout is planned, and its QSA layers on "
        "0.30.0, 0.32.0 and 0.33.0; the MTP drafter refused)"
    ),
    "Step5MTP": (
        "Step5 drafter (step5/nvidia/mtp.py: num_nextn_predict_layers Step5DecoderLayers from layer index "
        "num_hidden_layers on, typed by layer_types_with_mtp, so a full_attention one is a DSA layer with its "
        "summary cache and tail ring, its ring 7 + num_speculative_tokens rows at least): not verified (not "
        "recorded: the V2 runner's lm_head sharing check compares the drafter's and the target's weights with "
        f"torch.equal, which the meta-device harness cannot run), so not planned; {_STEP5}"
    ),
    # vLLM 0.33.0's GLM-5.3-Flash (vllm/models/glm5next), Muse Spark's drafter, Ling-3.0-flash-VL
    "Glm5NextMTPModel": (
        "GLM-5.3-Flash's MTP drafter (glm5next/common/mtp.py Glm5NextMTP: an MLA decoder layer with its sparse "
        "indexer's kpool-compressed key cache and circular tail buffer): the drafter's layers are not modelled "
        "(its target, Glm5NextForCausalLM, is planned on vLLM 0.33.0: models/glm5next.py)"
    ),
    "MuseSparkDSparkModel": (
        "Muse Spark's DSpark drafter (muse_spark/common/dspark.py MuseSparkDSparkForCausalLM: DFlash-style draft "
        "layers on a muse_spark_dspark config, sliding windows from global_attn_cfg): its draft layers are not "
        "modelled"
    ),
    "BailingMoeV3VLForConditionalGeneration": (
        "multimodal wrapper (bailing_moe_v3_vl.py) whose language model is BailingMoeV3ForCausalLM, built on "
        "text_config, itself refused: its Kimi Delta Attention + MLA layers are not verified against vLLM "
        "0.28.0: the model class reads checkpoint keys that BailingHybridConfig does not define "
        "(no_kda_lora, use_bias, ...)"
    ),
    # vLLM 0.33.0's new multimodal wrappers (issue 37), read in its model files
    "NemotronH_Omni_Reasoning_V3": (
        "multimodal wrapper (nano_nemotron_vl.py's NemotronH_Nano_VL_V2 class, as for NemotronH_Nano_VL_V2) that "
        "builds NemotronHForCausalLM (planned) on text_config, not verified: its model class reads the "
        "checkpoints' own config keys (patch_size, norm_mean, norm_std...) that transformers' nemotron_h_omni "
        "config class does not define (vLLM 0.33.0's engine start fails without them on a tiny config: "
        "AttributeError), and its RADIO / Parakeet towers are not modelled: not planned"
    ),
    "RadioMBartPrefixForCausalLM": (
        "multimodal wrapper whose language model is an MBart decoder of its own (nemotron_parse3_5.py "
        "MBartDecoderNoPos: causal self-attention over a RADIO vision prefix, no positions, no cross-attention "
        "(the model class refuses config.decoder.add_cross_attention), config.decoder), an architecture dryboot "
        "does not plan; its config class is remote code (model_type nemotron_parse, an auto_map), which vLLM "
        "0.33.0 refuses without --trust-remote-code (recorded on a tiny config): not verifiable offline"
    ),
}


def refusal_reason(architecture: str) -> str:
    """Why dryboot refuses ``architecture``: the specific reason where one is known, else its
    category (:mod:`dryboot.vllm.models.refusals`), else :func:`unregistered_reason`."""
    from dryboot.vllm.models.refusals import REASONS  # at call: only a refusal's message needs it (~1.3 ms)

    return NOT_MODELLED.get(architecture) or REASONS.get(architecture) or unregistered_reason(architecture)


@lru_cache(maxsize=1)
def _pooling_registry() -> dict[str, dict[str, Any]]:
    """The architectures only vLLM's pooling tables list (``_EMBEDDING_MODELS``,
    ``_TOKEN_CLASSIFICATION_MODELS``...), architecture -> ``kind``, ``file`` and the ``releases`` listing
    it (``data/vllm-pooling-architectures.json``, ``scripts/vllm_architectures.py --pooling``)."""
    data: dict[str, dict[str, Any]] = json.loads((DATA / "vllm-pooling-architectures.json").read_text(encoding="utf-8"))
    return data


def _releases_span(releases: Sequence[str]) -> str:
    """``releases`` (of :data:`REGISTRY_RELEASES`, in order) as words: ``0.27.1 to 0.33.0`` when they
    run unbroken, else listed."""
    at = [REGISTRY_RELEASES.index(r) for r in releases]
    if len(at) > 1 and at == list(range(at[0], at[-1] + 1)):
        return f"{releases[0]} to {releases[-1]}"
    return ", ".join(releases)


def unregistered_reason(architecture: str) -> str:
    """Why ``architecture``, which no family plans and no refusal names, is refused, whatever the
    release: a pooling model of vLLM's registry (a pooling runner, no generation KV cache: vLLM's
    ``_ModelRegistry`` lists it in a pooling table only), a model of a registry dryboot does not model,
    or an architecture no registry dryboot ships lists (vLLM's ``ModelConfig`` refuses it unless
    Transformers' backend builds it)."""
    from dryboot.vllm.models.refusals import POOLING  # at call: only a refusal's message needs it, as refusal_reason

    pooled = _pooling_registry().get(architecture)
    if pooled is not None:
        return (
            f"a {pooled['kind']} model of vLLM {_releases_span(pooled['releases'])}'s model registry "
            f"({pooled['file']}): {POOLING}"
        )
    listed = [v for v in REGISTRY_RELEASES if in_release_registry(architecture, v)]
    if listed:
        return f"in vLLM {_releases_span(listed)}'s model registry, its model class not modelled"
    return f"not in the model registry of any vLLM release dryboot ships ({_releases_span(REGISTRY_RELEASES)})"


def family_for(architecture: str, source: str) -> Family:
    """The family serving ``architecture``.

    :raises InputError: no ``architectures`` entry, or one dryboot does not model.
    """
    if not architecture:
        raise InputError(source, "architectures", "missing: dryboot needs the architecture to know the layers")
    family = ARCHITECTURES.get(architecture)
    if family is None:
        raise InputError(
            source,
            "architectures",
            f"{architecture} is not modelled by dryboot, so its KV cache cannot be planned exactly: "
            f"{refusal_reason(architecture)} (see dryboot plan --list-architectures)",
        )
    return family


#: where the tiny config that verifies a planned architecture lives (in the source tree)
TINY_CONFIGS = "tests/fidelity/data/architectures"


@dataclass(frozen=True)
class ArchitectureRow:
    """One row of ``dryboot plan --list-architectures``.

    :param architecture: the registry name; :param kind: vLLM's table (text-generation,
        multimodal, speculative-decoding); :param vllm_file: its model file in vLLM 0.28.0;
    :param status: ``verified`` (a family plans it, checked end to end against vLLM's engine start
        on its tiny config) or ``refused``; :param family: the dryboot family, or ``""``;
    :param reason: why it is refused (``""`` when verified); :param tiny_config: the source-tree
        path of the config that verifies it (``""`` when refused).
    """

    architecture: str
    kind: str
    vllm_file: str
    status: str
    family: str
    reason: str = ""
    tiny_config: str = ""


#: the releases whose registry table dryboot ships (``data/vllm-<release>-architectures.json``,
#: written by ``scripts/vllm_architectures.py`` from each release's ``registry.py``)
REGISTRY_RELEASES = ("0.27.1", "0.28.0", "0.29.0", "0.30.0", "0.31.0", "0.32.0", "0.33.0")


@lru_cache(maxsize=1)
def _registry() -> dict[str, dict[str, str]]:
    """vLLM 0.28.0's registry, architecture -> ``kind`` and ``file``; read once per process."""
    data: dict[str, dict[str, str]] = json.loads((DATA / "vllm-0.28.0-architectures.json").read_text(encoding="utf-8"))
    return data


def is_draft_model(architecture: str) -> bool:
    """Whether vLLM 0.28.0's registry lists ``architecture`` among its speculative-decoding
    models (``_SPECULATIVE_DECODING_MODELS``): a class built only as a target's drafter."""
    return _registry().get(architecture, {}).get("kind") == "speculative-decoding"


def registry_file(architecture: str) -> str | None:
    """The file of vLLM 0.28.0's ``model_executor/models/`` holding ``architecture``'s class
    (``None``: not in its registry)."""
    return _registry().get(architecture, {}).get("file")


def in_release_registry(architecture: str, version: str) -> bool:
    """Whether vLLM ``version``'s registry lists ``architecture`` (a release dryboot ships).

    :raises InputError: a release whose table dryboot does not ship."""
    return architecture in _release_registry(version)


def release_registry_kind(architecture: str, version: str) -> str | None:
    """vLLM ``version``'s table holding ``architecture`` (text-generation, multimodal,
    speculative-decoding, ...; ``None``: not in that registry).

    :raises InputError: a release whose table dryboot does not ship."""
    return _release_registry(version).get(architecture, {}).get("kind")


def release_registry_file(architecture: str, version: str) -> str | None:
    """The file of vLLM ``version``'s ``model_executor/models/`` holding ``architecture``'s class
    (``transformers/``: its Transformers modeling backend; ``None``: not in that registry).

    :raises InputError: a release whose table dryboot does not ship."""
    return _release_registry(version).get(architecture, {}).get("file")


#: architectures planned that vLLM 0.28.0's registry lacks (a later release's) -> the releases whose
#: engine start verified them (``tests/fidelity/test_release_architectures.py``); on any other
#: release dryboot refuses them (:func:`absent_from_release`)
LATER_ARCHITECTURES: dict[str, tuple[str, ...]] = {
    "BeamForCausalLM": ("0.33.0",),
    # recorded on faked B200 / B300 / H100 in tests/fidelity/test_flint.py (no tiny config in data/architectures:
    # on the default H200 every flag set fails vLLM's FlashInfer assertion)
    "FlintForCausalLM": ("0.33.0",),
    "ExaoneMoEForCausalLM": ("0.32.0", "0.33.0"),
    "GraniteSWAForCausalLM": ("0.29.0", "0.30.0", "0.31.0", "0.32.0", "0.33.0"),
    "GraniteMoeSWAForCausalLM": ("0.29.0", "0.30.0", "0.31.0", "0.32.0", "0.33.0"),
    "Kolibri1ForCausalLM": ("0.33.0",),
    # Step5's text model (vllm/models/step5: its DSA caches on 0.33.0's repeat-pattern packing)
    "Step5ForCausalLM": ("0.33.0",),
    # HY V4's text model (vllm/models/hy_v4: sparse MLA with shared top-k, FLASHMLA_SPARSE for its sinks);
    # 0.29.0-0.31.0 build an indexed_attention layer dense (models/hy_v4.py for_release)
    "HYV4ForCausalLM": ("0.29.0", "0.30.0", "0.31.0", "0.32.0", "0.33.0"),
    # Qwen4-Exp's plain layout (no QSA, no PLE layers: vllm/models/qwen4_exp)
    "Qwen4ExpForCausalLM": ("0.29.0", "0.30.0", "0.31.0", "0.32.0", "0.33.0"),
    # its multimodal wrapper (Qwen3-VL's vision tower; the language model built on text_config)
    "Qwen4ExpForConditionalGeneration": ("0.29.0", "0.30.0", "0.31.0", "0.32.0", "0.33.0"),
    # 0.33.0's wrappers of planned text models (Qwen3-VL's class on vlm_config) and Muse Spark
    "Alpamayo2Super": ("0.33.0",),
    "MuseSparkForConditionalGeneration": ("0.33.0",),
    # MiniCPM-V 4.6's class keeping every vision layer (minicpmv4_7.py, first in 0.32.0's registry)
    "MiniCPMV4_7ForConditionalGeneration": ("0.32.0", "0.33.0"),
    # cohere_compass.py's wrapper: Command-R 2's sliding and full layers of text_config
    "CohereCompassForConditionalGeneration": ("0.30.0", "0.31.0", "0.32.0", "0.33.0"),
    # DeepSeek-V4's multimodal wrapper (deepseek_v4/common/vl_model.py): the text model's caches
    "DeepseekV4ForConditionalGeneration": ("0.30.0", "0.31.0", "0.32.0", "0.33.0"),
    # DeepSeek-V4.1 (vllm/models/deepseek_v41: sliding-window caches on every layer, compressed caches on
    # the KV source layers, shared by the layers after each), verified on 0.33.0's engine start
    "DeepseekV41ForCausalLM": ("0.30.0", "0.31.0", "0.32.0", "0.33.0"),
    # Step5's multimodal wrapper (step5/nvidia/vl.py): Step5's text rules on text_config, the
    # perception-encoder tower's TP checks
    "Step5ForConditionalGeneration": ("0.33.0",),
    # Kimi-K3's multimodal wrapper (vllm/models/kimi_k3): Kimi-Linear's rules on text_config, its
    # full-rank-gate KDA layers' FlashKDA checkpoint blocks (0.29+); in 0.28.0's registry too, but recorded
    # on each release by test_release_architectures.py (0.28.0's included), so listed here
    "KimiK3ForConditionalGeneration": ("0.27.1", "0.28.0", "0.29.0", "0.30.0", "0.31.0", "0.32.0", "0.33.0"),
    # Inkling's text model and its wrapper (vllm/models/inkling: each layer's conv state beside its attention):
    # in every release's registry, but only 0.33.0's engine start builds them offline (0.27.1 and 0.29.0
    # fail to inspect the class, "failed to be inspected": its GPU kernels have no stand-in there), so
    # they are planned on 0.33.0 alone (absent_from_release refuses them on the others)
    "InklingForCausalLM": ("0.33.0",),
    "InklingForConditionalGeneration": ("0.33.0",),
    # Dots3-Note (vllm/models/dots3_note): in every release's registry from 0.28.0, its sliding-window
    # MLA beside padded sparse MLA verified on 0.33.0's engine start alone (its repeat-pattern packing);
    # 0.32.0's engine start fails to inspect the class offline ("failed to be inspected", recorded by hand
    # on the 0.33.0 cases); 0.28.0-0.31.0 were not recorded
    "Dots3NoteForCausalLM": ("0.33.0",),
    # GLM-5.3-Flash (vllm/models/glm5next, in 0.30.0-0.33.0's registries): its KDA states beside sparse
    # MLA with the kpool indexer's key cache and tail ring, repeat-packed, verified on 0.32.0 and 0.33.0's engine
    # start; 0.30.0 and 0.31.0 build every layer indexed, one uniform-type group, verified on their engine start
    # too (tiny stand-in configs, tests/fidelity/data/glm5next/; the wrapper on 0.33.0 only)
    "Glm5NextForCausalLM": ("0.30.0", "0.31.0", "0.32.0", "0.33.0"),
    "Glm5NextForConditionalGeneration": ("0.33.0",),
}


def absent_from_release(architecture: str, version: str) -> str | None:
    """Why ``architecture``, which vLLM 0.28.0's registry lacks (a later release's) or whose class only
    a later release's engine start builds offline (Inkling), is not planned for release ``version`` (a
    shipped table): that registry lacks it too, or its engine start did not verify it
    (:data:`LATER_ARCHITECTURES`); ``None``: planned there, or 0.28.0 has it and it is not in
    :data:`LATER_ARCHITECTURES` (a removal is :func:`~dryboot.vllm.versions.unverified_reason`'s).

    :raises InputError: a release whose table dryboot does not ship."""
    later = LATER_ARCHITECTURES.get(architecture)
    if version in (later or ()) or (later is None and architecture in _registry()):
        # planned there; 0.28.0's registry listing it counts only if no later release verified it alone
        return None
    if architecture not in LATER_ARCHITECTURES and architecture not in ARCHITECTURES:
        return None
    if in_release_registry(architecture, version):
        verified = " / ".join(LATER_ARCHITECTURES.get(architecture, ())) or "no release"
        return (
            f"{architecture} is not verified against vLLM {version}'s engine start (verified on {verified}), "
            "so dryboot does not plan it for that release"
        )
    first = next((v for v in REGISTRY_RELEASES if in_release_registry(architecture, v)), None)
    since = f"it is in vLLM {first}'s on" if first else "no release dryboot ships has it"
    # vLLM's ModelConfig words where the class is not registered (recorded on 0.28.0 / 0.29.0)
    return (
        f"Model architectures ['{architecture}'] are not supported for now: {architecture} is not in vLLM "
        f"{version}'s model registry ({since}), so dryboot does not plan it for that release"
    )


@cache
def _release_registry(version: str) -> dict[str, dict[str, str]]:
    """Release ``version``'s registry, as :func:`_registry` is 0.28.0's; read once per process.

    :raises InputError: a release whose table dryboot does not ship.
    """
    if version == "0.28.0":
        return _registry()
    if version not in REGISTRY_RELEASES:
        raise InputError(
            "--vllm-version", version, f"no registry table for this release (only {', '.join(REGISTRY_RELEASES)})"
        )
    path = DATA / f"vllm-{version}-architectures.json"
    data: dict[str, dict[str, str]] = json.loads(path.read_text(encoding="utf-8"))
    return data


def architecture_table(version: str = "0.28.0") -> list[ArchitectureRow]:
    """Every architecture of release ``version``'s registry (text generation, multimodal wrappers,
    speculative decoding, the Transformers backend's), with what dryboot does with it on that
    release: ``verified`` (a family plans it; its tiny config checked against vLLM 0.28.0) or
    ``refused`` (not modelled, or not verified on that release: :func:`unverified_reason`).

    :raises InputError: a release whose table dryboot does not ship.
    """
    unverified = rules_for(version).unverified_architectures
    rows = []
    for arch, entry in _release_registry(version).items():
        family = ARCHITECTURES.get(arch)
        if family is not None and (later := absent_from_release(arch, version)) is not None:
            rows.append(ArchitectureRow(arch, entry["kind"], entry["file"], "refused", family.name, later))
            continue
        if family is not None and arch in unverified:
            why = f"not verified against vLLM {version}'s engine start ({unverified_reason(version, arch)})"
            rows.append(ArchitectureRow(arch, entry["kind"], entry["file"], "refused", family.name, why))
            continue
        rows.append(
            ArchitectureRow(
                arch,
                entry["kind"],
                entry["file"],
                "verified" if family else "refused",
                family.name if family else "",
                "" if family else _release_reason(arch, version),
                f"{TINY_CONFIGS}/{arch}.json" if family else "",
            )
        )
    return rows


def _release_reason(architecture: str, version: str) -> str:
    """Why ``architecture`` of release ``version``'s registry is refused."""
    from dryboot.vllm.models.refusals import REASONS  # at call: only a refused row needs it, as refusal_reason

    if architecture not in _registry() and architecture not in NOT_MODELLED and architecture not in REASONS:
        return f"in vLLM {version}'s registry, not in 0.28.0's: its model file is not modelled"
    return refusal_reason(architecture)


#: the ``model_type`` values ``SpeculativeConfig.hf_config_override`` turns into DeepSeek's MTP
#: module (``DeepSeekMTPModel``) in every draft config, whatever the method (vLLM 0.27.1-0.33.0):
#: an EAGLE-3 head of one is then looked up as ``Eagle3DeepSeekMTPModel``, which no registry has
DEEPSEEK_MTP_MODEL_TYPES = frozenset({"deepseek_v3", "deepseek_v32", "glm_moe_dsa", "deepseek_mtp"})


def drafter_architecture(method: str, architecture: str, source: str, version: str) -> str:
    """The architecture vLLM ``version`` builds a draft model as: ``Eagle<arch>`` (``eagle``),
    ``Eagle3<arch>`` (``eagle3``), ``DFlash<arch>`` (``dflash``) unless the name already says so
    (``transformers_utils/configs/eagle.py``); other methods keep the name.

    :raises InputError: the registry of the release ``version`` plans (its table entry,
        :func:`dryboot.vllm.versions.rules_for`) has no such architecture ("Model architectures
        [...] are not supported for now": :func:`unregistered_drafter`), or a version older than
        every table entry.
    """
    why = unregistered_drafter(method, architecture, version)
    if why is not None:
        raise InputError(source, "architectures", why)
    return _built_drafter_class(method, architecture)


def _built_drafter_class(method: str, architecture: str) -> str:
    """The class name ``EAGLEConfig`` gives a draft model of ``architecture`` under ``method``."""
    if method == "eagle" and not architecture.startswith("Eagle"):
        return f"Eagle{architecture}"
    if method == "eagle3" and not (architecture.startswith("Eagle3") or architecture.endswith("Eagle3")):
        return f"Eagle3{architecture}"
    if method == "dflash" and not (architecture.startswith("DFlash") or architecture.endswith("DFlash")):
        return f"DFlash{architecture}"
    return architecture


def unregistered_drafter(method: str, architecture: str, version: str) -> str | None:
    """Why vLLM ``version`` refuses an ``eagle`` / ``eagle3`` / ``dflash`` draft model of ``architecture``
    (the class :func:`drafter_architecture` names is not in its registry: ``SpeculativeConfig.__post_init__``'s
    ``update_arch_``, after the target's ``ModelConfig`` and ``ParallelConfig``), in vLLM's words; ``None``
    where it has the class, or for another method.

    :raises InputError: a version older than every registry table entry.
    """
    resolved = _built_drafter_class(method, architecture)
    release = rules_for(version).version
    if method in ("eagle", "eagle3", "dflash") and resolved not in _release_registry(release):
        return (
            f"Model architectures ['{resolved}'] are not supported for now (vLLM {release} builds a {method} "
            f"drafter of {architecture} as {resolved})"
        )
    return None


def unregistered_eagle_head(data: Mapping[str, Any], method: str, version: str) -> str | None:
    """:func:`unregistered_drafter` for an EAGLE / EAGLE-3 head's ``config.json`` ``data``, named as
    :func:`eagle_head_overrides` names it (a DeepSeek MTP ``model_type`` as ``DeepSeekMTPModel``); ``None``
    for other methods or a config without ``architectures``."""
    archs = data.get("architectures")
    if method not in ("eagle", "eagle3") or not isinstance(archs, list) or not archs or not isinstance(archs[0], str):
        return None
    mtp = data.get("model_type") in DEEPSEEK_MTP_MODEL_TYPES
    return unregistered_drafter(method, "DeepSeekMTPModel" if mtp else archs[0], version)


def eagle_head_overrides(data: dict[str, Any], method: str, source: str, version: str) -> dict[str, Any] | None:
    """The rewrite vLLM's ``EAGLEConfig`` makes of an EAGLE / EAGLE-3 head's config
    (``transformers_utils/configs/eagle.py``): ``architectures`` as :func:`drafter_architecture`
    names the class it builds (``LlamaForCausalLM`` -> ``EagleLlamaForCausalLM`` /
    ``Eagle3LlamaForCausalLM``), whatever its ``model_type``; ``None`` for other methods, or when
    the name already is the built one.

    :raises InputError: vLLM ``version``'s registry has no such head ("Model architectures [...]
        are not supported for now"), or the head's ``model_type`` names a config class whose fields
        dryboot does not read for an EAGLE head.
    """
    if method not in ("eagle", "eagle3"):
        return None
    archs = data.get("architectures")
    if not isinstance(archs, list) or not archs or not isinstance(archs[0], str):
        return None
    # SpeculativeConfig.hf_config_override reads a DeepSeek-V3 / V3.2 / GLM-5 config as DeepSeek's
    # MTP module whatever the method, before EAGLEConfig names the head's class
    mtp = data.get("model_type") in DEEPSEEK_MTP_MODEL_TYPES
    resolved = drafter_architecture(method, "DeepSeekMTPModel" if mtp else archs[0], source, version)
    kind = data.get("model_type")
    refusal = eagle_head_refusal(kind, data) if resolved in EAGLE_HEADS and isinstance(kind, str) else None
    if refusal is not None:
        raise InputError(
            source,
            "model_type",
            f"{kind!r}: vLLM reads this {method} head ({resolved}) with that config class, and {refusal}: not modelled",
        )
    return None if resolved == archs[0] else {"architectures": [resolved]}
