"""``dryboot plan``: predict the KV-cache lines of a vLLM boot from a config.json."""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import click

from dryboot.errors import InputError
from dryboot.planner.flags import FLAGS
from dryboot.planner.policies import GROUPING_POLICIES, UNIFICATION_POLICIES
from dryboot.textout import output_width, wrap

#: the other spellings vLLM's parser takes for an engine flag (its short ``-tp`` and the like)
_ALIASES = {
    "kv-cache-memory-bytes": "--kv-cache-memory",
    "tensor-parallel-size": "-tp",
    "pipeline-parallel-size": "-pp",
    "data-parallel-size": "-dp",
    "decode-context-parallel-size": "-dcp",
    "optimization-level": "-O",
    "compilation-config": "-cc",
}


def engine_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """Attach every vLLM engine flag of :data:`dryboot.planner.flags.FLAGS` as a click option.

    Values arrive raw (text) in ``engine_flags`` and are parsed by
    :func:`dryboot.planner.flags.apply_flags`, so errors name the flag.
    """
    for flag in reversed(FLAGS):
        if flag.kind is bool:
            func = click.option(f"--{flag.name}/--no-{flag.name}", f"flag_{flag.field}", default=None, help=flag.help)(
                func
            )
        else:
            names = [f"--{flag.name}", *([_ALIASES[flag.name]] if flag.name in _ALIASES else [])]
            func = click.option(*names, f"flag_{flag.field}", default=None, metavar="V", help=flag.help)(func)
    return func


def policy_options(whose: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """``--grouping`` and ``--unification`` with the choices of :mod:`dryboot.planner.policies`;
    ``whose`` ends their help (e.g. " of the tree that wrote the log")."""

    def attach(func: Callable[..., Any]) -> Callable[..., Any]:
        func = click.option(
            "--unification",
            type=click.Choice(UNIFICATION_POLICIES),
            default="upstream",
            show_default=True,
            help=f"Page-size unification policy{whose}.",
        )(func)
        return click.option(
            "--grouping",
            type=click.Choice(GROUPING_POLICIES),
            default="upstream",
            show_default=True,
            help=f"KV cache group sizing policy{whose}.",
        )(func)

    return attach


def collect_flags(kwargs: dict[str, Any]) -> dict[str, object]:
    """The engine flags the user gave (vLLM names -> raw values)."""
    out: dict[str, object] = {}
    for flag in FLAGS:
        value = kwargs.pop(f"flag_{flag.field}", None)
        if value is not None:
            out[flag.name] = value
    return out


@click.command("plan")
@click.option("--model", "model_path", metavar="PATH", help="A config.json or a directory holding one.")
@click.option(
    "--list-architectures",
    is_flag=True,
    help="Print every architecture of the registry of vLLM 0.28.0 (or of --vllm-version X): verified "
    "(planned, checked against vLLM) or refused, with the reason.",
)
@engine_options
@click.option(
    "--custom-kv-cache-dtype",
    "custom_dtypes",
    multiple=True,
    metavar="SPEC",
    help="Declare NAME:BYTES_PER_HEAD_TOKEN[:kernel_block=N][:pad=yes|no]; BYTES may be a "
    "formula of head_dim, e.g. kvarn:210*head_dim//256:kernel_block=128:pad=no.",
)
@click.option(
    "--speculative-config",
    "spec_config",
    metavar="JSON",
    help='vLLM\'s JSON, e.g. {"method": "dflash", "model": "drafter/", "num_speculative_tokens": 7}; '
    "dryboot also reads kv_cache_dtype, attention_backend and block_size for the drafter.",
)
@click.option("--speculative-model", "spec_model", metavar="PATH", help="Shorthand: the drafter's config.json.")
@click.option(
    "--hf-overrides",
    "hf_overrides",
    metavar="JSON",
    help="vLLM's --hf-overrides: keys replacing the config.json's (nested configs updated key by key).",
)
@policy_options("")
@click.option(
    "--serve",
    "serve_line",
    metavar="'vllm serve ...'",
    help="Plan from a vllm serve command line (vLLM's option names, --config YAML, VAR=value "
    "words before it; VLLM_* variables of the environment too). Or give it after '--'.",
)
@click.argument("serve_words", nargs=-1, type=click.UNPROCESSED, metavar="[-- vllm serve ...]")
@click.option(
    "--compare-version",
    metavar="B",
    help="Also plan with vLLM B's rules and show what the upgrade changes, figure by figure.",
)
@click.option("--json", "as_json", is_flag=True, help="Print every figure as JSON.")
@click.option(
    "--load-format",
    "load_format",
    type=click.Choice(["auto", "safetensors", "dummy"]),
    default="auto",
    help="Where the weights' per-rank bytes come from: auto = the safetensors headers of the --model "
    "directory when it has them, else the config alone; safetensors = the headers (required); dummy = "
    "the config alone.",
)
@click.option(
    "--enable-expert-parallel",
    "expert_parallel",
    is_flag=True,
    help="vLLM's flag: experts split over TP x DP ranks (for the weights' per-rank bytes).",
)
@click.option(
    "--engram-config",
    "engram_config",
    metavar="JSON",
    help='vLLM 0.30.0+\'s EngramConfig, e.g. {"cpu_offload": false}: where the n-gram embedding tables '
    "(Qwen4-Exp's PLE, DeepSeek-V4.1's Engram) live; false puts them on the GPU, in the weights. Refused on "
    "releases without it.",
)
@click.option(
    "--compile-cache",
    "compile_cache",
    type=click.Choice(["unknown", "warm", "cold"]),
    default="unknown",
    help="The torch.compile cache a boot finds, for the KV budget predicted with --gpu and no budget: "
    "cold (or unknown) adds inductor's compilation inside the profile run to the high bound.",
)
@click.option(
    "--svg",
    "svg_path",
    type=click.Path(dir_okay=False),
    metavar="FILE",
    help="Also draw the KV pool (groups, pages, padding, blocks per request) as an SVG picture.",
)
def plan(
    model_path: str | None,
    list_architectures: bool,
    custom_dtypes: tuple[str, ...],
    spec_config: str | None,
    spec_model: str | None,
    hf_overrides: str | None,
    grouping: str,
    unification: str,
    compare_version: str | None,
    as_json: bool,
    load_format: str,
    expert_parallel: bool,
    engram_config: str | None,
    compile_cache: str,
    svg_path: str | None,
    serve_line: str | None,
    serve_words: tuple[str, ...],
    **kwargs: Any,
) -> None:
    """Predict vLLM's KV cache at engine start, offline.

    Prints the lines vLLM logs (block size, mamba padding, "GPU KV cache size", maximum
    concurrency), tables of layers, groups and capacity, and a verdict per invariant.
    With --serve 'vllm serve MODEL ...' (or after '--') the flags and the model come from the
    command line people already have: its options mapped as check-log maps a logged args line
    (refused or noted by name), the model's config.json from --model, a local path or the
    Hugging Face cache. dryboot's own flags (a KV budget, --gpu-memory) may be given beside it.
    One verdict ends the report. Exit 0: fits (no GPU named: every invariant holds); 1: won't
    (an invariant is violated or one request does not fit); 2: bad input; 3: undetermined (a GPU
    is named but the budget or the weights are not known); 4: tight (fits only above the low
    bound, or not within the safe pinned pool).
    """
    # at call: `dryboot plan --help` and the other commands do not load the planner (~0.25 s)
    from dryboot.planner.budget import wants_budget
    from dryboot.planner.plan import Policies
    from dryboot.planner.plan import plan as make_plan
    from dryboot.planner.report import plan_to_dict, render_text
    from dryboot.planner.runner import build_engine_args, load_drafter_and_k
    from dryboot.vllm.models.registry import architecture_table
    from dryboot.vllm.versions import resolve_version

    if list_architectures:
        release = kwargs.get("flag_vllm_version")
        table = architecture_table(resolve_version(str(release)) if release is not None else "0.28.0")
        if as_json:
            click.echo(json.dumps([row.__dict__ for row in table], indent=2))
        else:
            for row in table:
                detail = f"verified on {row.tiny_config}" if row.status == "verified" else row.reason
                click.echo(
                    f"{row.architecture}  {row.status}  {row.family or '-'}  {row.kind}  vllm {row.vllm_file}  {detail}"
                )
            verified = sum(r.status == "verified" for r in table)
            click.echo(f"{len(table)} architectures: {verified} verified, {len(table) - verified} refused")
        return
    flags = collect_flags(kwargs)
    _COMPILE_CACHE[0] = compile_cache
    env: dict[str, str] = {}
    engram_cpu_offload = True  # vLLM's default; --engram-config (or a --serve line's) changes it
    if serve_line is not None or serve_words:
        if serve_line is not None and serve_words:
            raise click.UsageError("Give the command line once: --serve '...' or after '--'.")
        if spec_config is not None or spec_model is not None or hf_overrides is not None or engram_config is not None:
            raise click.UsageError(
                "With --serve, give --speculative-config / --hf-overrides / --engram-config in the command line."
            )
        # at call: only --serve reads a command line; plan's other paths never load check-log
        from dryboot.checklog.serve import parse_serve, plan_inputs

        release = flags.get("vllm-version")  # the parser of the release planned (its options)
        cmd = parse_serve(
            serve_line if serve_line is not None else list(serve_words),
            os.environ,
            version=resolve_version(str(release)) if release is not None else "0.28.0",
        )
        served = plan_inputs(cmd, model_path=model_path, extra_flags=flags, custom_dtypes=custom_dtypes)
        model, args, drafter, env = served.model, served.args, served.drafter, served.env
        flags = served.flags
        expert_parallel = expert_parallel or served.expert_parallel
        engram_cpu_offload = served.engram_cpu_offload
        weights_path: str | None = str(served.config.path)
        for note in served.notes:
            click.echo(f"serve: {note}", err=True)
        click.echo(f"serve: config {served.config.path} ({served.config.how})", err=True)
    else:
        if model_path is None:
            raise click.UsageError("Missing option '--model'.")
        weights_path = model_path
        model, args = build_engine_args(model_path, flags, list(custom_dtypes), hf_overrides)
        drafter, args = load_drafter_and_k(
            spec_config,
            spec_model,
            args,
            target_vocab_size=_vocab_size(model_path, spec_config, spec_model),
            target_architecture=model.architecture,
        )
        if engram_config is not None:
            engram_cpu_offload = _engram(engram_config, args, model_path, compare_version)
    budget = None
    with _environment(env):
        if compare_version is None and wants_budget(args):
            weights = _weights(
                weights_path,
                args,
                load_format,
                expert_parallel,
                model.architecture,
                _weights_len(model, args, drafter),
                engram_cpu_offload,
            )
            budget = _plan_budget(model, args, drafter, Policies(grouping, unification), weights, weights_path)
            result = budget.plan
        else:
            result = make_plan(model, args, drafter=drafter, policies=Policies(grouping, unification))
    if compare_version is not None:
        # at call: as above
        from dryboot.planner.assumptions import assumptions
        from dryboot.vllm.versions import rules_for

        other_version = resolve_version(compare_version, "--compare-version")
        rules_for(other_version, "--compare-version")  # refused naming the flag it came from
        other_args = replace(args, vllm_version=other_version)
        other = make_plan(model, other_args, drafter=drafter, policies=Policies(grouping, unification))
        a, b = plan_to_dict(result, given=flags), plan_to_dict(other, given=flags)
        rows = compare_figures(a, b)
        unverified = [
            replace(x, flag=flag).line()
            for plan_, flag in ((result, "--vllm-version"), (other, "--compare-version"))
            for x in assumptions(plan_, flags)
            if x.kind == "unverified"
        ]
        if as_json:
            click.echo(json.dumps({"a": a, "b": b, "changes": rows, "unverified": unverified}, indent=2))
        else:
            for line in unverified:
                click.echo("\n".join(wrap(line, output_width(), "", "  ")))
            va, vb = result.rules.version, other.rules.version
            width = max([len("figure"), *(len(r["figure"]) for r in rows)])
            click.echo(f"vLLM {va} -> {vb}: {sum(r['changed'] for r in rows)} of {len(rows)} figures change")
            click.echo(f"{'figure':{width}}  {'vLLM ' + va:>22}  {'vLLM ' + vb:>22}")
            for r in rows:
                mark = "  *" if r["changed"] else ""
                click.echo(f"{r['figure']:{width}}  {r['a']!s:>22}  {r['b']!s:>22}{mark}")
        raise SystemExit(0 if result.ok and other.ok else 1)
    if svg_path is not None:
        from dryboot.planner.svg import write  # at call: drawsvg loads only for --svg (~0.2 s)

        write(result, svg_path)
    refused = None
    if budget is None:
        weights = _weights(
            weights_path,
            args,
            load_format,
            expert_parallel,
            model.architecture,
            _weights_len(model, args, drafter),
            engram_cpu_offload,
        )
        refused = weights.refused or None
        if not weights.refused and weights.stages:
            # at call: as in plan
            from dryboot.planner.budget import drafter_weights_term, with_weights_check
            from dryboot.vllm.transformers_utils.config import load_config_json

            stages = [w.loaded_bytes for w in weights.stages]
            drafted, refused = (
                drafter_weights_term(drafter, args, load_config_json(weights_path)[1])
                if weights_path is not None
                else (None, None)
            )
            if refused is not None:
                refused = f"speculative decoding: the drafter's weights: {refused}"
            # the drafter loads on the last stage (its low bound checked)
            stages[-1] += drafted[0] if drafted else 0
            result = with_weights_check(result, args, max(stages))
    from dryboot.planner.budget import plan_verdict  # at call: as above

    verdict = plan_verdict(result, budget, args, weights_refused=refused)
    if as_json:
        doc = plan_to_dict(result, given=flags)
        doc["weights"] = weights.to_dict()
        if budget is not None:
            doc["budget"] = budget.to_dict()
        doc["verdict"] = verdict.to_dict()
        click.echo(json.dumps(doc, indent=2))
    else:
        click.echo(render_text(result, given=flags, verdict=""), nl=False)
        click.echo(_weights_text(weights, args), nl=False)
        if budget is not None:
            click.echo(budget_text(budget), nl=False)
        click.echo("\n".join(wrap(verdict.line(), output_width(), "", "  ")))
    raise SystemExit(verdict.exit_code)


def _engram(text: str, args: Any, model_path: str, compare_version: str | None) -> bool:
    """``--engram-config``'s ``cpu_offload`` (``checklog.serve.plan_engram_config``, as ``--serve``
    maps vLLM's option), its notes on stderr.

    :raises InputError: a release (``--vllm-version``, or ``--compare-version``'s) whose parser
        lacks the option, or what vLLM's ``EngramConfig`` refuses."""
    # at call: only --engram-config reads check-log's mapping
    from dryboot.checklog.serve import ENGRAM_OPTION, engram_option_refusal, plan_engram_config
    from dryboot.vllm.versions import resolve_version

    if compare_version is not None:
        refusal = engram_option_refusal(resolve_version(compare_version, "--compare-version"))
        if refusal is not None:
            raise InputError(ENGRAM_OPTION, None, f"--compare-version {compare_version}: {refusal}")
    offload, notes = plan_engram_config(text, args.vllm_version, Path(model_path), args.data_parallel_size)
    for note in notes:
        click.echo(f"engram-config: {note}", err=True)
    return offload


def _vocab_size(path: str, spec_config: Any, spec_model: Any) -> int | None:
    """The target's vocabulary (``hf_text_config.vocab_size``), read only with a drafter."""
    if spec_config is None and spec_model is None:
        return None
    from dryboot.vllm.transformers_utils.config import load_config_json  # at call: as in _plan_budget

    _, config = load_config_json(path)
    text = config.get("text_config") if isinstance(config.get("text_config"), dict) else config
    vocab = text.get("vocab_size") if isinstance(text, dict) else None
    return vocab if isinstance(vocab, int) else None


def _weights_len(model: Any, args: Any, drafter: Any) -> int | None:
    """:func:`dryboot.planner.budget.weights_max_model_len` (the length a rotary table spans)."""
    from dryboot.planner.budget import weights_max_model_len  # at call: as the loader

    return weights_max_model_len(model, args, drafter)


def _weights(
    path: str | None,
    args: Any,
    load_format: str,
    expert_parallel: bool,
    architecture: str = "",
    max_model_len: int | None = None,
    engram_cpu_offload: bool = True,
) -> Any:
    """The per-rank weights report for the plan (``model_loader.loader.model_weights``); under
    ``--mm-encoder-tp-mode data`` as vLLM serves ``architecture`` so (``loader.weights_as_served``);
    ``max_model_len``: the length a rotary table spans (:func:`_weights_len`);
    ``engram_cpu_offload``: ``--engram-config``'s ``cpu_offload`` (n-gram tables in host memory)."""
    # at call: only a plan reads checkpoint headers; other commands never load the loader
    from dryboot.vllm.model_executor.model_loader.loader import WeightsReport, weights_as_served

    if path is None:
        return WeightsReport(refused="no model directory")
    partition = None
    if args.pp_layer_partition:
        try:
            partition = tuple(int(x) for x in str(args.pp_layer_partition).split(","))
        except ValueError:
            raise InputError("VLLM_PP_LAYER_PARTITION", None, "not comma-separated integers") from None
    return weights_as_served(
        lambda lmo: _model_weights(
            Path(path), args, load_format, expert_parallel, partition, lmo, max_model_len, engram_cpu_offload
        ),
        architecture,
        args.tensor_parallel_size,
        args.vllm_version,
        args.language_model_only,
        args.mm_encoder_tp_mode,
    )


def _model_weights(
    path: Path,
    args: Any,
    load_format: str,
    expert_parallel: bool,
    partition: Any,
    language_model_only: bool,
    max_model_len: int | None = None,
    engram_cpu_offload: bool = True,
) -> Any:
    """``model_weights`` of ``path`` under the plan's flags."""
    # at call: as in _weights
    from dryboot.vllm.model_executor.model_loader.loader import model_weights, serving_gpu

    return model_weights(
        path,
        tp=args.tensor_parallel_size,
        pp=args.pipeline_parallel_size,
        dp=args.data_parallel_size,
        pp_partition=partition,
        expert_parallel=expert_parallel,
        dtype=args.dtype,
        load_format=load_format,
        language_model_only=language_model_only,
        limit_mm_per_prompt=args.mm_limits,
        max_num_batched_tokens=args.resolved_max_num_batched_tokens(),
        **serving_gpu(args.device, args.vllm_version),
        lora=_lora_config(args),
        max_num_seqs=args.resolved_max_num_seqs(),
        kv_cache_dtype=args.kv_cache_dtype,
        attention_backend=args.attention_backend,
        flashinfer_cubin=args.flashinfer_cubin,
        max_model_len=max_model_len,
        mm_encoder_tp_mode=args.mm_encoder_tp_mode,
        engram_cpu_offload=engram_cpu_offload,
        num_speculative_tokens=args.num_speculative_tokens or 0,
    )


def _lora_config(args: Any) -> Any:
    """``--enable-lora``'s settings (``vllm.lora.model_manager.LoRAConfig``), or ``None`` without it."""
    from dryboot.vllm.lora.model_manager import LoRAConfig  # at call: as the loader

    if not args.enable_lora:
        return None
    return LoRAConfig(
        max_loras=args.max_loras,
        max_lora_rank=args.max_lora_rank,
        fully_sharded_loras=args.fully_sharded_loras,
        lora_dtype=args.lora_dtype,
        max_cpu_loras=args.max_cpu_loras,
    )


def _plan_budget(model: Any, args: Any, drafter: Any, policies: Any, weights: Any, path: str | None) -> Any:
    """The plan with vLLM's KV budget predicted (:func:`dryboot.planner.budget.plan_with_budget`)."""
    # at call: only a plan with a GPU and no budget estimates one
    from dryboot.planner.budget import plan_with_budget
    from dryboot.vllm.transformers_utils.config import load_config_json

    source, config = load_config_json(path) if path is not None else ("config.json", {})
    stage0 = weights.stages[0].loaded_bytes if weights.stages and not weights.refused else None
    from dryboot.planner.budget import drafter_weights_term  # at call: as in plan (the planner loads at call)

    drafter_weights, drafter_refused = drafter_weights_term(drafter, args, config)
    return plan_with_budget(
        model,
        args,
        config=config,
        weights_bytes=stage0,
        weights_refused=weights.refused,
        drafter=drafter,
        policies=policies,
        compile_cache=_COMPILE_CACHE[0],
        source=source,
        stage_weights_bytes=tuple(w.loaded_bytes for w in weights.stages) if not weights.refused else (),
        drafter_weights=drafter_weights,
        drafter_weights_refused=drafter_refused,
    )


#: ``--compile-cache`` of the running command (set by :func:`plan`)
_COMPILE_CACHE = ["unknown"]


def tokens_text(tokens: int | None) -> str:
    """KV cache tokens at a bound, or why there are none."""
    return "no full-length request fits" if tokens is None else f"{tokens:,}"


def budget_text(bp: Any) -> str:
    """The KV budget section of the text report: vLLM's line predicted, the interval, each term,
    the tokens at both bounds, the verdict, the startup gate and the safe pinned pool."""
    width = output_width()
    if bp.budget is None:
        return "\n".join(wrap(f"KV budget: not estimated: {bp.refused}", width, "", "  ")) + "\n"
    b = bp.budget
    kv = b.available_kv_cache_bytes

    def g(n: int) -> str:
        return f"{n / (1 << 30):.2f}"

    if bp.verdict is not None and bp.verdict.fails_in == "load_model":
        lines = [
            f"KV budget (vLLM {b.release}): not reached: vLLM fails loading the model",
            f"  requested = ceil({g(b.gpu_total_bytes)} GiB x {b.gpu_memory_utilization}) = {g(b.requested_bytes)} GiB",
            f"  - weights: {g(b.weights_bytes)} GiB per rank",
        ]
        lines += wrap(f"Startup gate: {b.startup_gate.line}", width, "", "  ")
        return "\n".join(lines) + "\n"
    decided = next((s.name for s in bp.starts if s.budget is b), "")
    lines = [
        f"KV budget (predicted; vLLM {b.release}, {b.runner} model runner; the terms of the {decided}):",
        f"  {b.log_line()}  (interval {g(kv.low)} .. {g(kv.high)} GiB)",
        f"  requested = ceil({g(b.gpu_total_bytes)} GiB x {b.gpu_memory_utilization}) = {g(b.requested_bytes)} GiB",
        f"    (CUDA total {g(b.gpu_total_bytes)} GiB from {b.gpu_total_source})",
    ]
    for t in b.terms:
        rng = g(t.low) if t.low == t.high else f"{g(t.low)} .. {g(t.high)}"
        lines += wrap(f"- {t.name}: {rng} GiB ({t.source})", width, "  ", "      ")
    for st in bp.starts:
        skv = st.budget.available_kv_cache_bytes
        lo, est, hi = st.tokens
        mark = " (decides the verdict and the safe pool)" if st.budget is b and len(bp.starts) > 1 else ""
        toks = "" if est is None else f"; KV cache tokens {est:,} ({tokens_text(lo)} .. {tokens_text(hi)})"
        lines += wrap(
            f"{st.name}: Available KV cache memory {g(skv.estimate)} GiB ({g(skv.low)} .. {g(skv.high)}){toks}{mark}",
            width,
            "  ",
            "    ",
        )
    lines += wrap(f"Startup gate: {b.startup_gate.line}", width, "", "  ")
    safe = bp.safe_kv_cache_memory_bytes
    if safe is None:
        why = bp.safe_refused or "the weights alone exceed the requested share"
        lines += wrap(f"Safe pinned pool: none: {why}", width, "", "  ")
    else:
        lines += wrap(
            f"Safe pinned pool: --kv-cache-memory-bytes={safe} ({g(safe)} GiB): leaves the weights, the high "
            f"bounds of the activation, the graphs and the non-torch memory, and a {g(bp.margin_bytes)} GiB margin "
            "free within the requested share; one full-length request fits it (vLLM accepts it pinned)",
            width,
            "",
            "  ",
        )
    lines += wrap(f"method: {b.method}", width, "  ", "    ")
    for n in b.notes:
        lines += wrap(n, width, "  note: ", "    ")
    return "\n".join(lines) + "\n"


def _weights_text(weights: Any, args: Any) -> str:
    """The weights section of the text report: vLLM's ``Model loading took`` line per stage."""
    width = output_width()
    if weights.refused:
        return "\n".join(wrap(f"Weights: not given ({weights.refused})", width, "", "  ")) + "\n"
    tp = args.tensor_parallel_size
    lines = ["Weights per rank (vLLM's line, predicted):"]
    for i, w in enumerate(weights.stages):
        where = f"PP stage {i}, TP {tp}" if len(weights.stages) > 1 else f"TP {tp}"
        lines.append(f"  {w.log_line()}")
        segments = (
            f"; + {w.load_segment_bytes:,} bytes of the allocator's unsplit segments while loading"
            if w.load_segment_bytes
            else ""
        )
        lines += wrap(f"({where}: {w.allocated_bytes:,} bytes, from the {weights.source}{segments})", width, "    ")
        if w.lora_bytes:
            lines += wrap(
                f"of which LoRA (--max-loras {args.max_loras} x --max-lora-rank {args.max_lora_rank}): "
                f"{w.lora_bytes:,} bytes ({w.lora_bytes / (1 << 30):.2f} GiB)",
                width,
                "    ",
            )
    for n in weights.notes:
        lines += wrap(n, width, "  note: ", "    ")
    return "\n".join(lines) + "\n"


@contextlib.contextmanager
def _environment(values: dict[str, str]) -> Iterator[None]:
    """The variables of a --serve command line set while planning (vLLM's rules read some from
    the environment, as vLLM does), restored after."""
    saved = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def compare_figures(a: dict[str, Any], b: dict[str, Any]) -> list[dict[str, Any]]:
    """The figures vLLM prints at engine start from two ``--json`` plans, side by side."""

    def figures(doc: dict[str, Any]) -> dict[str, Any]:
        cap = doc.get("capacity") or {}
        groups = (doc.get("grouping") or {}).get("groups") or []
        errors = doc.get("errors") or {}
        refusal = errors.get("unify") or errors.get("memory")
        out: dict[str, Any] = {
            "starts": "no" if refusal else "yes",
            "block size": doc.get("block_size"),
            "max_model_len": doc.get("max_model_len"),
            "groups": len(groups),
            "page bytes": groups[0]["page_size_bytes"] if groups else None,
            "num_blocks": cap.get("num_blocks"),
            "KV cache tokens": cap.get("kv_cache_size_tokens"),
            "max concurrency": None if cap.get("max_concurrency") is None else round(cap["max_concurrency"], 2),
        }
        for i, g in enumerate(groups):
            out[f"group {i} ({g['kind']})"] = f"block {g['block_size']}, {len(g['layer_names'])} layers"
        return out

    fa, fb = figures(a), figures(b)
    keys = list(fa) + [k for k in fb if k not in fa]
    return [{"figure": k, "a": fa.get(k), "b": fb.get(k), "changed": fa.get(k) != fb.get(k)} for k in keys]
