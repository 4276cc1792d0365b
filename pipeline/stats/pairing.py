"""Which pairs of models the comparisons hold (:class:`Pairing`): every two models up to
:data:`~pipeline.stats.tables.MAX_ALL_PAIRS` models (``all pairs``); with more, each model and
one baseline: the model named, else the model with the best mean of
:data:`~pipeline.stats.tables.PRIMARY_METRIC` over all its rows in its better direction
(ties: the first by name). A pair's rows are the same under either rule."""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np

from pipeline.metrics.registry import REGISTRY
from pipeline.schema import InputError
from pipeline.stats.coding import _Layout
from pipeline.stats.passes import _Rows
from pipeline.stats.tables import PAIRING_ALL, PAIRING_BASELINE, PRIMARY_METRIC, metric_name


@dataclass(frozen=True)
class Pairing:
    """Which pairs of models the comparisons hold (``pairing`` and ``baseline`` columns)."""

    #: :data:`PAIRING_ALL` or :data:`PAIRING_BASELINE`.
    rule: str
    #: The model every other one is compared with (None: all pairs).
    baseline: str | None
    #: The pairs as model codes ``(a, b)``, ``a < b``, in table order.
    pairs: tuple[tuple[int, int], ...]
    #: Why: the number of models and the limit, and how the baseline was chosen.
    reason: str


def _check_max_all_pairs(max_all_pairs: int) -> None:
    if isinstance(max_all_pairs, bool) or not isinstance(max_all_pairs, int | np.integer) or \
            max_all_pairs < 0:
        raise ValueError(f"max_all_pairs must be an integer >= 0, got {max_all_pairs!r}")


def _primary_metric(layout: _Layout) -> int:
    """The metric (index) whose mean picks the baseline: :data:`PRIMARY_METRIC` if scored,
    else the first with a better direction, else the first."""
    if PRIMARY_METRIC in layout.metrics:
        return layout.metrics.index(PRIMARY_METRIC)
    for j, name in enumerate(layout.metrics):
        if _higher_is_better(name) is not None:
            return j
    return 0


def _higher_is_better(metric: str) -> bool | None:
    """The better direction of a registered metric (None: none, or not registered)."""
    spec = REGISTRY.get(metric)
    return None if spec is None else spec.higher_is_better


def _pairing(source: _Rows, max_all_pairs: int, baseline: str | None) -> Pairing:
    """All pairs of the (non-null) models up to ``max_all_pairs`` models; beyond, each model
    with ``baseline`` (a model name) or with the model of the best mean of the primary metric
    over all its rows (ties: the first by name)."""
    _check_max_all_pairs(max_all_pairs)
    layout = source.layout
    models = layout.values["model"]
    if baseline is not None and baseline not in models:
        shown = ", ".join(repr(m) for m in models[:10]) + (", ..." if len(models) > 10 else "")
        raise InputError(f"baseline model {baseline!r} is not a model of the scores ({shown})")
    if len(models) <= max_all_pairs:
        return Pairing(PAIRING_ALL, None, tuple(itertools.combinations(range(len(models)), 2)),
                       f"{len(models)} models, at most {max_all_pairs}: every two models")
    if baseline is not None:
        best, how = models.index(baseline), "named"
    else:
        j = _primary_metric(layout)
        sums, counts = np.zeros(len(models) + 1), np.zeros(len(models) + 1)
        for codes, values in source.batches(np.arange(layout.size("model"))):
            known = ~np.isnan(values[j])
            sums += np.bincount(codes["model"], weights=np.where(known, values[j], 0.0),
                                minlength=sums.size)
            counts += np.bincount(codes["model"], weights=known.astype(np.float64),
                                  minlength=sums.size)
        with np.errstate(invalid="ignore", divide="ignore"):
            means = sums[:-1] / counts[:-1]
        sign = -1.0 if _higher_is_better(layout.metrics[j]) is False else 1.0
        best = int(np.argmax(np.nan_to_num(sign * means, nan=-np.inf)))
        how = (f"best mean {metric_name(layout.metrics[j])} "
               f"{'(lowest) ' if sign < 0 else ''}{means[best]:.6g}")
    pairs = tuple(sorted((min(best, i), max(best, i)) for i in range(len(models)) if i != best))
    return Pairing(PAIRING_BASELINE, models[best], pairs,
                   f"{len(models)} models, more than {max_all_pairs}: each model against the "
                   f"baseline {models[best]!r} ({how})")
