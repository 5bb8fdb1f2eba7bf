"""``dryboot profiles`` (launcher profiles, arm against arm) and ``dryboot promote``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import click

from dryboot.errors import InputError
from dryboot.textout import Column, draw, output_width, table, wrap

if TYPE_CHECKING:
    from dryboot.planner.plan import Plan
    from dryboot.planner.profiles import Arm, Profile


@click.command("profiles")
@click.argument("file", type=click.Path(dir_okay=False))
@click.option("--arm", "arms", multiple=True, help="Only these arms (default: all).")
@click.option(
    "--compare", "compare_arms", nargs=2, metavar="A B", help="Two arms side by side with a verdict per profile."
)
@click.option("--format", "fmt", type=click.Choice(["table", "markdown"]), default="table", show_default=True)
@click.option("--json", "as_json", is_flag=True, help="Print the figures as JSON.")
@click.option("--expect-identical", is_flag=True, help="With --compare: exit 1 when the arms differ.")
@click.option(
    "--svg",
    "svg_dir",
    type=click.Path(file_okay=False),
    metavar="DIR",
    help="Also draw each plan's KV pool into DIR, one PROFILE--ARM.svg per profile and arm.",
)
@click.option(
    "--boot",
    is_flag=True,
    help="With --compare: fill the table from each arm's own code (its tree = ..., or series = ... + base = ...), "
    "each profile's engine start run offline on a faked GPU (see dryboot boot --help).",
)
@click.option("--python", "boot_python", metavar="PYTHON", help="With --boot: the boot environment's python.")
@click.option(
    "--gpu",
    "gpu_name",
    metavar="NAME",
    help="The GPU of the profiles that name none (H200, default, a name of the GPU table, or smXY:SIZE); an "
    "arm's or profile's gpu = ... wins. With --boot each engine start is faked as its profile's GPU.",
)
def profiles(
    file: str,
    arms: tuple[str, ...],
    compare_arms: tuple[str, str] | None,
    fmt: str,
    as_json: bool,
    expect_identical: bool,
    svg_dir: str | None,
    boot: bool,
    boot_python: str | None,
    gpu_name: str | None,
) -> None:
    """Plan every launcher profile of FILE (TOML) under each arm.

    Per profile and arm: attention block, drafter block, mamba pad %, groups, blocks,
    "GPU KV cache size" tokens, concurrency and the invariant verdict. Exit 1 when an
    invariant is violated in any plan (e.g. one request does not fit), or with
    --expect-identical when the compared arms differ; 2 on bad input.
    """
    # at call: `dryboot profiles --help` and the other commands do not load the planner (~0.25 s)
    from dryboot.planner.assumptions import assumptions
    from dryboot.planner.profiles import COMPARED, compare, load_profiles, run
    from dryboot.planner.profiles import format_figure as _fmt
    from dryboot.planner.report import summary

    if expect_identical and not compare_arms:
        raise click.UsageError("--expect-identical needs --compare A B")
    if as_json and fmt != "table":
        raise click.UsageError("--json and --format are alternatives; give one")
    pset = load_profiles(file)
    if gpu_name is not None:  # the profiles naming no GPU: planned on it, and faked on it by --boot
        # at call: only --gpu reads the GPU table here
        from dryboot.planner.profiles import with_gpu
        from dryboot.vllm.gpus import parse_gpu as table_gpu

        pset = with_gpu(pset, table_gpu(gpu_name))
    if boot:
        if not compare_arms:
            raise click.UsageError("--boot needs --compare A B")
        # at call: only --boot loads the boot package (a vLLM child process)
        from dryboot.boot.session import parse_gpu
        from dryboot.cli.profiles_boot import run_boot_compare

        raise SystemExit(
            run_boot_compare(pset, *compare_arms, boot_python, parse_gpu(gpu_name), as_json, expect_identical)
        )
    if compare_arms:
        a, b = compare_arms
        results = run(pset, [a, b])
        _write_svgs(results, svg_dir)
        by = {(p.name, arm.name): pl for p, arm, pl in results}
        rows = []
        for prof in pset.profiles:
            pa, pb = by[(prof.name, a)], by[(prof.name, b)]
            diffs = compare(pa, pb)
            rows.append((prof.name, summary(pa), summary(pb), diffs))
        differ = any(r[3] for r in rows)
        if as_json:
            out = [
                {
                    "profile": n,
                    a: sa,
                    b: sb,
                    "identical": not d,
                    "changes": d,
                    "assumptions": {arm: [x.to_dict() for x in assumptions(by[(n, arm)])] for arm in (a, b)},
                }
                for n, sa, sb, d in rows
            ]
            click.echo(json.dumps(out, indent=2))
        else:
            header = ["profile", *[f"{label} ({a} / {b})" for _, label in COMPARED[:-1]], "verdict"]
            lines = []
            per_profile = []
            for n, sa, sb, d in rows:
                cells = [n]
                figures = []
                for key, label in COMPARED[:-1]:
                    va, vb = _fmt(sa[key]), _fmt(sb[key])
                    cells.append(va if va == vb else f"{va} / {vb}")
                    figures.append((label, [va, vb]))
                verdict = "identical to the token" if not d else "; ".join(d)
                cells.append(verdict)
                lines.append(cells)
                label = COMPARED[-1][1]
                figures.append((label, [_fmt(sa[COMPARED[-1][0]]), _fmt(sb[COMPARED[-1][0]])]))
                short = "identical to the token" if not d else f"{len(d)} figure{'s' if len(d) > 1 else ''} differ"
                per_profile.append((n, short, figures))
            _emit(header, lines, fmt, f"{pset.source}: {a} vs {b}", [a, b], per_profile, prose=("verdict",))
            if fmt == "table":
                _echo_assumptions(results)
        violated = any(not (r[1]["ok"] and r[2]["ok"]) for r in rows)
        raise SystemExit(1 if violated or (expect_identical and differ) else 0)
    results = run(pset, list(arms) or None)
    _write_svgs(results, svg_dir)
    if as_json:
        click.echo(
            json.dumps(
                [
                    {
                        "profile": p.name,
                        "arm": arm.name,
                        **summary(pl),
                        "assumptions": [x.to_dict() for x in assumptions(pl)],
                        "kv_budget": next((n for n in pl.notes if n.startswith("KV budget")), None),
                    }
                    for p, arm, pl in results
                ],
                indent=2,
            )
        )
    else:
        header = [
            "profile",
            "arm",
            "attention block",
            "drafter block",
            "mamba pad %",
            "groups",
            "blocks",
            "KV cache tokens",
            "concurrency",
            "invariants",
        ]
        lines = []
        arm_names = list(dict.fromkeys(arm.name for _, arm, _ in results))
        by_profile: dict[str, list[tuple[str, list[str]]]] = {}
        for p, arm, pl in results:
            s = summary(pl)
            verdict = "ok" if s["ok"] else "VIOLATED: " + ", ".join(s["violations"])
            tokens = _fmt(s["kv_cache_size_tokens"])
            if s["estimated_max_model_len"] is not None:
                tokens = f"does not fit (max len {_fmt(s['estimated_max_model_len'])})"
            cells = [
                p.name,
                arm.name,
                _fmt(s["attention_block_size"]),
                _fmt(s["drafter_block_size"]),
                _fmt(s["mamba_padding_pct"]),
                _fmt(s["num_groups"]),
                _fmt(s["num_blocks"]),
                tokens,
                _fmt(s["max_concurrency"]),
                verdict,
            ]
            lines.append(cells)
            figures = by_profile.setdefault(p.name, [(label, []) for label in header[2:]])
            for (_, values), cell in zip(figures, cells[2:], strict=True):
                values.append(cell)
        per_profile = [(name, "", figures) for name, figures in by_profile.items()]
        _emit(header, lines, fmt, pset.source, arm_names, per_profile, prose=("KV cache tokens", "invariants"))
        if fmt == "table":
            _echo_assumptions(results)
            width = output_width()
            for p, arm, pl in results:
                for n in pl.notes:
                    if n.startswith("KV budget"):
                        click.echo("\n".join(wrap(f"{p.name} (arm {arm.name}): {n}", width, "", "  ")))
    raise SystemExit(0 if all(pl.ok for _, _, pl in results) else 1)


def _write_svgs(results: list[tuple[Profile, Arm, Plan]], svg_dir: str | None) -> None:
    """One picture per profile and arm in ``svg_dir`` (created when missing)."""
    if svg_dir is None:
        return
    from dryboot.planner.svg import file_name, write  # at call: drawsvg loads only for --svg (~0.2 s)

    folder = Path(svg_dir)
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError("--svg", svg_dir, f"cannot create: {exc.strerror or exc}") from None
    for p, arm, pl in results:
        write(pl, folder / file_name(p.name, arm.name))


def _echo_assumptions(results: list[tuple[Profile, Arm, Plan]]) -> None:
    """What the plans assume, each statement once, naming the plans it concerns unless all."""
    from dryboot.planner.assumptions import assumptions  # at call: as in profiles(), the planner loads late

    where: dict[str, list[str]] = {}
    for p, arm, pl in results:
        for x in assumptions(pl):
            where.setdefault(x.line(), []).append(f"{p.name} (arm {arm.name})")
    width = output_width()
    for line, plans in where.items():
        scope = "" if len(plans) == len(results) else f" [{'; '.join(plans)}]"
        click.echo("\n".join(wrap(line + scope, width, "", "  ")))


def _emit(
    header: list[str],
    rows: list[list[str]],
    fmt: str,
    title: str,
    arms: list[str],
    per_profile: list[tuple[str, str, list[tuple[str, list[str]]]]],
    *,
    prose: tuple[str, ...],
) -> None:
    """Print the table as markdown, or as text fitted to the terminal: one row per profile
    (and arm) when the columns fit, else per profile a transposed table, one row per figure
    and one column per arm (``per_profile``: name, verdict, (figure, value per arm) rows).
    ``prose`` columns may wrap at spaces; names and numbers never do."""
    if fmt == "markdown":
        click.echo("| " + " | ".join(header) + " |")
        click.echo("|" + "|".join("---" for _ in header) + "|")
        for r in rows:
            click.echo("| " + " | ".join(c.replace("|", "\\|") for c in r) + " |")
        return
    width = output_width()
    lines = wrap(title, width)
    wide = draw([Column(h, wrap=h in prose) for h in header], rows, width)
    if wide is not None:
        lines += wide
    else:
        columns = [Column("figure"), *[Column(arm, wrap=True) for arm in arms]]
        for name, verdict, figures in per_profile:
            lines += wrap(f"{name}: {verdict}" if verdict else name, width, "", "  ")
            lines += table(None, columns, [[label, *values] for label, values in figures], width)
    click.echo("\n".join(lines))


@click.command("promote")
@click.option("--primary-block", type=click.IntRange(min=1), required=True, help="The attention block P (tokens).")
@click.option(
    "--covering-block", type=click.IntRange(min=1), required=True, help="The layer's covering block C (tokens)."
)
@click.option(
    "--granularity",
    type=click.IntRange(min=1),
    default=16,
    show_default=True,
    help="The layer's current block (its kernel granularity).",
)
@click.option("--attention-backend", default="FLASH_ATTN", show_default=True, help="Backend for promote-kernel.")
def promote(primary_block: int, covering_block: int, granularity: int, attention_backend: str) -> None:
    """Explain one drafter block-promotion decision under every policy."""
    # at call: `dryboot promote --help` and the other commands do not load the planner (~0.25 s)
    from dryboot.planner.policies import UNIFICATION_POLICIES
    from dryboot.planner.policies.promotion import choose_block, divisors_from
    from dryboot.vllm.backends import BACKENDS

    backend = BACKENDS.get(attention_backend)
    if backend is None:
        raise InputError("--attention-backend", attention_backend, f"unknown backend (known: {', '.join(BACKENDS)})")
    divs = divisors_from(primary_block, covering_block)
    click.echo(f"divisors of {primary_block} from {covering_block} up: {', '.join(map(str, divs)) or 'none'}")
    mult = [d for d in divs if d % granularity == 0]
    click.echo(f"  of which multiples of {granularity}: {', '.join(map(str, mult)) or 'none'}")
    for policy in UNIFICATION_POLICIES[1:]:
        c = choose_block(
            policy,
            primary_block=primary_block,
            covering=covering_block,
            granularity=granularity,
            supports=backend.supports_block_size,
        )
        if c.block is None:
            click.echo(f"{policy}: none qualifies ({c.reason}); the layer stays at its block and is padded")
            continue
        addressable = backend.supports_block_size(c.block)
        divides = primary_block % c.block == 0
        notes = []
        if not addressable:
            notes.append(
                f"{backend.name} cannot address it (kernel sizes {', '.join(map(str, backend.kernel_blocks))})"
            )
        if not divides:
            notes.append(f"does not divide {primary_block}: scheduler LCM grows")
        click.echo(f"{policy}: {c.block}" + (f"  ! {'; '.join(notes)}" if notes else ""))
