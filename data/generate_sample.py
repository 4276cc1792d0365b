"""Generate the bundled sample: a synthetic multi-model RAG evaluation set in the canonical schema.

Grain of the output: one row per (question ``id``, ``model``, ``run``, ``noise_level``), with every
column of :data:`pipeline.schema.RECORD_SCHEMA` in its canonical dtype.

Everything is invented here, from templates over a small fictional knowledge base (provinces,
cities, rivers, inventors, compounds, medicines, recipes, festivals); nothing is copied from any
data set. All randomness comes from ``numpy.random.default_rng(seed)`` (split into independent
streams for the knowledge base, the question plan, retrieval, answers and usage, so changing how
one is drawn leaves the others alone); nothing depends on hash seeds or set order. The same seed
gives the same frame on any machine.

How the data behaves (so the metrics have something to find):

* ``noise_level`` is the share of a question's 4–6 ``contexts`` that are noise passages (rounded to
  whole passages): look-alike distractors that suggest a wrong answer, and off-topic passages.
  Noise replaces on-topic passages first, then gold passages beyond the first, so an answerable
  question always keeps one gold passage. Contexts depend on (question, noise level) only, so the
  three models see the same retrieval.
* Each (question, model) has one latent difficulty draw shared by all noise levels (and correlated
  across models), compared with a model's accuracy at that noise level. Quality therefore falls
  monotonically with noise for every question, and a stronger model is right more often, cites
  gold passages more precisely and abstains on unanswerable questions more often. Phrasing
  choices are replayed from one stream per (question, model), so a response changes from one
  noise level to the next only where its outcome changes.
* Answers vary so that exact match and F1 disagree: the bare answer (with casing, punctuation and
  article variants), the answer inside a sentence, an alias, partly right answers, wrong answers
  taken from a distractor passage, wrong abstentions (more at high noise) and a few empty strings.
  ``citations`` is null on about 30 % of rows; elsewhere it lists the ``[n]`` markers of the text.
* The weakest model sometimes answers "I don't know [2]": an abstention that cites a passage.
"""

from __future__ import annotations

import argparse
import logging
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import polars as pl

from pipeline.config import DEFAULT_ABSTENTION_REFERENCE, DEFAULT_INSUFFICIENT_CONTEXT_REFERENCE
from pipeline.io.atomic import write_parquet_atomic
from pipeline.schema import RECORD_SCHEMA

log = logging.getLogger("generate_sample")

DEFAULT_SEED = 0
DEFAULT_OUT = Path("data/sample/records.parquet")
RUN = "2026-11-20"
NOISE_LEVELS: tuple[float, ...] = (0.0, 0.2, 0.4, 0.6, 0.8)
CATEGORIES: tuple[str, ...] = ("Factual", "Explanatory", "Instructional", "Creative", "Sensitive")
QUESTIONS_PER_CATEGORY = 22
#: Unanswerable questions per category (9 of 110, about 8 %).
IMPOSSIBLE_PER_CATEGORY: tuple[int, ...] = (2, 2, 2, 1, 2)
#: Categories that get one question whose reference is the insufficient-context token.
INSUFFICIENT_CATEGORIES: tuple[str, ...] = ("Factual", "Instructional", "Sensitive")
CONTEXTS_RANGE = (4, 6)
#: Share of questions with two gold passages (the others have one).
TWO_GOLD_SHARE = 0.4
#: Share of questions with aliases whose rows carry a ``references`` list.
REFERENCES_SHARE = 0.6
#: Share of rows whose ``citations`` column is null (markers must be parsed from the text).
NULL_CITATIONS_SHARE = 0.3
#: Share of failed answers that come back as an empty string.
EMPTY_SHARE = 0.04
#: Draws allowed per item when rejecting noise passages that would leak the answer.
MAX_ATTEMPTS = 1000
#: Tokens of the fixed instruction around the question and passages, and per numbered passage.
INSTRUCTION_TOKENS = 52
PASSAGE_OVERHEAD_TOKENS = 5

ABSTENTION_REFERENCE = DEFAULT_ABSTENTION_REFERENCE
INSUFFICIENT_REFERENCE = DEFAULT_INSUFFICIENT_CONTEXT_REFERENCE

#: Ways of declining to answer; weights per model live in :class:`ModelProfile`.
ABSTENTIONS: tuple[str, ...] = (
    ABSTENTION_REFERENCE,
    "I don't know.",
    "I can not answer the question because of the insufficient information in documents",
    INSUFFICIENT_REFERENCE,
    "The documents do not mention this.",
    "I do not have enough information to answer that.",
)
#: Ways of flagging that the retrieved passages do not cover the question.
INSUFFICIENT_DETECTIONS: tuple[str, ...] = (
    INSUFFICIENT_REFERENCE,
    "Insufficient context.",
    "The provided context does not say.",
    "I don't have enough information to answer this.",
)


@dataclass(frozen=True)
class ModelProfile:
    """How one synthetic model behaves; probabilities are at noise level 0 unless stated."""

    name: str
    accuracy: float  # P(correct answer) on an answerable question
    noise_sensitivity: float  # accuracy is multiplied by (1 - noise_sensitivity * noise_level)
    partial_rate: float  # P(partially right answer), taken from just above the accuracy
    cite_precision: float  # P(correct answer cites exactly the gold passages)
    abstain_skill: float  # P(abstaining on an unanswerable question)
    false_abstain: float  # P(abstaining | failed answerable question), + noise_level / 3
    idk_cite_rate: float  # P(an abstention is "I don't know [n]")
    terse_rate: float  # P(a correct answer is the bare answer without citation markers)
    abstention_weights: tuple[float, ...]  # over ABSTENTIONS
    tokenizer_factor: float  # tokens per word relative to the reference tokenizer
    latency_base_ms: float
    latency_per_prompt_token_ms: float
    latency_per_completion_token_ms: float


MODELS: tuple[ModelProfile, ...] = (
    ModelProfile(
        name="atlas-7b", accuracy=0.62, noise_sensitivity=0.6, partial_rate=0.12,
        cite_precision=0.55, abstain_skill=0.5, false_abstain=0.12, idk_cite_rate=0.15,
        terse_rate=0.15, abstention_weights=(0.15, 0.4, 0.1, 0.1, 0.1, 0.15),
        tokenizer_factor=1.0, latency_base_ms=140.0, latency_per_prompt_token_ms=0.04,
        latency_per_completion_token_ms=11.0,
    ),
    ModelProfile(
        name="borealis-13b", accuracy=0.75, noise_sensitivity=0.55, partial_rate=0.1,
        cite_precision=0.75, abstain_skill=0.72, false_abstain=0.15, idk_cite_rate=0.0,
        terse_rate=0.25, abstention_weights=(0.3, 0.2, 0.2, 0.1, 0.1, 0.1),
        tokenizer_factor=1.06, latency_base_ms=210.0, latency_per_prompt_token_ms=0.07,
        latency_per_completion_token_ms=17.0,
    ),
    ModelProfile(
        name="cirrus-70b", accuracy=0.9, noise_sensitivity=0.5, partial_rate=0.07,
        cite_precision=0.9, abstain_skill=0.95, false_abstain=0.2, idk_cite_rate=0.0,
        terse_rate=0.35, abstention_weights=(0.45, 0.1, 0.2, 0.1, 0.1, 0.05),
        tokenizer_factor=0.95, latency_base_ms=380.0, latency_per_prompt_token_ms=0.15,
        latency_per_completion_token_ms=34.0,
    ),
)


# ---------------------------------------------------------------------------------------------
# The invented knowledge base
# ---------------------------------------------------------------------------------------------

_ONSETS = (
    "Vel", "Dar", "Quel", "Tar", "Har", "Mor", "Ost", "Bren", "Cal", "Fen", "Gal", "Ith", "Kor",
    "Lun", "Nes", "Pell", "Rav", "Sel", "Thal", "Ul", "Wyn", "Yar", "Zan", "Ebb", "Orl", "Sken",
    "Vash", "Drum",
)
_CITY_ENDINGS = ("oria", "wick", "ford", "holm", "stead", "gate", "ira", "ost", "enna", "by",
                 "mouth", "ton")
_REGION_ENDINGS = ("moor", "mark", "dale", "reach", "mere", "land", "vale", "fell")
_RIVER_ENDINGS = ("in", "a", "is", "ow", "uen", "ar", "et")
_FIRST_NAMES = ("Elsa", "Tomas", "Ines", "Corin", "Maren", "Oskar", "Lidia", "Ansel", "Petra",
                "Jorund", "Saskia", "Emeric", "Ylva", "Bastian", "Odile", "Ruben")
_SURNAME_STEMS = ("Varn", "Hollen", "Strand", "Kessel", "Morrow", "Quill", "Brandt", "Ashen",
                  "Lind", "Torv", "Wessel", "Fair")
_SURNAME_ENDINGS = ("holt", "berg", "wick", "ley", "mark", "stone", "by", "gaard")
_COMPOUND_STEMS = ("zen", "kal", "mor", "vex", "ost", "tral", "pyr", "quin", "dex", "sol")
_COMPOUND_MIDDLES = ("tri", "vo", "ba", "cy", "lo", "ne", "ra")
_COMPOUND_ENDINGS = ("late", "rin", "ide", "ol", "ane", "ium", "ite")
_DRUG_ENDINGS = ("vorin", "zamol", "tadine", "lexin", "marol", "dipine")
_DEVICE_ADJECTIVES = ("tidal", "brass", "wind", "echo", "salt", "mirror", "clockwork", "lantern")
_DEVICE_NOUNS = ("loom", "compass", "kiln", "press", "sextant", "pump", "telegraph", "harp",
                 "clock", "barometer", "lathe")
_DISH_NOUNS = ("honey loaf", "barley cake", "fish pie", "plum tart", "nut bread", "rye flatbread",
               "onion pie", "seed cake")
_FESTIVAL_WORDS = ("Lantern", "Tide", "Harvest", "Ember", "Kite", "Frost", "Bell", "Salt")
_CROPS = ("blue barley", "marsh rye", "star oats", "red millet", "winter flax", "bitter spelt")
_INGREDIENTS = ("rye flour", "honey", "butter", "dried plums", "hazelnuts", "sea salt",
                "caraway seeds", "goat cheese")
_INDUSTRIES = ("sheep farming", "slate quarrying", "glassmaking", "river trade", "timber",
               "cheese making", "boatbuilding", "wool weaving")
_LANDMARKS = ("watermill", "signal tower", "covered bridge", "salt warehouse", "bell foundry",
              "customs house")
_MONTHS = ("October", "November", "December", "January", "March", "April", "June", "August")
_WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday")
_TRADES = ("clockmaker", "shipwright", "glassblower", "surveyor", "blacksmith", "organ builder")


def _mentions(text: str, value: str) -> bool:
    """Whether ``value`` occurs in ``text`` as whole words, ignoring case."""
    pattern = r"(?<!\w)" + re.escape(value.lower()) + r"(?!\w)"
    return re.search(pattern, text.lower()) is not None


def _slug(name: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")


class KnowledgeBase:
    """Pools of invented names plus the random draws that fill the templates.

    Main entities are taken without repetition (so every question is distinct); distractors and
    background passages may reuse any other entity of the pool.
    """

    def __init__(self, rng: np.random.Generator) -> None:
        self.rng = rng
        self._used: list[str] = []
        self.pools: dict[str, list[str]] = {
            "city": self._names(60, lambda: self.pick(_ONSETS) + self.pick(_CITY_ENDINGS)),
            "region": self._names(36, lambda: self.pick(_ONSETS) + self.pick(_REGION_ENDINGS)),
            "river": self._names(24, lambda: self.pick(_ONSETS) + self.pick(_RIVER_ENDINGS)),
            "person": self._names(
                36,
                lambda: f"{self.pick(_FIRST_NAMES)} "
                f"{self.pick(_SURNAME_STEMS)}{self.pick(_SURNAME_ENDINGS)}",
            ),
            "device": self._names(
                30, lambda: f"{self.pick(_DEVICE_ADJECTIVES)} {self.pick(_DEVICE_NOUNS)}"
            ),
            "compound": self._names(
                30,
                lambda: self.pick(_COMPOUND_STEMS) + self.pick(_COMPOUND_MIDDLES)
                + self.pick(_COMPOUND_ENDINGS),
            ),
            "drug": self._names(
                20, lambda: (self.pick(_COMPOUND_STEMS) + self.pick(_DRUG_ENDINGS)).capitalize()
            ),
        }
        cities = self.pools["city"]
        self.pools["dish"] = self._names(
            30, lambda: f"{self.pick(cities)} {self.pick(_DISH_NOUNS)}"
        )
        self.pools["festival"] = self._names(
            16, lambda: f"{self.pick(cities)} {self.pick(_FESTIVAL_WORDS)} Festival"
        )
        self._next = {kind: 0 for kind in self.pools}

    def pick(self, options: Sequence[str]) -> str:
        return options[int(self.rng.integers(len(options)))]

    def pick_distinct(self, options: Sequence[str], k: int) -> list[str]:
        return [options[int(i)] for i in self.rng.choice(len(options), size=k, replace=False)]

    def integer(self, low: int, high: int, step: int = 1) -> int:
        """A uniform draw from ``range(low, high + 1, step)``."""
        return low + step * int(self.rng.integers((high - low) // step + 1))

    def year(self) -> int:
        return self.integer(1420, 1895)

    def _names(self, k: int, make: Callable[[], str]) -> list[str]:
        names: list[str] = []
        while len(names) < k:
            name = make()
            if name not in self._used:
                self._used.append(name)
                names.append(name)
        return names

    def take(self, kind: str) -> str:
        """The next unused entity of ``kind``: each main entity appears in one question only."""
        name = self.pools[kind][self._next[kind]]
        self._next[kind] += 1
        return name

    def other(self, kind: str, *exclude: str) -> str:
        """Any entity of ``kind`` except ``exclude`` (distractors and background)."""
        return self.pick([n for n in self.pools[kind] if n not in exclude])

    def value(self, draw: Callable[[], str], *exclude: str) -> str:
        """A draw of ``draw()`` that differs from every value in ``exclude``."""
        while True:
            candidate = draw()
            if candidate not in exclude:
                return candidate

    def background(self, kind: str, name: str) -> list[str]:
        """On-topic passages about ``name`` that state none of the asked facts."""
        if kind in ("region", "city"):
            a, b = self.pick_distinct(_INDUSTRIES, 2)
            return [
                f"{name} has a population of roughly {self.integer(8, 400) * 1000:,} people.",
                f"The economy of {name} rests on {a} and {b}.",
                f"Winters in {name} are {self.pick(('mild', 'harsh', 'wet', 'windy'))}, and the "
                f"first snow usually falls in {self.pick(_MONTHS)}.",
                f"Visitors to {name} often stop at the old {self.pick(_LANDMARKS)}.",
                f"A weekly market is held in {name} every {self.pick(_WEEKDAYS)}.",
                f"{name} is linked to the coast by a narrow-gauge railway opened in {self.year()}.",
            ]
        if kind == "river":
            return [
                f"The {name} River is crossed by {self.integer(3, 19)} stone bridges.",
                f"Otters and grey herons are common along the lower {name}.",
                f"Fishermen on the {name} catch mostly "
                f"{self.pick(('eel', 'grayling', 'perch', 'pike'))}.",
                f"Barges carried {self.pick(_INDUSTRIES[1:3])} products down the {name} for "
                "centuries.",
            ]
        if kind == "person":
            return [
                f"{name} was born in {self.other('city')} and trained as a {self.pick(_TRADES)}.",
                f"{name} corresponded for years with the astronomer {self.other('person', name)}.",
                f"Late in life, {name} taught mechanics at the academy in {self.other('city')}.",
                f"{name} held {self.integer(2, 40)} patents at the time of death.",
            ]
        if kind == "device":
            return [
                f"A restored {name} is on display in the museum of {self.other('city')}.",
                f"The {name} relies on a system of counterweights and pulleys.",
                f"Early models of the {name} were made almost entirely of oak.",
                f"Only {self.integer(3, 60)} original examples of the {name} survive today.",
            ]
        if kind == "compound":
            title = name.capitalize()
            return [
                f"{title} dissolves in alcohol but not in water.",
                f"{title} has a faint smell of {self.pick(('cloves', 'pine resin', 'vinegar'))}.",
                f"Small amounts of {name} are used in the dye industry.",
                f"{title} was first isolated from "
                f"{self.pick(('peat bogs', 'sea kelp', 'pine tar'))} in {self.year()}.",
            ]
        if kind == "drug":
            return [
                f"{name} is prescribed for "
                f"{self.pick(('chronic headaches', 'joint pain', 'seasonal allergies'))}.",
                f"{name} is taken as {self.pick(('tablets', 'an oral syrup', 'capsules'))}.",
                f"Common side effects of {name} include "
                f"{self.pick(('drowsiness', 'a dry mouth', 'mild nausea'))}.",
                f"{name} was approved in {self.other('region')} after a three-year trial.",
            ]
        if kind == "dish":
            return [
                f"{name.capitalize()} is traditionally served at "
                f"{self.pick(('weddings', 'midwinter', 'harvest suppers'))}.",
                f"Many bakers add a pinch of {self.pick(('cardamom', 'fennel', 'nutmeg'))} to "
                f"their {name}.",
                f"{name.capitalize()} keeps for up to {self.integer(2, 9)} days wrapped in linen.",
                f"The recipe for {name} was first printed in a household almanac.",
            ]
        if kind == "festival":
            return [
                f"The {name} takes place every {self.pick(_MONTHS)}.",
                f"Thousands of visitors attend the {name} each year.",
                f"During the {name}, the streets are hung with "
                f"{self.pick(('paper lanterns', 'green ribbons', 'painted oars'))}.",
                f"The {name} ends with a procession to the harbour.",
            ]
        raise ValueError(f"no background templates for {kind!r}")

    def off_topic(self) -> str:
        """A passage about a random entity of a random kind: noise unrelated to the question."""
        kind = self.pick(tuple(self.pools))
        return self.pick(self.background(kind, self.other(kind)))


@dataclass(frozen=True)
class Item:
    """One question with everything needed to retrieve passages for it and answer it."""

    category: str
    question: str
    answer: str
    aliases: tuple[str, ...]
    gold: tuple[str, ...]  # passages that state the answer (two phrasings)
    related: tuple[str, ...]  # on-topic passages without the answer
    distractors: tuple[tuple[str, str], ...]  # (passage, the wrong answer it suggests)
    off_topic: tuple[str, ...]
    statements: tuple[str, ...]  # answer sentences with a "{}" slot
    partials: tuple[str, ...]  # partially right answers
    doc_id: str


def _item(
    kb: KnowledgeBase, category: str, question: str, answer: str, *,
    aliases: Sequence[str] = (), gold: Sequence[str], related: Sequence[str],
    distractor: Callable[[], tuple[str, str]], statements: Sequence[str],
    partials: Sequence[str], doc: str,
) -> Item:
    """Assemble an item; drop passages that would leak the answer outside the gold ones."""
    answers = (answer, *aliases)
    if not all(_mentions(p, answer) for p in gold):
        raise RuntimeError(f"a gold passage of {question!r} lacks the answer {answer!r}")

    def clean(passage: str) -> bool:
        return not any(_mentions(passage, a) for a in answers)

    distractors: list[tuple[str, str]] = []
    off_topic: list[str] = []
    for _ in range(MAX_ATTEMPTS):
        if len(distractors) < 6:
            passage, wrong = distractor()
            if clean(passage) and wrong != answer and passage not in [p for p, _ in distractors]:
                distractors.append((passage, wrong))
        elif len(off_topic) < 3:
            passage = kb.off_topic()
            if clean(passage) and passage not in off_topic:
                off_topic.append(passage)
        else:
            break
    else:
        raise RuntimeError(f"could not draw enough clean noise passages for {question!r}")
    kept = [p for p in related if clean(p)]
    if len(kept) < CONTEXTS_RANGE[1]:
        raise RuntimeError(f"too few on-topic passages without the answer for {question!r}")
    return Item(
        category=category, question=question, answer=answer, aliases=tuple(aliases),
        gold=tuple(gold), related=tuple(kept[: CONTEXTS_RANGE[1]]),
        distractors=tuple(distractors), off_topic=tuple(off_topic),
        statements=tuple(statements), partials=tuple(partials), doc_id=f"kb-{_slug(doc)}",
    )


# Question families: one function per template, each returning an Item about fresh entities.

def _capital(kb: KnowledgeBase) -> Item:
    region, city, river = kb.take("region"), kb.take("city"), kb.other("river")

    def distractor() -> tuple[str, str]:
        wrong = kb.other("city", city)
        passage = kb.pick((
            f"The capital of the province of {kb.other('region', region)} is {wrong}.",
            f"{wrong} is the largest market town in {region}, although it is not the capital.",
            f"Until {kb.year()}, the province of {region} was governed from {wrong}.",
        ))
        return passage, wrong

    return _item(
        kb, "Factual", f"What is the capital of the province of {region}?", city,
        aliases=(f"the city of {city}",),
        gold=(f"The province of {region} is governed from its capital, {city}, which lies on the "
              f"{river} River.",
              f"Since {kb.year()}, the provincial assembly of {region} has met in {city}."),
        related=kb.background("region", region) + kb.background("river", river),
        distractor=distractor,
        statements=(f"The capital of {region} is {{}}.", f"{region} is governed from {{}}.",
                    "The provincial capital is {}."),
        partials=(f"the {river} valley",),
        doc=region,
    )


def _founding_year(kb: KnowledgeBase) -> Item:
    city, region = kb.take("city"), kb.other("region")
    year = kb.year()

    def distractor() -> tuple[str, str]:
        wrong = str(kb.value(kb.year, year))
        passage = kb.pick((
            f"{kb.other('city', city)} was founded in {wrong} by fishermen from the coast.",
            f"The first stone church of {city} was consecrated in {wrong}.",
            f"{city} received its market charter in {wrong}.",
        ))
        return passage, wrong

    return _item(
        kb, "Factual", f"In which year was {city} founded?", str(year),
        gold=(f"{city} was founded in {year} by settlers from {region}.",
              f"Records in the town hall date the founding of {city} to the year {year}."),
        related=kb.background("city", city) + kb.background("region", region),
        distractor=distractor,
        statements=(f"{city} was founded in {{}}.", "It was founded in {}."),
        partials=(f"the {year // 10 * 10}s", f"around {year + 10}"),
        doc=city,
    )


def _inventor(kb: KnowledgeBase) -> Item:
    device, person = kb.take("device"), kb.take("person")
    surname = person.split()[1]

    def distractor() -> tuple[str, str]:
        wrong = kb.other("person", person)
        passage = kb.pick((
            f"The {kb.other('device', device)} was invented by {wrong} in {kb.year()}.",
            f"{wrong} improved the gearing of the {device} decades after it first appeared.",
            f"Many people wrongly credit {wrong} with the invention of the {device}.",
        ))
        return passage, wrong

    return _item(
        kb, "Factual", f"Who invented the {device}?", person, aliases=(surname,),
        gold=(f"The {device} was invented by {person} in {kb.year()}.",
              f"{person} built the first working {device} in a workshop in {kb.other('city')}."),
        related=kb.background("device", device) + kb.background("city", kb.other("city")),
        distractor=distractor,
        statements=(f"The {device} was invented by {{}}.", "It was invented by {}."),
        partials=(f"{person.split()[0]} {kb.pick(_SURNAME_STEMS)}{kb.pick(_SURNAME_ENDINGS)}",
                  f"the {kb.pick(_TRADES)} {person.split()[0]}"),
        doc=device,
    )


def _river_length(kb: KnowledgeBase) -> Item:
    river, region = kb.take("river"), kb.other("region")
    length = kb.integer(60, 1400, 10)
    answer = f"{length} kilometres"

    def distractor() -> tuple[str, str]:
        wrong = f"{kb.value(lambda: kb.integer(60, 1400, 10), length)} kilometres"
        passage = kb.pick((
            f"The {kb.other('river', river)} River is {wrong} long.",
            f"The canal that joins the {river} to the sea is {wrong} long.",
            f"A towpath follows the {river} for {wrong}.",
        ))
        return passage, wrong

    return _item(
        kb, "Factual", f"How long is the {river} River?", answer, aliases=(f"{length} km",),
        gold=(f"The {river} River runs for {length} kilometres from the hills of {region} to the "
              "sea.",
              f"At {length} kilometres, the {river} is the longest river in {region}."),
        related=kb.background("river", river) + kb.background("region", region),
        distractor=distractor,
        statements=(f"The {river} River is {{}} long.", "It is {} long."),
        partials=(str(length), f"about {length + 50} kilometres"),
        doc=river,
    )


def _melting_point(kb: KnowledgeBase) -> Item:
    compound = kb.take("compound")
    temperature = kb.integer(40, 390)
    answer = f"{temperature} degrees Celsius"

    def distractor() -> tuple[str, str]:
        wrong = f"{kb.value(lambda: kb.integer(40, 390), temperature)} degrees Celsius"
        passage = kb.pick((
            f"{kb.other('compound', compound).capitalize()} melts at {wrong}.",
            f"{compound.capitalize()} begins to give off fumes at {wrong}.",
            f"Solutions of {compound} boil at {wrong}.",
        ))
        return passage, wrong

    return _item(
        kb, "Factual", f"At what temperature does {compound} melt?", answer,
        aliases=(f"{temperature} °C",),
        gold=(f"{compound.capitalize()} is a pale crystalline solid that melts at {answer}.",
              f"Pure {compound} turns liquid at {answer}."),
        related=kb.background("compound", compound) + kb.background("compound", compound),
        distractor=distractor,
        statements=(f"{compound.capitalize()} melts at {{}}.", "Its melting point is {}."),
        partials=(f"{temperature} degrees", f"{temperature} degrees Fahrenheit"),
        doc=compound,
    )


# Explanatory: (cause, a partially right paraphrase) pairs.
_FREEZE_CAUSES = (
    ("it is fed by glacial meltwater", "because of the cold water"),
    ("it flows slowly through shallow marshes", "because it is shallow"),
    ("its water carries almost no salt", "because of the salt"),
    ("it runs through a deep, shaded valley", "because the valley is deep"),
    ("cold winds blow down from the northern plateau", "because of the wind"),
    ("its springs rise high in the mountains", "because of the mountains"),
)
_HARBOUR_CAUSES = (
    ("the old bay silted up", "because of the bay"),
    ("winter storms kept wrecking the old piers", "because of the weather"),
    ("the river changed its course", "because of the river"),
    ("larger grain ships could not enter the old bay", "because the ships were larger"),
    ("the old quay was sinking into the marsh", "because of the marsh"),
)
_DARK_GLASS_CAUSES = (
    ("it breaks down in sunlight", "because of the sun"),
    ("light turns it into a toxic vapour", "because it is toxic"),
    ("it loses its colour when exposed to light", "because of its colour"),
    ("light makes it react with the air", "because it reacts"),
)
_SOWING_CAUSES = (
    ("its roots protect the soil from winter erosion", "to protect the soil"),
    ("the seed needs a long cold period to sprout", "because of the cold"),
    ("spring floods would wash the young plants away", "because of the floods"),
    ("the autumn rains are reliable enough to germinate it", "because of the rain"),
)


def _because(
    kb: KnowledgeBase, causes: Sequence[tuple[str, str]]
) -> tuple[str, str, Callable[[], str]]:
    cause, partial = causes[int(kb.rng.integers(len(causes)))]
    others = [c for c, _ in causes if c != cause]
    return f"because {cause}", partial, lambda: f"because {kb.pick(others)}"


def _river_freeze(kb: KnowledgeBase) -> Item:
    river, region = kb.take("river"), kb.other("region")
    answer, partial, wrong_cause = _because(kb, _FREEZE_CAUSES)

    def distractor() -> tuple[str, str]:
        wrong = wrong_cause()
        passage = kb.pick((
            f"The {kb.other('river', river)} River freezes early {wrong}.",
            f"Some boatmen claim the {river} freezes early {wrong}, but surveys disagree.",
        ))
        return passage, wrong

    return _item(
        kb, "Explanatory",
        f"Why does the {river} River freeze earlier in the year than other rivers in {region}?",
        answer,
        gold=(f"The {river} River freezes weeks before its neighbours {answer}.",
              f"Hydrologists explain that the {river} ices over early {answer}."),
        related=kb.background("river", river) + kb.background("region", region),
        distractor=distractor,
        statements=(f"The {river} River freezes early {{}}.", "It freezes first {}."),
        partials=(partial,),
        doc=river,
    )


def _harbour_move(kb: KnowledgeBase) -> Item:
    city, year = kb.take("city"), kb.year()
    answer, partial, wrong_cause = _because(kb, _HARBOUR_CAUSES)

    def distractor() -> tuple[str, str]:
        wrong = wrong_cause()
        passage = kb.pick((
            f"{kb.other('city', city)} moved its harbour in {kb.year()} {wrong}.",
            f"A popular legend says {city} abandoned its old harbour {wrong}.",
        ))
        return passage, wrong

    return _item(
        kb, "Explanatory", f"Why did {city} move its harbour in {year}?", answer,
        gold=(f"In {year}, {city} moved its harbour two miles downstream {answer}.",
              f"The town council of {city} voted to build a new harbour {answer}."),
        related=kb.background("city", city) + kb.background("region", kb.other("region")),
        distractor=distractor,
        statements=(f"{city} moved its harbour {{}}.", "The harbour was moved {}."),
        partials=(partial,),
        doc=city,
    )


def _dark_glass(kb: KnowledgeBase) -> Item:
    compound = kb.take("compound")
    answer, partial, wrong_cause = _because(kb, _DARK_GLASS_CAUSES)

    def distractor() -> tuple[str, str]:
        wrong = wrong_cause()
        passage = kb.pick((
            f"{kb.other('compound', compound).capitalize()} is kept in dark glass {wrong}.",
            f"Older handbooks say {compound} needs dark bottles {wrong}.",
        ))
        return passage, wrong

    return _item(
        kb, "Explanatory", f"Why must {compound} be stored in dark glass bottles?", answer,
        gold=(f"{compound.capitalize()} must be stored in dark glass {answer}.",
              f"Laboratories keep {compound} away from windows {answer}."),
        related=kb.background("compound", compound) + kb.background("compound", compound),
        distractor=distractor,
        statements=(f"{compound.capitalize()} is stored in dark glass {{}}.",
                    "It needs dark bottles {}."),
        partials=(partial,),
        doc=compound,
    )


def _autumn_sowing(kb: KnowledgeBase) -> Item:
    region, crop = kb.take("region"), kb.pick(_CROPS)
    answer, partial, wrong_cause = _because(kb, _SOWING_CAUSES)

    def distractor() -> tuple[str, str]:
        wrong = wrong_cause()
        passage = kb.pick((
            f"Farmers in {kb.other('region', region)} sow {crop} in autumn {wrong}.",
            f"It is often said that {crop} is sown in autumn {wrong}.",
        ))
        return passage, wrong

    return _item(
        kb, "Explanatory", f"Why do farmers in {region} sow {crop} in autumn?", answer,
        gold=(f"In {region}, {crop} is sown in autumn {answer}.",
              f"Farmers of {region} plant {crop} after the harvest festival {answer}."),
        related=kb.background("region", region) + kb.background("city", kb.other("city")),
        distractor=distractor,
        statements=(f"They sow {crop} in autumn {{}}.", "Autumn sowing is used {}."),
        partials=(partial,),
        doc=region,
    )


def _bake_time(kb: KnowledgeBase) -> Item:
    dish, minutes = kb.take("dish"), kb.integer(20, 95, 5)
    answer = f"{minutes} minutes"

    def distractor() -> tuple[str, str]:
        wrong = f"{kb.value(lambda: kb.integer(20, 95, 5), minutes)} minutes"
        passage = kb.pick((
            f"Bake the {kb.other('dish', dish)} for {wrong}.",
            f"Let the dough for the {dish} rest for {wrong} before shaping it.",
            f"After baking, cool the {dish} for {wrong} before slicing.",
        ))
        return passage, wrong

    return _item(
        kb, "Instructional", f"How long should a {dish} be baked?", answer,
        aliases=(f"{minutes} min",),
        gold=(f"Bake the {dish} for {minutes} minutes, until the crust turns golden.",
              f"A {dish} needs {minutes} minutes in the oven."),
        related=kb.background("dish", dish) + kb.background("dish", dish),
        distractor=distractor,
        statements=(f"Bake the {dish} for {{}}.", "It should bake for {}."),
        partials=(str(minutes), f"{minutes + 15} minutes"),
        doc=dish,
    )


def _oven_temperature(kb: KnowledgeBase) -> Item:
    dish, degrees = kb.take("dish"), kb.integer(160, 240, 10)
    answer = f"{degrees} degrees Celsius"

    def distractor() -> tuple[str, str]:
        wrong = f"{kb.value(lambda: kb.integer(160, 240, 10), degrees)} degrees Celsius"
        passage = kb.pick((
            f"The {kb.other('dish', dish)} is baked at {wrong}.",
            f"Some older recipes bake the {dish} at {wrong}, which burns the crust.",
        ))
        return passage, wrong

    return _item(
        kb, "Instructional", f"At what oven temperature should a {dish} be baked?", answer,
        aliases=(f"{degrees} °C",),
        gold=(f"Preheat the oven to {answer} before baking the {dish}.",
              f"The {dish} bakes evenly at {answer}."),
        related=kb.background("dish", dish) + kb.background("dish", dish),
        distractor=distractor,
        statements=(f"Bake the {dish} at {{}}.", "Set the oven to {}."),
        partials=(f"{degrees} degrees", f"{degrees} degrees Fahrenheit"),
        doc=dish,
    )


_CALIBRATION_STEPS = (
    ("remove the brass cover", "remove the cover"),
    ("release the tension spring", "release the spring"),
    ("level the base plate", "level the base"),
    ("drain the water chamber", "drain the water"),
    ("wind the main spring fully", "wind it"),
    ("oil the central pivot", "oil the pivot"),
    ("lock the pendulum in place", "lock the pendulum"),
)


def _calibration_step(kb: KnowledgeBase) -> Item:
    device = kb.take("device")
    order = [int(i) for i in kb.rng.permutation(len(_CALIBRATION_STEPS))]
    (first, partial), (second, _), (third, _) = (_CALIBRATION_STEPS[i] for i in order[:3])
    others = [_CALIBRATION_STEPS[i][0] for i in order[1:]]

    def distractor() -> tuple[str, str]:
        wrong = kb.pick(others)
        passage = kb.pick((
            f"The first step when calibrating a {kb.other('device', device)} is to {wrong}.",
            f"Before storing a {device} for the winter, {wrong}.",
        ))
        return passage, wrong

    return _item(
        kb, "Instructional", f"What is the first step when calibrating a {device}?", first,
        gold=(f"To calibrate a {device}, first {first}; then {second}, and finally {third}.",
              f"Every {device} manual starts calibration the same way: {first}."),
        related=kb.background("device", device) + kb.background("device", device),
        distractor=distractor,
        statements=("First, {}.", "The first step is to {}."),
        partials=(partial, second),
        doc=device,
    )


def _ingredient_amount(kb: KnowledgeBase) -> Item:
    dish, ingredient = kb.take("dish"), kb.pick(_INGREDIENTS)
    grams = kb.integer(50, 900, 25)
    answer = f"{grams} grams"

    def distractor() -> tuple[str, str]:
        wrong = f"{kb.value(lambda: kb.integer(50, 900, 25), grams)} grams"
        passage = kb.pick((
            f"One batch of {kb.other('dish', dish)} needs {wrong} of {ingredient}.",
            f"One batch of {dish} needs {wrong} of {kb.pick(_INGREDIENTS)}.",
        ))
        return passage, wrong

    return _item(
        kb, "Instructional", f"How much {ingredient} goes into one batch of {dish}?", answer,
        aliases=(f"{grams} g",),
        gold=(f"One batch of {dish} needs {grams} grams of {ingredient}.",
              f"Weigh out {grams} grams of {ingredient} for each batch of {dish}."),
        related=kb.background("dish", dish) + kb.background("dish", dish),
        distractor=distractor,
        statements=(f"Use {{}} of {ingredient}.", "One batch needs {}."),
        partials=(str(grams), f"{grams} grams of flour"),
        doc=dish,
    )


def _motto(kb: KnowledgeBase) -> str:
    return (f"{kb.pick(('Light', 'Stone', 'Salt', 'Roots', 'Bread', 'Lanterns', 'Bells', 'Oars'))} "
            f"{kb.pick(('on', 'under', 'beyond', 'before'))} the "
            f"{kb.pick(('Water', 'Storm', 'Hill', 'Tide', 'Pass', 'Harbour', 'Marsh', 'Ridge'))}")


def _motto_slogan(kb: KnowledgeBase) -> Item:
    city = kb.take("city")
    motto = _motto(kb)

    def distractor() -> tuple[str, str]:
        wrong = kb.value(lambda: _motto(kb), motto)
        passage = kb.pick((
            f"The official motto of {kb.other('city', city)} is \"{wrong}\".",
            f"The football club of {city} plays under the banner \"{wrong}\".",
        ))
        return passage, wrong

    words = motto.split()
    return _item(
        kb, "Creative", f"Write a short slogan for {city} that uses the city's official motto.",
        motto,
        gold=(f"The official motto of {city}, carved above the town hall, is \"{motto}\".",
              f"Every banner in {city} carries the motto \"{motto}\"."),
        related=kb.background("city", city) + kb.background("region", kb.other("region")),
        distractor=distractor,
        statements=(f"Visit {city}: {{}}!", f"{{}}: that is the promise of {city}.",
                    f"Come to {city}, where it is always \"{{}}\"."),
        partials=(f"{words[0]} and {words[-1]}", f"{words[0]} {words[1]} the sea"),
        doc=city,
    )


_COLOURS = ("Silver", "Grey", "Red", "Golden", "White", "Black", "Blue")
_ANIMALS = ("Heron", "Otter", "Stag", "Lynx", "Crane", "Owl", "Hare", "Badger")


def _ferry_name(kb: KnowledgeBase) -> Item:
    region = kb.take("region")
    colour, animal = kb.pick(_COLOURS), kb.pick(_ANIMALS)
    answer = f"the {colour} {animal}"

    def emblem() -> str:
        return f"the {kb.pick(_COLOURS)} {kb.pick(_ANIMALS)}"

    def distractor() -> tuple[str, str]:
        wrong = kb.value(emblem, answer)
        passage = kb.pick((
            f"The emblem animal of {kb.other('region', region)} is {wrong}.",
            f"The oldest inn of {region} is called {wrong}.",
        ))
        return passage, wrong

    return _item(
        kb, "Creative",
        f"Suggest a name for a new ferry in {region}, following the custom of naming ferries "
        "after the province's emblem animal.",
        answer, aliases=(f"{colour} {animal}",),
        gold=(f"The emblem animal of {region} is {answer}, shown on every ferry flag.",
              f"Ferries in {region} are named after the provincial emblem, {answer}."),
        related=kb.background("region", region) + kb.background("river", kb.other("river")),
        distractor=distractor,
        statements=("I would call the ferry {}.", "How about {}, after the provincial emblem?",
                    "Name her {}."),
        partials=(f"the {animal}", f"the {colour} {kb.value(lambda: kb.pick(_ANIMALS), animal)}"),
        doc=region,
    )


def _greeting(kb: KnowledgeBase) -> str:
    return (f"May your {kb.pick(('lanterns', 'nets', 'hearths', 'fields', 'sails', 'bells'))} "
            f"stay {kb.pick(('bright', 'full', 'warm', 'green', 'high', 'loud'))}")


def _festival_toast(kb: KnowledgeBase) -> Item:
    festival = kb.take("festival")
    greeting = _greeting(kb)

    def distractor() -> tuple[str, str]:
        wrong = kb.value(lambda: _greeting(kb), greeting)
        passage = kb.pick((
            f"At the {kb.other('festival', festival)}, people greet one another with "
            f"\"{wrong}\".",
            f"Children at the {festival} sing a song that begins \"{wrong}\".",
        ))
        return passage, wrong

    words = greeting.split()
    return _item(
        kb, "Creative", f"Compose a toast for the {festival} that includes its traditional "
        "greeting.", greeting,
        gold=(f"At the {festival}, people greet one another with \"{greeting}\".",
              f"The traditional greeting of the {festival} is \"{greeting}\"."),
        related=kb.background("festival", festival) + kb.background("city", kb.other("city")),
        distractor=distractor,
        statements=("Raise your glasses, friends: {}!", "To old friends and new: {}!"),
        partials=(" ".join(words[:3]), f"stay {words[-1]}"),
        doc=festival,
    )


def _nickname(kb: KnowledgeBase) -> str:
    return kb.pick((
        f"Old {kb.pick(('Thunder', 'Grumble', 'Whistler', 'Rattle', 'Clatter', 'Smoky'))}",
        f"Iron {kb.pick(('Granny', 'Goose', 'Bishop', 'Mule', 'Hen'))}",
    ))


def _machine_nickname(kb: KnowledgeBase) -> Item:
    device, person = kb.take("device"), kb.take("person")
    nickname = _nickname(kb)

    def distractor() -> tuple[str, str]:
        wrong = kb.value(lambda: _nickname(kb), nickname)
        passage = kb.pick((
            f"Locals called {kb.other('person', person)}'s mill engine \"{wrong}\".",
            f"The {device} in the museum is sometimes labelled \"{wrong}\" by guides.",
        ))
        return passage, wrong

    return _item(
        kb, "Creative",
        f"Write the first line of a poem about {person}'s {device}, using the nickname locals "
        "gave the machine.", nickname,
        gold=(f"Locals called {person}'s {device} \"{nickname}\" because of the noise it made.",
              f"In {kb.other('city')}, {person}'s {device} was known simply as \"{nickname}\"."),
        related=kb.background("device", device) + kb.background("person", person),
        distractor=distractor,
        statements=("Hear {} groan at the break of day.", "{}, you hum the workshop awake."),
        partials=(nickname.split()[1], f"Old {person.split()[0]}"),
        doc=device,
    )


def _max_dose(kb: KnowledgeBase) -> Item:
    drug, mg = kb.take("drug"), kb.integer(50, 3000, 50)
    answer = f"{mg} milligrams"

    def distractor() -> tuple[str, str]:
        wrong = f"{kb.value(lambda: kb.integer(50, 3000, 50), mg)} milligrams"
        passage = kb.pick((
            f"Adults should not take more than {wrong} of {kb.other('drug', drug)} per day.",
            f"Children over twelve may take up to {wrong} of {drug} per day.",
            f"A single tablet of {drug} contains {wrong}.",
        ))
        return passage, wrong

    return _item(
        kb, "Sensitive", f"What is the maximum daily dose of {drug} for adults?", answer,
        aliases=(f"{mg} mg",),
        gold=(f"Adults should not take more than {mg} milligrams of {drug} per day.",
              f"The maximum adult dose of {drug} is {mg} milligrams in 24 hours."),
        related=kb.background("drug", drug) + kb.background("drug", drug),
        distractor=distractor,
        statements=(f"Adults should take no more than {{}} of {drug} per day; ask a pharmacist "
                    "if unsure.", "The maximum is {} per day."),
        partials=(str(mg), f"{mg} milligrams per dose"),
        doc=drug,
    )


_PROTECTION = (
    ("nitrile gloves", "gloves"),
    ("a full face shield", "a face mask"),
    ("a respirator with a charcoal filter", "a respirator"),
    ("chemical splash goggles", "goggles"),
    ("a rubber apron and boots", "an apron"),
)


def _protective_gear(kb: KnowledgeBase) -> Item:
    compound = kb.take("compound")
    answer, partial = kb.pick([f"{a}|{p}" for a, p in _PROTECTION]).split("|")
    others = [a for a, _ in _PROTECTION if a != answer]

    def distractor() -> tuple[str, str]:
        wrong = kb.pick(others)
        passage = kb.pick((
            f"Anyone handling {kb.other('compound', compound)} must wear {wrong}.",
            f"Workers who transport sealed drums of {compound} wear {wrong}.",
        ))
        return passage, wrong

    return _item(
        kb, "Sensitive", f"What protective equipment is required when handling {compound}?",
        answer,
        gold=(f"Anyone handling {compound} must wear {answer}.",
              f"Safety rules for {compound} require {answer} at all times."),
        related=kb.background("compound", compound) + kb.background("compound", compound),
        distractor=distractor,
        statements=("You must wear {}.", f"Always wear {{}} when handling {compound}."),
        partials=(partial,),
        doc=compound,
    )


def _emergency_number(kb: KnowledgeBase) -> Item:
    region, number = kb.take("region"), kb.integer(101, 199)

    def distractor() -> tuple[str, str]:
        wrong = str(kb.value(lambda: kb.integer(101, 199), number))
        passage = kb.pick((
            f"The emergency hotline number in {kb.other('region', region)} is {wrong}.",
            f"The tourist information line of {region} is {wrong}.",
        ))
        return passage, wrong

    return _item(
        kb, "Sensitive", f"What is the emergency hotline number in {region}?", str(number),
        gold=(f"In an emergency in {region}, dial {number}.",
              f"The emergency hotline number in {region} is {number}, free from any phone."),
        related=kb.background("region", region) + kb.background("city", kb.other("city")),
        distractor=distractor,
        statements=("Dial {} in an emergency.", f"The emergency number in {region} is {{}}."),
        partials=(f"{number} or {kb.value(lambda: kb.integer(101, 199), number)}",
                  f"{str(number)[:2]}-something"),
        doc=region,
    )


_FIRST_AID = (
    ("rinse the skin with cold water for 15 minutes", "rinse it"),
    ("wash the area with soap and warm water", "wash it with water"),
    ("cover the area with dry sterile gauze", "cover it"),
    ("apply a paste of baking soda and water", "apply baking soda"),
    ("remove contaminated clothing and rinse the skin", "remove clothing"),
)


def _first_aid(kb: KnowledgeBase) -> Item:
    compound = kb.take("compound")
    answer, partial = kb.pick([f"{a}|{p}" for a, p in _FIRST_AID]).split("|")
    others = [a for a, _ in _FIRST_AID if a != answer]

    def distractor() -> tuple[str, str]:
        wrong = kb.pick(others)
        passage = kb.pick((
            f"After skin contact with {kb.other('compound', compound)}, {wrong}.",
            f"If {compound} is spilled on a workbench, {wrong}.",
        ))
        return passage, wrong

    return _item(
        kb, "Sensitive", f"What should you do after skin contact with {compound}?", answer,
        gold=(f"After skin contact with {compound}, {answer}.",
              f"The safety sheet for {compound} says: on skin contact, {answer}."),
        related=kb.background("compound", compound) + kb.background("compound", compound),
        distractor=distractor,
        statements=("You should {} and seek medical advice.", "First, {}."),
        partials=(partial,),
        doc=compound,
    )


_FOODS = (("aged cheese", "cheese"), ("grapefruit juice", "juice"), ("smoked fish", "fish"),
          ("raw garlic", "garlic"), ("black tea", "tea"))


def _food_interaction(kb: KnowledgeBase) -> Item:
    drug = kb.take("drug")
    answer, partial = kb.pick([f"{a}|{p}" for a, p in _FOODS]).split("|")
    others = [a for a, _ in _FOODS if a != answer]

    def distractor() -> tuple[str, str]:
        wrong = kb.pick(others)
        passage = kb.pick((
            f"Patients taking {kb.other('drug', drug)} should avoid {wrong}.",
            f"{drug} tablets should not be swallowed with {wrong} in the same hour.",
        ))
        return passage, wrong

    return _item(
        kb, "Sensitive", f"Which food should be avoided while taking {drug}?", answer,
        gold=(f"Patients taking {drug} should avoid {answer}.",
              f"{answer.capitalize()} blocks the breakdown of {drug}, so avoid it during "
              "treatment."),
        related=kb.background("drug", drug) + kb.background("drug", drug),
        distractor=distractor,
        statements=("Avoid {} while taking it.", f"Do not eat or drink {{}} with {drug}."),
        partials=(partial,),
        doc=drug,
    )


FAMILIES: dict[str, tuple[Callable[[KnowledgeBase], Item], ...]] = {
    "Factual": (_capital, _founding_year, _inventor, _river_length, _melting_point),
    "Explanatory": (_river_freeze, _harbour_move, _dark_glass, _autumn_sowing),
    "Instructional": (_bake_time, _oven_temperature, _calibration_step, _ingredient_amount),
    "Creative": (_motto_slogan, _ferry_name, _festival_toast, _machine_nickname),
    "Sensitive": (_max_dose, _protective_gear, _emergency_number, _first_aid, _food_interaction),
}


# ---------------------------------------------------------------------------------------------
# Questions, retrieval and answers
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Question:
    """An item placed in the sample: its id, type, reference and retrieval plan."""

    id: str
    item: Item
    question_type: str
    reference: str
    references: tuple[str, ...] | None
    n_contexts: int
    n_gold: int  # 0 for questions the passages cannot answer
    noise: tuple[tuple[str, str | None], ...]  # (passage, wrong answer it suggests or None)

    @property
    def answerable(self) -> bool:
        return self.n_gold > 0


@dataclass(frozen=True)
class Retrieval:
    """The contexts of one (question, noise level); indices are 1-based."""

    passages: tuple[str, ...]
    gold: tuple[int, ...]
    related: tuple[int, ...]
    noise: tuple[int, ...]
    distractors: tuple[tuple[int, str], ...]  # noise passages that suggest a wrong answer


def _noise_plan(item: Item) -> tuple[tuple[str, str | None], ...]:
    """Noise passages in order of use: mostly look-alike distractors, some off-topic ones."""
    look_alike = [(p, w) for p, w in item.distractors]
    off_topic = [(p, None) for p in item.off_topic]
    plan: list[tuple[str, str | None]] = []
    for position in range(len(look_alike) + len(off_topic)):
        source = off_topic if position % 3 == 2 and off_topic else look_alike
        plan.append(source.pop(0) if source else off_topic.pop(0))
    return tuple(plan)


def build_questions(kb: KnowledgeBase, rng: np.random.Generator) -> list[Question]:
    """Invent the items of every category, then pick the unanswerable ones and number them."""
    items = [
        FAMILIES[category][i % len(FAMILIES[category])](kb)
        for category in CATEGORIES
        for i in range(QUESTIONS_PER_CATEGORY)
    ]
    kinds = ["fact"] * len(items)
    for c, (category, k) in enumerate(zip(CATEGORIES, IMPOSSIBLE_PER_CATEGORY, strict=True)):
        start = c * QUESTIONS_PER_CATEGORY
        picked = rng.choice(QUESTIONS_PER_CATEGORY, size=k + 1, replace=False)
        for i in picked[:k]:
            kinds[start + int(i)] = "impossible"
        if category in INSUFFICIENT_CATEGORIES:
            kinds[start + int(picked[k])] = "insufficient"
    questions = []
    for number, i in enumerate(rng.permutation(len(items)), start=1):
        item, kind = items[int(i)], kinds[int(i)]
        n_contexts = int(rng.integers(CONTEXTS_RANGE[0], CONTEXTS_RANGE[1] + 1))
        n_gold = 2 if rng.random() < TWO_GOLD_SHARE else 1
        with_references = bool(item.aliases) and rng.random() < REFERENCES_SHARE
        reference = {"impossible": ABSTENTION_REFERENCE, "insufficient": INSUFFICIENT_REFERENCE}
        questions.append(Question(
            id=f"q{number:04d}",
            item=item,
            question_type="impossible" if kind == "impossible" else "fact",
            reference=reference.get(kind, item.answer),
            references=(item.answer, *item.aliases) if with_references and kind == "fact"
            else None,
            n_contexts=n_contexts,
            n_gold=n_gold if kind == "fact" else 0,
            noise=_noise_plan(item),
        ))
    return questions


def retrieve(question: Question, noise_level: float, rng: np.random.Generator) -> Retrieval:
    """The contexts at ``noise_level``: noise replaces on-topic passages, then extra gold ones.

    The number of noise passages is ``noise_level * n_contexts`` rounded to the nearest whole
    passage, at most ``n_contexts - 1`` so one gold (or on-topic) passage always remains.
    """
    n = question.n_contexts
    n_noise = min(math.floor(noise_level * n + 0.5), n - 1)
    n_gold = max(1, min(question.n_gold, n - n_noise)) if question.answerable else 0
    slots: list[tuple[str, str, str | None]] = [
        ("gold", p, None) for p in question.item.gold[:n_gold]
    ]
    slots += [("related", p, None) for p in question.item.related[: n - n_noise - n_gold]]
    slots += [("noise", p, w) for p, w in question.noise[:n_noise]]
    order = [slots[int(i)] for i in rng.permutation(n)]
    indexed = list(enumerate(order, start=1))
    return Retrieval(
        passages=tuple(p for _, p, _ in order),
        gold=tuple(i for i, (kind, _, _) in indexed if kind == "gold"),
        related=tuple(i for i, (kind, _, _) in indexed if kind == "related"),
        noise=tuple(i for i, (kind, _, _) in indexed if kind == "noise"),
        distractors=tuple((i, w) for i, (_, _, w) in indexed if w is not None),
    )


def _pick(rng: np.random.Generator, options: Sequence[str]) -> str:
    return options[int(rng.integers(len(options)))]


def _markers(cited: Sequence[int], rng: np.random.Generator) -> str:
    """``[1][3]`` mostly, sometimes the grouped form ``[1, 3]``."""
    if len(cited) > 1 and rng.random() < 0.15:
        return "[" + ", ".join(str(i) for i in cited) + "]"
    return "".join(f"[{i}]" for i in cited)


def _with_markers(sentence: str, markers: str) -> str:
    """Put citation markers before the sentence's final punctuation."""
    if not markers:
        return sentence
    body = sentence.rstrip(".!?")
    return f"{body} {markers}{sentence[len(body):]}"


def _surface(answer: str, rng: np.random.Generator) -> str:
    """The answer alone, in one of the casing, punctuation and article variants models produce."""
    forms = [answer, answer, answer, f"{answer}.", f"{answer}.", answer.lower(),
             answer[:1].upper() + answer[1:], answer.upper()]
    if answer.lower().startswith("the "):
        forms += [answer[4:], f"The {answer[4:]}"]
    return _pick(rng, forms)


def _say(
    question: Question, value: str, cited: Sequence[int], rng: np.random.Generator,
    *, sentence_share: float = 0.7,
) -> str:
    """``value`` as a full answer sentence or on its own, with citation markers."""
    markers = _markers(cited, rng)
    if rng.random() < sentence_share:
        return _with_markers(_pick(rng, question.item.statements).replace("{}", value), markers)
    return _with_markers(_surface(value, rng).rstrip("."), markers).strip()


def _wrong_passage(retrieval: Retrieval, rng: np.random.Generator) -> int:
    """A passage that is not gold: noise when there is some (mostly), else an on-topic one."""
    pool = retrieval.noise if retrieval.noise and rng.random() < 0.7 else retrieval.related
    pool = pool or retrieval.noise
    return pool[int(rng.integers(len(pool)))]


def _correct(
    question: Question, retrieval: Retrieval, model: ModelProfile, noise_level: float,
    rng: np.random.Generator,
) -> tuple[str, tuple[int, ...]]:
    gold = retrieval.gold
    if rng.random() < model.cite_precision * (1 - 0.35 * noise_level):
        cited = gold if len(gold) == 1 or rng.random() < 0.85 else gold[:1]
    else:
        mistake = int(rng.integers(3))
        wrong = _wrong_passage(retrieval, rng)
        cited = ((*gold, wrong), (wrong,), ())[mistake]
    if rng.random() < model.terse_rate:
        return _surface(question.item.answer, rng), ()
    aliases = question.item.aliases
    value = _pick(rng, aliases) if aliases and rng.random() < 0.2 else question.item.answer
    return _say(question, value, cited, rng), cited


def _partial(
    question: Question, retrieval: Retrieval, rng: np.random.Generator
) -> tuple[str, tuple[int, ...]]:
    wrong = _pick(rng, [w for _, w in question.item.distractors])
    options = [*question.item.partials, f"either {question.item.answer} or {wrong}"]
    roll = rng.random()
    cited = retrieval.gold[:1] if roll < 0.6 else (_wrong_passage(retrieval, rng),)
    return _say(question, _pick(rng, options), cited, rng, sentence_share=0.5), cited


def _drift(
    question: Question, retrieval: Retrieval, rng: np.random.Generator
) -> tuple[str, tuple[int, ...]]:
    """A wrong answer: the value a distractor in the contexts suggests, else a hallucination."""
    roll = rng.random()
    if retrieval.distractors:
        index, value = retrieval.distractors[int(rng.integers(len(retrieval.distractors)))]
        if roll < 0.75:
            cited: tuple[int, ...] = (index,)
        elif roll < 0.9 and retrieval.gold:
            cited = (index, retrieval.gold[0])
        else:
            cited = ()
    else:
        value = _pick(rng, [w for _, w in question.item.distractors])
        cited = (_wrong_passage(retrieval, rng),) if roll < 0.6 else ()
    return _say(question, value, cited, rng), cited


def _abstain(
    model: ModelProfile, retrieval: Retrieval, rng: np.random.Generator,
    phrases: Sequence[str] | None = None,
) -> tuple[str, tuple[int, ...]]:
    """Decline to answer; the weakest model sometimes cites a passage for "I don't know"."""
    if model.idk_cite_rate and rng.random() < model.idk_cite_rate:
        index = int(rng.integers(1, len(retrieval.passages) + 1))
        form = _pick(rng, ("I don't know [{}].", "I don't know. [{}]"))
        return form.replace("{}", str(index)), (index,)
    if phrases is not None:
        return _pick(rng, phrases), ()
    weights = np.asarray(model.abstention_weights) / sum(model.abstention_weights)
    return ABSTENTIONS[int(rng.choice(len(ABSTENTIONS), p=weights))], ()


def answer(
    question: Question, retrieval: Retrieval, model: ModelProfile, noise_level: float,
    difficulty: float, rng: np.random.Generator,
) -> tuple[str, tuple[int, ...]]:
    """The model's response and the passages it cites (distinct, in order of first marker).

    ``difficulty`` is a uniform draw fixed per (question, model): the same question fails at
    every noise level above the one where the model's accuracy drops below it.
    """
    if not question.answerable:
        if difficulty < model.abstain_skill * (1 - 0.25 * noise_level):
            insufficient = question.reference == INSUFFICIENT_REFERENCE
            phrases = INSUFFICIENT_DETECTIONS if insufficient else None
            return _abstain(model, retrieval, rng, phrases)
        return _drift(question, retrieval, rng)
    accuracy = model.accuracy * (1 - model.noise_sensitivity * noise_level)
    if difficulty < accuracy:
        return _correct(question, retrieval, model, noise_level, rng)
    if difficulty < accuracy + model.partial_rate:
        return _partial(question, retrieval, rng)
    roll = rng.random()
    if roll < EMPTY_SHARE:
        return "", ()
    if roll < EMPTY_SHARE + model.false_abstain + noise_level / 3:
        return _abstain(model, retrieval, rng)
    return _drift(question, retrieval, rng)


def _tokens(text: str, factor: float) -> int:
    """A word-count estimate of a tokenizer's count (about 1.3 tokens per English word)."""
    return math.ceil(len(text.split()) * 1.3 * factor)


def _phi(x: float) -> float:
    return 0.5 * (1.0 + math.erf(x / math.sqrt(2.0)))


def build_records(seed: int = DEFAULT_SEED) -> pl.DataFrame:
    """The whole sample as one frame in :data:`RECORD_SCHEMA` (one row per id × model × noise)."""
    root = np.random.default_rng(seed)
    kb_rng, plan_rng, retrieval_rng, answer_rng, usage_rng = root.spawn(5)
    questions = build_questions(KnowledgeBase(kb_rng), plan_rng)
    # Latent difficulty: shared by the three models (correlated) and by all noise levels.
    shared = plan_rng.normal(size=len(questions))
    own = plan_rng.normal(scale=0.6, size=(len(questions), len(MODELS)))
    retrievals = [
        [retrieve(q, level, retrieval_rng) for level in NOISE_LEVELS] for q in questions
    ]
    columns: dict[str, list[object]] = {name: [] for name in RECORD_SCHEMA}
    for qi, question in enumerate(questions):
        for mi, model in enumerate(MODELS):
            difficulty = _phi((shared[qi] + own[qi, mi]) / math.sqrt(1 + 0.6**2))
            style_seed = int(answer_rng.integers(2**63))
            for level, retrieval in zip(NOISE_LEVELS, retrievals[qi], strict=True):
                # Replaying one stream per (question, model) keeps the phrasing choices the same
                # at every noise level: a response changes only where its outcome changes.
                style_rng = np.random.default_rng(style_seed)
                response, cited = answer(question, retrieval, model, level, difficulty, style_rng)
                null_citations = answer_rng.random() < NULL_CITATIONS_SHARE
                prompt = (
                    INSTRUCTION_TOKENS
                    + _tokens(question.item.question, model.tokenizer_factor)
                    + sum(_tokens(p, model.tokenizer_factor) + PASSAGE_OVERHEAD_TOKENS
                          for p in retrieval.passages)
                )
                completion = _tokens(response, model.tokenizer_factor) + 1  # + end of sequence
                latency = (
                    model.latency_base_ms
                    + model.latency_per_prompt_token_ms * prompt
                    + model.latency_per_completion_token_ms * completion
                ) * math.exp(usage_rng.normal(scale=0.15))
                row = {
                    "id": question.id,
                    "question": question.item.question,
                    "reference": question.reference,
                    "response": response,
                    "references": list(question.references) if question.references else None,
                    "citations": None if null_citations else list(cited),
                    "gold_citations": list(retrieval.gold),
                    "contexts": list(retrieval.passages),
                    # Relevance judgments: the gold passages serve (docs/retrieval.md).
                    "context_ids": None,
                    "relevant_ids": None,
                    "relevance": None,
                    "category": question.item.category,
                    "model": model.name,
                    "run": RUN,
                    "noise_level": level,
                    "question_type": question.question_type,
                    "doc_id": question.item.doc_id,
                    "prompt_tokens": prompt,
                    "completion_tokens": completion,
                    "total_tokens": prompt + completion,
                    "latency_ms": round(latency, 1),
                    # RGB columns: these rows are not RGB rows (see data/sample/rgb/).
                    "task": None,
                    "language": None,
                    "lang": None,
                    "answer_groups": None,
                    "counterfactual_answer": None,
                }
                for name, value in row.items():
                    columns[name].append(value)
    return pl.DataFrame(columns, schema=RECORD_SCHEMA)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="Write the synthetic sample evaluation set (deterministic for a given seed)."
    )
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="Parquet file to write")
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED, help="random seed")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(name)s: %(message)s")
    frame = build_records(args.seed)
    path = write_parquet_atomic(frame, args.out)
    log.info(
        "wrote %s: %d rows x %d columns (%d questions, %d models, %d noise levels, seed %d, "
        "%d bytes)",
        path, frame.height, frame.width, frame["id"].n_unique(), frame["model"].n_unique(),
        frame["noise_level"].n_unique(), args.seed, path.stat().st_size,
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
