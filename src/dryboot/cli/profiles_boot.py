"""``dryboot profiles FILE --compare A B --boot``: the arms table filled from each arm's own code.

Each compared arm names its code (``tree = ...``, or ``series = ...`` + ``base = ...``); one boot
process per arm runs every profile's engine start (the launcher's flags as ``vllm serve`` takes
them). Per profile: each arm's row (block / mamba padding / GPU KV cache tokens, or why its
engine does not start), the verdict between the arms ("identical to the token" or each figure
that changed), and whether dryboot's model of each arm (its ``vllm-version`` and policies) says
the same. The planner knows nothing of this: the CLI injects the boot as the arm evaluator.
"""

from __future__ import annotations

import json
import re
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import click

from dryboot.boot.arms import ArmBooter, vllm_argv
from dryboot.boot.budget import needs_budget
from dryboot.boot.compare import Figures, differences, plan_figures
from dryboot.boot.session import FAKED, GPU, limitation
from dryboot.boot.session import parse_gpu as boot_gpu
from dryboot.errors import InputError
from dryboot.planner.profiles import Arm, Profile, ProfileSet, plan_profile
from dryboot.textout import clip

_ESTIMATE = re.compile(r"estimated maximum model length is (\d+)")


def short_row(f: Figures) -> str:
    """A row as the arms table shows it: ``448/3.23%/68,605``, or ``does not start (max len
    56,000)`` / ``does not start: <vLLM's error, cut>``."""
    if f.refusal is None:
        return f.row()
    m = _ESTIMATE.search(f.refusal)
    if m:
        return f"does not start (max len {int(m.group(1)):,})"
    return f"does not start: {clip(f.refusal, 160)}"


def _verdict(fa: Figures, fb: Figures, a: str, b: str, changes: list[str]) -> str:
    """The verdict between two arms' engine starts: identical figures, both failing to start
    (and how), or each figure that changed."""
    if fa.refusal is not None and fb.refusal is not None:
        if fa.refusal == fb.refusal:
            return f"both fail to start, the same way: {clip(fa.refusal, 200)}"
        return f"both fail to start: {a}: {clip(fa.refusal, 160)}; {b}: {clip(fb.refusal, 160)}"
    return "identical to the token" if not changes else "; ".join(changes)


def boot_gpus(pset: ProfileSet, arm: Arm, default: GPU) -> list[tuple[GPU, list[Profile]]]:
    """The GPUs ``arm``'s engine starts are faked as, each with its profiles in file order: the
    arm's ``gpu``, else the profile's (the GPU dryboot's model column plans,
    :func:`~dryboot.planner.profiles.plan_profile`), else ``default`` (``--gpu``, or the H200).
    One boot process serves one GPU."""
    out: dict[GPU, list[Profile]] = {}
    for prof in pset.profiles:
        named = arm.gpu or prof.args.gpu
        out.setdefault(default if named is None else boot_gpu(named.name), []).append(prof)
    return list(out.items())


def _booter(pset: ProfileSet, arm: Arm, python: str | None, gpu: GPU) -> ArmBooter:
    if arm.tree is None and arm.series is None:
        raise InputError(
            pset.source, f"arms.{arm.name}", "--boot needs the arm's code: tree = ..., or series = ... with base = ..."
        )
    return ArmBooter(
        arm.name, tree=arm.tree, series=arm.series, base=arm.base, python=python, gpu=gpu, source=pset.source
    )


def evaluate(
    booter: ArmBooter, profile: Profile, work: Path, source: str, arm: Arm | None = None
) -> tuple[Figures, float]:
    """One profile's engine start on the arm's code: its figures and seconds. A profile that
    pins no KV budget gets the requested memory less the arm's own weights and dryboot's other
    terms (:mod:`dryboot.boot.budget`), so what a patch changes in the model's memory shows.

    :raises InputError: what the boot cannot do (a model class needing CUDA at construction ...),
        or a budget dryboot cannot estimate.
    """
    argv = vllm_argv(profile.flags, profile.drafter_spec, profile.base, work)
    model = profile.base / str(profile.flags["model"])
    budget = None
    if arm is not None and needs_budget(argv):
        # at call: only a profile without a pinned budget estimates one
        from dryboot.boot.budget import boot_budget
        from dryboot.vllm.transformers_utils.config import load_config_json

        config_source, config = load_config_json(model)
        budget = boot_budget(plan_profile(profile, arm, source), config, config_source).case()
    figures, answer = booter.boot(model, argv, budget=budget)
    limit = limitation(answer)
    if limit is not None:
        raise InputError(source, f"profiles.{profile.name} (arm {booter.name})", limit)
    return figures, float(answer.get("seconds") or 0)


def run_boot_compare(
    pset: ProfileSet, a: str, b: str, python: str | None, gpu: GPU, as_json: bool, expect_identical: bool
) -> int:
    """Print the comparison; the exit code (1: an engine does not start, or with
    ``expect_identical`` the arms differ). ``gpu``: the GPU faked for a profile that names none
    (an arm's or profile's ``gpu`` wins: :func:`boot_gpus`)."""
    arms = [pset.arm(a), pset.arm(b)]
    rows: list[dict[str, Any]] = []
    timing: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory(prefix="dryboot-profiles-boot-") as tmp:
        work = Path(tmp)
        results: dict[tuple[str, str], Figures] = {}
        faked: dict[str, list[str]] = {}  # profile -> the GPUs its engine starts were faked as
        for arm in arms:
            ready = 0.0
            starts = []
            by_gpu = boot_gpus(pset, arm, gpu)
            for arm_gpu, profiles in by_gpu:
                t0 = time.perf_counter()
                with _booter(pset, arm, python, arm_gpu) as booter:
                    ready += time.perf_counter() - t0
                    for prof in profiles:
                        fig, secs = evaluate(booter, prof, work, pset.source, arm)
                        results[(prof.name, arm.name)] = fig
                        if arm_gpu.name not in faked.setdefault(prof.name, []):
                            faked[prof.name].append(arm_gpu.name)
                        starts.append(secs)
            timing[arm.name] = {
                "prepare_and_import": round(ready, 1),
                "engine_starts": round(sum(starts), 2),
                "profiles": len(starts),
                "processes": len(by_gpu),
            }
        for prof in pset.profiles:
            fa, fb = results[(prof.name, a)], results[(prof.name, b)]
            diffs = differences(fa, fb, a, b)
            model: dict[str, str] = {}
            for arm, fig in ((arms[0], fa), (arms[1], fb)):
                try:
                    # an arm whose budget was computed: dryboot plans at the arm's own budget
                    at = prof
                    if fig.available_bytes is not None:
                        at = replace(prof, args=replace(prof.args, kv_cache_memory_bytes=fig.available_bytes))
                    mine = plan_figures(plan_profile(at, arm, pset.source))
                except InputError as exc:
                    model[arm.name] = f"dryboot refuses: {exc.reason}"
                    continue
                d = differences(fig, mine, "code", "dryboot")
                model[arm.name] = "agrees" if not d else "; ".join(d)
            rows.append(
                {
                    "profile": prof.name,
                    "gpu": " / ".join(faked[prof.name]),
                    a: fa,
                    b: fb,
                    "changes": diffs,
                    "model": model,
                }
            )
    differ = any(r["changes"] for r in rows)
    refused = any(r[a].refusal is not None or r[b].refusal is not None for r in rows)
    if as_json:
        doc = {
            "arms": {arm.name: {"tree": arm.tree, "series": arm.series, "base": arm.base} for arm in arms},
            "gpu": " / ".join(dict.fromkeys(r["gpu"] for r in rows)),
            "faked": list(FAKED),
            "seconds": timing,
            "profiles": [
                {
                    "profile": r["profile"],
                    "gpu": r["gpu"],
                    a: {"row": short_row(r[a]), "refusal": r[a].refusal, "kv_log": list(r[a].kv_log)},
                    b: {"row": short_row(r[b]), "refusal": r[b].refusal, "kv_log": list(r[b].kv_log)},
                    "identical": not r["changes"] and r[a].refusal is None and r[b].refusal is None,
                    "verdict": _verdict(r[a], r[b], a, b, r["changes"]),
                    "changes": r["changes"],
                    "dryboot_model": r["model"],
                }
                for r in rows
            ],
        }
        click.echo(json.dumps(doc, indent=2))
    else:
        # at call: only the text table draws columns
        from dryboot.textout import Column, draw, output_width, wrap

        width = output_width()
        header = ["profile", f"{a} (its code)", f"{b} (its code)", "verdict", "dryboot's model"]
        cells = []
        for r in rows:
            verdict = _verdict(r[a], r[b], a, b, r["changes"])
            said = "; ".join(f"{k}: {v}" for k, v in r["model"].items())
            name = r["profile"] if len({x["gpu"] for x in rows}) == 1 else f"{r['profile']} ({r['gpu']})"
            cells.append([name, short_row(r[a]), short_row(r[b]), verdict, said])
        lines = wrap(
            f"{pset.source}: {a} vs {b}, booted on a faked {' / '.join(dict.fromkeys(r['gpu'] for r in rows))} "
            "(block / mamba padding / GPU KV cache tokens)",
            width,
        )
        drawn = draw(
            [Column(h, wrap=h in ("verdict", "dryboot's model", header[1], header[2])) for h in header], cells, width
        )
        if drawn is None:
            for c in cells:
                lines += wrap(f"{c[0]}: {a} {c[1]}; {b} {c[2]}; {c[3]}; dryboot's model: {c[4]}", width, "", "  ")
        else:
            lines += drawn
        for name, t in timing.items():
            procs = "one process" if t["processes"] == 1 else f"{t['processes']:.0f} processes, one per GPU"
            lines += wrap(
                f"arm {name}: tree ready and vLLM imported in {t['prepare_and_import']:.1f} s, "
                f"{t['profiles']:.0f} engine starts in {t['engine_starts']:.2f} s "
                f"({procs})",
                width,
            )
        lines.append("faked (nothing else):")
        for f in FAKED:
            lines += wrap(f"- {f}", width, "  ", "    ")
        click.echo("\n".join(lines))
    return 1 if refused or (expect_identical and differ) else 0
