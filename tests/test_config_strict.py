"""Issue 29, item 7: a configuration mistake is never accepted silently.

Every unknown key in every section is an error that names the closest known key; NaN and
infinities are refused wherever a number is read (config and numeric CLI options); a setting
given explicitly beats a preset's default; a value of the wrong shape is one clear line.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from pipeline.cli import EXIT_ERROR, main
from pipeline.config import (
    _SECTIONS,
    DEFAULT_ABSTENTION_PHRASES,
    ENGLISH_ABSTENTION_PHRASES,
    ConfigError,
    load_config,
)
from pipeline.rules.rgb import DEFAULT_PRIMARY_REJECTIONS, RGB_APP_PRIMARY_REJECTIONS

#: A key of each section with one letter wrong, and the key it should name.
TYPOS = {
    "columns": ("responce", "response"),
    "abstention": ("phrase", "phrases"),
    "answer": ("scorrer", "scorer"),
    "metrics": ("sellect", "select"),
    "lexical": ("rouge_stemer", "rouge_stemmer"),
    "keywords": ("stopword", "stopwords"),
    "embedding": ("bakend", "backend"),
    "grounding": ("tau_simm", "tau_sim"),
    "composite": ("qualty", "quality"),
    "rgb": ("mod", "mode"),
    "compat": ("presett", "preset"),
    "plugins": ("module", "modules"),
    "retrieval": ("kk", "k"),
}


def config(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "cfg.toml"
    path.write_text(text, encoding="utf-8")
    return path


def test_every_section_is_covered() -> None:
    assert set(TYPOS) == _SECTIONS


@pytest.mark.parametrize("section", sorted(TYPOS))
def test_an_unknown_key_in_any_section_names_the_closest(tmp_path: Path, section: str) -> None:
    typo, meant = TYPOS[section]
    path = config(tmp_path, f'[{section}]\n{typo} = ["x"]\n')
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    message = str(caught.value)
    assert message.startswith(f"{path}: unknown key {typo!r} in [{section}]"), message
    assert f"(did you mean {meant!r}?)" in message


def test_an_unknown_section_or_top_level_key_names_the_closest(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"unknown section \[answr\] \(did you mean "
                                          r"'answer'\?\)"):
        load_config(config(tmp_path, "[answr]\nscorer = 'auto'\n"))
    with pytest.raises(ConfigError, match=r"unknown key 'metric' \(did you mean 'metrics'\?\)"):
        load_config(config(tmp_path, "metric = 1\n"))


def test_a_column_flag_names_the_closest_canonical_column() -> None:
    with pytest.raises(ConfigError, match=r"\['responce'\] \(did you mean 'response'\?\)"):
        load_config(None, columns={"responce": "answer"})


@pytest.mark.parametrize(
    ("text", "where"),
    [
        ("[grounding]\ntau_sim = nan\n", "[grounding] tau_sim"),
        ("[grounding]\ntau_sim = -inf\n", "[grounding] tau_sim"),
        ("[grounding]\ntau_lex = inf\n", "[grounding] tau_lex"),
        ('[metrics.mine]\nsql = "1"\nupper = nan\n', "[metrics.mine] upper"),
        ('[metrics.mine]\nsql = "1"\nlower = -inf\n', "[metrics.mine] lower"),
    ],
)
def test_nan_and_infinity_are_refused(tmp_path: Path, text: str, where: str) -> None:
    path = config(tmp_path, text)
    with pytest.raises(ConfigError, match=rf"^{re.escape(str(path))}: {re.escape(where)} must "
                                          r"be a finite number, got -?(nan|inf)$"):
        load_config(path)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("answer = 5\n", "[answer] must be a table"),
        ("columns = 5\n", "[columns] must be a table"),
        ("[grounding]\ntau_sim = true\n", "[grounding] tau_sim has the wrong type (bool)"),
        ('[columns]\nresponse = 5\n', "[columns] must map canonical names to strings"),
    ],
)
def test_values_of_the_wrong_shape_are_one_line(tmp_path: Path, text: str, message: str) -> None:
    path = config(tmp_path, text)
    with pytest.raises(ConfigError, match=f"^{re.escape(f'{path}: {message}')}$"):
        load_config(path)


# --- explicit settings beat a preset's defaults ----------------------------------------------


def test_an_explicit_backend_beats_the_preset(tmp_path: Path) -> None:
    preset = '[compat]\npreset = "enhanced-framework"\n'
    assert "|emb:minilm-f32|" in load_config(config(tmp_path, preset)).signature()
    explicit = load_config(config(tmp_path, preset + '[embedding]\nbackend = "minilm"\n'))
    assert explicit.embedding_backend == "minilm"
    assert "|emb:minilm|" in explicit.signature()
    assert load_config(config(tmp_path, preset), embedding_backend="minilm").embedding_backend \
        == "minilm"


def test_explicit_lists_equal_to_the_defaults_beat_the_preset(tmp_path: Path) -> None:
    phrases = json.dumps(list(DEFAULT_ABSTENTION_PHRASES), ensure_ascii=False)
    rejections = json.dumps(list(DEFAULT_PRIMARY_REJECTIONS), ensure_ascii=False)
    left_out = load_config(config(tmp_path, '[compat]\npreset = "rgb-app"\n'))
    assert left_out.abstention_phrases == ENGLISH_ABSTENTION_PHRASES
    assert left_out.rgb_primary_rejections == RGB_APP_PRIMARY_REJECTIONS
    given = load_config(config(
        tmp_path,
        f'[compat]\npreset = "rgb-app"\n[abstention]\nphrases = {phrases}\n'
        f"[rgb]\nprimary_rejections = {rejections}\n",
    ))
    assert given.abstention_phrases == DEFAULT_ABSTENTION_PHRASES
    assert given.rgb_primary_rejections == DEFAULT_PRIMARY_REJECTIONS
    assert given.signature() != left_out.signature()


# --- numeric command-line options ------------------------------------------------------------


@pytest.mark.parametrize(
    ("option", "message"),
    [
        (["--lock-wait", "nan"], "argument --lock-wait: must be a finite number, got 'nan'"),
        (["--lock-wait", "inf"], "argument --lock-wait: must be a finite number, got 'inf'"),
        (["--lock-wait", "-1"], "argument --lock-wait: must be 0 or more seconds, got '-1'"),
        (["--max-rejected", "inf"], "argument --max-rejected: must be a number from 0 to 1, "
                                    "got 'inf'"),
        (["--resamples", "nan"], "argument --resamples: invalid non_negative value: 'nan'"),
        (["--seed", "-3"], "argument --seed: must be 0 or more, got -3"),
        (["--batch-rows", "1e309"], "argument --batch-rows: invalid positive value: '1e309'"),
    ],
)
def test_numeric_options_refuse_nan_and_infinity(
    tmp_path: Path, option: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["evaluate", "--input", str(tmp_path / "x.jsonl"), "--store", str(tmp_path / "s"),
              *option])
    assert exited.value.code == EXIT_ERROR
    assert capsys.readouterr().err.splitlines()[-1] == f"rag-eval evaluate: error: {message}"


def test_max_drop_and_noise_rate_refuse_nan(tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["compare", str(tmp_path), str(tmp_path), "--max-drop",
                 "answer_f1=nan"]) == EXIT_ERROR
    assert capsys.readouterr().err.splitlines() == [
        "error: --max-drop expects METRIC=NUMBER (a finite number), got 'answer_f1=nan'"
    ]
    with pytest.raises(SystemExit) as exited:
        main(["ingest-rgb", "--data", "d.json", "--outputs", "o.jsonl", "--noise-rate", "nan",
              "--out", str(tmp_path / "r.parquet")])
    assert exited.value.code == EXIT_ERROR
    assert capsys.readouterr().err.splitlines()[-1] == (
        "rag-eval ingest-rgb: error: argument --noise-rate: must be a finite number, got 'nan'"
    )
