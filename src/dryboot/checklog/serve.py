"""Read a pasted ``vllm serve`` command line as the planned vLLM release's parser reads it.

The result is the same key -> value mapping a boot log's ``non-default args`` line holds, so
:func:`dryboot.checklog.argmap.map_args` maps it onto engine flags exactly as ``check-log``
does (what dryboot cannot model is refused by name, the rest noted). What the parser accepts
follows ``vllm/utils/argparse_utils.py`` (``FlexibleArgumentParser.parse_args``): the model as
the positional argument after ``serve`` or as ``--model``; ``--opt value`` and ``--opt=value``;
underscores in option names (``--max_model_len``); unique prefixes of long options (argparse's
``allow_abbrev``); ``-O3`` / ``-O 3`` / ``-O=3`` for ``--optimization-level``; dotted options
(``--speculative-config.num_speculative_tokens 3``) building a nested dict; ``--config
FILE.yaml`` whose keys are inserted after the model (so the command line wins). Which options
take a value, a list or nothing is read from ``data/vllm-<release>-serve-options.json`` (one
per release 0.27.1-0.33.0, chosen as ``--vllm-version`` chooses the rules: 0.31.2 reads 0.31.0's),
written by ``scripts/vllm_serve_options.py`` from that release's own parser; so an option a newer
release added is refused on an older one, naming the release. A boolean option's negative forms
are the table's: ``--no-X`` before 0.33.0, also ``--disable-X`` / ``--enable-X`` pairs from 0.33.0
(``EnableDisableAction``).

Environment variables: ``VAR=value`` words before ``vllm`` and, under them, the ``VLLM_*``
variables of the environment dryboot runs in. :data:`ENV_REFUSED` change the KV cache in a way
dryboot does not model; :data:`ENV_MODELLED` are applied; the rest are noted.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

from dryboot.checklog.argmap import engram_config, map_args, validate_logged
from dryboot.checklog.check import resolve_speculative
from dryboot.checklog.locate import find_config
from dryboot.errors import InputError
from dryboot.inputs import open_regular
from dryboot.planner.flags import add_custom_dtypes, apply_flags
from dryboot.vllm.config.resolve import check_parser_choices, derive_max_model_len
from dryboot.vllm.config.scheduler import verify_long_prefill_token_threshold
from dryboot.vllm.transformers_utils.config import load_model, refuse_drafter_as_model

SOURCE = "--serve"
#: vLLM release whose parser and environment variables are read unless one is given
#: (``plan --vllm-version``).
PARSER_VERSION = "0.28.0"

#: Variables dryboot applies (``VLLM_ALLOW_LONG_MAX_MODEL_LEN``: a max_model_len above the
#: config's is accepted, as vLLM's ``_get_and_verify_max_len`` does; ``VLLM_PP_LAYER_PARTITION``:
#: the pipeline stages' layers).
ENV_MODELLED = frozenset({"VLLM_ALLOW_LONG_MAX_MODEL_LEN", "VLLM_PP_LAYER_PARTITION"})
#: Variables that change the KV cache in a way dryboot does not model, with the values that
#: leave it as planned and why another is refused.
ENV_REFUSED: dict[str, tuple[tuple[str, ...], str]] = {
    "VLLM_ALLOW_CHUNKED_LOCAL_ATTN_WITH_HYBRID_KV_CACHE": (
        ("", "0", "false", "False"),
        "chunked local attention in the hybrid KV cache manager changes the groups",
    ),
    "VLLM_USE_SIMPLE_KV_OFFLOAD": (("", "0", "false", "False"), "KV offloading adds a connector to the KV cache"),
    "VLLM_CPU_KVCACHE_SPACE": (("",), "the CPU platform sizes its KV cache itself; dryboot plans GPUs"),
}
#: Variables whose only effect on the KV cache is the budget vLLM measures (dryboot is given it).
ENV_MEASURED = frozenset({"VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS", "VLLM_CPU_OMP_THREADS_BIND"})
#: Variables that change the layout of a KV page, not its size.
ENV_LAYOUT = frozenset({"VLLM_KV_CACHE_LAYOUT", "VLLM_ROCM_SHUFFLE_KV_CACHE_LAYOUT"})

_ASSIGNMENT = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)=(.*)$", re.S)
_NUMBER = re.compile(r"^-?\d+(?:\.\d*)?(?:[eE][-+]?\d+)?$")


@dataclass(frozen=True)
class Option:
    """One option of vLLM's ``serve`` parser: where it goes and what it takes."""

    dest: str
    kind: str  # value | bool-optional | flag
    nargs: str | int | None
    const: object
    #: a bool-optional option's strings that set it False (``--no-X``; ``--disable-X`` in 0.33.0)
    negative: frozenset[str] = frozenset()


@dataclass(frozen=True)
class ServeCommand:
    """A parsed ``vllm serve`` command line.

    :param args: destination -> value, as a ``non-default args`` line logs them (later wins).
    :param env: the variables given before ``vllm`` and the ``VLLM_*`` ones of the environment.
    :param notes: how the line was read (abbreviations, the config file, variables).
    :param version: the vLLM release whose parser read it (the table's: ``0.31.0`` for 0.31.2).
    """

    args: dict[str, object]
    env: dict[str, str]
    notes: tuple[str, ...] = field(default=())
    version: str = PARSER_VERSION


def parser_release(version: str = PARSER_VERSION, source: str = "--vllm-version") -> str:
    """The release whose serve-options table reads a command line planned for ``version``: the
    newest table entry not after it, as :func:`dryboot.vllm.versions.rules_for` picks the rules
    (``0.31.2`` -> ``0.31.0``).

    :raises InputError: a malformed version or one older than 0.27.1.
    """
    from dryboot.vllm.versions import rules_for  # at call: the rules table loads once a line is read

    return rules_for(version, source).version


@lru_cache(maxsize=8)
def _table(release: str = PARSER_VERSION) -> tuple[dict[str, Option], frozenset[str]]:
    """``release``'s options (every string -> its option) and environment variable names."""
    name = f"vllm-{release}-serve-options.json"
    doc = json.loads(resources.files("dryboot").joinpath("data", name).read_text(encoding="utf-8"))
    options: dict[str, Option] = {}
    for o in doc["options"]:
        if o.get("positional"):
            continue
        opt = Option(o["dest"], o["kind"], o.get("nargs"), o.get("const"), frozenset(o.get("negative", ())))
        for s in o["options"]:
            options[s] = opt
    return options, frozenset(doc["environment"])


def split_command(text: str) -> list[str]:
    """The words of a pasted command (shell quoting; ``\\`` line continuations and a leading
    ``$`` prompt removed).

    :raises InputError: unbalanced quotes.
    """
    text = re.sub(r"\\\r?\n", " ", text).strip()
    text = re.sub(r"^\$\s+", "", text)
    try:
        return shlex.split(text, comments=False)
    except ValueError as exc:
        raise InputError(SOURCE, None, f"cannot split the command line: {exc}") from None


def _strip_launcher(words: list[str], source: str) -> tuple[list[str], dict[str, str]]:
    """(the words after ``serve``, the ``VAR=value`` words before the command)."""
    env: dict[str, str] = {}
    i = 0
    while i < len(words) and (words[i] == "env" or _ASSIGNMENT.match(words[i])):
        if m := _ASSIGNMENT.match(words[i]):
            env[m[1]] = m[2]
        i += 1
    rest = words[i:]
    if len(rest) >= 2 and Path(rest[0]).name == "vllm" and rest[1] == "serve":
        return rest[2:], env
    entrypoints = ("vllm.entrypoints.openai.api_server", "vllm.entrypoints.cli.main")
    if len(rest) >= 3 and Path(rest[0]).name.startswith("python") and rest[1] == "-m" and rest[2] in entrypoints:
        tail = rest[3:]
        return (tail[1:] if tail[:1] == ["serve"] else tail), env
    raise InputError(source, None, "expected a command 'vllm serve MODEL [options]' (VAR=value words may come first)")


def _config_words(path: str, source: str, release: str = PARSER_VERSION) -> list[str]:
    """``--config FILE``'s keys as command-line words, as vLLM's ``load_config_file`` turns
    them (a true boolean: the option; false: ``--no-`` option; a list: its items; a dict: JSON).

    :raises InputError: not a readable YAML mapping, or a key that is no option of vLLM's
        ``serve`` (``<source>: --config <path>: --<key>: ...``).
    """
    import yaml  # at call: only a --config file needs PyYAML

    if path.split(".")[-1] not in ("yaml", "yml"):
        raise InputError(source, "--config", f"{path}: vLLM reads only .yaml / .yml config files")
    try:
        with open_regular(Path(path).expanduser(), f"{source}: --config {path}") as fh:
            data = yaml.safe_load(fh.read().decode("utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise InputError(source, "--config", f"{path}: cannot read: {str(exc).splitlines()[0]}") from None
    if data is None:
        return []
    if not isinstance(data, dict):
        raise InputError(source, "--config", f"{path}: expected a mapping of option names to values")
    options, _ = _table(release)
    words: list[str] = []
    for key, value in data.items():
        name = f"--{key}"
        # an option vLLM's parser does not have is refused here, naming the file it came from
        _lookup(_normalise([name])[0].partition(".")[0], [], f"{source}: --config {path}", release)
        if isinstance(value, bool):
            if value:
                words.append(name)
            elif f"--no-{key}" in options or f"--no-{str(key).replace('_', '-')}" in options:
                words.append(f"--no-{key}")
        elif isinstance(value, list):
            words.append(name)
            words.extend(str(v) for v in value)
        elif isinstance(value, dict):
            words.extend([name, json.dumps(value)])
        else:
            words.extend([name, str(value)])
    return words


def _normalise(words: list[str]) -> list[str]:
    """vLLM's rewrites: underscores to dashes in option names (up to a dot), ``-O`` forms."""
    out: list[str] = []
    for i, w in enumerate(words):
        if w.startswith("--"):
            key, eq, value = w.partition("=")
            head, dot, tail = key[2:].partition(".")
            out.append("--" + head.replace("_", "-") + dot + tail + eq + value)
        elif w.startswith("-O") and w != "-O":
            out.extend(["--optimization-level", w[3:] if w[2:3] == "=" else w[2:]])
        elif w == "-O" and i + 1 < len(words) and words[i + 1] in {"0", "1", "2", "3"}:
            out.append("--optimization-level")
        else:
            out.append(w)
    return out


def _coerce(text: str) -> object:
    """A command-line word as the typed value a logged args dict would show (numbers, JSON
    objects and lists); anything else stays text."""
    if _NUMBER.match(text):
        try:
            return int(text)
        except ValueError:
            return float(text)
    if text in ("True", "true", "False", "false"):
        return text in ("True", "true")
    if text.startswith(("{", "[")):
        try:
            value: object = json.loads(text)
        except (json.JSONDecodeError, RecursionError):
            return text
        return value
    return text


def _lookup(name: str, notes: list[str], source: str, release: str = PARSER_VERSION) -> tuple[str, Option]:
    options, _ = _table(release)
    if name in options:
        return name, options[name]
    matches = sorted({s for s in options if s.startswith(name) and s.startswith("--")})
    dests = {options[s].dest for s in matches}
    if len(dests) == 1 and len(name) > 2:
        full = matches[0]
        notes.append(f"{name} read as {full} (argparse accepts a unique prefix)")
        return full, options[full]
    if len(dests) > 1:
        raise InputError(source, name, f"ambiguous option: {', '.join(matches[:5])}")
    raise InputError(source, name, f"vLLM {release}'s 'vllm serve' has no such option")


def parse_serve(
    text_or_words: str | list[str],
    environ: Mapping[str, str],
    source: str = SOURCE,
    version: str = PARSER_VERSION,
) -> ServeCommand:
    """Parse a ``vllm serve`` command line (its text, or its words) as vLLM ``version``'s
    parser does (``FlexibleArgumentParser`` with ``make_arg_parser``'s options).

    :param environ: the environment dryboot runs in (its ``VLLM_*`` variables are the boot's
        unless the line sets them).
    :param version: the planned release (``plan --vllm-version``); its table is
        :func:`parser_release`'s.
    :raises InputError: not a ``vllm serve`` command, an option that release does not have
        (``vLLM <release>'s 'vllm serve' has no such option``), a missing value, an unreadable
        ``--config`` file or JSON value, a version older than 0.27.1.
    """
    release = parser_release(version)
    words = split_command(text_or_words) if isinstance(text_or_words, str) else list(text_or_words)
    rest, prefix_env = _strip_launcher(words, source)
    notes: list[str] = []
    # --model moves to the front (vLLM warns it is deprecated with `vllm serve`)
    for i, w in enumerate(rest):
        if w == "--model" and i + 1 < len(rest):
            rest = [rest[i + 1], *rest[:i], *rest[i + 2 :]]
            break
        if w.startswith("--model="):
            rest = [w.removeprefix("--model="), *rest[:i], *rest[i + 1 :]]
            break
    model = rest[0] if rest and not rest[0].startswith("-") else None
    rest = rest[1:] if model is not None else rest
    if rest.count("--config") > 1:
        raise InputError(source, "--config", "more than one config file (vLLM refuses it)")
    for i, w in enumerate(rest):
        if w == "--config" or w.startswith("--config="):
            path = w.partition("=")[2] if "=" in w else (rest[i + 1] if i + 1 < len(rest) else "")
            if not path:
                raise InputError(source, "--config", "no config file given")
            tail = rest[i + 1 :] if "=" in w else rest[i + 2 :]
            rest = [*_config_words(path, source, release), *rest[:i], *tail]
            notes.append(f"--config {path}: its keys read before the command line's (the command line wins)")
            break
    args: dict[str, object] = {}
    if model is not None:
        args["model_tag"] = model
        args["model"] = model
    words = _normalise(rest)
    i = 0
    while i < len(words):
        word = words[i]
        i += 1
        if not word.startswith("-") or word in ("-", "--"):
            if model is None and "model" not in args:
                args["model_tag"] = args["model"] = word
                continue
            raise InputError(source, word, "an extra positional argument (vLLM takes one: the model)")
        name, eq, inline = word.partition("=")
        head, dot, sub = name.partition(".")
        full, opt = _lookup(head, notes, source, release)
        if dot:
            if opt.kind != "value":
                raise InputError(source, word, f"{full} takes no nested keys")
            if not eq:
                if i >= len(words):
                    raise InputError(source, word, "expected a value")
                inline, i = words[i], i + 1
            nested = args.get(opt.dest)
            nested = dict(nested) if isinstance(nested, dict) else {}
            cursor = nested
            keys = sub.split(".")
            for k in keys[:-1]:
                cursor = cursor.setdefault(k, {}) if isinstance(cursor.get(k, {}), dict) else {}
            cursor[keys[-1]] = _coerce(inline)
            args[opt.dest] = nested
            continue
        if opt.kind == "bool-optional":
            if eq:
                raise InputError(source, word, f"{full} takes no value")
            args[opt.dest] = full not in opt.negative
            continue
        if opt.kind == "flag":
            if eq:
                raise InputError(source, word, f"{full} takes no value")
            args[opt.dest] = opt.const if opt.const is not None else True
            continue
        values: list[str] = []
        if eq:
            values.append(inline)
        if opt.nargs in ("+", "*") or isinstance(opt.nargs, int):
            limit = opt.nargs if isinstance(opt.nargs, int) else None
            while i < len(words) and (limit is None or len(values) < limit):
                nxt = words[i]
                if nxt.startswith("-") and not _NUMBER.match(nxt):
                    break
                values.append(nxt)
                i += 1
            if opt.nargs == "+" and not values:
                raise InputError(source, full, "expected at least one value")
            args[opt.dest] = [_coerce(v) for v in values]
            continue
        if not values:
            if opt.nargs == "?":
                args[opt.dest] = opt.const
                continue
            if i >= len(words):
                raise InputError(source, full, "expected a value")
            values.append(words[i])
            i += 1
        args[opt.dest] = _coerce(values[0])
    env = {k: v for k, v in environ.items() if k.startswith("VLLM_")}
    for k in env:
        if k not in prefix_env:
            notes.append(f"{k}={env[k]} read from the environment")
    env.update(prefix_env)
    return ServeCommand(args, env, tuple(notes), release)


def env_effects(
    env: Mapping[str, str], source: str = SOURCE, release: str = PARSER_VERSION
) -> tuple[dict[str, str], tuple[str, ...]]:
    """The variables dryboot applies, and one note per other ``VLLM_*`` variable (named as
    ``release``'s variable or not, ``vllm/envs.py``).

    :raises InputError: a variable that changes the KV cache in a way dryboot does not model.
    """
    _, known = _table(release)
    applied: dict[str, str] = {}
    notes: list[str] = []
    for name, value in env.items():
        if name in ENV_REFUSED:
            neutral, why = ENV_REFUSED[name]
            if value not in neutral:
                raise InputError(
                    source, name, f"{value!r} changes the KV cache geometry ({why}); dryboot cannot model it"
                )
        elif name in ENV_MODELLED:
            applied[name] = value
        elif name == "VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS" and value.strip() == "0":
            notes.append(
                f"{name}=0: vLLM then does not subtract its CUDA-graph estimate from the KV budget; the budget "
                "dryboot predicts from --gpu subtracts it (a pinned --kv-cache-memory-bytes is exact)"
            )
        elif name in ENV_MEASURED:
            notes.append(
                f"{name}: changes only the budget vLLM measures; give dryboot the budget (--kv-cache-memory-bytes)"
            )
        elif name in ENV_LAYOUT:
            notes.append(f"{name}: changes the layout of a KV page, not its size")
        elif name.startswith("VLLM_"):
            if name in known:
                notes.append(
                    f"ignored {name}: a vLLM {release} variable dryboot does not model; "
                    "assumed not to touch the KV cache"
                )
            else:
                notes.append(f"ignored {name}: not a vLLM {release} variable")
    return applied, tuple(notes)


def as_text(value: Any) -> str:
    """A value for a note."""
    return json.dumps(value) if isinstance(value, dict | list) else str(value)


@dataclass(frozen=True)
class ServePlan:
    """What ``dryboot plan --serve`` plans: the model, the flags, the drafter, the variables to
    set while planning, and how each part of the command line was read."""

    model: Any
    args: Any
    drafter: Any
    config: Any
    env: dict[str, str]
    flags: dict[str, object]
    notes: tuple[str, ...]
    expert_parallel: bool = False
    #: ``--engram-config``'s ``cpu_offload`` (vLLM's default: true): where the weights walk puts
    #: Qwen4-Exp's PLE n-gram tables; no KV figure reads it
    engram_cpu_offload: bool = True


def plan_inputs(
    cmd: ServeCommand,
    *,
    model_path: str | None = None,
    extra_flags: Mapping[str, object] | None = None,
    custom_dtypes: tuple[str, ...] = (),
    source: str = SOURCE,
) -> ServePlan:
    """Turn a parsed command line into what the planner takes, with check-log's mapping
    (:func:`dryboot.checklog.argmap.map_args`) and its config lookup (the model's config.json
    from ``model_path``, the command's path, or the Hugging Face cache).

    :param extra_flags: dryboot's own engine flags given beside ``--serve`` (a KV budget, the
        GPU's memory); they override the command line's, each such override noted.
    :raises InputError: a refused option or variable, a config that cannot be found or read.
    """
    logged = map_args(cmd.args, source, label="", plan=True)
    notes = list(cmd.notes) + list(logged.notes)
    applied, env_notes = env_effects(cmd.env, source, cmd.version)
    notes.extend(env_notes)
    located = find_config(
        model_path, logged.model, revision=logged.revision, hf_config_path=logged.hf_config_path, source=source
    )
    args = logged.args
    flags = dict(logged.flags)
    for name, value in (extra_flags or {}).items():
        if name in flags and str(flags[name]) != str(value):
            notes.append(f"--{name} {value} given to dryboot overrides the command line's {as_text(flags[name])}")
        args = apply_flags(args, {name: value}, f"--{name}")
        flags[name] = value
    from dryboot.vllm.versions import rules_for  # at call: the rules table loads once a line is read

    # vLLM's argument parser exits on a choice its release lacks before any config is read
    check_parser_choices(args, rules_for(args.vllm_version))
    refuse_drafter_as_model(located.path, args.vllm_version)
    model = load_model(located.path)
    if "engram_config" in cmd.args:
        refuse_engram_without_ngram(located.path, source)
    args = add_custom_dtypes(args, list(custom_dtypes))
    if "VLLM_PP_LAYER_PARTITION" in applied and args.pipeline_parallel_size > 1:
        args = replace(args, pp_layer_partition=applied["VLLM_PP_LAYER_PARTITION"])
    validate_logged(args, source)
    threshold = cmd.args.get("long_prefill_token_threshold")
    if threshold:  # the resolved length, only when a threshold is given (the prefix's variables apply later)
        allowed = applied.get("VLLM_ALLOW_LONG_MAX_MODEL_LEN") in ("1", "true", "True")
        long_ok = replace(args, allow_long_max_model_len=True) if allowed else args
        verify_long_prefill_token_threshold(threshold, derive_max_model_len(model, long_ok), source)
    _, drafter, args = resolve_speculative(
        logged.speculative, None, args, notes, source, target_architecture=model.architecture
    )
    args.validate()
    return ServePlan(
        model, args, drafter, located, applied, flags, tuple(notes), logged.expert_parallel, logged.engram_cpu_offload
    )


#: Architectures whose config names n-gram embedding layers, and the field (vLLM's
#: ``vllm/config/engram.py``, 0.30.0-0.33.0): ``EngramConfig.verify_model_config`` refuses an
#: ``--engram-config`` for any other model, or one whose field is empty.
NGRAM_LAYER_FIELDS: dict[str, str] = {
    "DeepseekV41ForCausalLM": "engram_layer_ids",
    "Qwen4ExpForCausalLM": "ple_layer_ids",
    "Qwen4ExpForConditionalGeneration": "ple_layer_ids",
}


def refuse_engram_without_ngram(config_path: Path, source: str = SOURCE) -> None:
    """Refuse ``--engram-config`` for a model with no n-gram embedding layers, as vLLM's
    ``EngramConfig.verify_model_config`` does (the text config's layer-id field empty or absent).

    :raises InputError: ``<source>: engram_config: ...``.
    """
    from dryboot.vllm.transformers_utils.config import load_config_json  # at call: as load_model

    _, config = load_config_json(config_path)
    architectures = config.get("architectures") or [""]
    field_name = NGRAM_LAYER_FIELDS.get(str(architectures[0]))
    text = config.get("text_config")
    text_config = text if isinstance(text, Mapping) else config
    if field_name is None or not (text_config.get(field_name) or config.get(field_name)):
        raise InputError(
            source,
            "engram_config",
            f"vLLM refuses it for {architectures[0] or 'this model'}: no n-gram embedding layers "
            "(EngramConfig.verify_model_config)",
        )


#: the flag ``plan --engram-config`` takes, as vLLM's parser names it
ENGRAM_OPTION = "--engram-config"


def engram_option_refusal(version: str) -> str | None:
    """Why vLLM ``version``'s ``vllm serve`` does not take ``--engram-config`` (its serve-options
    table has no such option: before 0.30.0), or ``None``: it does."""
    release = parser_release(version)
    options, _ = _table(release)
    if ENGRAM_OPTION in options:
        return None
    return f"vLLM {release}'s 'vllm serve' has no such option (EngramConfig is vLLM 0.30.0+'s)"


def plan_engram_config(
    text: str, version: str, config_path: Path, data_parallel_size: int = 1
) -> tuple[bool, list[str]]:
    """``plan --engram-config JSON`` (vLLM 0.30.0+'s ``EngramConfig``, as ``plan --serve`` maps
    it): (its ``cpu_offload``: whether the n-gram embedding tables stay in host memory, notes).

    :raises InputError: ``--engram-config: ...``: a release whose parser lacks the option
        (:func:`engram_option_refusal`), what :func:`dryboot.checklog.argmap.engram_config` refuses
        (bad JSON, a field ``EngramConfig`` lacks, a combination vLLM refuses), a model with no
        n-gram embedding layers (:func:`refuse_engram_without_ngram`).
    """
    refusal = engram_option_refusal(version)
    if refusal is not None:
        raise InputError(ENGRAM_OPTION, None, refusal)
    offload, notes = engram_config(text, {"data_parallel_size": data_parallel_size}, ENGRAM_OPTION)
    refuse_engram_without_ngram(config_path, ENGRAM_OPTION)
    return offload, notes
