"""Language detection (``pipeline/text/language.py``): scripts, function words, given codes.

Golden sentences per language (ASCII-only ones included), English that must stay English (short
answers, names with foreign particles, ~40 varied sentences), Han with Latin letters, given
codes, and the function-word scores against a pure-Python oracle.
"""

from __future__ import annotations

import re

import polars as pl
import pytest
from conftest import examples, records
from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.config import Config
from pipeline.scoring import score_frame
from pipeline.text.language import (
    LATIN,
    LETTERS,
    MIN_SCORE,
    STOPWORDS,
    detect_language,
    foreign_words_pattern,
    function_word_language,
    function_word_scores,
    is_latin,
    language_stages,
    mark_function_words,
)


def detect(pairs: list[tuple[str | None, str | None]]) -> list[str]:
    frame = pl.DataFrame({"ref": [r for r, _ in pairs], "resp": [p for _, p in pairs]},
                         schema={"ref": pl.String, "resp": pl.String})
    return detect_language(frame, "ref", "resp").to_list()


SENTENCES = {
    "de": [
        ("1889", "Der Eiffelturm wurde 1889 für die Weltausstellung in Paris gebaut."),
        ("Berlin", "Die Hauptstadt von Deutschland ist Berlin und sie liegt an der Spree."),
        ("Goethe", "Das Buch wurde von Goethe geschrieben, aber es ist nicht sein bestes."),
        ("", "Nach dem Krieg wurde die Stadt wieder aufgebaut und ist heute sehr beliebt."),
        # ASCII only
        ("Bach", "Er hat in Leipzig gearbeitet und ist dort auch gestorben."),
        ("42", "Die Antwort ist 42, wie in dem Roman von Douglas Adams."),
    ],
    "fr": [
        ("Paris", "La tour Eiffel a été construite pour l'Exposition universelle de 1889."),
        ("Hugo", "Victor Hugo est l'auteur des Misérables, publié en 1862 à Paris."),
        ("", "Selon le document, la ligne coûte plus cher que prévu et elle sera ouverte."),
        # ASCII only
        ("Lyon", "Il habite dans une petite ville avec sa famille et ses amis."),
        ("oui", "Le chat est sur la table, mais il ne veut pas manger."),
    ],
    "es": [
        ("Madrid", "La capital de España es Madrid, que también es la ciudad más grande."),
        ("Cervantes", "Cervantes perdió la movilidad de la mano izquierda en la batalla."),
        ("1605", "El libro fue publicado en 1605 y tuvo mucho éxito desde el principio."),
        # ASCII only
        ("Lima", "El museo esta en la ciudad y es muy grande, pero no tiene parque."),
        ("dos", "Los estudiantes fueron al cine con sus amigos porque era sabado."),
    ],
    "it": [
        ("Roma", "La capitale d'Italia è Roma, che è anche la città più grande del paese."),
        ("Dante", "Dante Alighieri è l'autore della Divina Commedia, scritta nel Trecento."),
        ("1889", "Il museo è stato aperto nel 1889 e ha molti visitatori ogni anno."),
        # ASCII only
        ("Milano", "Gli studenti sono andati alla stazione con il treno delle otto."),
        ("no", "Non ho mai visto questo film, ma mio fratello dice che non gli piace."),
    ],
    "pt": [
        ("Lisboa", "A capital de Portugal é Lisboa, que também é a maior cidade do país."),
        ("Pelé", "O jogador foi considerado o melhor do mundo e ganhou três Copas."),
        ("1500", "O Brasil foi descoberto em 1500 pelos portugueses, não pelos espanhóis."),
        # ASCII only
        ("Porto", "Ele mora em uma casa perto do rio com os seus pais e irmaos."),
        ("sim", "Os alunos foram para a escola mas ainda nao fizeram os exercicios."),
    ],
    "nl": [
        ("Amsterdam", "De hoofdstad van Nederland is Amsterdam, maar de regering zit in Den Haag."),
        ("1889", "Het museum werd in 1889 geopend en heeft nu veel bezoekers."),
        ("Rembrandt", "Rembrandt is een van de bekendste schilders uit de Gouden Eeuw."),
        ("", "Zij zijn naar de markt gegaan omdat er geen brood meer was."),
    ],
}


@pytest.mark.parametrize(("lang", "pair"), [(lang, pair) for lang, pairs in SENTENCES.items()
                                            for pair in pairs])
def test_latin_languages_are_read_by_their_function_words(lang: str,
                                                           pair: tuple[str, str]) -> None:
    assert detect([pair]) == [lang]
    assert detect([(pair[1], None)]) == [lang]  # the reference alone is read too


def test_ascii_only_sentences_are_among_the_golden_ones() -> None:
    for lang, pairs in SENTENCES.items():
        assert any(ref.isascii() and resp.isascii() for ref, resp in pairs), lang


SHORT_ENGLISH = [
    "Paris", "yes", "No.", "yes, it is", "Los Angeles", "Las Vegas, Nevada", "El Paso",
    "Die Hard", "Le Monde", "Leonardo da Vinci", "Vincent van Gogh", "Ludwig van Beethoven",
    "Robert De Niro", "Charles de Gaulle", "de facto", "et al.", "per se", "a la carte",
    "Los Angeles and Las Vegas", "Notre-Dame de Paris", "Don Quixote", "Che Guevara",
    "Johannes Diderik van der Waals", "São Paulo", "Müller", "Peña Nieto", "the 1889 one",
]

ENGLISH = [
    "The Eiffel Tower was built in 1889 for the World's Fair in Paris.",
    "Paris is the capital of France and its largest city.",
    "According to the passage, the company was founded in 1998 by two students.",
    "Yes, the museum is open on Sundays from 10 am to 6 pm.",
    "No, there is no evidence that the drug reduces mortality.",
    "The answer is 42.",
    "Mount Everest is Earth's highest mountain above sea level.",
    "Smith et al. (2019) found that the effect disappears in larger samples.",
    "The de facto standard for data exchange on the web is JSON.",
    "Leonardo da Vinci painted the Mona Lisa between 1503 and 1519.",
    "Vincent van Gogh and Ludwig van Beethoven are often cited as tortured geniuses.",
    "The flight from Los Angeles to Las Vegas takes about an hour.",
    "Die Hard is a 1988 action film directed by John McTiernan.",
    "Les Misérables is a novel by Victor Hugo, published in 1862.",
    "The dish is served a la carte, with a side of pommes frites.",
    "He said the die is cast and there is no way back.",
    "Many people die of heart disease every year in the United States.",
    "The war ended in 1945 when Germany surrendered.",
    "The recipe says to pour the mixture into a pan and bake it for 20 minutes.",
    "Per capita income rose by 3 percent per year on average.",
    "Come back tomorrow and we will talk about it.",
    "The non-profit organization runs on donations.",
    "Use the y axis for the population and the x axis for the year.",
    "If y = 2x + 1, then y is 5 when x is 2.",
    "The van was parked in front of the house.",
    "I don't know; the documents do not say.",
    "The context does not provide enough information to answer the question.",
    "Based on the provided documents, the winner was Simona Halep.",
    "It was raining, so the match was postponed to Monday.",
    "The WHO recommends at least 150 minutes of moderate activity per week.",
    "Python is a programming language that lets you work quickly.",
    "The patient was given 5 mg of the drug twice a day.",
    "Apple released the first iPhone on June 29, 2007.",
    "The Amazon river flows through Brazil, Peru and Colombia.",
    "Super Bowl LV was played at Raymond James Stadium in Tampa, Florida.",
    "The San Francisco 49ers won five Super Bowls.",
    "Real Madrid beat Liverpool 1-0 in the 2022 Champions League final.",
    "The opera La Traviata premiered at La Fenice in Venice in 1853.",
    "The Rio de Janeiro carnival is held before Lent every year.",
    "Don Quixote was written by Miguel de Cervantes and published in two parts.",
    "The Port of Rotterdam is the largest port in Europe.",
    "Her latest album, El Mal Querer, won a Latin Grammy.",
    "Copa do Mundo is the Portuguese name of the World Cup.",
]


def test_short_english_answers_stay_english() -> None:
    assert detect([(t, None) for t in SHORT_ENGLISH]) == ["en"] * len(SHORT_ENGLISH)
    assert detect([(t, "1889") for t in SHORT_ENGLISH]) == ["en"] * len(SHORT_ENGLISH)
    # The same answer as reference and response counts twice: only a phrase of foreign words
    # can then reach the least score (a limit of the module docstring).
    phrases = ("a la carte", "Johannes Diderik van der Waals")
    repeated = [t for t in SHORT_ENGLISH if t not in phrases]
    assert detect([(t, t) for t in repeated]) == ["en"] * len(repeated)
    assert detect([("a la carte", "a la carte")]) == ["fr"]
    # Without letters a row is undetermined, as before.
    assert detect([("1889", "1889"), ("42 %", "12 €"), ("", None)]) == ["und"] * 3


def test_english_sentences_are_never_another_language() -> None:
    assert len(ENGLISH) >= 40
    assert detect([(None, s) for s in ENGLISH]) == ["en"] * len(ENGLISH)
    # With a short reference, and each sentence with the next as its reference.
    assert detect([(a, s) for a, s in zip(SHORT_ENGLISH, ENGLISH, strict=False)]) == [
        "en"] * len(SHORT_ENGLISH)
    shifted = list(zip(ENGLISH, ENGLISH[1:] + ENGLISH[:1], strict=True))
    assert detect(shifted) == ["en"] * len(ENGLISH)
    assert detect([(s, s) for s in ENGLISH]) == ["en"] * len(ENGLISH)


@pytest.mark.parametrize(("ref", "resp", "lang"), [
    # Real RGB shape: a Chinese answer with Latin words outnumbering the Han ones.
    ("iPhone SE", "Apple 发布了 iPhone SE third generation with A15 Bionic", "zh"),
    ("A15", "答案是 A15 Bionic chip, launched for 429 US dollars", "zh"),
    ("ChatGPT", "OpenAI released ChatGPT in November 2022 (聊天)", "zh"),
    ("Tokyo", "Tokyo Tower is in Minato, 東京タワー", "ja"),
    ("서울", "서울 is the capital of Korea 漢 Seoul", "ko"),
    ("北京", "北京是中国的首都 Beijing 김치", "zh"),
    ("Москва", "Москва is Moscow", "ru"),
])
def test_han_outweighs_latin_letters(ref: str, resp: str, lang: str) -> None:
    assert detect([(ref, resp)]) == [lang]


def test_a_given_code_wins_over_detection() -> None:
    german = "Der Eiffelturm wurde 1889 für die Weltausstellung in Paris gebaut."
    frame = pl.DataFrame({
        "lang": ["en", None, "FR-ca", None],
        "language": [None, "zh", None, None],
        "ref": [german, german, german, "巴黎"],
        "resp": [german, german, german, "The capital is Paris."],
    }).lazy()
    for stage in language_stages("lang", "language", "ref", "resp"):
        frame = frame.with_columns(**stage)
    out = frame.collect()
    assert out["lang"].to_list() == ["en", "zh", "fr", "zh"]
    assert out[LATIN].to_list() == [True, False, True, False]


def test_the_detected_latin_languages_keep_the_latin_rules() -> None:
    codes = pl.Series([*STOPWORDS, "zh", "und"])
    latin = pl.select(is_latin(pl.lit(codes))).to_series().to_list()
    assert latin == [True] * len(STOPWORDS) + [False, True]


def test_a_german_row_is_scored_with_german_articles_under_mlqa() -> None:
    """MLQA's normalization removes German articles where the row reads as German (it was
    ``en`` before function words were read, and kept ``der`` and ``die``)."""
    frame = records([
        {"reference": "der Turm ist nicht alt und wurde für die Ausstellung gebaut",
         "response": "Turm ist nicht alt und wurde für Ausstellung gebaut"},
        {"reference": "the tower is old", "response": "tower is old"},
        {"reference": "die Ausstellung ist nicht alt", "response": "Ausstellung ist nicht alt",
         "lang": "en"},
    ])
    scores = score_frame(frame, Config(metrics=("answer_em",), answer_scorer="mlqa")).collect()
    assert scores["lang"].to_list() == ["de", "en", "en"]
    assert scores["answer_em"].to_list() == [1, 1, 0]


def test_the_lists_are_lowercase_words() -> None:
    for code, words in STOPWORDS.items():
        assert 40 <= len(words) <= 75, code
        assert len(set(words)) == len(words), code
        assert all(re.fullmatch(r"[^\W\d_]+", w) and w == w.lower() for w in words), code
    assert set(LETTERS) <= set(STOPWORDS) - {"en"}


# The oracle: the module docstring in plain Python.
_LETTER_RE = re.compile(r"[^\W\d_]+")


def oracle(text: str) -> str | None:
    words = _LETTER_RE.findall(text)
    lists = {code: set(ws) for code, ws in STOPWORDS.items()}
    points = dict.fromkeys(STOPWORDS, 0)
    marked = set()
    for word in words:
        english = word == word.capitalize() and word.lower() in lists["en"]
        holders = [code for code in lists if (word.lower() if english else word) in lists[code]]
        for code in ["en"] if english else holders:
            points[code] += 2 if len(holders) == 1 else 1
        marked |= {word} if holders else set()
    found = "".join(ch for w in words if w not in marked for ch in w)
    letters = {c: sum(ch.lower() in LETTERS.get(c, "") for ch in found) for c in STOPWORDS}
    foreign = [c for c in STOPWORDS if c != "en"]
    best = max(foreign, key=lambda c: (points[c], letters[c], -foreign.index(c)))
    if points[best] >= MIN_SCORE and points[best] > points["en"]:
        return best
    return None


_VOCABULARY = [
    *sorted(set().union(*map(set, STOPWORDS.values()))),
    "Der", "La", "Los", "The", "It", "In", "A", "Van", "tower", "Stadt", "ciudad", "Müller",
    "città", "ação", "garçon", "niño", "Øresund", "1889", "straße",
]


_PART = st.tuples(st.sampled_from(_VOCABULARY),
                  st.sampled_from([" ", "  ", ", ", ". ", "\n", "-", "'", " (", ") "]))


@settings(max_examples=examples(100), deadline=None)
@given(st.lists(st.lists(_PART, max_size=14), min_size=1, max_size=25))
def test_function_word_language_equals_the_oracle(texts: list[list[tuple[str, str]]]) -> None:
    frame = pl.DataFrame({"t": ["".join(w + sep for w, sep in parts) for parts in texts]})
    out = frame.with_columns(
        s=function_word_scores(mark_function_words(pl.col("t"))),
        english=~pl.col("t").str.contains(foreign_words_pattern()),
    ).with_columns(lang=function_word_language(pl.col("s")))
    for text, english, got in out.select("t", "english", "lang").iter_rows():
        assert got == oracle(text), text
        # A text without a word English does not outweigh is English.
        assert got is None or not english, text


@settings(max_examples=examples(100), deadline=None)
@given(st.lists(st.sampled_from([*sorted(STOPWORDS["en"]), "tower", "city", "Paris"]),
                min_size=1, max_size=20))
def test_english_words_alone_are_never_another_language(words: list[str]) -> None:
    text = " ".join(words)
    assert detect([(text, None)]) == ["en"]
