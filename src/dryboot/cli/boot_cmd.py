"""``dryboot boot`` (a vLLM tree's own engine start, offline) and ``dryboot boot-env``."""

from __future__ import annotations

import json
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from dryboot.cli.plan_cmd import policy_options

if TYPE_CHECKING:
    from dryboot.boot.compare import Figures
    from dryboot.planner.plan import Plan

_FAKED_HELP = (
    "What is faked: the GPU (vLLM's own CUDA platform class answering the --gpu name, compute "
    "capability, memory and SM count; tensors on the meta device); compiled kernels (present but "
    "never called); weights (none read: the model class is built on the meta device); worker "
    "processes and parallel groups (one process, groups of the configured sizes); the profile run "
    "(the KV budget is --kv-cache-memory-bytes, or without it the requested memory less the tree's own "
    "weights and dryboot's estimate of the other terms). Everything else -- the CLI parser, "
    "create_engine_config, the model class, get_kv_cache_spec, the KV cache planner -- is the tree's "
    "own code."
)


@click.command(
    "boot",
    context_settings={"ignore_unknown_options": True, "allow_interspersed_args": True},
    epilog=_FAKED_HELP,
)
@click.option(
    "--vllm",
    "tree_path",
    required=True,
    metavar="TREE",
    help="The vLLM tree: a source checkout, an "
    "installed site-packages/vllm, or a tree `dryboot series apply` produced.",
)
@click.option(
    "--python",
    "python",
    metavar="PYTHON",
    help="The boot environment's python (default: "
    "$DRYBOOT_BOOT_PYTHON, the venv TREE lies in, or `dryboot boot-env`'s default for TREE's release).",
)
@click.option("--model", "model_path", required=True, metavar="PATH", help="A config.json or a directory holding one.")
@click.option(
    "--gpu",
    "gpu_name",
    metavar="NAME",
    help="The faked GPU: H200 (default), a name of dryboot's GPU table (RTX 3090, A100-80GB, B200...; "
    "faked with its device name, capability and CUDA total) or smXY:SIZE (e.g. sm89:24G, sm120:31.4G). dryboot's "
    "model of the release is planned for the same GPU.",
)
@policy_options(" of dryboot's model the tree is compared with")
@click.option("--json", "as_json", is_flag=True, help="Print the tree's answer, dryboot's plan and the diff as JSON.")
@click.argument("vllm_flags", nargs=-1, type=click.UNPROCESSED, metavar="[VLLM FLAGS]...")
def boot(
    tree_path: str,
    python: str | None,
    model_path: str,
    gpu_name: str | None,
    grouping: str,
    unification: str,
    as_json: bool,
    vllm_flags: tuple[str, ...],
) -> None:
    """Run TREE's own engine start for --model and the vLLM flags, offline, on a faked GPU.

    The tree's code (first on the child's sys.path, checked) parses the flags, builds the engine
    config and the model class on the meta device, and plans the KV cache; no weight is read. Prints
    the KV lines the tree logged, dryboot's report for the same inputs (as `dryboot plan`), and the
    diff: "the tree agrees with vLLM X's rules" or which figure differs (the tree changed a rule).
    Without --kv-cache-memory-bytes the KV budget is the requested memory less the tree's own
    weights per rank (its model's parameters and buffers on the meta device, as "Model loading
    took" counts them) and dryboot's estimate of the other terms. Exit 0: agrees and starts; 1: a
    figure differs, or the engine does not start; 2: bad input (a malformed config, or inputs both
    the tree and dryboot refuse) or what the boot cannot do (a model class needing CUDA at
    construction, a tree that does not import, a release outside 0.27.1-0.33.0); 3: the tree
    started but dryboot cannot model its inputs (a cache dtype the tree registers itself, a flag
    dryboot does not know): the tree's figures are printed, none is compared.
    """
    # at call: only `dryboot boot` loads the boot package and its session
    from dryboot.boot.arms import model_dir
    from dryboot.boot.budget import needs_budget
    from dryboot.boot.compare import boot_figures, differences
    from dryboot.boot.session import FAKED, H200, BootSession, limitation, parse_gpu, resolve_tree
    from dryboot.boot.trees import choose_python
    from dryboot.errors import InputError
    from dryboot.vllm.transformers_utils.config import check_config, load_config_json

    flags = list(vllm_flags)
    estimate = needs_budget(flags)
    if Path(model_path).exists():  # a malformed config: one line, exit 2, as plan says it, before any boot
        source, data = load_config_json(model_path)
        check_config(data, source)
    gpu = parse_gpu(gpu_name)
    tree = resolve_tree(tree_path)
    py = choose_python(python, tree.version, tree)
    with tempfile.TemporaryDirectory(prefix="dryboot-boot-") as tmp:
        work = Path(tmp)
        child_argv = _child_argv(flags, work, model_dir)
        t0 = time.perf_counter()
        gpu_flag = [] if gpu_name is None or gpu == H200 else ["--gpu", gpu_name]
        budget = None
        with BootSession(py, tree, gpu) as session:
            if estimate:
                budget = _boot_budget(model_path, [*flags, *gpu_flag], session.release, grouping, unification)
            answer = session.boot(model_dir(model_path, work), child_argv, budget=budget.case() if budget else None)
        total = time.perf_counter() - t0
        limit = limitation(answer)
        if limit is not None:
            raise InputError(tree_path, str(answer.get("stage")), limit)
        release = session.release
        mine = boot_figures(answer)
        tree_budget = answer.get("budget") or {}
        load = budget.load_verdict(list(tree_budget.get("weights_bytes") or [])) if budget and tree_budget else None
        if load is not None:  # vLLM never sizes a KV cache: no --kv-cache-memory-bytes to plan with
            line = f"won't: {load.reason}"
            if as_json:
                click.echo(json.dumps({"tree": tree_path, "verdict": line, "fails_in": load.fails_in}, indent=2))
            else:
                click.echo(f"dryboot boot: vLLM {session.vllm_version} from {tree.import_root} on a faked {gpu.name}")
                click.echo(line)
            raise SystemExit(1)
        pinned = ["--kv-cache-memory-bytes", str(tree_budget["available"][1])] if tree_budget else []
        model, model_note = _dryboot_plan(model_path, [*flags, *gpu_flag, *pinned], release, grouping, unification)
        weights_note = _weights_note(model_path, model, tree_budget) if tree_budget else None
    theirs: Figures | None = None
    diffs: list[str] = []
    if model is not None:
        # at call: only --json and the report need dryboot's figures
        from dryboot.boot.compare import plan_figures

        theirs = plan_figures(model)
        diffs = differences(mine, theirs, "tree", "dryboot")
        if weights_note is not None and weights_note[1]:
            diffs.append(weights_note[1])
    policies = "" if grouping == unification == "upstream" else f" (grouping {grouping}, unification {unification})"
    rules = f"vLLM {release}'s rules{policies}"
    if theirs is None and mine.refusal is not None:
        # both refuse: bad input, said in one line as `dryboot plan` says it
        tree_says = " ".join(mine.refusal.split())
        raise InputError(model_note, None, f"the tree refuses it too ({tree_says[:300]})")
    if theirs is None:
        verdict = (
            f"not compared: the tree started, but dryboot cannot model these inputs ({model_note}); "
            "the tree's figures above (block size, mamba padding, GPU KV cache tokens) are its own, unchecked"
        )
    elif diffs:
        verdict = f"the tree differs from {rules}: the tree changed a rule, or dryboot's model is wrong"
    else:
        verdict = f"the tree agrees with {rules}"
    if as_json:
        # at call: only --json renders the plan as a dict
        from dryboot.planner.report import plan_to_dict

        doc: dict[str, Any] = {
            "tree": tree_path,
            "import_root": tree.import_root,
            "vllm_version": session.vllm_version,
            "gpu": {"name": gpu.name, "capability": list(gpu.capability), "total_memory": gpu.total_memory},
            "faked": list(FAKED),
            "seconds": {
                "import": session.import_seconds,
                "engine_start": answer.get("seconds"),
                "total": round(total, 3),
            },
            "boot": {k: v for k, v in answer.items() if k != "log"},
            "budget": None
            if budget is None
            else {**budget.case(), "method": budget.budget.method, "terms": [x.to_dict() for x in budget.budget.terms]},
            "figures": _figures_dict(mine),
            "plan": None if model is None else plan_to_dict(model),
            "agrees": theirs is not None and not diffs,
            "differences": diffs,
            "verdict": verdict,
        }
        click.echo(json.dumps(doc, indent=2, default=str))
    else:
        # at call: only the text report renders tables
        from dryboot.planner.report import render_text

        click.echo(
            f"dryboot boot: vLLM {session.vllm_version} from {tree.import_root} on a faked {gpu.name} "
            f"(sm{gpu.capability[0]}{gpu.capability[1]}, {gpu.total_memory / (1 << 30):g} GiB); "
            f"import {session.import_seconds:.1f} s, engine start {answer.get('seconds', 0):.2f} s"
        )
        click.echo("KV lines the tree logged:")
        for line in mine.kv_log:
            click.echo(f"  {line}")
        if budget is not None:
            click.echo("memory (no --kv-cache-memory-bytes; no profile run):")
            for w in tree_budget.get("weights_bytes") or answer.get("weights_bytes") or []:
                click.echo(f"  Model loading took {round(w / (1 << 30), 2)} GiB memory (the tree's model: {w:,} bytes)")
            if tree_budget:
                lo, est, hi = (round(x / (1 << 30), 2) for x in tree_budget["available"])
                click.echo(f"  Available KV cache memory: {est} GiB ({lo}-{hi} GiB)")
            click.echo(f"  = {budget.describe()}")
            if weights_note is not None:
                click.echo(f"  {weights_note[0]}")
        if mine.refusal is not None:
            click.echo(f"the tree's engine does not start: {mine.refusal}")
        else:
            click.echo(f"the tree's figures: block / mamba padding / GPU KV cache tokens = {mine.row()}")
        if model is not None:
            click.echo(f"dryboot's model of {rules}:")
            click.echo(render_text(model), nl=False)
        click.echo(f"tree vs dryboot: {verdict}")
        for d in diffs:
            click.echo(f"  {d}")
        click.echo("faked (nothing else):")
        for f in FAKED:
            click.echo(f"  - {f}")
    if theirs is None:
        raise SystemExit(EXIT_NOT_COMPARED)
    raise SystemExit(0 if mine.refusal is None and not diffs else 1)


#: ``dryboot boot``'s exit code when the tree started and dryboot has no model to compare with.
EXIT_NOT_COMPARED = 3


def _boot_budget(model_path: str, flags: list[str], release: str, grouping: str, unification: str) -> Any:
    """dryboot's estimate of the budget's terms other than the weights for these inputs
    (:func:`dryboot.boot.budget.boot_budget`).

    :raises InputError: dryboot cannot plan the inputs, or cannot bound a term (named).
    """
    # at call: only a boot without --kv-cache-memory-bytes estimates a budget
    from dryboot.boot.budget import boot_budget
    from dryboot.errors import InputError
    from dryboot.vllm.transformers_utils.config import load_config_json

    p, why = _dryboot_plan(model_path, flags, release, grouping, unification)
    if p is None:
        raise InputError("--kv-cache-memory-bytes", None, f"not given, and dryboot cannot estimate the budget: {why}")
    source, config = load_config_json(model_path)
    return boot_budget(p, config, source)


def _weights_note(model_path: str, p: Plan | None, tree_budget: dict[str, Any]) -> tuple[str, str]:
    """(the line comparing the tree's weights with dryboot's weights model, the difference or "")."""
    # at call: only a boot without --kv-cache-memory-bytes reads the weights model
    from dryboot.errors import InputError
    from dryboot.vllm.model_executor.model_loader.loader import model_weights

    tree = int(tree_budget["weights_bytes"][0])
    args = p.args if p is not None else None
    try:
        w = model_weights(
            Path(model_path),
            tp=args.tensor_parallel_size if args else 1,
            pp=args.pipeline_parallel_size if args else 1,
            dtype=args.dtype if args else "auto",
        )
    except InputError as exc:
        return f"dryboot's weights model: {exc.line()}", ""
    if w.refused or not w.stages:
        return f"dryboot's weights model: {w.refused or 'no figure'}", ""
    mine = w.stages[0].allocated_bytes
    line = f"dryboot's weights model: {round(mine / (1 << 30), 2)} GiB ({mine:,} bytes, from the {w.source})"
    if abs(round(tree / (1 << 30), 2) - round(mine / (1 << 30), 2)) > 0.01 + 1e-9:
        return line, (
            f"Model loading took (GiB): tree {round(tree / (1 << 30), 2)}, dryboot {round(mine / (1 << 30), 2)} "
            "(the tree's model holds other weights or buffers)"
        )
    return line, ""


def _child_argv(flags: list[str], work: Path, model_dir: Any) -> list[str]:
    """The vLLM flags for the child: a speculative config's drafter model given as a config
    file becomes a directory (vLLM takes model directories)."""
    out = list(flags)
    for i, f in enumerate(out):
        if f in ("--speculative-config", "-sc") and i + 1 < len(out):
            try:
                spec = json.loads(out[i + 1])
            except ValueError:
                continue  # vLLM's own parser says what is wrong with it
            if isinstance(spec, dict) and isinstance(spec.get("model"), str) and Path(spec["model"]).is_file():
                spec["model"] = model_dir(spec["model"], work)
                out[i + 1] = json.dumps(spec)
    return out


def _dryboot_plan(
    model_path: str, flags: list[str], release: str, grouping: str, unification: str
) -> tuple[Plan | None, str]:
    """dryboot's plan for the same inputs (``dryboot plan``'s parsing of the same flags), or
    ``None`` and why not (a flag dryboot does not know, input it refuses by name)."""
    # at call: only `dryboot boot` plans beside the tree
    from dryboot.cli.plan_cmd import collect_flags, plan
    from dryboot.errors import InputError
    from dryboot.planner.plan import Policies
    from dryboot.planner.plan import plan as make_plan
    from dryboot.planner.runner import build_engine_args, load_drafter_and_k

    argv = ["--model", model_path, *flags, "--vllm-version", release]
    try:
        ctx = plan.make_context("plan", argv)
    except click.exceptions.UsageError as exc:
        return None, exc.format_message()
    params = dict(ctx.params)
    try:
        given = collect_flags(params)
        model, args = build_engine_args(model_path, given, list(params["custom_dtypes"]), params["hf_overrides"])
        drafter, args = load_drafter_and_k(
            params["spec_config"], params["spec_model"], args, target_architecture=model.architecture
        )
        return make_plan(model, args, drafter=drafter, policies=Policies(grouping, unification)), ""
    except InputError as exc:
        return None, exc.line()


def _figures_dict(f: Figures) -> dict[str, Any]:
    return {
        "refusal": f.refusal,
        "block_size": f.block_size,
        "mamba_padding_pct": f.mamba_padding_pct,
        "groups": [list(g) for g in f.groups],
        "num_blocks": f.num_blocks,
        "tokens": f.tokens,
        "concurrency": f.concurrency,
        "max_model_len": f.max_model_len,
        "row": f.row(),
    }


@click.command("boot-env")
@click.option("--vllm-version", "release", required=True, metavar="X", help="The vLLM release (0.27.1 ... 0.33.0).")
@click.option(
    "--with-mm-extras",
    "extras",
    is_flag=True,
    help="Also install the optional packages vLLM's multimodal model files import (timm, --no-deps), "
    "in X-mm (default ~/.cache/dryboot/boot-env/X-mm), leaving X's environment as it is.",
)
@click.argument("directory", required=False, type=click.Path(file_okay=False))
def boot_env(release: str, directory: str | None, extras: bool) -> None:
    """Build (or reuse) the boot environment of vLLM X in DIRECTORY.

    A venv with CPU torch, vllm==X installed without its CUDA dependencies, and the light packages
    importing its engine start needs (default DIRECTORY: ~/.cache/dryboot/boot-env/X, or
    $DRYBOOT_BOOT_ENV_ROOT/X). Reused as it is when its stamp matches and its smoke test (one engine
    start) passes. For 0.28.0: about 1.5 minutes from a warm pip cache (more on a loaded machine), 2.2 GB.
    The last line printed is the environment's python.
    """
    # at call: only `dryboot boot-env` loads the environment builder
    from dryboot.boot.env import build_env

    info = build_env(
        release,
        Path(directory) if directory else None,
        log=lambda t: click.echo(f"[boot-env] {t}", err=True),
        extras=extras,
    )
    what = "reused" if info.reused else "built"
    click.echo(f"[boot-env] {what} in {info.seconds:.0f} s, {info.size_bytes / 1e9:.1f} GB", err=True)
    click.echo(info.python)
