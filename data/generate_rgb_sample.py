"""Generate the bundled RGB-style sample: invented benchmark items and three models' responses.

Two JSON-lines files (UTF-8, one object per line, keys in a fixed order, deterministic bytes):

* ``rgb_data.json``: one line per item in the format of the RGB benchmark (Chen et al. 2023,
  "Benchmarking Large Language Models in Retrieval-Augmented Generation"): ``id``, ``query``,
  ``answer``, ``positive``, ``negative``, and on counterfactual items also ``fakeanswer`` and
  ``positive_wrong``. ``answer`` follows RGB's convention: a string is one required answer; in a
  list every element is required, and an inner list holds alternatives (``[["14 March", "March
  14"]]`` is one answer with two spellings, ``["Velby", ["1642"]]`` two required parts).
* ``rgb_outputs.jsonl``: one line per (``id``, ``model``, ``task``, ``noise_rate``) with the
  ``response`` and its ``latency_ms``.

Everything is invented here from templates over a small fictional knowledge base (provinces,
cities, rivers, inventors, devices, festivals, dishes, compounds); nothing is copied from RGB or any
other data set. All randomness comes from ``numpy.random.default_rng(seed)``, split into
independent streams (knowledge base, latent difficulty, phrasing, latency); nothing depends on hash
seeds or set order, so the same seed gives the same bytes on any machine.

Items (ids in this order):

* 20 single-answer items (17 English, 3 Chinese) for noise robustness and negative rejection;
* 10 information-integration items whose answer has two required parts and whose ``positive`` is
  a list of passage lists, one per part;
* 10 counterfactual items whose ``positive_wrong`` are the positive passages with the answer
  swapped for ``fakeanswer``.

Negative passages look on-topic (same entity, neighbouring facts, a look-alike wrong answer) but
never contain an answer; the generator checks this and every other containment rule it relies on.

How the responses behave (so the RGB metrics have something to find):

* Each (item, model) has one latent difficulty draw (correlated across models) shared by all noise
  rates and compared with ``accuracy * (1 - noise_sensitivity * noise_rate)``, so accuracy falls
  monotonically with noise for every model and ``cirrus-70b`` > ``borealis-13b`` > ``atlas-7b``.
  Phrasing is replayed from one stream per (item, model, task): a response changes from one noise
  rate to the next only where its outcome changes.
* ``noise_robustness`` (noise 0.0–0.8): right answers vary in wording (bare, in a sentence, an
  alternative spelling, lower case); wrong answers name a look-alike from the negatives; some
  failures are rejections.
* ``negative_rejection`` (noise 1.0): the RGB rejection sentence, other rejection wordings, or a
  hallucinated wrong answer; stronger models reject more often.
* ``information_integration`` (noise 0.0–0.4): both parts, one part (partial), or a wrong answer.
* ``counterfactual_robustness`` (noise 0.0, the model reads ``positive_wrong``): repeats the fake
  answer, flags the error and gives the true answer, flags it without correcting, or gives the
  true answer silently; stronger models detect and correct more often.
"""

from __future__ import annotations

import argparse
import json
import logging
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from pipeline.io.atomic import atomic_path

log = logging.getLogger("generate_rgb_sample")

DEFAULT_SEED = 0
DEFAULT_OUT_DIR = Path("data/sample/rgb")
DATA_FILE = "rgb_data.json"
OUTPUTS_FILE = "rgb_outputs.jsonl"

NOISE_RATES: tuple[float, ...] = (0.0, 0.2, 0.4, 0.6, 0.8)
INTEGRATION_NOISE_RATES: tuple[float, ...] = (0.0, 0.2, 0.4)
REJECTION_NOISE_RATE = 1.0
COUNTERFACTUAL_NOISE_RATE = 0.0
ENGLISH_SINGLE_ITEMS = 17
CHINESE_SINGLE_ITEMS = 3
INTEGRATION_ITEMS = 10
COUNTERFACTUAL_ITEMS = 10
POSITIVES_PER_PART = 3
INTEGRATION_POSITIVES_PER_PART = 2
NEGATIVES = 4
#: Share of correct answers given in an alternative spelling (where the answer has one).
ALTERNATIVE_SHARE = 0.2
#: Share of correct answers given bare ("Velby.") rather than in a sentence.
TERSE_SHARE = 0.35
#: Share of bare correct answers written in lower case.
LOWERCASE_SHARE = 0.15
#: Draws allowed when looking for an entity that passes the containment checks.
MAX_ATTEMPTS = 1000

#: RGB's rejection sentence (English), and the other wordings models use.
RGB_REJECTION = (
    "I can not answer the question because of the insufficient information in documents."
)
REJECTIONS: tuple[str, ...] = (
    RGB_REJECTION,
    "The documents do not provide this information.",
    "I don't know.",
    "I cannot determine the answer from the provided documents.",
)
#: Chinese rejections: the first carries RGB's 信息不足 ("insufficient information").
CHINESE_REJECTIONS: tuple[str, ...] = (
    "文档信息不足，因此我无法基于提供的文档回答该问题。",
    "对不起，文档中没有提到这一点。",
)
#: RGB's error-detection sentence for counterfactual items.
RGB_ERROR_FLAG = "There are factual errors in the provided documents."

TASKS: tuple[str, ...] = (
    "noise_robustness",
    "negative_rejection",
    "information_integration",
    "counterfactual_robustness",
)
DATA_KEYS: tuple[str, ...] = ("id", "query", "answer", "positive", "negative")
COUNTERFACTUAL_KEYS: tuple[str, ...] = ("fakeanswer", "positive_wrong")
OUTPUT_KEYS: tuple[str, ...] = ("id", "model", "task", "noise_rate", "response", "latency_ms")


@dataclass(frozen=True)
class ModelProfile:
    """How one synthetic model behaves; probabilities are at noise rate 0 unless stated."""

    name: str
    accuracy: float  # P(correct) on a single-answer item
    noise_sensitivity: float  # accuracies are multiplied by (1 - noise_sensitivity * noise_rate)
    false_reject: float  # P(rejecting | failed noise-robustness item), + noise_rate / 4
    reject_skill: float  # P(rejecting) at noise rate 1.0 (otherwise it hallucinates)
    rejection_weights: tuple[float, ...]  # over REJECTIONS
    integration_accuracy: float  # P(both parts) on an integration item
    integration_partial: float  # P(one part), taken from just above integration_accuracy
    correct_error: float  # P(flag the fake answer and give the true one)
    flag_error: float  # P(flag the fake answer without correcting it)
    true_only: float  # P(give the true answer without remarking on the documents)
    latency_base_ms: float
    latency_per_char_ms: float


MODELS: tuple[ModelProfile, ...] = (
    ModelProfile(
        name="atlas-7b", accuracy=0.8, noise_sensitivity=0.6, false_reject=0.15,
        reject_skill=0.3, rejection_weights=(0.2, 0.2, 0.5, 0.1), integration_accuracy=0.5,
        integration_partial=0.3, correct_error=0.1, flag_error=0.1, true_only=0.1,
        latency_base_ms=310.0, latency_per_char_ms=0.9,
    ),
    ModelProfile(
        name="borealis-13b", accuracy=0.88, noise_sensitivity=0.5, false_reject=0.25,
        reject_skill=0.6, rejection_weights=(0.45, 0.3, 0.1, 0.15), integration_accuracy=0.65,
        integration_partial=0.25, correct_error=0.25, flag_error=0.15, true_only=0.1,
        latency_base_ms=470.0, latency_per_char_ms=1.4,
    ),
    ModelProfile(
        name="cirrus-70b", accuracy=0.96, noise_sensitivity=0.4, false_reject=0.35,
        reject_skill=0.85, rejection_weights=(0.7, 0.15, 0.0, 0.15), integration_accuracy=0.85,
        integration_partial=0.1, correct_error=0.5, flag_error=0.2, true_only=0.1,
        latency_base_ms=820.0, latency_per_char_ms=2.8,
    ),
)


# ---------------------------------------------------------------------------------------------
# The invented knowledge base
# ---------------------------------------------------------------------------------------------

_ONSETS = ("Vel", "Dar", "Quen", "Tarr", "Hask", "Mor", "Ost", "Bren", "Cald", "Fenn", "Gal",
           "Ith", "Kor", "Lun", "Nesk", "Pell", "Rav", "Sel", "Thal", "Ulv", "Wyn", "Yar", "Zan",
           "Orl", "Sken", "Vash", "Drum", "Ebb")
_CITY_ENDINGS = ("ora", "wick", "ford", "holm", "stead", "gate", "ira", "by", "mouth", "ton")
_REGION_ENDINGS = ("moor", "mark", "dale", "reach", "mere", "vale")
_RIVER_ENDINGS = ("in", "ow", "uen", "ar", "et", "is")
_FIRST_NAMES = ("Elsa", "Tomas", "Ines", "Corin", "Maren", "Oskar", "Lidia", "Ansel", "Petra",
                "Jorund", "Saskia", "Emeric", "Ylva", "Bastian", "Odile", "Ruben")
_SURNAMES = ("Varnholt", "Hollenberg", "Strandley", "Kesselmark", "Morrowby", "Quillstone",
             "Brandtgaard", "Ashenwick", "Lindqvist", "Torvaldsen", "Wesselhoff", "Fairbrook",
             "Osterlund", "Pellegrin", "Haverkamp", "Sorrentel")
_DEVICE_ADJECTIVES = ("tidal", "brass", "wind", "echo", "salt", "mirror", "clockwork", "lantern")
_DEVICE_NOUNS = ("loom", "compass", "kiln", "press", "sextant", "pump", "telegraph", "harp",
                 "barometer", "lathe")
_FESTIVAL_ADJECTIVES = ("Copper", "Silver", "Painted", "Floating", "Green", "Burning", "Singing")
_FESTIVAL_NOUNS = ("Kite", "Lantern", "Oar", "Bell", "Heron", "Ribbon", "Drum")
_DISH_STEMS = ("Orlen", "Maskel", "Tivver", "Brannock", "Hesper", "Quorrel", "Lammick")
_DISH_NOUNS = ("loaf", "pie", "stew", "pudding", "flatbread", "broth", "tart")
_INGREDIENTS = ("smoked eel", "hazelnuts", "goat cheese", "dried pears", "wild garlic",
                "chestnut flour", "sea buckthorn", "marsh samphire", "black lentils")
_SPICES = ("cardamom", "fennel seed", "nutmeg", "juniper", "caraway")
_COMPOUND_STEMS = ("zen", "kal", "vex", "tral", "pyr", "quin", "dex", "sol")
_COMPOUND_MIDDLES = ("tri", "vo", "ba", "cy", "lo", "ne")
_COMPOUND_ENDINGS = ("late", "rin", "ide", "ane", "ium", "ite")
_INDUSTRIES = ("sheep farming", "slate quarrying", "glassmaking", "river trade", "timber",
               "cheese making", "boatbuilding", "wool weaving")
_LANDMARKS = ("watermill", "signal tower", "covered bridge", "salt warehouse", "bell foundry")
_MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August",
           "September", "October", "November", "December")
_FISH = ("eel", "grayling", "perch", "pike", "trout")

# Chinese names: two-syllable place names, rivers with 江/河, people as surname + given name.
_ZH_FIRST = ("青", "澄", "霁", "沐", "枫", "翠", "朔", "砚", "栖", "岱", "琅", "汀")
_ZH_SECOND = ("川", "宁", "原", "港", "阳", "泉", "湾", "岭", "塘", "丘")
_ZH_RIVER_ENDINGS = ("江", "河")
_ZH_SURNAMES = ("林", "秦", "顾", "沈", "苏", "陆", "闻", "岑")
_ZH_GIVEN = ("明远", "若溪", "景行", "书禾", "知秋", "怀瑾", "清和", "慕白")
_ZH_DEVICES = ("潮汐织机", "风力水泵", "黄铜罗盘", "回声钟", "盐晶气压计", "镜面六分仪")
_ZH_INDUSTRIES = ("茶叶种植", "竹器编织", "瓷器烧制", "内河航运", "造船", "制盐")


class KnowledgeBase:
    """Fictional entities drawn from syllable pools, each main entity used by one item only.

    No name of a pool contains another name of any pool (checked), so a look-alike wrong answer
    never matches the right one by substring.
    """

    def __init__(self, rng: np.random.Generator) -> None:
        self.rng = rng
        self._taken: list[str] = []
        self.pools: dict[str, list[str]] = {}
        self._add("city", 70, lambda: self.pick(_ONSETS) + self.pick(_CITY_ENDINGS))
        self._add("region", 36, lambda: self.pick(_ONSETS) + self.pick(_REGION_ENDINGS))
        self._add("river", 30, lambda: self.pick(_ONSETS) + self.pick(_RIVER_ENDINGS))
        # One person per surname, so a look-alike never shares the surname alternative.
        self.pools["person"] = [
            f"{self.pick(_FIRST_NAMES)} {_SURNAMES[int(i)]}"
            for i in self.rng.permutation(len(_SURNAMES))
        ]
        self._add("device", 30,
                  lambda: f"{self.pick(_DEVICE_ADJECTIVES)} {self.pick(_DEVICE_NOUNS)}")
        self._add("festival", 20, lambda: f"Festival of the {self.pick(_FESTIVAL_ADJECTIVES)} "
                                          f"{self.pick(_FESTIVAL_NOUNS)}")
        self._add("dish", 20, lambda: f"{self.pick(_DISH_STEMS)} {self.pick(_DISH_NOUNS)}")
        self._add("compound", 20, lambda: self.pick(_COMPOUND_STEMS)
                  + self.pick(_COMPOUND_MIDDLES) + self.pick(_COMPOUND_ENDINGS))
        self._add("zh_city", 20, lambda: self.pick(_ZH_FIRST) + self.pick(_ZH_SECOND))
        self._add("zh_region", 12, lambda: self.pick(_ZH_FIRST) + self.pick(_ZH_SECOND))
        self._add("zh_river", 12, lambda: self.pick(_ZH_FIRST) + self.pick(_ZH_RIVER_ENDINGS))
        self._add("zh_person", 12, lambda: self.pick(_ZH_SURNAMES) + self.pick(_ZH_GIVEN))
        names = [name for pool in self.pools.values() for name in pool]
        for a in names:
            for b in names:
                if a != b and a.lower() in b.lower():
                    raise RuntimeError(f"entity name {a!r} is contained in {b!r}")

    def _add(self, kind: str, size: int, draw: Callable[[], str]) -> None:
        used = {name for pool in self.pools.values() for name in pool}
        names: list[str] = []
        for _ in range(MAX_ATTEMPTS):
            candidate = draw()
            clash = any(candidate.lower() in u.lower() or u.lower() in candidate.lower()
                        for u in (*used, *names))
            if not clash:
                names.append(candidate)
                if len(names) == size:
                    self.pools[kind] = names
                    return
        raise RuntimeError(f"could not draw {size} distinct {kind} names")

    def pick(self, options: Sequence[str]) -> str:
        return options[int(self.rng.integers(len(options)))]

    def integer(self, low: int, high: int) -> int:
        return int(self.rng.integers(low, high + 1))

    def year(self) -> str:
        return str(self.integer(1520, 1890))

    def take(self, kind: str) -> str:
        """A main entity of ``kind`` not used by any earlier item."""
        for name in self.pools[kind]:
            if name not in self._taken:
                self._taken.append(name)
                return name
        raise RuntimeError(f"the {kind} pool is exhausted")

    def other(self, kind: str, *exclude: str) -> str:
        """Any entity of ``kind`` except ``exclude`` (look-alike answers, background)."""
        return self.pick([name for name in self.pools[kind] if name not in exclude])

    def value(self, draw: Callable[[], str], *exclude: str) -> str:
        """A draw of ``draw()`` that differs from every value in ``exclude``."""
        for _ in range(MAX_ATTEMPTS):
            candidate = draw()
            if candidate not in exclude:
                return candidate
        raise RuntimeError("could not draw a value outside the excluded ones")

    def distinct(self, draw: Callable[[], str], k: int) -> tuple[str, ...]:
        """``k`` different values of ``draw()``."""
        values: list[str] = []
        for _ in range(MAX_ATTEMPTS):
            value = draw()
            if value not in values:
                values.append(value)
                if len(values) == k:
                    return tuple(values)
        raise RuntimeError(f"could not draw {k} different values")

    def date(self) -> tuple[str, str]:
        """A day as ``("14 March", "March 14")``."""
        day, month = self.integer(10, 28), self.pick(_MONTHS)  # two digits: "4" is in "14"
        return f"{day} {month}", f"{month} {day}"


# ---------------------------------------------------------------------------------------------
# Facts: one question with its answer forms, passages and response templates
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Part:
    """One required part of an answer: its spellings (the first is the one passages use)."""

    forms: tuple[str, ...]
    as_group: bool  # written to ``answer`` as a list of alternatives, else as a bare string
    positives: tuple[str, ...]
    wrong: tuple[str, ...]  # look-alike wrong answers (each appears in a negative passage)


@dataclass(frozen=True)
class Fact:
    """A single-answer question (``statements`` have one ``{}`` slot for the answer)."""

    language: str
    query: str
    part: Part
    negatives: tuple[str, ...]
    statements: tuple[str, ...]
    fake: str  # a look-alike found in no passage: the counterfactual answer


def _fact_capital(kb: KnowledgeBase) -> Fact:
    region, city, river = kb.take("region"), kb.take("city"), kb.other("river")
    *wrong, fake = kb.distinct(lambda: kb.other("city", city), 3)
    industries = kb.distinct(lambda: kb.pick(_INDUSTRIES), 2)
    return Fact(
        "en", f"What is the capital of the province of {region}?",
        Part((city,), False, (
            f"{city} is the capital of the province of {region} and its largest town.",
            f"The provincial assembly of {region} has met in {city} since {kb.year()}.",
            f"{region}'s capital, {city}, lies on the banks of the {river} River.",
        ), tuple(wrong)),
        (
            f"The capital of the neighbouring province of {kb.other('region', region)} is "
            f"{wrong[0]}.",
            f"{wrong[1]} is the busiest market town in {region}, although it is not the capital.",
            f"The economy of {region} rests on {industries[0]} and {industries[1]}.",
            f"Visitors to {region} often stop at the old {kb.pick(_LANDMARKS)} near the coast.",
        ),
        (f"The capital of {region} is {{}}.", f"{{}} is the capital of {region}."),
        fake,
    )


def _fact_source(kb: KnowledgeBase) -> Fact:
    river, city = kb.take("river"), kb.take("city")
    *wrong, fake = kb.distinct(lambda: kb.other("city", city), 3)
    km = kb.integer(40, 600)
    return Fact(
        "en", f"Where does the {river} River rise?",
        Part((city,), False, (
            f"The {river} River rises in the hills above {city} and flows {km} km to the sea.",
            f"Its source near {city} makes the {river} the coldest river of the region.",
            f"Walkers can follow the {river} from its spring at {city} down to the estuary.",
        ), tuple(wrong)),
        (
            f"The {river} River reaches the sea at {wrong[0]}.",
            f"The {kb.other('river', river)} River rises near {wrong[1]}.",
            f"Otters and grey herons are common along the lower {river}.",
            f"Fishermen on the {river} catch mostly {kb.pick(_FISH)}.",
        ),
        (f"The {river} River rises in {{}}.", "It rises near {}."),
        fake,
    )


def _fact_inventor(kb: KnowledgeBase) -> Fact:
    device, person = kb.take("device"), kb.take("person")
    *wrong, fake = kb.distinct(lambda: kb.other("person", person), 3)
    city = kb.other("city")
    surname = person.split()[-1]
    return Fact(
        "en", f"Who invented the {device}?",
        Part((person, surname), True, (
            f"The {device} was invented by {person} in a workshop in {city}.",
            f"{person} built the first working {device} in {kb.year()}.",
            f"Credit for the {device} goes to the engineer {person}.",
        ), tuple(wrong)),
        (
            f"{wrong[0]} improved the {device} some decades after its invention.",
            f"A rival design to the {device} was patented by {wrong[1]}.",
            f"A restored {device} is on display in the museum of {city}.",
            f"Early models of the {device} were made almost entirely of oak.",
        ),
        (f"The {device} was invented by {{}}.", f"{{}} invented the {device}."),
        fake,
    )


def _fact_festival_date(kb: KnowledgeBase) -> Fact:
    festival, city = kb.take("festival"), kb.other("city")
    day, alt = kb.date()
    *wrong, fake = kb.distinct(lambda: kb.value(lambda: kb.date()[0], day), 3)
    return Fact(
        "en", f"On what date is the {festival} held?",
        Part((day, alt), True, (
            f"The {festival} is held every year on {day} in the old town of {city}.",
            f"Each {day}, crowds gather in {city} for the {festival}.",
            f"The {festival} falls on {day} and ends with a procession to the harbour.",
        ), tuple(wrong)),
        (
            f"Preparations for the {festival} start on {wrong[0]}.",
            f"The {kb.other('festival', festival)} is held on {wrong[1]}.",
            f"Thousands of visitors attend the {festival} in {city} each year.",
            f"During the {festival}, the streets are hung with paper lanterns.",
        ),
        (f"The {festival} is held on {{}}.", "It takes place on {} each year."),
        fake,
    )


def _fact_length(kb: KnowledgeBase) -> Fact:
    river, city = kb.take("river"), kb.other("city")
    km = kb.integer(120, 600)
    *wrong, fake = kb.distinct(lambda: f"{kb.integer(20, km - 20)} km", 3)
    return Fact(
        "en", f"How long is the {river} River?",
        Part((f"{km} km", f"{km} kilometres", f"{km} kilometers"), True, (
            f"The {river} River is {km} km long from its source to the sea.",
            f"With a length of {km} km, the {river} is the longest river passing {city}.",
            f"Over its {km} km course the {river} drops almost 900 metres.",
        ), tuple(wrong)),
        (
            f"The {kb.other('river', river)} River, a tributary of the {river}, is "
            f"{wrong[0]} long.",
            f"Barges can navigate the lowest {wrong[1]} of the {river}.",
            f"The {river} River is crossed by {kb.integer(3, 19)} stone bridges.",
            f"Barges carried timber down the {river} past {city} for centuries.",
        ),
        (f"The {river} River is {{}} long.", "It is {} long."),
        fake,
    )


def _fact_isolated(kb: KnowledgeBase) -> Fact:
    compound, person = kb.take("compound"), kb.take("person")
    *wrong, fake = kb.distinct(lambda: kb.other("person", person), 3)
    title = compound.capitalize()
    return Fact(
        "en", f"Who first isolated {compound}?",
        Part((person,), False, (
            f"{title} was first isolated by {person} from peat bogs in {kb.year()}.",
            f"The chemist {person} is credited with isolating {compound}.",
            f"{person} isolated {compound} while studying dyes in {kb.other('city')}.",
        ), tuple(wrong)),
        (
            f"{wrong[0]} was the first to describe the crystals of {compound}.",
            f"{wrong[1]} later found a cheaper way to make {compound}.",
            f"{title} dissolves in alcohol but not in water.",
            f"Small amounts of {compound} are used in the dye industry.",
        ),
        (f"{title} was first isolated by {{}}.", f"{{}} first isolated {compound}."),
        fake,
    )


def _fact_founded(kb: KnowledgeBase) -> Fact:
    city, region = kb.take("city"), kb.other("region")
    year = kb.year()
    *wrong, fake = kb.distinct(lambda: kb.value(kb.year, year), 3)
    return Fact(
        "en", f"In which year was the city of {city} founded?",
        Part((year,), False, (
            f"{city} was founded in {year} as a fishing settlement in {region}.",
            f"Since its founding in {year}, {city} has grown into a busy port.",
            f"The charter of {year} marks the founding of {city}.",
        ), tuple(wrong)),
        (
            f"{city} was linked to the coast by a railway opened in {wrong[0]}.",
            f"The town hall of {city} was rebuilt after a fire in {wrong[1]}.",
            f"A weekly market is held in {city} every Thursday.",
            f"{city} has a population of roughly {kb.integer(8, 400) * 1000:,} people.",
        ),
        (f"{city} was founded in {{}}.", "It was founded in {}."),
        fake,
    )


def _fact_ingredient(kb: KnowledgeBase) -> Fact:
    dish = kb.take("dish")
    ingredient = kb.pick(_INGREDIENTS)
    others = [i for i in _INGREDIENTS if i != ingredient]
    *wrong, fake = kb.distinct(lambda: kb.pick(others), 3)
    title = dish[0].upper() + dish[1:]
    return Fact(
        "en", f"What is the main ingredient of {dish}?",
        Part((ingredient,), False, (
            f"{title} is made mainly from {ingredient}, slowly cooked with onions.",
            f"The main ingredient of {dish} is {ingredient}.",
            f"Without {ingredient}, cooks say, {dish} is not {dish} at all.",
        ), tuple(wrong)),
        (
            f"Some cooks garnish their {dish} with {wrong[0]}.",
            f"{title} is often served with a side of {wrong[1]}.",
            f"Many cooks add a pinch of {kb.pick(_SPICES)} to their {dish}.",
            f"{title} is traditionally served at harvest suppers.",
        ),
        (f"The main ingredient of {dish} is {{}}.", f"{title} is made mainly from {{}}."),
        fake,
    )


def _fact_zh_capital(kb: KnowledgeBase) -> Fact:
    region, city, river = kb.take("zh_region"), kb.take("zh_city"), kb.other("zh_river")
    *wrong, fake = kb.distinct(lambda: kb.other("zh_city", city), 3)
    industries = kb.distinct(lambda: kb.pick(_ZH_INDUSTRIES), 2)
    return Fact(
        "zh", f"{region}省的省会是哪座城市？",
        Part((city,), False, (
            f"{city}市是{region}省的省会，也是全省最大的城市。",
            f"自{kb.year()}年起，{region}省议会一直设在{city}市。",
            f"{region}省省会{city}市坐落在{river}两岸。",
        ), tuple(wrong)),
        (
            f"{wrong[0]}市是{region}省的第二大城市，但并非省会。",
            f"邻省{kb.other('zh_region', region)}省的省会是{wrong[1]}市。",
            f"{region}省以{industries[0]}和{industries[1]}闻名。",
            f"{region}省每年吸引大量游客前来观光。",
        ),
        (f"{region}省的省会是{{}}市。", "{}市。"),
        fake,
    )


def _fact_zh_source(kb: KnowledgeBase) -> Fact:
    river, city = kb.take("zh_river"), kb.take("zh_city")
    *wrong, fake = kb.distinct(lambda: kb.other("zh_city", city), 3)
    return Fact(
        "zh", f"{river}发源于哪里？",
        Part((city,), False, (
            f"{river}发源于{city}附近的山区，全长{kb.integer(40, 600)}公里。",
            f"{river}的源头位于{city}，河水清澈冰凉。",
            f"沿着{river}从{city}的泉眼一路向下，可以走到入海口。",
        ), tuple(wrong)),
        (
            f"{river}在{wrong[0]}注入大海。",
            f"{kb.other('zh_river', river)}发源于{wrong[1]}一带。",
            f"{river}下游常见水獭和苍鹭。",
            f"{river}上建有{kb.integer(3, 19)}座石桥。",
        ),
        (f"{river}发源于{{}}。", "{}。"),
        fake,
    )


def _fact_zh_inventor(kb: KnowledgeBase) -> Fact:
    device = _ZH_DEVICES[kb.integer(0, len(_ZH_DEVICES) - 1)]
    person = kb.take("zh_person")
    *wrong, fake = kb.distinct(lambda: kb.other("zh_person", person), 3)
    return Fact(
        "zh", f"{device}是谁发明的？",
        Part((person,), False, (
            f"{device}由{person}于{kb.year()}年发明。",
            f"{person}在作坊里造出了第一台{device}。",
            f"{device}的发明者是工匠{person}。",
        ), tuple(wrong)),
        (
            f"{wrong[0]}在数十年后改进了{device}。",
            f"{wrong[1]}曾为一种与{device}竞争的设计申请专利。",
            f"一台修复后的{device}陈列在博物馆中。",
            f"早期的{device}几乎全部用橡木制成。",
        ),
        (f"{device}是{{}}发明的。", "{}。"),
        fake,
    )


ENGLISH_FACTS: tuple[Callable[[KnowledgeBase], Fact], ...] = (
    _fact_capital, _fact_source, _fact_inventor, _fact_festival_date, _fact_length,
    _fact_isolated, _fact_founded, _fact_ingredient,
)
CHINESE_FACTS: tuple[Callable[[KnowledgeBase], Fact], ...] = (
    _fact_zh_capital, _fact_zh_source, _fact_zh_inventor,
)
#: Counterfactual families: the fake answer must be a drop-in replacement inside the passages.
COUNTERFACTUAL_FACTS: tuple[Callable[[KnowledgeBase], Fact], ...] = (
    _fact_capital, _fact_source, _fact_inventor, _fact_founded, _fact_festival_date,
)


@dataclass(frozen=True)
class Integration:
    """A two-part question; ``full`` has slots ``{0}`` and ``{1}``, ``halves`` one slot each."""

    query: str
    parts: tuple[Part, Part]
    negatives: tuple[str, ...]
    full: tuple[str, ...]
    halves: tuple[str, str]


def _integration_capital_river(kb: KnowledgeBase) -> Integration:
    region, city, river = kb.take("region"), kb.take("city"), kb.take("river")
    wrong_city, wrong_river = kb.other("city", city), kb.other("river", river)
    return Integration(
        f"What is the capital of {region}, and which river flows through it?",
        (
            Part((city,), False, (
                f"{city} has been the capital of the province of {region} since {kb.year()}.",
                f"The governor of {region} resides in the capital, {city}.",
            ), (wrong_city,)),
            Part((river,), False, (
                f"The {river} River flows through the centre of the provincial capital.",
                f"Seven bridges cross the {river} River inside the walls of the capital of "
                f"{region}.",
            ), (wrong_river,)),
        ),
        (
            f"{wrong_city} is the second city of {region}.",
            f"The {wrong_river} River forms the eastern border of {region}.",
            f"The economy of {region} rests on {kb.pick(_INDUSTRIES)}.",
            f"Visitors to {region} often stop at the old {kb.pick(_LANDMARKS)}.",
        ),
        ("The capital is {0}, and the {1} River flows through it.",
         "{0}; the river is the {1}."),
        ("The capital of " + region + " is {}.", "The {} River flows through it."),
    )


def _integration_inventor_year(kb: KnowledgeBase) -> Integration:
    device, person = kb.take("device"), kb.take("person")
    year = kb.year()
    wrong_person, wrong_year = kb.other("person", person), kb.value(kb.year, year)
    surname = person.split()[-1]
    return Integration(
        f"Who invented the {device}, and in which year?",
        (
            Part((person, surname), True, (
                f"The {device} is the work of the engineer {person}.",
                f"{person} is remembered above all as the inventor of the {device}.",
            ), (wrong_person,)),
            Part((year,), False, (
                f"The first {device} was demonstrated to the public in {year}.",
                f"Records show that the {device} was invented in {year}.",
            ), (wrong_year,)),
        ),
        (
            f"{wrong_person} sold the first {device} abroad.",
            f"A museum devoted to the {device} opened in {wrong_year}.",
            f"The {device} relies on a system of counterweights and pulleys.",
            f"Only {kb.integer(3, 60)} original examples of the {device} survive today.",
        ),
        ("{0} invented it in {1}.", "The " + device + " was invented by {0} in {1}."),
        ("The " + device + " was invented by {}.", "It was invented in {}."),
    )


def _integration_festival(kb: KnowledgeBase) -> Integration:
    festival, city = kb.take("festival"), kb.take("city")
    day, alt = kb.date()
    wrong_city, wrong_day = kb.other("city", city), kb.value(lambda: kb.date()[0], day)
    return Integration(
        f"Where and on what date is the {festival} held?",
        (
            Part((city,), False, (
                f"The {festival} is celebrated in the streets of {city}.",
                f"Every year {city} fills with visitors for the {festival}.",
            ), (wrong_city,)),
            Part((day, alt), True, (
                f"The {festival} always falls on {day}.",
                f"Mark {day} in your calendar: that is the day of the {festival}.",
            ), (wrong_day,)),
        ),
        (
            f"A smaller copy of the {festival} is held in {wrong_city}.",
            f"Tickets for the {festival} go on sale on {wrong_day}.",
            f"The {festival} ends with a procession to the harbour.",
            f"During the {festival}, the streets are hung with green ribbons.",
        ),
        ("It is held in {0} on {1}.", "The " + festival + " takes place in {0} on {1}."),
        ("It is held in {}.", "It is held on {}."),
    )


INTEGRATIONS: tuple[Callable[[KnowledgeBase], Integration], ...] = (
    _integration_capital_river, _integration_inventor_year, _integration_festival,
)


# ---------------------------------------------------------------------------------------------
# Items in RGB's format
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Item:
    """One benchmark item: its RGB record plus what the synthetic models answer with."""

    id: int
    kind: str  # "single", "integration" or "counterfactual"
    language: str
    record: dict[str, object]
    parts: tuple[Part, ...]
    statements: tuple[str, ...]  # single and counterfactual items: one "{}" slot
    integration: Integration | None = None
    fake: str | None = None


def _answer_json(parts: Sequence[Part]) -> object:
    elements = [list(p.forms) if p.as_group else p.forms[0] for p in parts]
    if len(elements) == 1:
        return [elements[0]] if parts[0].as_group else elements[0]
    return elements


def _mentions_any(text: str, forms: Sequence[str]) -> bool:
    return any(form.lower() in text.lower() for form in forms)


def _check(item: Item) -> Item:
    """Raise unless the passages obey the containment rules the responses and tests rely on."""
    forms = [form for part in item.parts for form in part.forms]
    for part in item.parts:
        if not all(part.forms[0] in p for p in part.positives):
            raise RuntimeError(f"item {item.id}: a positive passage lacks {part.forms[0]!r}")
        if any(_mentions_any(wrong, forms) for wrong in part.wrong):
            raise RuntimeError(f"item {item.id}: a wrong answer contains an answer")
    for passage in item.record["negative"]:  # type: ignore[attr-defined]
        if _mentions_any(passage, forms):
            raise RuntimeError(f"item {item.id}: a negative passage contains an answer")
    if item.fake is not None:
        if _mentions_any(item.fake, forms):
            raise RuntimeError(f"item {item.id}: the fake answer contains an answer")
        for passage in item.record["positive_wrong"]:  # type: ignore[attr-defined]
            if _mentions_any(passage, forms) or item.fake not in passage:
                raise RuntimeError(f"item {item.id}: positive_wrong still holds the answer")
        for passage in item.record["negative"]:  # type: ignore[attr-defined]
            if item.fake.lower() in passage.lower():
                raise RuntimeError(f"item {item.id}: a negative passage holds the fake answer")
    return item


def _single(item_id: int, fact: Fact) -> Item:
    record = {
        "id": item_id, "query": fact.query, "answer": _answer_json([fact.part]),
        "positive": list(fact.part.positives), "negative": list(fact.negatives),
    }
    return _check(Item(item_id, "single", fact.language, record, (fact.part,), fact.statements))


def _counterfactual(item_id: int, fact: Fact) -> Item:
    true, fake = fact.part.forms[0], fact.fake
    record = {
        "id": item_id, "query": fact.query, "answer": _answer_json([fact.part]),
        "fakeanswer": fake,
        "positive_wrong": [p.replace(true, fake) for p in fact.part.positives],
        "positive": list(fact.part.positives), "negative": list(fact.negatives),
    }
    return _check(Item(item_id, "counterfactual", fact.language, record, (fact.part,),
                       fact.statements, fake=fake))


def _integrated(item_id: int, integration: Integration) -> Item:
    record = {
        "id": item_id, "query": integration.query, "answer": _answer_json(integration.parts),
        "positive": [list(p.positives) for p in integration.parts],
        "negative": list(integration.negatives),
    }
    return _check(Item(item_id, "integration", "en", record, integration.parts, (),
                       integration=integration))


def build_items(kb: KnowledgeBase) -> list[Item]:
    """All items in id order: single-answer, integration, counterfactual."""
    items: list[Item] = []
    for i in range(ENGLISH_SINGLE_ITEMS):
        items.append(_single(len(items), ENGLISH_FACTS[i % len(ENGLISH_FACTS)](kb)))
    for i in range(CHINESE_SINGLE_ITEMS):
        items.append(_single(len(items), CHINESE_FACTS[i % len(CHINESE_FACTS)](kb)))
    for i in range(INTEGRATION_ITEMS):
        items.append(_integrated(len(items), INTEGRATIONS[i % len(INTEGRATIONS)](kb)))
    for i in range(COUNTERFACTUAL_ITEMS):
        fact = COUNTERFACTUAL_FACTS[i % len(COUNTERFACTUAL_FACTS)](kb)
        items.append(_counterfactual(len(items), fact))
    return items


# ---------------------------------------------------------------------------------------------
# Responses
# ---------------------------------------------------------------------------------------------


def _pick(rng: np.random.Generator, options: Sequence[str], weights: Sequence[float] = ()) -> str:
    if weights:
        p = np.asarray(weights, dtype=float)
        return options[int(rng.choice(len(options), p=p / p.sum()))]
    return options[int(rng.integers(len(options)))]


def _phrasing(item: Item, rng: np.random.Generator) -> Callable[[str], str]:
    """How a model words an answer: bare (sometimes lower case) or in one of the item's sentences.

    The choice is drawn once and applied to any value, so a right and a wrong answer of the same
    (item, model) read alike.
    """
    if rng.random() < TERSE_SHARE:
        lower = rng.random() < LOWERCASE_SHARE
        end = "" if item.language == "zh" else "."
        return lambda value: (value.lower() if lower else value) + end
    statement = _pick(rng, item.statements)
    return lambda value: statement.replace("{}", value)


def _right(item: Item, part: Part, rng: np.random.Generator) -> str:
    """A spelling of the right answer: usually the first, sometimes an alternative."""
    if len(part.forms) > 1 and rng.random() < ALTERNATIVE_SHARE:
        return _pick(rng, part.forms[1:])
    return part.forms[0]


def _rejection(item: Item, model: ModelProfile, rng: np.random.Generator) -> str:
    if item.language == "zh":
        return _pick(rng, CHINESE_REJECTIONS, (0.7, 0.3))
    return _pick(rng, REJECTIONS, model.rejection_weights)


def _single_response(
    item: Item, model: ModelProfile, noise_rate: float, difficulty: float, second: float,
    rng: np.random.Generator,
) -> str:
    """Noise robustness and negative rejection: right, rejected or a look-alike wrong answer."""
    part = item.parts[0]
    right, wrong = _right(item, part, rng), _pick(rng, part.wrong)
    rejection, say = _rejection(item, model, rng), _phrasing(item, rng)
    if noise_rate == REJECTION_NOISE_RATE:
        return rejection if difficulty < model.reject_skill else say(wrong)
    if difficulty < model.accuracy * (1 - model.noise_sensitivity * noise_rate):
        return say(right)
    if second < model.false_reject + noise_rate / 4:
        return rejection
    return say(wrong)


def _integration_response(
    item: Item, model: ModelProfile, noise_rate: float, difficulty: float,
    rng: np.random.Generator,
) -> str:
    assert item.integration is not None
    first, second = item.parts
    values = (_right(item, first, rng), _right(item, second, rng))
    wrongs = (_pick(rng, first.wrong), _pick(rng, second.wrong))
    full = _pick(rng, item.integration.full)
    half = int(rng.integers(2))
    scale = 1 - model.noise_sensitivity * noise_rate
    accuracy = model.integration_accuracy * scale
    if difficulty < accuracy:
        return full.format(*values)
    if difficulty < accuracy + model.integration_partial:
        return item.integration.halves[half].replace("{}", values[half])
    # Wrong: the look-alike for the first part, the right second part or its look-alike.
    return full.format(wrongs[0], wrongs[1] if half else values[1])


def _counterfactual_response(
    item: Item, model: ModelProfile, difficulty: float, rng: np.random.Generator
) -> str:
    assert item.fake is not None
    true = _right(item, item.parts[0], rng)
    say = _phrasing(item, rng)
    detect = _pick(rng, (
        "The documents say {fake}, but that is incorrect; the answer is {true}.",
        "The documents contain an error: it is not {fake}. The correct answer is {true}.",
        f"{RGB_ERROR_FLAG} The correct answer is {{true}}, not {{fake}}.",
    ))
    flag = _pick(rng, (RGB_ERROR_FLAG, "The provided documents appear to contain an error."))
    if difficulty < model.correct_error:
        return detect.format(fake=item.fake, true=true)
    if difficulty < model.correct_error + model.flag_error:
        return flag
    if difficulty < model.correct_error + model.flag_error + model.true_only:
        return say(true)
    return say(item.fake)


def _phi(x: float) -> float:
    return 0.5 * (1.0 + math.erf(x / math.sqrt(2.0)))


def _grid(item: Item) -> list[tuple[str, float]]:
    """The (task, noise rate) cells an item is answered in, in output order."""
    if item.kind == "single":
        return [*(("noise_robustness", r) for r in NOISE_RATES),
                ("negative_rejection", REJECTION_NOISE_RATE)]
    if item.kind == "integration":
        return [("information_integration", r) for r in INTEGRATION_NOISE_RATES]
    return [("counterfactual_robustness", COUNTERFACTUAL_NOISE_RATE)]


def build(seed: int = DEFAULT_SEED) -> tuple[list[dict[str, object]], list[dict[str, object]]]:
    """The data records (one per item) and the output records (one per id × model × task × rate)."""
    root = np.random.default_rng(seed)
    kb_rng, plan_rng, style_rng, usage_rng = root.spawn(4)
    items = build_items(KnowledgeBase(kb_rng))
    # Latent difficulty: shared by the three models (correlated) and by all noise rates.
    shared = plan_rng.normal(size=len(items))
    own = plan_rng.normal(scale=0.6, size=(len(items), len(MODELS)))
    second = plan_rng.random(size=(len(items), len(MODELS)))
    outputs: list[dict[str, object]] = []
    for task in TASKS:
        for ii, item in enumerate(items):
            cells = [rate for t, rate in _grid(item) if t == task]
            for mi, model in enumerate(MODELS):
                difficulty = _phi((shared[ii] + own[ii, mi]) / math.sqrt(1 + 0.6**2))
                style_seed = int(style_rng.integers(2**63))
                for rate in cells:
                    # Replaying one stream per (item, model, task) keeps the phrasing the same at
                    # every noise rate: a response changes only where its outcome changes.
                    rng = np.random.default_rng(style_seed)
                    if task == "information_integration":
                        response = _integration_response(item, model, rate, difficulty, rng)
                    elif task == "counterfactual_robustness":
                        response = _counterfactual_response(item, model, difficulty, rng)
                    else:
                        response = _single_response(
                            item, model, rate, difficulty, second[ii, mi], rng
                        )
                    latency = (
                        model.latency_base_ms + model.latency_per_char_ms * len(response)
                    ) * math.exp(usage_rng.normal(scale=0.15))
                    outputs.append({
                        "id": item.id, "model": model.name, "task": task, "noise_rate": rate,
                        "response": response, "latency_ms": round(latency, 1),
                    })
    data = [item.record for item in items]
    return data, outputs


def to_json_lines(records: Sequence[dict[str, object]], keys: Sequence[str]) -> str:
    """One JSON object per line, keys in ``keys`` order (absent keys skipped), UTF-8 text."""
    lines = [
        json.dumps({k: record[k] for k in keys if k in record}, ensure_ascii=False)
        for record in records
    ]
    return "".join(line + "\n" for line in lines)


def write_text_atomic(text: str, target: Path) -> Path:
    with atomic_path(target) as tmp:
        tmp.write_bytes(text.encode("utf-8"))
    return target


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="Write the synthetic RGB-style sample (deterministic for a given seed)."
    )
    parser.add_argument("--out-dir", type=Path, default=DEFAULT_OUT_DIR,
                        help=f"folder for {DATA_FILE} and {OUTPUTS_FILE}")
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED, help="random seed")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(name)s: %(message)s")
    data, outputs = build(args.seed)
    data_keys = (*DATA_KEYS[:3], *COUNTERFACTUAL_KEYS, *DATA_KEYS[3:])
    data_path = write_text_atomic(to_json_lines(data, data_keys), args.out_dir / DATA_FILE)
    outputs_path = write_text_atomic(
        to_json_lines(outputs, OUTPUT_KEYS), args.out_dir / OUTPUTS_FILE
    )
    log.info("wrote %s: %d items (%d bytes)", data_path, len(data), data_path.stat().st_size)
    log.info(
        "wrote %s: %d responses, %d models, seed %d (%d bytes)",
        outputs_path, len(outputs), len(MODELS), args.seed, outputs_path.stat().st_size,
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
