"""ROUGE-1 as google-adk computes `response_match_score`: equal to ADK's own scores."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests._require import require_module

require_module("rouge_score", what="EVAL", install="pip install 'rondo-agents[eval]'")

from rondo.evaluation.rouge import rouge1, tokenize  # noqa: E402

# 150 pairs scored by google-adk 2.13.0's final_response_match_v1 (see tests/fixtures/eval/adk).
REFERENCE: list[dict[str, Any]] = json.loads(
    (Path(__file__).parents[1] / "fixtures" / "eval" / "rouge_reference.json").read_text("utf-8")
)["pairs"]


@pytest.mark.parametrize("pair", REFERENCE, ids=lambda p: f"{p['candidate'][:20]!r}")
def test_rouge1_equals_google_adk(pair: dict[str, Any]) -> None:
    score = rouge1(pair["candidate"], pair["reference"])
    assert (score.precision, score.recall, score.fmeasure) == (
        pair["precision"],
        pair["recall"],
        pair["fmeasure"],
    )


def test_reference_covers_partial_scores_and_scripts() -> None:
    partial = [p for p in REFERENCE if 0 < p["fmeasure"] < 1]
    assert len(partial) > 40
    assert any("東京" in p["candidate"] for p in partial)
    assert any("สวัสดี" in p["candidate"] for p in REFERENCE)


@pytest.mark.parametrize(
    ("text", "tokens"),
    [
        ("Running dogs, RUNS!", ["run", "dog", "run"]),  # stemmed, lower-cased
        ("don't", ["don", "t"]),
        ("東京は晴れ", ["東", "京", "は", "晴", "れ"]),  # one token per ideograph / kana
        ("สวัสดี", ["ส", "วั", "ส", "ดี"]),  # Thai: base consonants with their marks
        ("Café naïve", ["café", "naïve"]),  # non-ASCII words kept whole, unstemmed
        ("ﬁne Ｆｕｌｌ", ["fine", "full"]),  # NFKC
    ],
)
def test_tokenizer(text: str, tokens: list[str]) -> None:
    assert tokenize(text) == tokens


def test_empty_texts_score_zero_like_adk() -> None:
    assert rouge1("", "").fmeasure == 0.0
    assert rouge1("same words", "same words").fmeasure == 1.0
