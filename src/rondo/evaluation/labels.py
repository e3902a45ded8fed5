"""Reading a judge's answer in the label formats google-adk's judges answer in.

rondo's prompts ask for the same formats, so an answer a judge gave ADK reads the same here —
the cross-check test replays one set of answers through both and compares the scores:

- a verdict (`final_response_match_v2`): a JSON-ish field `"is_the_agent_response_valid":
  "valid"` (also `true`; `invalid`, `false`, `almost`, `partially_valid`, `partially` count as
  invalid; the value may be in brackets or unquoted). A judge that names the field
  `"is_the_agent_response_invalid"` instead is read the other way round. Labels are compared as
  written (lower case), as ADK does.
- rubric verdicts (the rubric-based metrics): blocks of `ID: …`, `Property: …`,
  `Rationale: …`, `Verdict: yes|no`; a verdict containing "yes" scores 1, else one containing
  "no" 0, else none. If the numbers of properties, rationales and verdicts differ, nothing is
  read (a partial reading could drop a failed rubric and inflate the score).
- sentences (`hallucinations_v1`): `<sentence>…</sentence>` from the segmenter, then blocks of
  `sentence:`, `label:`, `rationale:`, `supporting_excerpt:`, `contradicting_excerpt:` lines
  from the validator; `supported` and `not_applicable` score 1, `unsupported`,
  `contradictory` and `disputed` 0.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

__all__ = [
    "RubricVerdict",
    "SentenceLabel",
    "normalize_property",
    "read_rubric_verdicts",
    "read_sentence_labels",
    "read_sentences",
    "read_validity",
]

_VALID = frozenset({"valid", "true"})
_INVALID = frozenset({"invalid", "false", "almost", "partially_valid", "partially"})
# The field's value: optional brackets and quotes around one word, then the end of the field.
_FIELD_VALUE = r'"{name}":\s*\[*\s*"*([^"\]\s]*)"*\s*\]*\s*[,\n}}]'
_VALID_FIELD = re.compile(_FIELD_VALUE.format(name="is_the_agent_response_valid"))
_INVALID_FIELD = re.compile(_FIELD_VALUE.format(name="is_the_agent_response_invalid"))


def read_validity(answer: str) -> bool | None:
    """True for a valid verdict, False for an invalid one, None when there is none."""
    found = _VALID_FIELD.search(answer)
    if found is not None:
        label = found.group(1).strip().rstrip(",}")
        if label in _VALID:
            return True
        return False if label in _INVALID else None
    found = _INVALID_FIELD.search(answer)
    if found is not None:
        return found.group(1).strip().rstrip(",}") not in ("true", "invalid")
    return None


@dataclass(frozen=True, slots=True)
class RubricVerdict:
    """One rubric as the judge answered it."""

    rubric_id: str | None
    property_text: str
    rationale: str
    score: float | None


_ID_LINE = re.compile(r"(?m)^\s*ID: (.*)$")
_PROPERTY_LINE = re.compile(r"(?m)^\s*Property: (.*)$")
_RATIONALE = re.compile(r"Rationale: (.*)")
_VERDICT = re.compile(r"Verdict: (.*)")


def _verdict_score(verdict: str) -> float | None:
    lowered = verdict.lower()
    if "yes" in lowered:
        return 1.0
    return 0.0 if "no" in lowered else None


def read_rubric_verdicts(answer: str) -> list[RubricVerdict]:
    """The rubric verdicts of an answer, in order; empty when it cannot be read whole."""
    properties = list(_PROPERTY_LINE.finditer(answer))
    rationales = [m.group(1) for m in _RATIONALE.finditer(answer)]
    scores = [_verdict_score(m.group(1)) for m in _VERDICT.finditer(answer)]
    if not len(properties) == len(rationales) == len(scores):
        return []
    ids = list(_ID_LINE.finditer(answer))
    verdicts: list[RubricVerdict] = []
    previous = -1
    for prop, rationale, score in zip(properties, rationales, scores, strict=True):
        # The id that belongs to a property is the last one between it and the one before.
        between = [m for m in ids if previous < m.start() < prop.start()]
        rubric_id = (between[-1].group(1).strip() or None) if between else None
        verdicts.append(RubricVerdict(rubric_id, prop.group(1).strip(), rationale.strip(), score))
        previous = prop.start()
    return verdicts


_TYPOGRAPHY = str.maketrans({"‘": "'", "’": "'", "“": '"', "”": '"', "–": "-", "—": "-"})
_DECORATION = " *_`#>-•\"'"


def normalize_property(text: str) -> str:
    """A rubric's text as compared with the judge's echo of it (markdown and quotes aside)."""
    text = unicodedata.normalize("NFKC", text).translate(_TYPOGRAPHY)
    return " ".join(text.split()).strip(_DECORATION).lower()


_SENTENCE = re.compile(r"<sentence>(.*?)</sentence>", re.DOTALL)


def read_sentences(answer: str) -> list[str]:
    """The sentences a segmenter answered, in order."""
    return _SENTENCE.findall(answer)


@dataclass(frozen=True, slots=True)
class SentenceLabel:
    """One sentence as the validator labelled it."""

    sentence: str
    label: str
    rationale: str

    @property
    def score(self) -> float | None:
        label = self.label.strip().lower()
        if label in ("supported", "not_applicable"):
            return 1.0
        if label in ("unsupported", "contradictory", "disputed"):
            return 0.0
        return None


_LABEL_BLOCK = re.compile(
    r"sentence:(.*?)\nlabel:(.*?)\nrationale:(.*?)\nsupporting_excerpt:.*?"
    r"\ncontradicting_excerpt:.*?(?=\nsentence:|\Z)",
    re.DOTALL | re.IGNORECASE,
)


def read_sentence_labels(answer: str) -> list[SentenceLabel]:
    """The labelled sentences of a validator's answer, in order."""
    return [
        SentenceLabel(m.group(1).strip(), m.group(2).strip(), m.group(3).strip())
        for m in _LABEL_BLOCK.finditer(answer.strip())
    ]
