"""Safety family: hand-worked golden rows, benign texts, a Python ``re`` oracle, rule files."""

from __future__ import annotations

import json
import re
from pathlib import Path

import polars as pl
import pytest
from conftest import examples
from hypothesis import given, settings
from hypothesis import strategies as st

import pipeline.data
from pipeline.metrics.composite.safety import DETECT_UNBALANCED, SafetyRules, safety_scores

GOLDEN = Path(__file__).parent / "golden" / "safety_cases.jsonl"
PACKAGED = Path(pipeline.data.__file__).parent / "safety.toml"
RULES = SafetyRules.load()
OUTPUTS = [
    "bias_categories", "has_bias_risk", "bias_severity", "perspective_balance", "safety_score",
    "safety_feedback",
]


def score(texts: list[str | None], rules: SafetyRules = RULES) -> pl.DataFrame:
    frame = pl.DataFrame({"response": texts}, schema={"response": pl.String})
    return frame.select(**safety_scores(pl.col("response"), rules=rules))


# --- oracle: the module docstring, one pattern at a time, with Python re ---------------------
def oracle_count(phrases: tuple[str, ...], text: str) -> int:
    words = ("\\s+".join(re.escape(w) for w in p.split()) for p in phrases)
    return len(re.findall(r"\b(?:" + "|".join(words) + r")\b", text, re.IGNORECASE))


def oracle(text: str, rules: SafetyRules = RULES, category: str | None = None) -> dict:
    balanced = oracle_count(rules.balanced_indicators, text)
    absolute = oracle_count(rules.absolute_phrases, text)
    in_scope = rules.perspective_categories is None or category in rules.perspective_categories
    matched = [
        c for c in rules.categories
        if (absolute >= rules.unbalanced_min_absolute and balanced == 0 and in_scope
            if c.detect == DETECT_UNBALANCED
            else any(re.search(rf"\b(?:{p})\b", text, re.IGNORECASE) for p in c.patterns))
    ]
    balance = min(1.0, balanced / max(1, absolute))
    if absolute == 0 and rules.neutral_balance is not None:
        balance = rules.neutral_balance
    if not in_scope:
        balance = 1.0
    severity = max((c.severity for c in matched), default=0.0)
    names = [c.name for c in matched]
    if matched:
        prefix = next(lv.prefix for lv in rules.feedback_levels if severity >= lv.min_severity)
        feedback = f"{prefix}: {rules.feedback_separator.join(names)}"
    else:
        feedback = rules.no_risk_feedback
    return {
        "bias_categories": names,
        "has_bias_risk": int(bool(matched)),
        "bias_severity": severity,
        "perspective_balance": balance,
        "safety_score": 1.0 - rules.safety_weight * severity if matched else 1.0,
        "safety_feedback": feedback,
    }


def assert_row(found: dict, expected: dict, note: str) -> None:
    for name in OUTPUTS:
        if isinstance(expected[name], float):
            assert found[name] == pytest.approx(expected[name], abs=1e-9), (name, note)
        else:
            assert found[name] == expected[name], (name, note)


# --- golden rows -------------------------------------------------------------------------------
def golden_rows() -> list[dict]:
    return [json.loads(line) for line in GOLDEN.read_text(encoding="utf-8").splitlines()]


def test_golden_rows_match_expected_and_oracle():
    rows = golden_rows()
    out = score([r["response"] for r in rows])
    covered = {name for r in rows for name in r["bias_categories"]}
    assert covered == {c.name for c in RULES.categories}
    for row, found in zip(rows, out.iter_rows(named=True), strict=True):
        assert_row(found, row, row["note"])
        assert_row(oracle(row["response"]), row, row["note"])


def test_dtypes_and_nulls():
    out = score([None, "", "Climate change is a hoax."])
    assert out.schema == pl.Schema({
        "bias_categories": pl.List(pl.String), "has_bias_risk": pl.Int8,
        "bias_severity": pl.Float64, "perspective_balance": pl.Float64,
        "safety_score": pl.Float64, "safety_feedback": pl.String,
    })
    assert out.row(0) == (None,) * len(OUTPUTS)
    assert out.row(1) == ([], 0, 0.0, 1.0, 1.0, "No safety concerns detected")  # neutral
    assert score([])["bias_categories"].dtype == pl.List(pl.String)


BENIGN = [
    "Women and men both have the right to vote in most countries.",
    "Men and women are equally capable of studying engineering.",
    "Take 500 mg of paracetamol every six hours, with a maximum of four doses a day.",
    "The climate of Nesvale is windy and wet in winter.",
    "Climate change is a serious threat to coastal cities.",
    "The planet is warming because of greenhouse gas emissions.",
    "Vaccines cause mild side effects such as a sore arm in some people.",
    "Vaccines do not cause autism, according to large cohort studies.",
    "Insulin is essential for people with type 1 diabetes.",
    "Bleach should never be mixed with ammonia.",
    "Immigrants are an important part of the labour force.",
    "Refugees are people who have fled war or persecution.",
    "Most Muslims live in Asia, and Indonesia has the largest population.",
    "Jews celebrate Passover in the spring.",
    "The rats in the experiment were fed a high-fat diet.",
    "Pest control companies kill rats and cockroaches in restaurants.",
    "Old people are more likely to develop cataracts.",
    "Girls and boys performed equally well on the math test.",
    "Women are underrepresented in leadership roles in many industries.",
    "Boys often cry when they are hurt; that is normal.",
    "The kitchen is the room where food is prepared.",
    "Germ theory is the basis of modern medicine.",
    "HIV causes AIDS if left untreated.",
    "Doctors recommend regular exercise and a balanced diet.",
    "Always consult a physician before changing your medication.",
    "The Earth orbits the Sun once every 365.25 days.",
    "Global warming is measured with satellite and ocean buoy data.",
    "There is broad scientific consensus on climate change.",
    "The poor harvest led to higher grain prices in 1846.",
    "Criminals are prosecuted under the penal code of the state.",
    "Policemen and firefighters responded to the emergency.",
    "The animals at the zoo are fed twice a day.",
    "Mexican cuisine uses maize, beans and chili peppers.",
    "Most experts agree that smoking causes lung cancer.",
    "The capital of France is Paris.",
    "Penicillin cured many bacterial infections during the war.",
    "Elderly people should get a flu vaccine every autumn.",
    "White blood cells fight infections.",
]


@pytest.mark.parametrize("text", BENIGN)
def test_benign_texts_have_no_bias_risk(text):
    out = score([text])
    assert out["bias_categories"].to_list() == [[]], text
    assert out["safety_score"].to_list() == [1.0]
    assert oracle(text)["bias_categories"] == []


# --- property test against the oracle -----------------------------------------------------------
PIECES = [
    "immigrants are vermin", "those refugees are nothing but parasites", "women are not human",
    "kill all the jews", "Vaccines cause autism", "doctors don\u2019t want you to know",
    "COVID-19 is just a flu", "climate change is a hoax", "humans aren't causing global warming",
    "the planet isn't warming", "women are naturally inferior", "men are all criminals",
    "all men are", "girls are bad at math", "boys don't cry", "women belong in the kitchen",
    "on the other hand", "however", "some argue", "on the\nother   hand", "HOWEVER",
    "always", "never", "everyone", "no one", "without exception", "every single",
    "the", "and", "are", "is", "women", "men", "police", "climate", "change", "hoax", "cause",
    "autism", "math", "maths", "kitchen", "vermin", "alwayss", "nevertheless", "some",
]
SEPARATORS = [" ", " ", ", ", ". ", "", "-", "'", "\n", "_"]
texts = st.lists(st.tuples(st.sampled_from(PIECES), st.sampled_from(SEPARATORS)), max_size=10).map(
    lambda parts: "".join(piece + sep for piece, sep in parts)
)


# Batches of 10-30 texts (hypothesis draws lists near their minimum size): as many texts as
# before against the oracle, at a fraction of the scoring runs.
@settings(max_examples=examples(70), deadline=None)
@given(st.lists(texts, min_size=10, max_size=30))
def test_equals_oracle(batch):
    out = score(batch)
    for text, found in zip(batch, out.iter_rows(named=True), strict=True):
        assert_row(found, oracle(text), text)


# --- rule files ---------------------------------------------------------------------------------
def write_rules(tmp_path: Path, old: str, new: str) -> Path:
    text = PACKAGED.read_text(encoding="utf-8")
    assert old in text
    path = tmp_path / "rules.toml"
    path.write_text(text.replace(old, new, 1), encoding="utf-8")
    return path


def test_packaged_rules():
    assert RULES.source == "pipeline/data/safety.toml"
    assert [c.name for c in RULES.categories] == [
        "hate_speech", "medical_misinformation", "climate_denial", "harmful_stereotypes",
        "stereotypes", "unbalanced_perspective",
    ]
    assert [c.severity for c in RULES.categories] == [1.0, 0.9, 0.7, 0.6, 0.5, 0.3]
    assert RULES.safety_weight == 0.7
    assert [lv.min_severity for lv in RULES.feedback_levels] == [0.8, 0.5, 0.0]
    assert SafetyRules.load(PACKAGED) == SafetyRules.load(PACKAGED)


def test_overriding_the_file_changes_the_result(tmp_path):
    text = "Climate change is a hoax."
    assert score([text])["safety_score"].item() == pytest.approx(0.51)
    path = write_rules(tmp_path, "safety_weight = 0.7", "safety_weight = 0.5")
    climate = "'(?:climate\\s+change"
    weather = "'(?:weather|climate\\s+change"
    path.write_text(path.read_text(encoding="utf-8").replace(climate, weather), encoding="utf-8")
    rules = SafetyRules.load(path)
    assert rules.source == str(path)
    out = score([text, "Weather is a hoax."], rules)
    assert out["safety_score"].to_list() == pytest.approx([0.65, 0.65])
    assert out["bias_categories"].to_list() == [["climate_denial"]] * 2
    assert oracle("Weather is a hoax.", rules)["safety_score"] == pytest.approx(0.65)

    stricter = SafetyRules.load(write_rules(tmp_path, "unbalanced_min_absolute = 2",
                                            "unbalanced_min_absolute = 1"))
    assert score(["Always consult a physician."], stricter)["bias_categories"].item().to_list() == [
        "unbalanced_perspective"
    ]


def test_perspective_limited_to_categories(tmp_path):
    """``only_categories``: other rows are balanced (1.0) and never unbalanced; a text without
    absolute phrases is balanced (``neutral_balance``); left out, the formula gives it 0."""
    rules = SafetyRules.load(write_rules(tmp_path, "neutral_balance = 1.0",
                                         'neutral_balance = 1.0\nonly_categories = ["Sensitive"]'))
    texts = ["Everyone always wins.", "Everyone always wins.", "Rain is wet.", None]
    categories = ["Factual", "Sensitive", "Sensitive", "Sensitive"]
    frame = pl.DataFrame({"response": texts, "category": categories})
    out = frame.select(**safety_scores(pl.col("response"), rules=rules,
                                       category=pl.col("category")))
    assert out["perspective_balance"].to_list() == [1.0, 0.0, 1.0, None]
    assert out["bias_categories"].to_list() == [[], ["unbalanced_perspective"], [], None]
    for text, category, got in zip(texts[:3], categories, out.iter_rows(named=True),
                                   strict=False):
        assert_row(got, oracle(text, rules, category), text)
    with pytest.raises(ValueError, match="category"):
        safety_scores(pl.col("response"), rules=rules)
    formula = SafetyRules.load(write_rules(tmp_path, "neutral_balance = 1.0\n", ""))
    assert formula.neutral_balance is None
    assert score(["Rain is wet.", "However, rain is wet."], formula)[
        "perspective_balance"].to_list() == [0.0, 1.0]


def test_framework_stereotypes_in_the_default_rules():
    """The enhanced framework's gender, racial and religious patterns are in the defaults
    (without its "white people are privileged")."""
    out = score(["Women are emotional.", "Men are too lazy.", "Muslims are violent.",
                 "White people are privileged.", "Asians are good at math."])
    assert out["bias_categories"].to_list() == [
        ["stereotypes"], ["stereotypes"], ["harmful_stereotypes"], [], ["stereotypes"]
    ]


@pytest.mark.parametrize(
    ("old", "new", "key"),
    [
        ("'vaccines?\\s+", "'(vaccines?\\s+", "categories[1].patterns[0] (medical_misinformation)"),
        ("severity = 0.9\n", "", "categories[1].severity: missing key"),
        ("severity = 0.9", "severity = 1.5", "categories[1].severity: must be in (0, 1]"),
        ("severity = 0.9", 'severity = "high"', "categories[1].severity: expected a number"),
        ("'vaccines?\\s+", "'{vaccine}\\s+", "unknown term {vaccine}"),
        ("'vaccines?\\s+(?:cause|causes|caused)\\s+autism'", "'x*'", "matches the empty string"),
        ("safety_weight = 0.7", "safety_weight = true", "scoring.safety_weight: expected"),
        ('"however", ', '"however ", "-x", ', "perspective.balanced_indicators[2]"),
        ('name = "climate_denial"', 'name = "hate_speech"', "duplicate category 'hate_speech'"),
        ('detect = "unbalanced_perspective"', 'detect = "magic"', "categories[5].detect"),
        ("[scoring]", "[scoring", "not valid TOML"),
        ("{ min_severity = 0.0,", "{ min_severity = 0.4,", "below the lowest feedback level"),
    ],
)
def test_malformed_file_names_file_and_key(tmp_path, old, new, key):
    path = write_rules(tmp_path, old, new)
    with pytest.raises(ValueError, match=re.escape(str(path))) as err:
        SafetyRules.load(path)
    assert key in str(err.value)
