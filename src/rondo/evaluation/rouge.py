"""ROUGE-1 exactly as google-adk's `response_match_score` computes it.

ADK scores with the `rouge-score` package (Porter stemming) behind a Unicode-aware tokenizer:
text is NFKC-normalised and lower-cased; CJK ideographs and kana/hangul become one token each;
Thai, Lao, Khmer and Myanmar text splits into base characters with their combining marks;
any other run of letters, digits and combining marks is a word, everything else separates.
Pure-ASCII words then go through `rouge-score`'s own tokenizer (which stems words longer than
three characters); other words are kept as they are. `rouge-score` comes with the `eval`
extra; `tests/unit/test_eval_rouge.py` pins this module to scores computed by google-adk.
"""

from __future__ import annotations

import importlib
import unicodedata
from dataclasses import dataclass
from functools import cache
from typing import Any

from rondo.errors import ConfigurationError

__all__ = ["Rouge1", "require_rouge", "rouge1", "tokenize"]

# Scripts written without spaces between words, scored one character per token.
_PER_CHARACTER = (
    (0x4E00, 0x9FFF),  # CJK unified ideographs
    (0x3040, 0x309F),  # hiragana
    (0x30A0, 0x30FF),  # katakana
    (0xAC00, 0xD7AF),  # hangul syllables
)
# Scripts without spaces whose vowel and tone signs attach to the consonant before them.
_PER_CLUSTER = (
    (0x0E00, 0x0E7F),  # Thai
    (0x0E80, 0x0EFF),  # Lao
    (0x1780, 0x17FF),  # Khmer
    (0x1000, 0x109F),  # Myanmar
)


@dataclass(frozen=True, slots=True)
class Rouge1:
    """Unigram overlap of a candidate with a reference."""

    precision: float
    recall: float
    fmeasure: float


def _within(char: str, ranges: tuple[tuple[int, int], ...]) -> bool:
    code = ord(char)
    return any(low <= code <= high for low, high in ranges)


def _is_mark(char: str) -> bool:
    return unicodedata.category(char).startswith("M")


def _spaced(text: str) -> str:
    """`text` with a space wherever ADK's tokenizer starts or ends a word."""
    out: list[str] = []
    for char in text:
        if _within(char, _PER_CHARACTER):
            out.append(f" {char} ")
        elif _within(char, _PER_CLUSTER):
            out.append(char if _is_mark(char) else f" {char}")
        elif char.isalnum() or _is_mark(char):
            out.append(char)
        else:
            out.append(" ")
    return "".join(out)


@cache
def _rouge_score() -> tuple[Any, Any]:
    """`rouge-score`'s scorer and tokenizer modules (the `eval` extra)."""
    try:
        scorer = importlib.import_module("rouge_score.rouge_scorer")
        tokenizers = importlib.import_module("rouge_score.tokenizers")
    except ImportError as exc:
        raise ConfigurationError(
            "response_match_score needs the rouge-score package: "
            f"pip install 'rondo-agents[eval]' ({exc})"
        ) from exc
    return scorer, tokenizers


def require_rouge() -> None:
    """Raise `ConfigurationError`, saying what to install, unless `rouge-score` is there."""
    _rouge_score()


class _Tokenizer:
    """The tokenizer ADK hands to `rouge-score` (see the module docstring)."""

    def __init__(self) -> None:
        _, tokenizers = _rouge_score()
        self._ascii: Any = tokenizers.DefaultTokenizer(use_stemmer=True)

    def tokenize(self, text: str) -> list[str]:
        words = _spaced(unicodedata.normalize("NFKC", text).lower()).split()
        tokens: list[str] = []
        for word in words:
            if word.isascii():
                tokens.extend(self._ascii.tokenize(word))
            else:
                tokens.append(word)
        return tokens


@cache
def _tokenizer() -> _Tokenizer:
    return _Tokenizer()


@cache
def _scorer() -> Any:
    scorer, _ = _rouge_score()
    return scorer.RougeScorer(["rouge1"], tokenizer=_tokenizer())


def tokenize(text: str) -> list[str]:
    """The tokens ROUGE-1 compares for `text`."""
    return _tokenizer().tokenize(text)


def rouge1(candidate: str, reference: str) -> Rouge1:
    """ROUGE-1 precision, recall and F-measure of `candidate` against `reference`."""
    score: Any = _scorer().score(reference, candidate)["rouge1"]
    return Rouge1(float(score.precision), float(score.recall), float(score.fmeasure))
