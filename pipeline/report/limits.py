"""How much of a large run the report draws, and the note that says what it left out.

A chart or table with one row, bar, point or line per model, category or slice becomes slow to
draw and unreadable at scale (4 models x 1,000 categories: a 4,000-row heatmap took 21 s and
2.7 GB). The report therefore draws at most :data:`MAX_MODELS` models (those with the most
rows: the ``n`` of ``by_model``, ties in report order) in its charts, its comparisons and its
worst items, at most :data:`MAX_CATEGORIES` categories and scoring categories (those with the
most rows over all models, ties by name), and at most :data:`MAX_COMPARISON_ROWS` rows of model
comparisons. The headline, answer, citation and appendix tables keep every model (one row
each). The per-example charts of the generation section draw at most :data:`MAX_EXAMPLES`
rows per model, its worst ones (:func:`pipeline.report.hotpot_charts.worst_examples`). A
section that left something out says so in a note under it; the views,
``intervals.parquet`` and ``comparisons.parquet`` keep everything (``rag-eval query``).

Every text of the data a table cell shows in full (the worst items' question, reference,
response, unsupported sentence, id and category) is cut after :data:`MAX_TEXT_CHARS`
characters, with a visible marker that says how many were left out (:func:`cut_text`): a
20 MB response would otherwise make a 20 MB page. ``texts.parquet`` keeps the whole text.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import polars as pl

from pipeline.report.data import RunData

#: Models drawn in the charts, the comparisons and the worst items.
MAX_MODELS = 30
#: Categories (and scoring categories) drawn per model.
MAX_CATEGORIES = 30
#: Rows of the model comparisons table.
MAX_COMPARISON_ROWS = 500
#: Rows per model in each per-example chart (the worst ones; a bar group or a heatmap column
#: per row stays readable up to about this many).
MAX_EXAMPLES = 20
#: Characters of one text (question, reference, response, sentence, id, category) a table
#: cell shows; the rest is cut and counted by a marker.
MAX_TEXT_CHARS = 2_000

#: Sections that draw one mark per model (and leave out the models not drawn).
MODEL_SECTIONS = ("distributions", "generation", "noise", "rgb", "grounding", "cost", "profile",
                  "failures", "failure-stages", "comparisons", "run-comparison", "worst")
#: Sections that draw one mark per (model, category) of ``by_model_category``.
CATEGORY_SECTIONS = ("categories", "grounding", "cost", "comparisons", "run-comparison")
#: Sections that draw one mark per scoring category (``by_category``, ``failure_modes``).
SCORING_SECTIONS = ("profile", "failures")


@dataclass(frozen=True)
class Limits:
    """The most models, categories and comparison rows the report draws, the rows per model
    of each per-example chart (``examples``) and the characters of one text a cell shows
    (``text_chars``)."""

    models: int = MAX_MODELS
    categories: int = MAX_CATEGORIES
    comparison_rows: int = MAX_COMPARISON_ROWS
    examples: int = MAX_EXAMPLES
    text_chars: int = MAX_TEXT_CHARS

    def __post_init__(self) -> None:
        for name in ("models", "categories", "comparison_rows", "examples", "text_chars"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"report limit {name} must be an integer >= 1, got {value!r}")


@dataclass(frozen=True)
class Capped:
    """The frames the sections draw, and per section id the notes on what was left out."""

    data: RunData
    notes: dict[str, list[str]]


def cut_text(text: str, limit: int) -> tuple[str, int]:
    """The first ``limit`` characters of ``text`` and the number of characters cut after them.

    >>> cut_text("abcdef", 4), cut_text("abc", 4)
    (('abcd', 2), ('abc', 0))
    """
    return text[:limit], max(0, len(text) - limit)


def cut_marker(more: int) -> str:
    """The text that stands for ``more`` characters cut (empty when none were).

    >>> cut_marker(19_998_000)
    '… [cut: 19,998,000 more characters]'
    >>> cut_marker(1), cut_marker(0)
    ('… [cut: 1 more character]', '')
    """
    if more <= 0:
        return ""
    return f"… [cut: {more:,} more character{'' if more == 1 else 's'}]"


def top(frame: pl.DataFrame, key: str, n: int, order: list | None = None) -> list:
    """The ``n`` values of ``key`` with the most rows (the sum of ``frame["n"]``); ties in
    ``order`` (default: ascending, null last).

    >>> top(pl.DataFrame({"c": ["a", "b", "b", None], "n": [5, 1, 3, 9]}), "c", 2)
    [None, 'a']
    """
    counts = frame.group_by(key).agg(pl.col("n").cast(pl.Int64).sum())
    rank = {v: i for i, v in enumerate(order)} if order is not None else None
    rows = counts.iter_rows()
    if rank is None:
        ranked = sorted(rows, key=lambda r: (-(r[1] or 0), r[0] is None, r[0] if r[0] is not None
                                             else ""))
    else:
        ranked = sorted(rows, key=lambda r: (-(r[1] or 0), rank.get(r[0], len(rank))))
    return [value for value, _ in ranked[:n]]


def _within(column: str, values: list) -> pl.Expr:
    return pl.col(column).is_in(pl.Series(values).implode(), nulls_equal=True)


def cap(data: RunData, limits: Limits = Limits()) -> Capped:
    """``data`` with at most ``limits.models`` models and ``limits.categories`` categories
    and scoring categories in the frames the charts, comparisons and worst items draw."""
    notes: dict[str, list[str]] = {}
    frames: dict[str, pl.DataFrame | tuple | None] = {}

    def note(sections: tuple[str, ...], text: str) -> None:
        for section in sections:
            notes.setdefault(section, []).append(text)

    models = list(data.models)
    if len(models) > limits.models:
        ranked = set(top(data.by_model.select("model", "n"), "model", limits.models, models))
        drawn = [m for m in models if m in ranked]
        frames["models"] = tuple(drawn)
        for name in ("by_model", "by_model_noise", "by_model_category", "by_category",
                     "failure_modes", "failure_stages", "rgb_noise", "rgb_summary",
                     "paired_analysis", "rows",
                     "worst"):
            frames[name] = getattr(data, name).filter(_within("model", drawn))
        if data.comparisons is not None:
            frames["comparisons"] = data.comparisons.filter(
                _within("model_a", drawn) & _within("model_b", drawn)
            )
        note(MODEL_SECTIONS, f"Drawn: the {limits.models:,} models with the most rows of "
             f"{len(models):,}; the other {len(models) - limits.models:,} are left out here "
             "(the headline, answer, citation and appendix tables list every model; the views "
             "and statistics files have them all).")
    by_model_category = frames.get("by_model_category", data.by_model_category)
    assert isinstance(by_model_category, pl.DataFrame)
    categories = by_model_category["category"].n_unique()
    if categories > limits.categories:
        kept = top(by_model_category.select("category", "n"), "category", limits.categories)
        frames["by_model_category"] = by_model_category.filter(_within("category", kept))
        comparisons = frames.get("comparisons", data.comparisons)
        if isinstance(comparisons, pl.DataFrame) and "category" in comparisons.columns:
            frames["comparisons"] = comparisons.filter(
                pl.col("category").is_null() | _within("category", kept)
            )
        note(CATEGORY_SECTIONS, f"Drawn: the {limits.categories:,} categories with the most "
             f"rows of {categories:,}; the other {categories - limits.categories:,} are left "
             "out here (the views and statistics files have them all).")
    for name in ("by_category", "failure_modes"):
        frame = frames.get(name, getattr(data, name))
        assert isinstance(frame, pl.DataFrame)
        scoring = frame["scoring_category"].n_unique() if "scoring_category" in frame.columns else 0
        if scoring > limits.categories:
            kept = top(frame.select("scoring_category", "n"), "scoring_category",
                       limits.categories)
            frames[name] = frame.filter(_within("scoring_category", kept))
            note(("profile",) if name == "by_category" else ("failures",),
                 f"Drawn: the {limits.categories:,} scoring categories with the most rows of "
                 f"{scoring:,}; the other {scoring - limits.categories:,} are left out here "
                 f"(the <code>{name}</code> view has them all).")
    return Capped(dataclasses.replace(data, **frames), notes)  # type: ignore[arg-type]


def capped_diff(diff: pl.DataFrame, capped: Capped, original: RunData) -> pl.DataFrame:
    """The rows of a run diff for the models and categories ``capped`` draws."""
    if capped.data.models != original.models:
        diff = diff.filter(_within("model", list(capped.data.models)))
    if "category" in diff.columns and capped.data.by_model_category is not \
            original.by_model_category:
        kept = capped.data.by_model_category["category"].unique().to_list()
        diff = diff.filter(pl.col("category").is_null() | _within("category", kept))
    return diff


def with_notes(section: str, notes: list[str]) -> str:
    """The HTML of a section with ``notes`` (what it left out) at its end.

    >>> with_notes('<section id="x"><h2>X</h2></section>', ["Drawn: 3 of 5."])
    '<section id="x"><h2>X</h2><p class="note">Drawn: 3 of 5.</p></section>'
    """
    if not notes or not section.endswith("</section>"):
        return section
    lines = "".join(f'<p class="note">{text}</p>' for text in notes)
    return section[: -len("</section>")] + lines + "</section>"


def section_id(section: str) -> str:
    """The id of a section's HTML (``<section id="...">``), or empty."""
    prefix = '<section id="'
    if not section.startswith(prefix):
        return ""
    return section[len(prefix) : section.index('"', len(prefix))]
