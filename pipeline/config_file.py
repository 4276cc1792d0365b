"""A config file's TOML tables read into the keyword values of :class:`~pipeline.config.Config`.

Every key is checked here: an unknown one names the closest known key, a value of the wrong type
or a non-finite number is one clear line, and the files a config names (stopwords, synonyms,
rule files, plug-ins) are found relative to the config file. :func:`pipeline.config.load_config`
reads the file, TOML text or dict, rejects unknown sections and builds the config from what
:func:`parse_tables` returns.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pipeline.config_error import ConfigError, did_you_mean
from pipeline.config_user_metrics import UserMetricDef
from pipeline.schema import RECORD_SCHEMA

#: Keys of a ``[metrics.NAME]`` table (docs/custom-metrics.md).
_USER_METRIC_KEYS = {"sql", "kind", "description", "higher_is_better", "lower", "upper"}


def toml_like(value: Any, path: Path, where: str = "") -> Any:
    """A config dict as ``tomllib`` would have parsed it: mappings as dicts with string keys,
    tuples as lists, paths as strings; ``where`` names the key for errors."""
    if isinstance(value, Mapping):
        for key in value:
            if not isinstance(key, str):
                raise ConfigError(f"{path}: key {key!r}{where and f' in {where}'} is not a string")
        return {key: toml_like(item, path, f"[{key}]" if not where else f"{where} {key}")
                for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [toml_like(item, path, where) for item in value]
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    return value


def parse_tables(data: Mapping[str, Any], path: Path) -> dict[str, Any]:
    """The keyword values of :class:`~pipeline.config.Config` that the tables ``data`` of the
    config ``path`` set (sections already known to be valid names)."""
    values: dict[str, Any] = {}
    columns = data.get("columns", {})
    if not isinstance(columns, dict):
        raise ConfigError(f"{path}: [columns] must be a table")
    if "keep" in columns:
        columns = dict(columns)
        keep = columns.pop("keep")
        if not isinstance(keep, list) or not all(isinstance(v, str) and v for v in keep):
            raise ConfigError(f"{path}: [columns] keep must be a list of column names")
        values["keep_columns"] = tuple(keep)
    for key in sorted(set(columns) - set(RECORD_SCHEMA)):
        raise ConfigError(
            f"{path}: unknown key {key!r} in [columns]{did_you_mean(key, RECORD_SCHEMA)}: a key "
            f"is a canonical column, one of {', '.join(RECORD_SCHEMA)}, or keep"
        )
    if not all(isinstance(v, str) for v in columns.values()):
        raise ConfigError(f"{path}: [columns] must map canonical names to strings")
    if columns:
        values["columns"] = columns

    keys = {
        "phrases": "abstention_phrases",
        "reference": "abstention_reference",
        "insufficient_context_reference": "insufficient_context_reference",
        "unanswerable_types": "unanswerable_types",
        "rules": "abstention_rules",
    }
    abstention = _section(data, "abstention", set(keys), path)
    for key, name in keys.items():
        if key not in abstention:
            continue
        value = abstention[key]
        if key == "rules":
            value = _typed(path, "[abstention] rules", value, bool)
        elif key in ("phrases", "unanswerable_types"):
            if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                raise ConfigError(f"{path}: [abstention] {key} must be a list of strings")
            value = tuple(value)
        elif not isinstance(value, str):
            raise ConfigError(f"{path}: [abstention] {key} must be a string")
        values[name] = value

    answer = _section(data, "answer", {"strip_citation_markers", "scorer"}, path)
    if "scorer" in answer:
        values["answer_scorer"] = _typed(path, "[answer] scorer", answer["scorer"], str)
    if "strip_citation_markers" in answer:
        if not isinstance(answer["strip_citation_markers"], bool):
            raise ConfigError(f"{path}: [answer] strip_citation_markers must be true or false")
        values["strip_citation_markers"] = answer["strip_citation_markers"]

    values.update(_parse_metrics(data, path))
    values.update(_parse_scoring_sections(data, path))
    return values


def _parse_metrics(data: Mapping[str, Any], path: Path) -> dict[str, Any]:
    """``[metrics] select``, the ``[metrics.NAME]`` tables of user-defined SQL metrics and
    ``[plugins] modules``."""
    values: dict[str, Any] = {}
    metrics = data.get("metrics", {})
    if not isinstance(metrics, dict):
        raise ConfigError(f"{path}: [metrics] must be a table")
    for key, value in metrics.items():
        if key != "select" and not isinstance(value, dict):
            raise ConfigError(
                f"{path}: unknown key {key!r} in [metrics]{did_you_mean(key, ['select'])}; "
                "known: select, and [metrics.NAME] tables of user-defined metrics"
            )
    if "select" in metrics:
        select = metrics["select"]
        if not isinstance(select, list) or not all(isinstance(v, str) for v in select):
            raise ConfigError(f"{path}: [metrics] select must be a list of names")
        values["metrics"] = tuple(select)
    defs = [_user_metric(path, name, table) for name, table in metrics.items()
            if name != "select"]
    if defs:
        values["user_metrics"] = tuple(defs)
    plugins = _section(data, "plugins", {"modules"}, path)
    if "modules" in plugins:
        modules = plugins["modules"]
        if not isinstance(modules, list) or not all(
            isinstance(m, str) and m.strip() for m in modules
        ):
            raise ConfigError(f"{path}: [plugins] modules must be a list of module names")
        values["plugins"] = tuple(
            str(_file(path, m)) if m.endswith(".py") else m for m in modules
        )
    return values


def _user_metric(path: Path, name: str, table: Mapping[str, Any]) -> UserMetricDef:
    where = f"[metrics.{name}]"
    for key in sorted(set(table) - _USER_METRIC_KEYS):
        raise ConfigError(
            f"{path}: unknown key {key!r} in {where}{did_you_mean(key, _USER_METRIC_KEYS)}; "
            f"known: {', '.join(sorted(_USER_METRIC_KEYS))}"
        )
    if "sql" not in table:
        raise ConfigError(f"{path}: {where} needs sql = \"<SQL expression>\"")
    bounds: dict[str, Any] = {}
    for key in ("lower", "upper"):
        if key in table:
            bounds[key] = _number(path, f"{where} {key}", table[key])
    direction = table.get("higher_is_better")
    if direction is not None:
        direction = _typed(path, f"{where} higher_is_better", direction, bool)
    try:
        return UserMetricDef(
            name=name, kind=_typed(path, f"{where} kind", table.get("kind", "score"), str),
            description=_typed(path, f"{where} description", table.get("description", ""), str),
            sql=_typed(path, f"{where} sql", table["sql"], str), higher_is_better=direction,
            **bounds,
        )
    except ConfigError as exc:
        raise ConfigError(f"{path}: {exc}") from None


def _section(data: Mapping[str, Any], name: str, keys: set[str], path: Path) -> dict[str, Any]:
    section = data.get(name, {})
    if not isinstance(section, dict):
        raise ConfigError(f"{path}: [{name}] must be a table")
    for key in sorted(set(section) - keys):
        raise ConfigError(
            f"{path}: unknown key {key!r} in [{name}]{did_you_mean(key, keys)}; known: "
            f"{', '.join(sorted(keys))}"
        )
    return section


def _typed(path: Path, where: str, value: Any, kind: type | tuple[type, ...]) -> Any:
    """``value`` if it has type ``kind`` (a TOML boolean is never taken for a number)."""
    if isinstance(value, bool) != (kind is bool) or not isinstance(value, kind):
        raise ConfigError(f"{path}: {where} has the wrong type ({type(value).__name__})")
    return value


def _number(path: Path, where: str, value: Any) -> float:
    """``value`` as a float if it is a finite TOML number (``nan`` and ``inf`` are refused: a
    NaN threshold would silently stand for the default, an infinite one for never)."""
    number = float(_typed(path, where, value, (int, float)))
    if not math.isfinite(number):
        raise ConfigError(f"{path}: {where} must be a finite number, got {value!r}")
    return number


def _file(path: Path, value: str) -> Path:
    """A path from the config file: ``~`` expanded, relative paths taken from the file's folder."""
    candidate = Path(value).expanduser()
    return candidate if candidate.is_absolute() else path.parent / candidate


def _check_text_file(path: Path, where: str, file: Path) -> None:
    """Raise ConfigError unless ``file`` can be read as UTF-8 text (read here, once, so that a
    bad list fails before any work rather than deep inside a run)."""
    try:
        file.read_bytes().decode("utf-8")
    except OSError as exc:
        raise ConfigError(f"{path}: {where} file {file}: cannot read it: {exc.strerror}") from exc
    except UnicodeDecodeError as exc:
        raise ConfigError(
            f"{path}: {where} file {file} is not UTF-8 text (byte {exc.start})"
        ) from exc


def _parse_scoring_sections(data: Mapping[str, Any], path: Path) -> dict[str, Any]:
    values: dict[str, Any] = {}
    lexical = _section(data, "lexical", {"rouge_stemmer", "bleu_tokenize", "rouge_tokenizer"},
                       path)
    for key in ("bleu_tokenize", "rouge_tokenizer"):
        if key in lexical:
            values[key] = _typed(path, f"[lexical] {key}", lexical[key], str)
    if "rouge_stemmer" in lexical:
        stem = lexical["rouge_stemmer"]
        values["rouge_stemmer"] = _typed(path, "[lexical] rouge_stemmer", stem, bool)

    keywords = _section(data, "keywords", {"stopwords", "synonyms"}, path)
    for key in ("stopwords", "synonyms"):
        if key in keywords:
            file = _file(path, _typed(path, f"[keywords] {key}", keywords[key], str))
            if not file.is_file():
                raise ConfigError(f"{path}: [keywords] {key} file not found: {file}")
            _check_text_file(path, f"[keywords] {key}", file)
            values[f"{key}_file"] = file

    embedding = _section(
        data, "embedding",
        {"backend", "batch_size", "batch_tokens", "device", "cache_dir", "cache_float16"}, path,
    )
    if "batch_tokens" in embedding:
        values["embedding_batch_tokens"] = _typed(
            path, "[embedding] batch_tokens", embedding["batch_tokens"], int
        )
    if "device" in embedding:
        values["embedding_device"] = _typed(path, "[embedding] device", embedding["device"], str)
    if "cache_float16" in embedding:
        values["embedding_cache_float16"] = _typed(
            path, "[embedding] cache_float16", embedding["cache_float16"], bool
        )
    if "backend" in embedding:
        values["embedding_backend"] = _typed(path, "[embedding] backend", embedding["backend"], str)
    if "batch_size" in embedding:
        values["embedding_batch_size"] = _typed(
            path, "[embedding] batch_size", embedding["batch_size"], int
        )
    if "cache_dir" in embedding:
        values["embedding_cache_dir"] = _file(
            path, _typed(path, "[embedding] cache_dir", embedding["cache_dir"], str)
        )

    composite = _section(data, "composite", {"quality", "safety", "relevance", "overall"}, path)
    for key in ("quality", "safety", "relevance", "overall"):
        if key in composite:
            file = _file(path, _typed(path, f"[composite] {key}", composite[key], str))
            if not file.is_file():
                raise ConfigError(f"{path}: [composite] {key} file not found: {file}")
            values[f"{key}_rules_file"] = file

    rgb = _section(
        data, "rgb", {"mode", "primary_rejections", "secondary_rejections", "error_keywords"}, path
    )
    if "mode" in rgb:
        values["rgb_mode"] = _typed(path, "[rgb] mode", rgb["mode"], str)
    for key in ("primary_rejections", "secondary_rejections", "error_keywords"):
        if key in rgb:
            value = rgb[key]
            if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                raise ConfigError(f"{path}: [rgb] {key} must be a list of strings")
            values[f"rgb_{key}"] = tuple(value)

    compat = _section(data, "compat", {"preset"}, path)
    if "preset" in compat:
        values["compat_preset"] = _typed(path, "[compat] preset", compat["preset"], str)

    grounding = _section(data, "grounding", {"tau_sim", "rule", "tau_lex"}, path)
    for key in ("tau_sim", "tau_lex"):
        if key in grounding:
            values[key] = _number(path, f"[grounding] {key}", grounding[key])
    if "rule" in grounding:
        values["grounding_rule"] = _typed(path, "[grounding] rule", grounding["rule"], str)

    retrieval = _section(data, "retrieval", {"k"}, path)
    if "k" in retrieval:
        ks = retrieval["k"]
        if not isinstance(ks, list):
            raise ConfigError(f"{path}: [retrieval] k must be a list of integers, got {ks!r}")
        values["retrieval_k"] = tuple(ks)
    return values
