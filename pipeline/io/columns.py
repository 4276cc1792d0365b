"""Which column of an input file each canonical column is read from.

For each canonical column of :data:`pipeline.schema.RECORD_SCHEMA`, in this order:

1. **Mapped** (``[columns]`` in the config, or ``--column CANONICAL=NAME``): read under the
   mapped name only. Several canonical columns may read one file column (``id = "question"``
   and ``question = "question"``).
2. **Its own name**, unless that name is the source of a mapping (``question = "response"``
   says the file's ``response`` column is the question, so the canonical ``response`` is then
   read only where mapped too).
3. **A known layout's name** (:data:`LAYOUT_NAMES`) when the file has neither: RAGAS datasets
   (``user_input``, ``retrieved_contexts`` of RAGAS 0.2 and later; ``answer`` and
   ``ground_truth`` of RAGAS 0.1), as they are and as Hugging Face ``datasets`` exports them.
   A name already read under rule 1 or 2 is not taken again. SQuAD v2's ``answers``
   (:data:`SQUAD_ANSWERS`) gives both ``reference`` and ``references`` where neither is found,
   in the formats that keep its structure (:attr:`ColumnPlan.answers`).

``id`` may be absent from a file: the reader then derives it (:mod:`pipeline.io.derived_ids`).
The other required columns must be found, or the file is refused with a message that says why
(:func:`missing_column_error`). The rules for users: ``docs/input-formats.md``.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from dataclasses import dataclass

from pipeline.config import Config
from pipeline.schema import RECORD_SCHEMA, REQUIRED_COLUMNS, MissingColumnError

#: Names other tools give canonical columns: file column -> (canonical column, layout).
#: RAGAS 0.2+ (``SingleTurnSample``): user_input, retrieved_contexts, response, reference;
#: RAGAS 0.1: question, contexts, answer, ground_truth (the others are canonical names).
LAYOUT_NAMES: dict[str, tuple[str, str]] = {
    "user_input": ("question", "RAGAS 0.2+"),
    "retrieved_contexts": ("contexts", "RAGAS 0.2+"),
    "answer": ("response", "RAGAS 0.1"),
    "ground_truth": ("reference", "RAGAS 0.1"),
}
#: Required columns an input file may lack: ``id`` is then derived from the row's content.
DERIVABLE: tuple[str, ...] = ("id",)
#: SQuAD v2 (Hugging Face ``squad_v2``): ``answers`` = ``{"text": [...], "answer_start": [...]}``
#: (or a plain list of texts) is read as ``reference`` (its first text) and ``references`` (the
#: others). An empty list is SQuAD v2's unanswerable question: ``reference`` is ``""`` with no
#: alternative, which :func:`pipeline.metrics.qa.abstention.is_unanswerable` reads as
#: unanswerable.
SQUAD_ANSWERS = "answers"
SQUAD_LAYOUT = "SQuAD v2"


@dataclass(frozen=True)
class ColumnPlan:
    """How one file's columns become canonical columns.

    ``pairs``: (file column, canonical column) in canonical order; a file column may appear
    more than once. ``layout``: the pairs taken by rule 3, for the log. ``answers``: the file
    column of SQuAD v2 answers that ``reference`` and ``references`` are read from (None: not
    this layout); the readers turn it into those two columns.
    """

    pairs: tuple[tuple[str, str], ...]
    layout: tuple[tuple[str, str], ...] = ()
    answers: str | None = None

    @property
    def sources(self) -> list[str]:
        """The file columns to read, each once, in canonical order."""
        answers = [] if self.answers is None else [self.answers]
        return list(dict.fromkeys([*(src for src, _ in self.pairs), *answers]))

    @property
    def canonical(self) -> list[str]:
        answers = [] if self.answers is None else ["reference", "references"]
        return [name for _, name in self.pairs] + answers


def source_names(config: Config) -> dict[str, str]:
    """Canonical column name -> the name it is read from by rules 1 and 2 (no layout names).

    An unmapped canonical column is read under its own name unless that name is the source of
    another mapping (``[columns] question = "response"`` means the file's ``response`` column is
    the question, so the canonical ``response`` must be mapped too or is missing).
    """
    taken = set(config.columns.values())
    return {
        name: config.columns.get(name, name)
        for name in RECORD_SCHEMA
        if name in config.columns or name not in taken
    }


def plan_columns(
    available: Iterable[str], source: str, config: Config, *, squad_answers: bool = True
) -> ColumnPlan:
    """The :class:`ColumnPlan` of a file with the columns ``available``.

    Raises :class:`~pipeline.schema.MissingColumnError` when a required column other than
    ``id`` is found by none of the rules. ``squad_answers``: whether the file's format keeps
    the structure of SQuAD v2's ``answers`` (JSON and Parquet do; a CSV cell holds a repr).

    >>> plan = plan_columns(["question", "answer", "contexts", "ground_truth"], "r.csv", Config())
    >>> plan.pairs
    (('question', 'question'), ('ground_truth', 'reference'), ('answer', 'response'), \
('contexts', 'contexts'))
    """
    available = list(available)
    present = set(available)
    wanted = source_names(config)
    found = {name: src for name, src in wanted.items() if src in present}
    used = set(found.values()) | set(config.columns.values())
    layout: dict[str, str] = {}
    for src, (name, _) in LAYOUT_NAMES.items():
        if name not in found and name not in config.columns and src in present and src not in used:
            found[name] = layout[name] = src
            used.add(src)
    answers = None
    if (squad_answers and SQUAD_ANSWERS in present and SQUAD_ANSWERS not in used
            and not {"reference", "references"} & (set(found) | set(config.columns))):
        answers = SQUAD_ANSWERS
    for column in REQUIRED_COLUMNS:
        if column not in found and column not in DERIVABLE and not (
            column == "reference" and answers is not None
        ):
            raise missing_column_error(column, source, available, config)
    pairs = tuple((found[name], name) for name in RECORD_SCHEMA if name in found)
    return ColumnPlan(
        pairs=pairs,
        layout=tuple((src, name) for src, name in pairs if layout.get(name) == src),
        answers=answers,
    )


def layout_names(plan: ColumnPlan) -> str:
    """``answer -> response, ground_truth -> reference (RAGAS 0.1)``: the layout names a plan
    reads, for the log."""
    layouts = sorted({LAYOUT_NAMES[src][1] for src, _ in plan.layout}
                     | ({SQUAD_LAYOUT} if plan.answers is not None else set()))
    parts = [f"{src} -> {name}" for src, name in plan.layout]
    if plan.answers is not None:
        parts.append(f"{plan.answers} -> reference, references")
    return f"{', '.join(parts)} ({', '.join(layouts)})"


def missing_column_error(
    column: str, path: str, available: Iterable[str], config: Config
) -> MissingColumnError:
    """The error for a required ``column`` absent from ``path``, saying why it was not found:
    its mapped name is absent, its own name is read as another column, or no name fits."""
    available = list(available)
    error = MissingColumnError(column, path, available)
    present = f"columns present: {', '.join(available) or 'none'}"
    mapped = config.columns.get(column)
    readers = sorted(name for name, src in config.columns.items() if src == column)
    if mapped is not None and mapped != column:
        message = (
            f"required column {column!r} is missing: the config maps it to {mapped!r} "
            f'([columns] {column} = "{mapped}" or --column {column}={mapped}), which is not in '
            f"the file ({present})"
        )
    elif mapped is None and readers and column in available:
        mappings = ", ".join(f'{name} = "{column}"' for name in readers)
        message = (
            f"required column {column!r} is missing: the file's {column!r} column is read as "
            f"{' and '.join(repr(r) for r in readers)} ({mappings}); to read it as {column!r} "
            f'as well, map it too: [columns] {column} = "{column}" or --column {column}={column}'
        )
    else:
        aliases = [src for src, (name, _) in LAYOUT_NAMES.items() if name == column]
        if column == "reference":
            aliases.append(f"{SQUAD_ANSWERS} (SQuAD v2, in JSON, JSON Lines and Parquet)")
        known = f"; also read from: {', '.join(aliases)}" if aliases else ""
        close = difflib.get_close_matches(column, available, n=1, cutoff=0.6)
        hint = f"did you mean {close[0]!r}? " if close else ""
        name = close[0] if close else "NAME"
        message = (
            f"required column {column!r} is missing ({hint}{present}{known}; map a differently "
            f'named column with --column {column}={name} or [columns] {column} = "{name}")'
        )
    error.args = (f"{path}: {message}",)
    return error
