"""The KV cache layouts a worker's attention backends declare, and the engine core's check that
every pipeline stage's worker reports the same list.

Mirrors vLLM 0.29+'s ``v1/kv_cache_layout.py`` (``KVCacheLayout``),
``v1/attention/backends/utils.py`` (``get_supported_kv_cache_layouts``, ``resolve_kv_cache_layout``'s
"Workers disagree on supported KV cache layouts" assertion), the planner's check that the resolved
layout can express pages of mixed sizes (``validate_kv_cache_layout``) and the backends'
``supported_kv_cache_layouts``. Before 0.29 no layout is resolved. DeepSeek-V4's packed planner hands
its stages' backends here too (``kv_cache_utils/packed.py`` ``check_stage_layouts``), in its own words.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from dryboot.errors import InputError
from dryboot.vllm.backends import AttentionBackend, AttentionSelectorConfig, default_backend
from dryboot.vllm.versions import VersionRules, version_key

#: the first release whose engine core resolves one KV cache layout from every worker's report
FIRST_RELEASE = "0.29.0"
#: ``KVCacheLayout``'s members in enum order (the tie order of :func:`supported_layouts`)
LAYOUTS = ("LBHNC", "LBNHC", "LHBNC", "BLHNC", "BLNHC", "BHLNC")
#: the preference of a worker whose backends declare nothing (``_DEFAULT_LAYOUT_PREFERENCE``)
DEFAULT_PREFERENCE = ("LBNHC", "LBHNC", "BLNHC", "BLHNC", "BHLNC", "LHBNC")
#: FlashInfer's TRT-LLM-gen kernels on SM 10.x read head-major blocks (``FlashInferBackend``; the
#: Triton + FlashInfer composite of a multimodal-prefix layer takes the same, its Triton half
#: declaring nothing)
_FLASHINFER_SM100 = ("LBHNC", "BLHNC")
#: DeepSeek-V4's indexer packs its pages beside the MLA latent pages inside each block, so it asks for
#: the block-outermost layouts (``DeepseekV4IndexerBackend``, ``v1/attention/backends/mla/indexer.py``)
_DEEPSEEK_V4_INDEXER = ("BLHNC", "BLNHC")


def declared_layouts(backend: str, capability: tuple[int, int]) -> tuple[str, ...] | None:
    """The layouts backend ``backend`` declares on a GPU of ``capability``, most preferred first, or
    ``None`` where it takes any (``supported_kv_cache_layouts``): FlexAttention and TurboQuant flatten
    the block and token axes (``LBNHC`` only); FlashInfer on SM 10.x; DeepSeek-V4's indexer
    (``DEEPSEEK_V4_INDEXER``: block-outermost); every other backend modelled here declares nothing."""
    if backend in ("FLEX_ATTENTION", "TURBOQUANT"):
        return ("LBNHC",)
    if backend == "DEEPSEEK_V4_INDEXER":
        return _DEEPSEEK_V4_INDEXER
    if backend in ("FLASHINFER", "TRITON_FLASHINFER") and capability[0] == 10:
        return _FLASHINFER_SM100
    return None


def supported_layouts(declared: Iterable[Sequence[str] | None]) -> list[str]:
    """What one worker reports (``get_supported_kv_cache_layouts``): the declaring backends' common
    list when they agree, else their intersection ordered by how many put a layout first (ties in
    enum order); :data:`DEFAULT_PREFERENCE` when none declares.

    :raises InputError: declarations with nothing in common (vLLM's ValueError)."""
    lists = [tuple(d) for d in declared if d is not None] or [DEFAULT_PREFERENCE]
    if all(d == lists[0] for d in lists[1:]):
        return list(lists[0])
    firsts = [d[0] for d in lists]
    common = set.intersection(*(set(d) for d in lists))
    out = sorted((x for x in LAYOUTS if x in common), key=lambda x: firsts.count(x), reverse=True)
    if not out:
        raise InputError(
            "--attention-backend",
            None,
            f"No KV cache layout satisfies every supported set: {[list(d) for d in lists]} (vLLM's ValueError)",
        )
    return out


def check_layerless_stage_backend(
    named: str | None,
    backend: AttentionBackend,
    kv_cache_dtype: str,
    rules: VersionRules,
    source: str,
    attention_free: AttentionSelectorConfig | None = None,
) -> None:
    """A pipeline stage's worker that builds no layer reports the layouts of the backend vLLM selects from
    the model config alone (``get_current_attn_backends``' fallback, asked by ``resolve_kv_cache_layout``
    from 0.29.0): a named ``--attention-backend`` (``named``, ``backend`` its declarations) is validated
    there against ``kv_cache_dtype``, also for a model whose layers select no attention backend. Unnamed,
    the selection runs there for an attention-free model (``attention_free``: what it asks, head size 0 as
    ``ModelConfig.get_head_size`` gives it), whose layers never selected one; a model with attention
    layers asks what its layers asked, already answered.

    :raises InputError: vLLM's ValueError "Selected backend ... is not valid for this configuration" with
        its KV cache dtype reason, naming ``--attention-backend``; or its "No valid attention backend
        found" where no backend serves the attention-free model's cache dtype."""
    if version_key(rules.version) < version_key(FIRST_RELEASE):
        return
    if named is None:
        if attention_free is not None:
            try:
                default_backend(attention_free, False)
            except ValueError as exc:
                raise InputError(
                    "--kv-cache-dtype",
                    kv_cache_dtype,
                    f"{exc} ({source}: a pipeline stage without layers selects a backend from the model config, "
                    f"head size 0 for an attention-free model; vLLM {rules.version}'s resolve_kv_cache_layout)",
                ) from None
        return
    if not backend.supports_kv_cache_dtype(kv_cache_dtype):
        raise InputError(
            "--attention-backend",
            named,
            f"Selected backend AttentionBackendEnum.{named} is not valid for this configuration. Reason: "
            f"['kv_cache_dtype not supported'] ({source}: KV cache dtype {kv_cache_dtype}; a pipeline stage "
            "without layers selects the backend from the model config, vLLM "
            f"{rules.version}'s resolve_kv_cache_layout)",
        )


def check_stage_layouts(
    stage_backends: Sequence[Iterable[str]],
    capability: tuple[int, int],
    rules: VersionRules,
    refusal: str | None = None,
) -> None:
    """``resolve_kv_cache_layout``: every pipeline stage's worker must report the same layouts over
    the attention backends of the layers it builds (a stage of mamba layers only declares nothing).
    ``refusal``: a family's own words for the refusal (default: the stages' reports, as vLLM's
    assertion gives them).

    :raises InputError: stages that report different lists (vLLM's AssertionError), from 0.29.0."""
    if len(stage_backends) < 2 or version_key(rules.version) < version_key(FIRST_RELEASE):
        return
    reports = [supported_layouts(declared_layouts(b, capability) for b in sorted(set(s))) for s in stage_backends]
    if any(r != reports[0] for r in reports[1:]):
        raise InputError(
            "--pipeline-parallel-size",
            str(len(stage_backends)),
            refusal
            or f"AssertionError: Workers disagree on supported KV cache layouts: {reports} (each pipeline stage "
            f"reports the layouts its layers' attention backends declare; vLLM {rules.version}'s "
            "resolve_kv_cache_layout)",
        )


def _block_compact(layout: str) -> bool:
    """``KVCacheLayout.is_block_compact``: the layer and block axes are the two outermost."""
    return set(layout[:2]) == {"L", "B"}


def check_mixed_page_sizes(
    page_sizes: Iterable[int],
    num_groups: int,
    backends: Iterable[str],
    capability: tuple[int, int],
    rules: VersionRules,
    flag: str,
) -> None:
    """vLLM 0.29+'s engine core resolves one layout for the worker (``resolve_kv_cache_layout``: the
    first of :func:`supported_layouts` over ``backends``, only block-compact ones when the specs' pages
    differ), and its KV cache planner then refuses pages of mixed sizes that the layout cannot express
    (``validate_kv_cache_layout``: a layout that is not block-compact, or, with more than one KV cache
    group, one whose layer axis is outermost). ``page_sizes``: every layer's page, bytes.

    :raises InputError: mixed pages on such a release (vLLM's ValueError, ``flag`` names the input that
        brought them), or a block-outermost layout that would take them (not modelled)."""
    pages = sorted(set(page_sizes))
    if len(pages) < 2 or version_key(rules.version) < version_key(FIRST_RELEASE):
        return
    reported = supported_layouts(declared_layouts(b, capability) for b in sorted(set(backends)))
    candidates = [x for x in reported if _block_compact(x)]
    if not candidates:
        raise InputError(
            flag,
            None,
            "ValueError: Specs with mixed HNC shapes need a block-compact layout, but none is in every supported "
            f"set: {[reported]} (vLLM {rules.version}'s resolve_kv_cache_layout)",
        )
    layout = candidates[0]
    if num_groups > 1 and layout[0] == "L":
        raise InputError(
            flag,
            None,
            f"ValueError: KV cache layout {layout} cannot express this model's mixed page sizes ({pages}); a "
            "backend should declare block-outermost supported layouts (e.g. BLHNC), or set "
            f"VLLM_KV_CACHE_LAYOUT=BLHNC. (vLLM {rules.version}'s validate_kv_cache_layout)",
        )
    raise InputError(
        flag,
        None,
        f"KV cache layout {layout} packs this model's pages of mixed sizes ({pages}) side by side in each block, "
        "which dryboot does not model",
    )
