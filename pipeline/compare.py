"""Run diffs: two result directories joined on (id, model, noise_level, task).

``compare(run_a, run_b)`` gives, per model and slice (all rows, each noise level, category and
RGB task), the change of every mean metric from run A to run B with a paired bootstrap interval
and a p-value (:func:`pipeline.stats.comparison_table`: a slice is keyed by its name and one
typed column per slice column, metrics are named as the views name their means); the items that
regressed, per metric, with their question, reference and both responses (:func:`regressed_items`:
a score or 0/1 flag that fell by more than :data:`DEFAULT_ITEM_DROP` in its better direction);
the items only one run has; and the verdict of a regression gate a scheduler can act on.

Runs whose signatures differ in anything but the package version scored with different settings
and are refused (:class:`IncomparableRunsError`) unless ``force=True``.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType

import polars as pl

from pipeline.io.atomic import write_parquet_atomic
from pipeline.io.layout import SCORES_FILE, TEXTS_FILE
from pipeline.metrics.spec import MEAN_KINDS
from pipeline.metrics.user import scores_catalog
from pipeline.schema import InputError
from pipeline.stats import (
    DEFAULT_RESAMPLES,
    DEFAULT_SEED,
    comparison_table,
    metric_name,
)

log = logging.getLogger(__name__)

#: Columns that identify the same item in two runs (the run label itself may differ).
ITEM_KEY: tuple[str, ...] = ("id", "model", "noise_level", "task")
#: An item regressed when one of its scores or 0/1 flags (a metric with a better direction)
#: fell by more than this in that direction: a flag 1 -> 0, an F1 from 0.33 to 0.25, a
#: ``numeric_accuracy`` from 1 to 0. Small enough to list a changed year or number, large enough
#: to leave out the float noise of embedding scores. ``rag-eval compare --item-drop X`` sets it.
DEFAULT_ITEM_DROP = 0.05
#: Metric families that are no verdict on the answer (tokens, latency): never an item regression.
ITEM_EXCLUDED_FAMILIES = frozenset({"usage"})
#: Texts shown with each regressed item (``response`` of both runs).
ITEM_TEXTS: tuple[str, ...] = ("question", "reference", "response")
#: Default gate: a model's mean may not fall by more than this, with the interval below zero.
DEFAULT_MAX_DROP: Mapping[str, float] = MappingProxyType({"answer_f1": 0.02, "answer_em": 0.02})
#: Signature parts of user-defined metrics: ``metric.NAME:KIND.DIRECTION.IDENTITY``.
USER_PART = "metric."
#: Files ``write_comparison`` writes.
DELTAS_FILE = "deltas.parquet"
REGRESSED_FILE = "regressed_items.parquet"
NEW_FILE = "new_items.parquet"
MISSING_FILE = "missing_items.parquet"


class IncomparableRunsError(InputError):
    """The two runs were scored with different settings."""


@dataclass(frozen=True)
class Gate:
    """When a comparison fails: ``max_drop`` per metric (a model's mean falling by more, with
    its 95% interval entirely below zero) and ``max_regressed_items`` (None: no limit)."""

    max_drop: Mapping[str, float] = field(default_factory=lambda: dict(DEFAULT_MAX_DROP))
    max_regressed_items: int | None = None


@dataclass(frozen=True)
class Comparison:
    """What changed from run A to run B; ``failures`` is empty when the gate passes."""

    deltas: pl.DataFrame
    regressed: pl.DataFrame
    new_items: pl.DataFrame
    missing_items: pl.DataFrame
    failures: tuple[str, ...]
    version_note: str | None
    #: Items (:data:`ITEM_KEY`) both runs scored.
    n_compared: int = 0


def read_scores(run_dir: Path) -> pl.DataFrame:
    path = Path(run_dir) / SCORES_FILE
    if not path.is_file():
        raise InputError(f"{run_dir}: no {SCORES_FILE} (is it the --out of an evaluate run?)")
    return pl.read_parquet(path)


def read_texts(run_dir: Path) -> pl.DataFrame | None:
    """The question, reference and response of each scored row of a run, keyed by ``source``
    and ``row_number`` as its scores; None for a run written without ``texts.parquet``."""
    path = Path(run_dir) / TEXTS_FILE
    if not path.is_file():
        return None
    return pl.read_parquet(path, columns=["source", "row_number", *ITEM_TEXTS])


def _components(signature: str) -> dict[str, str]:
    pairs = (part.partition(":") for part in signature.split("|"))
    return {key: value for key, _, value in pairs}


def _user_definitions(components: list[dict[str, str]]) -> dict[str, set[str]]:
    """The definitions of each user-defined metric (``metric.NAME`` parts) in signatures."""
    found: dict[str, set[str]] = {}
    for parts in components:
        for key, value in parts.items():
            if key.startswith(USER_PART):
                found.setdefault(key[len(USER_PART):], set()).add(value)
    return found


def user_metric_note(comps_a: list[dict[str, str]], comps_b: list[dict[str, str]]) -> str | None:
    """A warning naming the user-defined metrics both runs have but defined differently (their
    deltas compare two definitions), or None.

    >>> print(user_metric_note([{"metric.has_url": "flag.none.sql-1"}],
    ...                        [{"metric.has_url": "flag.none.sql-2"}]))
    user-defined metric(s) defined differently in the two runs: has_url (flag.none.sql-1 vs ...)
    """
    defs_a, defs_b = _user_definitions(comps_a), _user_definitions(comps_b)
    differing = [
        f"{name} ({', '.join(sorted(defs_a[name]))} vs {', '.join(sorted(defs_b[name]))})"
        for name in sorted(set(defs_a) & set(defs_b)) if defs_a[name] != defs_b[name]
    ]
    if not differing:
        return None
    return ("user-defined metric(s) defined differently in the two runs: "
            + "; ".join(differing))


def check_signatures(a: pl.DataFrame, b: pl.DataFrame, *, force: bool) -> str | None:
    """Raise when the runs' settings differ (beyond the version and the user-defined metrics);
    a note when only those differ (a user metric defined differently is warned about: the
    built-in metrics stay comparable)."""
    sig_a = sorted(a["signature"].drop_nulls().unique().to_list())
    sig_b = sorted(b["signature"].drop_nulls().unique().to_list())
    if sig_a == sig_b:
        return None
    comps_a = [_components(s) for s in sig_a]
    comps_b = [_components(s) for s in sig_b]
    user_note = user_metric_note(comps_a, comps_b)
    if user_note:
        log.warning("%s", user_note)
    comps_a = [{k: v for k, v in c.items() if not k.startswith(USER_PART)} for c in comps_a]
    comps_b = [{k: v for k, v in c.items() if not k.startswith(USER_PART)} for c in comps_b]
    settings_a = sorted(str(sorted((k, v) for k, v in c.items() if k != "v")) for c in comps_a)
    settings_b = sorted(str(sorted((k, v) for k, v in c.items() if k != "v")) for c in comps_b)
    if settings_a == settings_b:
        versions_a = {c.get("v") for c in comps_a}
        if versions_a == {c.get("v") for c in comps_b}:
            return user_note  # only user-defined metrics differ (added, removed or redefined)
        note = f"package versions differ: {sig_a} vs {sig_b}"
        log.warning(note)
        return f"{user_note}; {note}" if user_note else note
    keys = sorted({k for c in (*comps_a, *comps_b) for k in c})
    differing = []
    for key in keys:
        values_a = sorted({c.get(key, "") for c in comps_a})
        values_b = sorted({c.get(key, "") for c in comps_b})
        if values_a != values_b:
            differing.append(f"{key}: {values_a} vs {values_b}")
    message = "the runs were scored with different settings: " + "; ".join(differing)
    if not force:
        raise IncomparableRunsError(message + " (pass --force to compare anyway)")
    log.warning("%s (forced)", message)
    return message


def _paired_items(a: pl.DataFrame, b: pl.DataFrame) -> pl.DataFrame:
    return a.join(b, on=list(ITEM_KEY), how="inner", suffix="_b", nulls_equal=True)


def item_metrics(a: pl.DataFrame, b: pl.DataFrame) -> dict[str, bool]:
    """The metrics an item can regress in, each with whether higher is better: the scores and
    0/1 flags both runs have that have a better direction (built-in or user-defined, as the
    signatures declare), not tokens or latency (:data:`ITEM_EXCLUDED_FAMILIES`)."""
    signatures = b["signature"].drop_nulls().unique().to_list() if "signature" in b.columns else []
    catalog = scores_catalog(b.schema, signatures)
    return {
        name: spec.higher_is_better for name, spec in catalog.items()
        if name in a.columns and spec.kind in MEAN_KINDS and spec.higher_is_better is not None
        and spec.family not in ITEM_EXCLUDED_FAMILIES
    }


def regressed_items(a: pl.DataFrame, b: pl.DataFrame, *, item_drop: float = DEFAULT_ITEM_DROP,
                    texts_a: pl.DataFrame | None = None,
                    texts_b: pl.DataFrame | None = None) -> pl.DataFrame:
    """One row per (item, metric) that regressed: the item's key, metric, before, after, drop
    (how far it fell in its better direction, > ``item_drop``), then the question, reference
    and the response of each run (``response_a``, ``response_b``; null without ``texts_*``).

    >>> a = pl.DataFrame({"id": ["q1", "q2"], "model": "m", "noise_level": None, "task": None,
    ...                   "answer_em": [1, 1], "answer_f1": [1.0, 0.5]})
    >>> b = a.with_columns(pl.Series("answer_f1", [0.9, 0.5]))
    >>> regressed_items(a, b).select("id", "metric", "before", "after").rows()
    [('q1', 'answer_f1', 1.0, 0.9)]
    """
    paired = _paired_items(_with_texts(a, texts_a), _with_texts(b, texts_b))
    parts = []
    for metric, higher in item_metrics(a, b).items():
        before = pl.col(metric).cast(pl.Float64)
        after = pl.col(f"{metric}_b").cast(pl.Float64)
        drop = (before - after) if higher else (after - before)
        parts.append(
            paired.filter(drop > item_drop).select(
                *ITEM_KEY,
                pl.lit(metric).alias("metric"),
                before.alias("before"),
                after.alias("after"),
                drop.alias("drop"),
                "question", "reference",
                pl.col("response").alias("response_a"),
                pl.col("response_b"),
            )
        )
    schema = {**{k: a.schema[k] for k in ITEM_KEY}, "metric": pl.String(),
              "before": pl.Float64(), "after": pl.Float64(), "drop": pl.Float64(),
              "question": pl.String(), "reference": pl.String(), "response_a": pl.String(),
              "response_b": pl.String()}
    if not parts:
        return pl.DataFrame(schema=schema)
    return pl.concat(parts).sort(*ITEM_KEY, "metric", nulls_last=True)


def _with_texts(scores: pl.DataFrame, texts: pl.DataFrame | None) -> pl.DataFrame:
    """``scores`` with the :data:`ITEM_TEXTS` of each row (null where unknown)."""
    scores = scores.drop([c for c in ITEM_TEXTS if c in scores.columns])
    if texts is None or not {"source", "row_number"} <= set(scores.columns):
        return scores.with_columns(pl.lit(None, pl.String).alias(c) for c in ITEM_TEXTS)
    return scores.join(texts.unique(["source", "row_number"], keep="first"),
                       on=["source", "row_number"], how="left", nulls_equal=True)


def _only_in(left: pl.DataFrame, right: pl.DataFrame) -> pl.DataFrame:
    keys = left.select(ITEM_KEY).unique()
    return keys.join(right.select(ITEM_KEY).unique(), on=list(ITEM_KEY), how="anti",
                     nulls_equal=True).sort(*ITEM_KEY, nulls_last=True)


def common_items(a: pl.DataFrame, b: pl.DataFrame) -> int:
    """How many items (:data:`ITEM_KEY`) both runs scored: the pairs a comparison compares."""
    keys = list(ITEM_KEY)
    return a.select(keys).unique().join(
        b.select(keys).unique(), on=keys, how="inner", nulls_equal=True
    ).height


def check_common_items(a: pl.DataFrame, b: pl.DataFrame) -> int:
    """The number of common items; :class:`IncomparableRunsError` when there is none, saying
    how items are matched and how ids are derived, the usual reason two runs of the same data
    share none."""
    shared = common_items(a, b)
    if shared == 0:
        n_a = a.select(list(ITEM_KEY)).unique().height
        n_b = b.select(list(ITEM_KEY)).unique().height
        raise IncomparableRunsError(
            f"the two runs have no item in common (A: {n_a} items, B: {n_b}), so nothing can be "
            f"compared; items are matched on ({', '.join(ITEM_KEY)}). An input without an id "
            "column gets ids derived from each row's question and reference "
            "(docs/input-formats.md#derived-ids), and a layout that maps another column to id "
            "gives other ids: give both runs the same id column"
        )
    return shared


def slice_deltas(a: pl.DataFrame, b: pl.DataFrame, *, resamples: int, seed: int) -> pl.DataFrame:
    """Per model, slice and metric: mean in A and B, delta = B - A, its paired 95% interval.

    Columns: ``model``, ``slice`` and the typed slice columns of
    :func:`pipeline.stats.comparison_table` (``noise_level``, ``category``, ``question_type``,
    ``task``: null where the slice does not use them), ``metric``, ``n_pairs``, ``mean_a``,
    ``mean_b``, ``delta``, ``ci_low``, ``ci_high``, ``test``, ``p_value``, ``p_adjusted``.
    """
    frames = []
    for model in sorted(set(a["model"].drop_nulls()) & set(b["model"].drop_nulls())):
        both = pl.concat(
            [
                a.filter(pl.col("model") == model).with_columns(pl.lit("a").alias("model")),
                b.filter(pl.col("model") == model).with_columns(pl.lit("b").alias("model")),
            ],
            how="diagonal_relaxed",
        ).with_columns(pl.lit(None, pl.String).alias("run"))
        table = comparison_table(both, resamples=resamples, seed=seed)
        keys = table.columns[table.columns.index("slice") + 1 : table.columns.index("metric")]
        frames.append(
            table.select(
                pl.lit(model).alias("model"),
                "slice",
                *keys,
                "metric",
                "n_pairs",
                pl.col("mean_a"),
                pl.col("mean_b"),
                (-pl.col("diff")).alias("delta"),
                (-pl.col("ci_high")).alias("ci_low"),
                (-pl.col("ci_low")).alias("ci_high"),
                "test",
                "p_value",
                "p_adjusted",
            )
        )
    if not frames:
        raise InputError("the two runs have no model in common")
    return pl.concat(frames)


def gate_failures(deltas: pl.DataFrame, regressed: pl.DataFrame, gate: Gate) -> tuple[str, ...]:
    """Human-readable reasons the gate fails (empty: it passes).

    A metric of ``gate.max_drop`` may be named as its column (``abstained``) or as the deltas
    name its mean (``abstain_rate``, :func:`pipeline.stats.metric_name`).
    """
    failures: list[str] = []
    overall = deltas.filter(pl.col("slice") == "all")
    for metric, limit in sorted(gate.max_drop.items()):
        dropped = overall.filter(
            (pl.col("metric") == metric_name(metric)) & (pl.col("delta") < -limit)
            & (pl.col("ci_high") < 0)
        ).sort("model")
        failures.extend(
            f"{model}: {metric} fell by {-delta:.4f} (more than {limit:g}; 95% CI "
            f"[{low:.4f}, {high:.4f}])"
            for model, delta, low, high in dropped.select(
                "model", "delta", "ci_low", "ci_high"
            ).rows()
        )
    limit_items = gate.max_regressed_items
    if limit_items is not None:
        n_items = regressed.select(ITEM_KEY).unique().height
        if n_items > limit_items:
            failures.append(f"{n_items} items regressed (more than {limit_items})")
    return tuple(failures)


def compare(
    run_a: Path,
    run_b: Path,
    *,
    gate: Gate | None = None,
    force: bool = False,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
    item_drop: float = DEFAULT_ITEM_DROP,
) -> Comparison:
    """Compare run B against run A (the baseline); an item regressed in a metric that fell by
    more than ``item_drop`` (:func:`regressed_items`).

    Refused (:class:`IncomparableRunsError`) when the runs have no item in common: a gate over
    nothing would pass by accident.
    """
    a, b = read_scores(run_a), read_scores(run_b)
    n_compared = check_common_items(a, b)
    note = check_signatures(a, b, force=force)
    deltas = slice_deltas(a, b, resamples=resamples, seed=seed)
    regressed = regressed_items(a, b, item_drop=item_drop, texts_a=read_texts(run_a),
                                texts_b=read_texts(run_b))
    return Comparison(
        deltas=deltas,
        regressed=regressed,
        new_items=_only_in(b, a),
        missing_items=_only_in(a, b),
        failures=gate_failures(deltas, regressed, gate or Gate()),
        version_note=note,
        n_compared=n_compared,
    )


def write_comparison(comparison: Comparison, out_dir: Path) -> None:
    """The four tables of ``comparison`` as Parquet files in ``out_dir`` (atomically)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    write_parquet_atomic(comparison.deltas, out_dir / DELTAS_FILE)
    write_parquet_atomic(comparison.regressed, out_dir / REGRESSED_FILE)
    write_parquet_atomic(comparison.new_items, out_dir / NEW_FILE)
    write_parquet_atomic(comparison.missing_items, out_dir / MISSING_FILE)
