"""``dryboot sweep``: search a space of geometries for blocks a policy gets wrong."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import click

from dryboot.planner.policies import GROUPING_POLICIES, UNIFICATION_POLICIES
from dryboot.textout import output_width


def _int_list(text: str | None, name: str) -> tuple[int, ...] | None:
    if text is None:
        return None
    try:
        values = tuple(sorted({int(v) for v in text.split(",") if v.strip()}))
    except ValueError:
        raise click.BadParameter(f"expected comma-separated integers, got {text!r}", param_hint=name) from None
    if not values or any(v < 0 for v in values):
        raise click.BadParameter(f"expected non-negative integers, got {text!r}", param_hint=name)
    return values


@click.command("sweep")
@click.option(
    "--policy",
    "policies",
    multiple=True,
    type=click.Choice(UNIFICATION_POLICIES),
    help="Unification policy to plan under (repeatable; default: all of them, upstream included).",
)
@click.option(
    "--grouping",
    "groupings",
    multiple=True,
    type=click.Choice(GROUPING_POLICIES),
    help="Grouping policy (repeatable; default: upstream). Each policy runs under each grouping.",
)
@click.option("--jobs", "-j", type=click.IntRange(min=1), default=None, help="Worker processes (default: all cores).")
@click.option(
    "--limit",
    type=click.IntRange(min=1),
    default=5000,
    show_default=True,
    help="Geometries to sample from the space (the whole space if it is smaller).",
)
@click.option("--all", "exhaustive", is_flag=True, help="Plan every point of the space (no sampling).")
@click.option("--seed", type=int, default=0, show_default=True, help="Sampling seed.")
@click.option("--spec-tokens", default=None, metavar="N,N,...", help="num_speculative_tokens values (default 0..16).")
@click.option(
    "--kernel-blocks",
    default=None,
    metavar="N,N,...",
    help="Kernel granularities of the custom KV dtypes (default 16,32,64,128).",
)
@click.option(
    "--target-layers",
    type=click.IntRange(min=1, max=1024),
    default=64,
    show_default=True,
    help="Target layers (every 4th full attention, the rest Gated DeltaNet).",
)
@click.option(
    "--drafter-layers", type=click.IntRange(min=1, max=256), default=5, show_default=True, help="Drafter layers."
)
@click.option(
    "--gpu",
    "gpus",
    multiple=True,
    metavar="NAME",
    help="The GPU (repeatable: each is a value of the space): a name of dryboot's table or smXY:SIZE; default H200.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the findings as JSON.")
@click.option("--no-progress", is_flag=True, help="No progress bar (it is off anyway when stderr is not a TTY).")
def sweep(
    policies: tuple[str, ...],
    groupings: tuple[str, ...],
    jobs: int | None,
    limit: int,
    exhaustive: bool,
    seed: int,
    spec_tokens: str | None,
    kernel_blocks: str | None,
    target_layers: int,
    drafter_layers: int,
    gpus: tuple[str, ...],
    as_json: bool,
    no_progress: bool,
) -> None:
    """Plan a space of target + drafter geometries under each policy and report, per policy
    and failure kind, how many geometries fail and one minimal (shrunk) counterexample.

    Kinds: kernel-block (a block the backend cannot address), scheduler (LCM / hash-block
    invariants), unify-error (vLLM's NotImplementedError), drafter-block-not-16
    (informational). Also compares promote-granular with promote-kernel.

    Output is identical run to run and for any --jobs. Exit codes: 0 the sweep ran (the
    findings are the output, whatever they are); 2 bad options.
    """
    # at call: `dryboot sweep --help` and the other commands do not load the planner (~0.25 s)
    from dryboot.planner.sweep import Arm, Space, format_report, run_sweep
    from dryboot.vllm.gpus import parse_gpu

    space = Space(target_layers=(target_layers,), drafter_layers=(drafter_layers,))
    if gpus:
        # each name checked now (one clear line), kept as the table's name for the report
        space = replace(space, gpu=tuple(dict.fromkeys(parse_gpu(g).name for g in gpus)))
    k = _int_list(spec_tokens, "--spec-tokens")
    if k is not None:
        space = replace(space, num_speculative_tokens=k)
    kb = _int_list(kernel_blocks, "--kernel-blocks")
    if kb is not None:
        if 0 in kb:
            raise click.BadParameter("kernel blocks must be >= 1", param_hint="--kernel-blocks")
        space = replace(space, target_kernel_block=kb, drafter_kernel_block=kb)
    chosen = policies or UNIFICATION_POLICIES
    grouped = groupings or ("upstream",)
    arms = [Arm(p, g) for g in grouped for p in dict.fromkeys(chosen)]
    result = run_sweep(
        space,
        arms,
        limit=None if exhaustive else limit,
        seed=seed,
        jobs=jobs,
        progress=False if no_progress else None,
    )
    if as_json:
        data: dict[str, Any] = result.to_dict()
        click.echo(json.dumps(data, indent=2))
    else:
        click.echo(format_report(result, output_width()))
