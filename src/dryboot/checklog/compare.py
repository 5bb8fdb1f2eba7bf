"""Compare a log's KV lines with dryboot's prediction, and name what would explain a difference.

The KV budget a log states is rounded: ``Available KV cache memory: X GiB`` is
``format_gib`` (``round(bytes / GiB, 2)``), so the budget is every byte count that prints as X.
dryboot predicts over that whole interval: the blocks (and so the tokens, the concurrency, the
estimated maximum length) are a step function of the budget, one step per pool block
(``page x group_size``), and each step inside the interval is planned once. A logged line matches
when its text is one of the predicted texts of its kind.

For a differing line the candidates are tried in this order: a downstream policy or another vLLM
version that explains *every* differing line; a different KV budget (budget-dependent lines,
searched within :data:`BUDGET_SEARCH_FRACTION` of the logged budget); a policy
(``dryboot.planner.policies``); another known vLLM version (``dryboot.vllm.versions.VERSIONS``).
Otherwise the tree differs from the rules dryboot planned with.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace

from dryboot.checklog.parse import Kind, KVLine, kv_figures, kv_match_text
from dryboot.errors import InputError
from dryboot.planner.plan import Drafter, Plan, Policies, plan
from dryboot.planner.policies import GROUPING_POLICIES, UNIFICATION_POLICIES
from dryboot.vllm.config.hf import ModelGeometry
from dryboot.vllm.engine_args import EngineArgs
from dryboot.vllm.kv_cache_utils.capacity import format_gib, pool_bytes_per_block
from dryboot.vllm.versions import VERSIONS

GIB = 1 << 30
#: A different budget is searched for within this fraction of the logged one.
BUDGET_SEARCH_FRACTION = 0.25
#: At most this many budget steps are planned for one interval.
MAX_STEPS = 4096


def gib_interval(text: str) -> tuple[int, int] | None:
    """Every byte count ``b`` that ``format_gib`` prints as ``text`` (``round(b / GiB, 2)``), as
    an inclusive interval, or ``None`` when none does (``text`` is not such a figure)."""
    try:
        x = float(text)
    except ValueError:
        return None

    def key(b: int) -> float:
        return round(b / GIB, 2)

    centre = round(x * GIB)
    left, right = centre - GIB // 50, centre + GIB // 50
    lo_l, lo_r = left, right  # first b with key(b) >= x
    while lo_l < lo_r:
        mid = (lo_l + lo_r) // 2
        if key(mid) >= x:
            lo_r = mid
        else:
            lo_l = mid + 1
    hi_l, hi_r = left, right  # last b with key(b) <= x
    while hi_l < hi_r:
        mid = (hi_l + hi_r + 1) // 2
        if key(mid) <= x:
            hi_l = mid
        else:
            hi_r = mid - 1
    if x == 0:  # round() keeps the sign: negative budgets print "-0.0"
        lo_l, hi_l = (lo_l, min(hi_l, -1)) if text.strip().startswith("-") else (max(lo_l, 0), hi_l)
    if lo_l > hi_l or key(lo_l) != x:
        return None
    return lo_l, hi_l


@dataclass(frozen=True)
class Budget:
    """The KV budget (bytes, inclusive) the log states, and where it says so."""

    lo: int
    hi: int
    source: str

    @property
    def exact(self) -> bool:
        return self.lo == self.hi

    def describe(self) -> str:
        if self.exact:
            return f"{self.lo:,} B ({self.source})"
        return f"{self.lo:,}–{self.hi:,} B ({self.source})"


@dataclass(frozen=True)
class Candidate:
    """Rules to plan with: a vLLM version and the downstream policies."""

    version: str
    policies: Policies

    def describe(self) -> str:
        parts = []
        if self.policies.grouping != "upstream":
            parts.append(f"--grouping {self.policies.grouping}")
        if self.policies.unification != "upstream":
            parts.append(f"--unification {self.policies.unification}")
        return " ".join(parts) if parts else "upstream policies"


@dataclass(frozen=True)
class Inputs:
    """What is planned: the model, the flags (without budget), the drafter."""

    model: ModelGeometry
    args: EngineArgs
    drafter: Drafter | None


@dataclass(frozen=True)
class Prediction:
    """The KV lines a candidate predicts over a budget interval: per kind, the distinct texts
    (in budget order), and the plan at the interval's low end."""

    texts: dict[Kind, tuple[str, ...]]
    plan: Plan

    def has(self, line: KVLine) -> bool:
        """Whether a predicted line of the same kind agrees with every figure the logged line
        shows (a line cut short, an older wording or 0.27.1's two-line capacity report shows
        fewer figures; a line without figures is compared as text)."""
        texts = self.texts.get(line.kind, ())
        if line.text in texts:
            return True
        if not line.figures:
            return False
        return any(figures_agree(line.figures, kv_figures(line.kind, t)) for t in texts)


def _number(text: str) -> float | None:
    try:
        return float(text.replace(",", ""))
    except ValueError:
        return None


def figures_agree(logged: dict[str, str], predicted: dict[str, str]) -> bool:
    """Every figure of ``logged`` is in ``predicted`` with the same value (numbers compared as
    numbers: ``2048`` and ``2,048`` agree); at least one figure is shared."""
    shared = [k for k in logged if k in predicted]
    if not shared or len(shared) != len(logged):
        return False
    for k in shared:
        a, b = _number(logged[k]), _number(predicted[k])
        if (a is None or b is None) and logged[k] != predicted[k]:
            return False
        if a is not None and b is not None and a != b:
            return False
    return True


def predicted_lines(p: Plan) -> list[tuple[Kind, str]]:
    """The KV lines of plan ``p`` that a log can hold, classified by template."""
    texts = list(p.log)
    if p.memory_error is not None:
        texts.append(str(p.memory_error))
    out: list[tuple[Kind, str]] = []
    for text in texts:
        found = kv_match_text(text)
        if found is not None:
            out.append(found)
    return out


def _plan_at(inputs: Inputs, candidate: Candidate, budget: int | None) -> Plan:
    args = replace(inputs.args, vllm_version=candidate.version, kv_cache_memory_bytes=budget)
    return plan(inputs.model, args, drafter=inputs.drafter, policies=candidate.policies)


def block_stride(p: Plan) -> int | None:
    if p.grouping is not None and p.grouping.path == "packed":
        return p.grouping.packed_stride  # DeepSeek-V4's slab block (stage 0's)
    if p.grouping is None or not p.grouping.runs:
        return None
    return pool_bytes_per_block(p.grouping)


def step_budgets(lo: int, hi: int, per_block: int | None) -> list[int]:
    """One budget per pool-block step in ``[lo, hi]`` (the figures are constant within a step)."""
    if per_block is None or lo == hi:
        return [lo]
    first, last = lo // per_block, hi // per_block
    if last - first + 1 > MAX_STEPS:
        stride = (last - first) // (MAX_STEPS - 1) + 1
        steps = list(range(first, last + 1, stride))
        if steps[-1] != last:
            steps.append(last)
    else:
        steps = list(range(first, last + 1))
    return [max(lo, n * per_block) for n in steps]


def predict(inputs: Inputs, candidate: Candidate, budget: Budget | None) -> Prediction:
    """The lines ``candidate`` predicts for every budget in ``budget`` (none: no capacity lines).

    :raises InputError: the flags or model cannot be planned under ``candidate``.
    """
    if budget is None:
        p = _plan_at(inputs, candidate, None)
        return Prediction(_collect([p]), p)
    p0 = _plan_at(inputs, candidate, budget.lo)
    plans = [p0]
    for b in step_budgets(budget.lo, budget.hi, block_stride(p0))[1:]:
        plans.append(_plan_at(inputs, candidate, b))
    return Prediction(_collect(plans), p0)


def _collect(plans: list[Plan]) -> dict[Kind, tuple[str, ...]]:
    out: dict[Kind, list[str]] = {}
    for p in plans:
        for kind, text in predicted_lines(p):
            texts = out.setdefault(kind, [])
            if text not in texts:
                texts.append(text)
    return {k: tuple(v) for k, v in out.items()}


# ------------------------------------------------------------------------------ explanations


@dataclass(frozen=True)
class Explanation:
    """Something that would make the prediction equal the logged line.

    :param kind: ``budget`` | ``policy`` | ``version``.
    :param text: the sentence for reports.
    """

    kind: str
    text: str
    budget_lo: int | None = None
    budget_hi: int | None = None
    version: str | None = None
    policies: Policies | None = None


def _stated_budget(line: KVLine, per: int) -> tuple[int, int] | None:
    """The budgets (bytes, inclusive) a non-capacity line states by itself: the GiB a
    not-enough-memory or auto-fit line prints (rounded to 2 decimals), or the blocks an override
    line computed (``per`` bytes a block); ``None`` when the line states none."""
    f = line.figures
    if line.kind is Kind.NOT_ENOUGH_MEMORY and "available_gib" in f:
        return gib_interval(f["available_gib"])
    if line.kind is Kind.AUTO_FIT and ("gib" in f or "full_gib" in f):
        return gib_interval(f.get("gib") or f["full_gib"])
    if line.kind is Kind.OVERRIDE:
        computed = int(f["computed"])
        return computed * per, (computed + 1) * per - 1
    return None


def search_budget(line: KVLine, inputs: Inputs, candidate: Candidate, budget: Budget) -> Explanation | None:
    """A KV budget, other than the logged one, under which ``candidate`` predicts ``line``."""
    if not line.kind.budget_dependent:
        return None
    try:
        p0 = _plan_at(inputs, candidate, budget.lo)
    except InputError:
        return None
    per = block_stride(p0)
    if per is None:
        return None
    interval: tuple[int, int] | None = None
    f = line.figures
    if line.kind is Kind.CAPACITY:
        interval = _search_capacity(f, inputs, candidate, budget, per)
    else:
        interval = _stated_budget(line, per)
    if interval is None:
        return None
    lo, hi = interval
    matching = [b for b in step_budgets(lo, hi, per) if _predicts(line, _plan_at(inputs, candidate, b))]
    if not matching:
        return None
    first, last = matching[0], matching[-1]
    first_lo = max(lo, (first // per) * per)
    last_hi = min(hi, (last // per + 1) * per - 1)
    if first_lo <= budget.hi and last_hi >= budget.lo:
        return None  # inside the logged interval: not "another" budget
    said = format_gib(budget.lo) if format_gib(budget.lo) == format_gib(budget.hi) else budget.describe()
    return Explanation(
        "budget",
        f"a KV budget of {describe_budget(first_lo, last_hi)} would explain it; the log says {said} GiB",
        budget_lo=first_lo,
        budget_hi=last_hi,
    )


def _predicts(line: KVLine, p: Plan) -> bool:
    texts = tuple(t for k, t in predicted_lines(p) if k is line.kind)
    return Prediction({line.kind: texts}, p).has(line)


def _capacity_value(f: dict[str, str]) -> tuple[str, float] | None:
    """The figure a capacity line is searched by: its tokens, else (0.27.1's lone second line)
    its concurrency; both grow with the blocks."""
    for key in ("tokens", "concurrency"):
        if key in f and (v := _number(f[key])) is not None:
            return key, v
    return None


def _capacity_of(p: Plan, key: str) -> float:
    if p.capacity is None:
        return -1.0
    if key == "tokens":
        return float(p.capacity.kv_cache_size_tokens)
    found = [kv_figures(Kind.CAPACITY, t).get("concurrency") for k, t in predicted_lines(p) if k is Kind.CAPACITY]
    values = [_number(v) for v in found if v]
    return next((v for v in values if v is not None), -1.0)


def _search_blocks(
    key: str, target: float, inputs: Inputs, candidate: Candidate, per: int, lo_n: int, hi_n: int
) -> tuple[int, int] | None:
    """The budgets (pool-block steps in ``[lo_n, hi_n]``) whose capacity figure ``key`` is
    ``target`` (it grows with the blocks)."""

    def value(n: int) -> float:
        return _capacity_of(_plan_at(inputs, candidate, n * per), key)

    left, right = lo_n, hi_n
    while left < right:
        mid = (left + right) // 2
        if value(mid) >= target:
            right = mid
        else:
            left = mid + 1
    if value(left) != target:
        return None
    last = left
    while last + 1 <= hi_n and last - left < MAX_STEPS and value(last + 1) == target:
        last += 1
    return left * per, (last + 1) * per - 1


def _search_capacity(
    f: dict[str, str], inputs: Inputs, candidate: Candidate, budget: Budget, per: int
) -> tuple[int, int] | None:
    found = _capacity_value(f)
    if found is None:
        return None
    lo_n = max(1, int(budget.lo * (1 - BUDGET_SEARCH_FRACTION)) // per)
    hi_n = int(budget.hi * (1 + BUDGET_SEARCH_FRACTION)) // per + 1
    return _search_blocks(found[0], found[1], inputs, candidate, per, lo_n, hi_n)


#: Without a logged budget, budgets up to this are searched (bytes).
MAX_SEARCHED_BUDGET = 4 << 40


def budget_interval_anywhere(line: KVLine, inputs: Inputs, candidate: Candidate) -> tuple[int, int] | None:
    """Without a logged budget: the budgets (bytes, inclusive) under which ``candidate`` prints
    ``line``, or ``None`` when no budget does."""
    try:
        p0 = _plan_at(inputs, candidate, GIB)
    except InputError:
        return None
    per = block_stride(p0)
    if per is None:
        return None
    f = line.figures
    interval: tuple[int, int] | None = None
    if line.kind is Kind.CAPACITY and (found := _capacity_value(f)) is not None:
        interval = _search_blocks(found[0], found[1], inputs, candidate, per, 1, MAX_SEARCHED_BUDGET // per)
    else:
        interval = _stated_budget(line, per)
    if interval is None:
        return None
    lo, hi = interval
    if line.kind is not Kind.CAPACITY and not any(
        _predicts(line, _plan_at(inputs, candidate, b)) for b in step_budgets(max(lo, 0), max(hi, 0), per)
    ):
        return None
    return lo, hi


def describe_budget(lo: int, hi: int) -> str:
    """``0.84 GiB (905,052,160–905,707,519 B)``: a searched budget interval as reported."""
    lo_gib, hi_gib = format_gib(lo), format_gib(hi)
    gib = lo_gib if lo_gib == hi_gib else f"{lo_gib}–{hi_gib}"
    return f"{gib} GiB ({lo:,}–{hi:,} B)"


def search_budget_anywhere(line: KVLine, inputs: Inputs, candidate: Candidate) -> str | None:
    """Without a logged budget: the KV budget under which ``candidate`` prints ``line``, as a
    sentence, or ``None`` when no budget does."""
    found = budget_interval_anywhere(line, inputs, candidate)
    if found is None:
        return None
    return f"a KV budget of {describe_budget(*found)} gives the {line.kind.value} line"


def alternatives(current: Candidate) -> list[Candidate]:
    """Other rules to try, most specific first: each unification policy, each grouping policy,
    both, then each other known vLLM version (with the current policies)."""
    out: list[Candidate] = []
    g0, u0 = current.policies.grouping, current.policies.unification
    for u in UNIFICATION_POLICIES:
        if u != u0:
            out.append(Candidate(current.version, Policies(g0, u)))
    for g in GROUPING_POLICIES:
        if g != g0:
            out.append(Candidate(current.version, Policies(g, u0)))
    for g in GROUPING_POLICIES:
        for u in UNIFICATION_POLICIES:
            if g != g0 and u != u0:
                out.append(Candidate(current.version, Policies(g, u)))
    for v in VERSIONS:
        if v != current.version:
            out.append(Candidate(v, current.policies))
    return out


def _alt_explanation(alt: Candidate, current: Candidate) -> Explanation:
    if alt.version != current.version:
        return Explanation("version", f"vLLM {alt.version}'s rules would explain it", version=alt.version)
    return Explanation(
        "policy", f"the downstream policy {alt.describe()} would explain it", policies=alt.policies, version=alt.version
    )


# ------------------------------------------------------------------------------ checks


@dataclass(frozen=True)
class LineCheck:
    """One logged KV line beside the prediction.

    :param status: ``matches`` | ``differs`` | ``unchecked``.
    :param predicted: the predicted texts of the line's kind.
    :param reason: the most likely reason for a difference (or why it is unchecked).
    """

    line: KVLine
    status: str
    predicted: tuple[str, ...]
    reason: str | None = None
    explanations: tuple[Explanation, ...] = field(default=())


@dataclass(frozen=True)
class Comparison:
    checks: tuple[LineCheck, ...]
    missing: tuple[tuple[Kind, str], ...]
    prediction: Prediction

    @property
    def differs(self) -> bool:
        return any(c.status == "differs" for c in self.checks)


def compare(
    kv_lines: tuple[KVLine, ...],
    inputs: Inputs,
    candidate: Candidate,
    budget: Budget | None,
    no_budget_reason: str = "the log states no KV budget",
    *,
    explain: bool = True,
) -> Comparison:
    """Check every logged KV line against ``candidate``'s prediction and explain differences
    (``explain=False``: statuses only)."""
    prediction = predict(inputs, candidate, budget)
    status: dict[int, str] = {}
    for i, line in enumerate(kv_lines):
        if line.kind.unmodelled is not None:
            status[i] = "refused"
        elif budget is None and line.kind.budget_dependent:
            status[i] = "unchecked"
        else:
            status[i] = "matches" if prediction.has(line) else "differs"
    differing = [i for i, s in status.items() if s == "differs"]
    found: dict[int, list[Explanation]] = {i: [] for i in differing}
    if differing and explain:
        alt_hits: list[tuple[Candidate, set[int]]] = []
        for alt in alternatives(candidate):
            try:
                alt_pred = predict(inputs, alt, budget)
            except InputError:
                continue
            hits = {i for i in differing if alt_pred.has(kv_lines[i])}
            if hits:
                alt_hits.append((alt, hits))
        everywhere = [alt for alt, hits in alt_hits if len(hits) == len(differing)]
        for i in differing:
            for alt in everywhere[:1]:
                found[i].append(_alt_explanation(alt, candidate))
            if budget is not None:
                b = search_budget(kv_lines[i], inputs, candidate, budget)
                if b is not None:
                    found[i].append(b)
            for alt, hits in alt_hits:
                if i in hits and alt not in everywhere[:1]:
                    found[i].append(_alt_explanation(alt, candidate))
    rules = f"vLLM {candidate.version}'s rules" + (
        "" if candidate.policies == Policies() else f" with {candidate.describe()}"
    )
    checks = []
    for i, line in enumerate(kv_lines):
        predicted = prediction.texts.get(line.kind, ())
        if status[i] == "refused":
            checks.append(LineCheck(line, "refused", (), line.kind.unmodelled))
        elif status[i] == "unchecked":
            checks.append(LineCheck(line, "unchecked", predicted, f"{no_budget_reason}: its figures depend on it"))
        elif status[i] == "matches":
            checks.append(LineCheck(line, "matches", predicted))
        else:
            exps = tuple(_first_of_each(found[i]))
            reason = exps[0].text if exps else f"the tree differs from {rules}"
            checks.append(LineCheck(line, "differs", predicted, reason, exps))
    logged_kinds = {line.kind for line in kv_lines}
    missing = tuple(
        (kind, text) for kind, texts in prediction.texts.items() if kind not in logged_kinds for text in texts[:1]
    )
    return Comparison(tuple(checks), missing, prediction)


def _first_of_each(exps: list[Explanation]) -> list[Explanation]:
    """Drop repeats (the same policy found twice)."""
    seen: set[str] = set()
    out = []
    for e in exps:
        if e.text not in seen:
            seen.add(e.text)
            out.append(e)
    return out


def describe_figures(kind: Kind, texts: tuple[str, ...] | list[str]) -> str:
    """The figures of one or more texts of ``kind``, ranges where they vary (for reports)."""
    if not texts:
        return "no such line"
    figs = [kv_figures(kind, t) for t in texts]
    keys = [k for k in figs[0] if all(k in f for f in figs)]

    def value(k: str) -> str:
        vals = [f[k] for f in figs]
        distinct = list(dict.fromkeys(vals))
        if len(distinct) == 1:
            return distinct[0]
        try:
            nums = [float(v.replace(",", "")) for v in distinct]
        except ValueError:
            return " or ".join(distinct)
        lo_v = distinct[nums.index(min(nums))]
        hi_v = distinct[nums.index(max(nums))]
        return f"{lo_v}–{hi_v}"

    return _FORMATS.get(kind, _generic)(dict((k, value(k)) for k in keys))


def _generic(f: dict[str, str]) -> str:
    return ", ".join(f"{k} {v}" for k, v in f.items())


def _capacity(f: dict[str, str]) -> str:
    return f"{f.get('tokens', '?')} tokens, {f.get('concurrency', '?')}x"


def _memory(f: dict[str, str]) -> str:
    if "no_memory" in f:
        return "no available memory"
    est = f", estimated maximum model length {f['estimated']}" if "estimated" in f else ""
    return f"{f.get('needed_gib', '?')} GiB needed of {f.get('available_gib', '?')} GiB{est}"


def _auto_fit(f: dict[str, str]) -> str:
    if "fitted" in f:
        return f"reduced from {f['original']} to {f['fitted']} ({f.get('gib', '?')} GiB)"
    if "full" in f:
        return f"full length {f['full']} fits"
    return "cannot auto-fit"


def _mamba_mode(f: dict[str, str]) -> str:
    """The mode, with the architecture the line names (two models' lines differ in it alone)."""
    mode = "'" + (f.get("mode") or f.get("mode_off") or f.get("mode_fallback") or "?") + "'"
    return f"{mode} for {f['arch']}" if f.get("arch") else mode


_FORMATS: dict[Kind, Callable[[dict[str, str]], str]] = {
    Kind.BACKEND_BLOCK: lambda f: f"{f.get('block')} tokens for {f.get('backend')}",
    Kind.HYBRID_BLOCK: lambda f: f"{f.get('block')} tokens",
    Kind.MAMBA_PADDING: lambda f: f"{f.get('pct')}%",
    Kind.MAMBA_MODE: _mamba_mode,
    Kind.PADDING_LAYERS: lambda f: f"{f.get('layers')} layers ({f.get('pct')}%)",
    Kind.OVERRIDE: lambda f: f"{f.get('computed')} blocks overridden by {f.get('override')}",
    Kind.AUTO_FIT: _auto_fit,
    Kind.CAPACITY: _capacity,
    Kind.NOT_ENOUGH_MEMORY: _memory,
}
