"""The RGB robustness-suite family (Chen et al. 2023): correctness, rejection, error detection.

Every column is null on rows without a ``task`` (rows that are not RGB rows); see
``docs/rgb.md``. ``[rgb] mode`` picks the rules: ``flexible`` and ``strict`` use
:func:`~pipeline.metrics.robustness.rgb.flexible_correct` and the lenient phrase checks of
:mod:`~pipeline.metrics.robustness.rgb_detect`; ``official`` uses the published script's rules
(:func:`~pipeline.metrics.robustness.rgb.official_correct` and its two case-sensitive phrases
per check).
Flexible and strict compare the response without citation markers (``_response``); official
compares the raw response, as the script does.

``[compat] preset = "rgb-app"`` (flexible and strict modes) uses the RGB app's own checks
instead (:mod:`~pipeline.metrics.robustness.rgb_app`: its lists, lowercase-only substring
matching, its answer normalization and correction rule) on the raw response; docs/compat.md.
"""

from __future__ import annotations

from collections.abc import Callable

import polars as pl

from pipeline.metrics.robustness import rgb, rgb_app, rgb_detect
from pipeline.metrics.spec import Inputs, MetricSpec
from pipeline.schema import RGB_ANSWERED_TASKS

RESPONSE = "_response"
COUNTERFACTUAL = "counterfactual_robustness"


def is_chinese() -> pl.Expr:
    """Rows of a Chinese set: ``language`` starting with ``zh``, or, without a language, a
    question containing a Han character."""
    language = pl.col("language")
    by_question = pl.col("question").str.contains(rgb.HAN_PATTERN).fill_null(False)
    return (
        pl.when(language.is_not_null())
        .then(language.str.to_lowercase().str.starts_with("zh"))
        .otherwise(by_question)
    )


def _official(inputs: Inputs) -> bool:
    return inputs.config.rgb_mode == "official"


def _app(inputs: Inputs) -> bool:
    """The RGB app's checks: preset ``rgb-app`` outside the official mode."""
    return inputs.config.compat_preset == "rgb-app" and not _official(inputs)


def _correct(inputs: Inputs) -> pl.Expr:
    groups = pl.col("answer_groups")
    if _official(inputs):
        correct = rgb.official_correct(
            pl.col("response"), groups, chinese=is_chinese(), noise_rate=pl.col("noise_level")
        )
    elif _app(inputs):
        fake = pl.when(pl.col("task") == COUNTERFACTUAL).then(pl.col("counterfactual_answer"))
        correct = rgb_app.app_correct(pl.col("response"), groups, fake_answer=fake,
                                      strict=inputs.config.rgb_mode == "strict")
    else:
        correct = rgb.flexible_correct(
            pl.col(RESPONSE), groups, strict=inputs.config.rgb_mode == "strict"
        )
    return pl.when(pl.col("task").is_in(RGB_ANSWERED_TASKS)).then(correct)


def _rejection_phrase(inputs: Inputs) -> pl.Expr:
    if _official(inputs):
        phrase = rgb.official_rejection_phrase(pl.col("response"), chinese=is_chinese())
    elif _app(inputs):
        config = inputs.config
        phrase = rgb_app.app_rejection_phrase(
            pl.col("response"),
            phrases=(*config.rgb_primary_rejections, *config.rgb_secondary_rejections),
        )
    else:
        phrase = rgb_detect.rgb_rejection_phrase(
            pl.col(RESPONSE),
            primary=inputs.config.rgb_primary_rejections,
            secondary=inputs.config.rgb_secondary_rejections,
            chinese=is_chinese(),
        )
    return pl.when(pl.col("task").is_not_null()).then(phrase)


def _rejected(_: Inputs) -> pl.Expr:
    rejected = rgb_detect.rejected_from_phrase(pl.col("response"), pl.col("rejection_phrase"))
    return pl.when(pl.col("task").is_not_null()).then(rejected)


def _error_detected(inputs: Inputs) -> pl.Expr:
    if _official(inputs):
        detected = rgb.official_error_detected(pl.col("response"), chinese=is_chinese())
    elif _app(inputs):
        detected = rgb_app.app_error_detected(
            pl.col("response"), pl.col("counterfactual_answer"),
            keywords=inputs.config.rgb_error_keywords,
        )
    else:
        detected = rgb_detect.rgb_error_detected(
            pl.col(RESPONSE), pl.col("counterfactual_answer"),
            keywords=inputs.config.rgb_error_keywords,
        )
    return pl.when(pl.col("task") == COUNTERFACTUAL).then(detected)


def _error_corrected(_: Inputs) -> pl.Expr:
    return pl.when(pl.col("task") == COUNTERFACTUAL).then(pl.col("rgb_correct"))


def _flag(name: str, build: Callable[[Inputs], pl.Expr], description: str,
          higher_is_better: bool | None, needs: tuple[str, ...] = ()) -> MetricSpec:
    return MetricSpec(name, "rgb", build, pl.Int8(), description, needs=needs,
                      higher_is_better=higher_is_better, nullable=True)


SPECS: tuple[MetricSpec, ...] = (
    _flag("rgb_correct", _correct,
          "Noise-robustness, integration and counterfactual rows: 1 when every answer group is "
          "matched ([rgb] mode flexible, strict or official).", True),
    _flag("rejected", _rejected,
          "RGB rows: 1 when the response contains a rejection phrase (negative rejection).",
          None, needs=("rejection_phrase",)),
    MetricSpec(
        "rejection_phrase", "rgb", _rejection_phrase, pl.String(),
        "RGB rows: the rejection phrase found in the response (as configured), else null.",
        lower=None, upper=None, higher_is_better=None, nullable=True,
    ),
    _flag("error_detected", _error_detected,
          "Counterfactual rows: 1 when the response flags the documents' factual error.", True),
    _flag("error_corrected", _error_corrected,
          "Counterfactual rows: 1 when the response gives the true answer (rgb_correct).", True,
          needs=("rgb_correct",)),
)
