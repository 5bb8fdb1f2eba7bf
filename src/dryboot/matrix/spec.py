"""MATRIX.toml -> :class:`dryboot.matrix.model.Matrix`.

A matrix file (paths relative to it)::

    gpus = ["RTX 3090", "L40S", "sm90:80G"]   # --gpu names or smXY:SIZE
    profiles = "deployment.toml"              # flag sets: a profiles file's profiles (its models
                                              # are the model rows when [models] is absent)
    timeout = 300                             # seconds per engine start (default 300)
    vllm-version = "0.28.0"                   # the release dryboot's plan models (default: the
                                              # first booted arm's)
    expect = "identical"                      # or a table, see below

    [models]                                  # name = a config.json, a folder holding one, or
    "Qwen3-0.6B" = "models/qwen3-0.6b.json"   # an HF cache id resolved offline

    [flags]                                   # more flag sets: a vllm serve line, or a table of
    short = "vllm serve --max-model-len 4096 --kv-cache-memory-bytes 2G"   # vLLM flags as a
    long = { max-model-len = 32768, gpu-memory-utilization = 0.9 }         # profile holds them

    [arms.upstream]                           # an upstream release: its boot environment's vllm
    release = "0.28.0"
    [arms.fork]                               # a source tree or an installed site-packages/vllm
    tree = "../vllm"
    python = "/path/to/boot-env/bin/python"   # optional, on any booted arm
    [arms.main]                               # a patch series on a pristine release
    series = "patches/promote-divisor"
    base = "0.28.0"
    [arms.model]                              # dryboot's modelled policies (planned, not booted)
    vllm-version = "0.28.0"
    grouping = "pad-sliding-window-buckets"
    unification = "promote-divisor"

    [expect]                                  # most specific wins: cells, flag-sets, gpus, models, all
    all = "tokens >= 4096"
    flag-sets = { "CTX=huge" = "refused" }
    cells = { "Qwen3-0.6B|L40S|short" = "identical" }

A ``vllm serve`` flag set is read by the parser of every release that starts it (the plan's
``vllm-version`` and each arm's release, base or tree version): an option one of them lacks is
refused, naming that release and the arm (``--engram-config`` reads on 0.30.0+ arms only). A table of
flags is read the same way: its keys become ``vllm serve`` options (``true``: ``--key``, ``false``:
``--no-key``), the ones dryboot plans checked as a profile's, every key by each starting release's parser
(``engram-config = '{"cpu_offload": false}'`` on 0.30.0+ arms only).

An expectation is ``"identical"`` (the first two arms' figures equal, both starting),
``"differs"`` (they differ: what a patch series is for), ``"tokens >= N"`` (every arm starts with
at least N tokens) or ``"refused"`` (every arm refuses). Every error is one
:class:`dryboot.errors.InputError` line naming the file and the field.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from dryboot.boot.arms import vllm_argv
from dryboot.boot.env import installed_vllm
from dryboot.boot.session import parse_gpu, release_of, resolve_tree
from dryboot.boot.trees import choose_python
from dryboot.checklog.locate import find_config
from dryboot.checklog.serve import parse_serve, parser_release, split_command
from dryboot.errors import InputError
from dryboot.inputs import read_toml
from dryboot.matrix.model import PLAN_ARM, Arm, Expectation, FlagSet, Matrix, ModelRef
from dryboot.planner.flags import ALIASES, FLAGS_BY_NAME, apply_flags
from dryboot.planner.profiles import arm_policies, load_profiles
from dryboot.vllm.engine_args import EngineArgs
from dryboot.vllm.versions import DEFAULT_VERSION, VERSIONS, version_key

_TOP = frozenset({"gpus", "profiles", "timeout", "vllm-version", "expect", "models", "flags", "arms"})
_ARM_KEYS = frozenset({"tree", "release", "series", "base", "python", "vllm-version", "grouping", "unification"})
_EXPECT_KEYS = frozenset({"all", "models", "gpus", "flag-sets", "cells"})
_TOKENS = re.compile(r"^tokens\s*>=\s*([0-9][0-9_,]*)$")
_NAME = re.compile(r"^[^|\x00-\x1f]{1,200}$")


def parse_expectation(text: object, source: str, where: str) -> Expectation:
    """``"identical"``, ``"differs"``, ``"tokens >= N"`` (N tokens, ``_``/``,`` separators
    allowed) or ``"refused"``.

    :raises InputError: anything else.
    """
    if not isinstance(text, str):
        raise InputError(source, where, 'must be a string: "identical", "differs", "tokens >= N" or "refused"')
    t = " ".join(text.split())
    if t in ("identical", "differs", "refused"):
        return Expectation(t, None, t)
    m = _TOKENS.match(t)
    if m:
        return Expectation("tokens>=", int(m.group(1).replace("_", "").replace(",", "")), t)
    raise InputError(
        source, where, f'unknown expectation {text[:80]!r} ("identical", "differs", "tokens >= N" or "refused")'
    )


def _name(value: str, source: str, where: str) -> str:
    if not _NAME.match(value):
        raise InputError(source, where, "a name must be 1-200 characters without '|' or control characters")
    return value


def _str(value: object, source: str, where: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise InputError(source, where, "must be a non-empty string")
    return value


def _model(name: str, text: str, base: Path, source: str, where: str) -> ModelRef:
    """A config.json, a folder holding one, or an HF cache id (resolved offline, as check-log does)."""
    p = (base / text).resolve() if not Path(text).is_absolute() else Path(text)
    if p.is_file() or (p.is_dir() and (p / "config.json").is_file()):
        return ModelRef(_name(name, source, where), str(p))
    if p.exists():
        raise InputError(source, where, f"{text}: no config.json there")
    try:
        found = find_config(None, text, source=source)
    except InputError as exc:
        raise InputError(
            source, where, f"{text}: not a file, a folder or an HF cache id found offline ({exc.reason})"
        ) from None
    return ModelRef(_name(name, source, where), str(found.path))


def _models(data: Mapping[str, Any], base: Path, source: str) -> list[ModelRef]:
    raw = data.get("models")
    if raw is None:
        return []
    if isinstance(raw, list):
        out = []
        for i, item in enumerate(raw):
            text = _str(item, source, f"models[{i}]")
            stem = Path(text).name.removesuffix(".json").removesuffix(".config")
            out.append(_model(stem or text, text, base, source, f"models[{i}]"))
        return out
    if isinstance(raw, dict):
        return [_model(k, _str(v, source, f"models.{k}"), base, source, f"models.{k}") for k, v in raw.items()]
    raise InputError(source, "models", "must be a table (name = path) or a list of paths")


def _serve_flags(
    text: str, source: str, where: str, release: str = DEFAULT_VERSION
) -> tuple[tuple[str, ...], str | None]:
    """A ``vllm serve`` line's flags (its model apart), checked by the parser table of some vLLM
    release (:func:`dryboot.checklog.serve.parse_serve`; each release that starts it is checked
    later, :func:`_check_serve_releases`). ``release``: the one whose refusal is said when no
    release's parser takes the line (the matrix's ``vllm-version``, else 0.28.0)."""
    errors: dict[str, InputError] = {}
    for version in (release, *sorted(VERSIONS, key=version_key, reverse=True)):
        if version in errors:
            continue
        try:
            cmd = parse_serve(text, {}, f"{source}: {where}", version=version)
            break
        except InputError as exc:
            errors[version] = exc
    else:
        raise errors[release]
    if cmd.env:
        raise InputError(source, where, "VAR=value words are not taken in a matrix flag set (set them around dryboot)")
    words = split_command(text)
    i = words.index("serve") + 1 if "serve" in words else len(words)
    rest = words[i:]
    model = cmd.args.get("model")
    if isinstance(model, str) and model in rest:
        j = rest.index(model)
        if j > 0 and rest[j - 1] in ("--model",):
            rest = rest[: j - 1] + rest[j + 1 :]
        else:
            rest = rest[:j] + rest[j + 1 :]
    rest = [w for w in rest if not w.startswith("--model=")]
    return tuple(rest), (model if isinstance(model, str) else None)


def _table_flags(body: Mapping[str, Any], base: Path, source: str, where: str, workdir: Path) -> tuple[str, ...]:
    """A table of vLLM flags (``max-model-len = 8192``, a ``drafter`` table) as ``vllm serve``
    flags. The keys dryboot plans (:data:`~dryboot.planner.flags.FLAGS_BY_NAME`) are checked as a
    profile's are; any other key is a ``vllm serve`` option left to the parser of each release that
    starts the flag set (:func:`_check_serve_releases`), as a pasted line's are, so a key only newer
    releases have (``engram-config``, 0.30.0+) is taken where every starting release has it.

    :raises InputError: a ``model`` or ``vllm-version`` key (the matrix's rows and arms say those), a
        bad value of a key dryboot plans, a table or list as the value of another key, a drafter that
        is not a table.
    """
    flags = {k: v for k, v in body.items() if k != "drafter"}
    if "model" in flags:
        raise InputError(source, f"{where}.model", "models are the matrix's rows: give them in [models]")
    if "vllm-version" in flags:
        raise InputError(
            source,
            f"{where}.vllm-version",
            "the release is an arm's (its release, base or vllm-version) or the matrix's vllm-version, "
            "not a flag set's",
        )
    planned = {k: v for k, v in flags.items() if ALIASES.get(k, k) in FLAGS_BY_NAME}
    apply_flags(EngineArgs(), planned, source, f"{where}.")
    for key, value in flags.items():
        if key not in planned and not isinstance(value, str | int | float | bool):
            raise InputError(source, f"{where}.{key}", "must be a string, a number or a boolean (a vllm serve value)")
    drafter = body.get("drafter")
    if drafter is not None and not isinstance(drafter, dict):
        raise InputError(source, f"{where}.drafter", "must be a table of vLLM's speculative-config keys")
    return tuple(vllm_argv(flags, drafter, base, workdir))


def _declared_release(data: Mapping[str, Any]) -> str:
    """The matrix's ``vllm-version`` when it is a release dryboot models, else 0.28.0 (the release
    whose parser's refusal is said for a line no release takes; the field itself is checked later)."""
    raw = data.get("vllm-version")
    if isinstance(raw, str):
        try:
            return parser_release(release_of(raw, "vllm-version"))
        except InputError:
            pass
    return DEFAULT_VERSION


def serve_readers(arms: tuple[Arm, ...] | list[Arm], version: str) -> dict[str, list[str]]:
    """The releases that read a matrix's ``vllm serve`` flag sets -> who starts them there: the
    plan (``version``, as ``dryboot``) and each arm of a known release (its ``release``, ``base``,
    ``vllm-version`` or its tree's version; a tree of unknown version reads them with its own
    parser when booted), keyed by the serve-options table each reads with (0.31.2 -> 0.31.0)."""
    readers: dict[str, list[str]] = {}
    for name, release in ((PLAN_ARM, version), *((a.name, a.version) for a in arms)):
        if release is not None:
            readers.setdefault(parser_release(release), []).append(name)
    return readers


def _check_serve_releases(
    lines: Mapping[str, str | tuple[str, ...]], readers: Mapping[str, list[str]], source: str
) -> None:
    """Each flag set (name -> its ``vllm serve`` line, or a table's flags as ``vllm serve`` words)
    read by every release that starts it.

    :raises InputError: ``<source>: flags.<name>: arm <arm> (vLLM <release>): <why>``, the first
        release (oldest first) whose parser refuses the line.
    """
    for name, text in lines.items():
        where = f"flags.{name}"
        for release in sorted(readers, key=version_key):
            try:
                parse_serve(text if isinstance(text, str) else list(text), {}, f"{source}: {where}", version=release)
            except InputError as exc:
                who = ", ".join(readers[release])
                arms = f"arm{'s' if len(readers[release]) > 1 else ''} {who}"
                raise InputError(
                    source,
                    where,
                    f"{arms} (vLLM {release}): {exc.where}: {exc.reason}"
                    if exc.where
                    else f"{arms} (vLLM {release}): {exc.reason}",
                ) from None


def _flag_sets(
    data: Mapping[str, Any], base: Path, source: str, workdir: Path
) -> tuple[list[FlagSet], list[tuple[str, str]], dict[str, str | tuple[str, ...]]]:
    """Flag sets, the models they name themselves (``(name, path)``, for a matrix with no
    ``[models]``) and what each starting release's parser reads (flag set name -> its ``vllm serve``
    line, or a table's flags as ``vllm serve`` words, for :func:`_check_serve_releases`)."""
    sets: list[FlagSet] = []
    named: list[tuple[str, str]] = []
    lines: dict[str, str | tuple[str, ...]] = {}
    declared = _declared_release(data)
    if "profiles" in data:
        rel = _str(data["profiles"], source, "profiles")
        path = base / rel
        try:
            pset = load_profiles(path)
        except InputError as exc:
            raise InputError(source, "profiles", exc.line()) from None
        for prof in pset.profiles:
            argv = tuple(vllm_argv(prof.flags, prof.drafter_spec, prof.base, workdir))
            sets.append(FlagSet(_name(prof.name, source, f"profiles: {prof.name}"), argv, "profile"))
            model = str(prof.flags["model"])
            named.append((Path(model).name.removesuffix(".json").removesuffix(".config"), str(prof.base / model)))
    raw = data.get("flags", {})
    if not isinstance(raw, dict):
        raise InputError(source, "flags", "must be a table (name = a vllm serve line, or a table of vLLM flags)")
    for name, body in raw.items():
        where = f"flags.{name}"
        _name(name, source, where)
        if any(s.name == name for s in sets):
            raise InputError(source, where, "a flag set of this name comes from the profiles file already")
        if isinstance(body, str):
            argv, named_model = _serve_flags(body, source, where, declared)
            sets.append(FlagSet(name, argv, "serve"))
            lines[name] = body
            if named_model is not None:
                named.append((Path(named_model).name.removesuffix(".json"), str(base / named_model)))
        elif isinstance(body, dict):
            argv = _table_flags(body, base, source, where, workdir)
            sets.append(FlagSet(name, argv, "profile"))
            lines[name] = ("vllm", "serve", *argv)
        else:
            raise InputError(source, where, "must be a vllm serve line (a string) or a table of vLLM flags")
    if not sets:
        raise InputError(source, "flags", "no flag sets: give profiles = FILE or a [flags] table")
    return sets, named, lines


def _arm(name: str, raw: object, base: Path, source: str) -> Arm:
    where = f"arms.{name}"
    if name == PLAN_ARM:
        raise InputError(source, where, f"the arm name {PLAN_ARM!r} is dryboot's own plan; choose another")
    _name(name, source, where)
    if not isinstance(raw, dict):
        raise InputError(source, where, "must be a table")
    unknown = sorted(set(raw) - _ARM_KEYS)
    if unknown:
        raise InputError(source, f"{where}.{unknown[0]}", f"unknown key ({', '.join(sorted(_ARM_KEYS))})")
    body = {k: _str(v, source, f"{where}.{k}") for k, v in raw.items()}
    code = [k for k in ("tree", "release", "series") if k in body]
    if len(code) > 1:
        raise InputError(source, f"{where}.{code[1]}", f"give one of tree, release, series (not {code[0]} too)")
    if ("series" in body) != ("base" in body):
        missing = "base" if "series" in body else "series"
        raise InputError(source, f"{where}.{missing}", "series and base go together (a series on a pristine release)")
    python = body.get("python")
    if python is not None and not Path(python).is_absolute():
        python = str((base / python).resolve())
    if not code:
        if python is not None:
            raise InputError(source, f"{where}.python", "a modelled arm (no tree, release or series) boots nothing")
        version = release_of(body.get("vllm-version", "0.28.0"), f"{source}: {where}.vllm-version")
        policies = arm_policies(body, source, where)
        return Arm(name, "policy", version=version, grouping=policies.grouping, unification=policies.unification)
    for key in ("vllm-version", "grouping", "unification"):
        if key in body:
            raise InputError(source, f"{where}.{key}", "applies to a modelled arm only (the code decides here)")
    try:
        if "tree" in body:
            tree = resolve_tree(str((base / body["tree"]).resolve()), f"{source}: {where}.tree")
            py = choose_python(python, tree.version, tree)
            kind = "site-packages" if Path(tree.import_root).name == "site-packages" else "tree"
            own = None if tree.version is None else release_of(tree.version, f"{source}: {where}.tree")
            return Arm(name, kind, tree=tree.import_root, python=py, version=own)
        if "release" in body:
            version = release_of(body["release"], f"{source}: {where}.release")
            py = choose_python(python, version)
            root = resolve_tree(str(installed_vllm(py).parent), f"{source}: {where}.release")
            if root.version is None or release_of(root.version, py) != version:
                raise InputError(source, f"{where}.release", f"the environment {py} has vLLM {root.version}")
            return Arm(name, "release", tree=root.import_root, python=py, version=version)
        version = release_of(body["base"], f"{source}: {where}.base")
        series = (base / body["series"]).resolve()
        if not series.is_dir():
            raise InputError(source, f"{where}.series", f"{body['series']}: no such directory")
        py = choose_python(python, version)
        return Arm(name, "series", python=py, version=version, series=str(series))
    except InputError as exc:
        if exc.source == source:
            raise
        raise InputError(source, where, exc.line()) from None


def _expectations(
    data: Mapping[str, Any], source: str, models: list[ModelRef], gpus: list[str], sets: list[FlagSet]
) -> tuple[dict[str, Expectation], Expectation | None]:
    raw = data.get("expect")
    if raw is None:
        return {}, None
    if isinstance(raw, str):
        return {}, parse_expectation(raw, source, "expect")
    if not isinstance(raw, dict):
        raise InputError(source, "expect", 'must be an expectation ("identical" ...) or a table')
    unknown = sorted(set(raw) - _EXPECT_KEYS)
    if unknown:
        raise InputError(source, f"expect.{unknown[0]}", f"unknown key ({', '.join(sorted(_EXPECT_KEYS))})")
    overall = parse_expectation(raw["all"], source, "expect.all") if "all" in raw else None
    axes = {
        "models": [m.name for m in models],
        "gpus": gpus,
        "flag-sets": [s.name for s in sets],
    }
    ids = [f"{m.name}|{g}|{s.name}" for m in models for g in gpus for s in sets]
    out: dict[str, Expectation] = {}
    # least specific first: later entries overwrite
    for axis, pos in (("models", 0), ("gpus", 1), ("flag-sets", 2), ("cells", -1)):
        table = raw.get(axis, {})
        if not isinstance(table, dict):
            raise InputError(source, f"expect.{axis}", "must be a table (name = expectation)")
        for key, text in table.items():
            where = f"expect.{axis}.{key}"
            exp = parse_expectation(text, source, where)
            if axis == "cells":
                if key not in ids:
                    raise InputError(source, where, "no such cell (an id is model|gpu|flag set)")
                out[key] = exp
                continue
            if key not in axes[axis]:
                raise InputError(source, where, f"no such {axis[:-1]} (have: {', '.join(axes[axis])[:200]})")
            for cid in ids:
                if cid.split("|")[pos] == key:
                    out[cid] = exp
    return out, overall


def parse_matrix(data: Mapping[str, Any], source: str, base: Path, workdir: Path) -> Matrix:
    """A matrix from its parsed TOML ``data`` (``base``: the directory paths are relative to;
    ``workdir``: where a flag set's drafter config is laid out as a model directory).

    :raises InputError: one line (file, field, reason) for anything wrong or missing.
    """
    unknown = sorted(set(data) - _TOP)
    if unknown:
        raise InputError(source, unknown[0], f"unknown key ({', '.join(sorted(_TOP))})")
    raw_gpus = data.get("gpus")
    if not isinstance(raw_gpus, list) or not raw_gpus:
        raise InputError(source, "gpus", 'required: a list of --gpu names or smXY:SIZE (["RTX 3090", "H100"])')
    gpus: list[str] = []
    for i, g in enumerate(raw_gpus):
        text = _str(g, source, f"gpus[{i}]")
        _name(text, source, f"gpus[{i}]")
        parse_gpu(text, f"{source}: gpus[{i}]")
        if text in gpus:
            raise InputError(source, f"gpus[{i}]", f"{text!r} is listed twice")
        gpus.append(text)
    timeout = data.get("timeout", 300)
    if isinstance(timeout, bool) or not isinstance(timeout, int | float) or not 0 < timeout <= 86400:
        raise InputError(source, "timeout", "must be seconds, a number in (0, 86400]")
    sets, named, lines = _flag_sets(data, base, source, workdir)
    models = _models(data, base, source)
    if not models:
        seen: dict[str, str] = {}
        for name, path in named:
            if path not in seen.values():
                seen[name if name not in seen else f"{name}-{len(seen)}"] = path
        models = [_model(k, v, Path("/"), source, "models") for k, v in seen.items()]
    if not models:
        raise InputError(source, "models", "required: a table of name = config path (no flag set names a model)")
    if len({m.name for m in models}) != len(models):
        raise InputError(source, "models", "two models have the same name")
    arms_raw = data.get("arms")
    if not isinstance(arms_raw, dict) or not arms_raw:
        raise InputError(source, "arms", "required: at least one [arms.NAME] table")
    arms = [_arm(k, v, base, source) for k, v in arms_raw.items()]
    version = data.get("vllm-version")
    if version is not None:
        version = release_of(_str(version, source, "vllm-version"), f"{source}: vllm-version")
    else:
        version = next((a.version for a in arms if a.version), "0.28.0")
    _check_serve_releases(lines, serve_readers(arms, version), source)
    expectations, overall = _expectations(data, source, models, gpus, sets)
    return Matrix(
        source,
        tuple(models),
        tuple(gpus),
        tuple(sets),
        tuple(arms),
        expectations,
        overall,
        float(timeout),
        version,
    )


def load_matrix(path: str | Path, workdir: Path) -> Matrix:
    """Read MATRIX.toml (see the module docstring).

    :raises InputError: unreadable file or TOML (line named), or any bad field (:func:`parse_matrix`).
    """
    p = Path(path)
    source = str(path)
    return parse_matrix(read_toml(p, source), source, p.parent, workdir)
