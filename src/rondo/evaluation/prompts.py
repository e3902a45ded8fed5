"""rondo's judge prompts, one per judged metric, versioned.

The prompts are rondo's own; what they ask the judge to answer in is the label format
google-adk's judges answer in (see `rondo.evaluation.labels`), so ADK's recorded judge answers
read the same in both. A change of a prompt's wording bumps `PROMPT_VERSION`: a cassette
recorded with an older prompt then no longer matches (the judge's request differs), which is
what a replayed CI run must notice. docs/testing.md shows each prompt in full.
"""

from __future__ import annotations

__all__ = [
    "FINAL_RESPONSE_MATCH",
    "HALLUCINATION_SEGMENTER",
    "HALLUCINATION_VALIDATOR",
    "PROMPT_VERSION",
    "RUBRIC_FINAL_RESPONSE",
    "RUBRIC_TOOL_USE",
]

PROMPT_VERSION = "rondo-judge-1"

FINAL_RESPONSE_MATCH = """\
[{version}] You grade an AI agent's answer against a reference answer.

Decide whether the agent's answer gives the user what the reference answer gives: the same
facts, figures, names and conclusions. Wording, length, order and politeness do not matter;
a missing, extra-but-wrong, or contradicting fact does. If the reference asks a follow-up
question, the agent must ask for the same information. Judge only what is written below.

User's message:
{prompt}

Agent's answer:
{response}

Reference answer:
{reference}

Reply with one JSON object and nothing after it:
{{"reasoning": "<one or two sentences>", "is_the_agent_response_valid": "valid" or "invalid"}}
"""

_RUBRIC_REPLY = """\
For every rubric, in the order given, reply with exactly these four lines:
ID: <the rubric's id>
Property: <the rubric's text, copied unchanged>
Rationale: <why, in one or two sentences, citing what the agent did>
Verdict: yes or no
"yes" means the property fully holds for what is shown; anything less is "no"."""

RUBRIC_FINAL_RESPONSE = (
    """\
[{version}] You check an AI agent's final answer against a list of rubrics.

Judge the final answer only, using the user's message, the agent's instructions, its tools and
the steps it took as the facts you may rely on. A property about content the answer does not
need to contain holds when nothing in the answer violates it.

Agent's instructions:
{instructions}

Agent's tools:
{tools}

User's message:
{user_input}

Steps the agent took (tool calls and their results):
{steps}

Agent's final answer:
{final_response}

Rubrics:
{rubrics}

"""
    + _RUBRIC_REPLY
    + "\n"
)

RUBRIC_TOOL_USE = (
    """\
[{version}] You check how an AI agent used its tools against a list of rubrics.

Judge only the tool calls below: which tools were called, in what order, with what arguments,
and whether the arguments follow from the user's message and earlier results. The agent's
wording does not matter here.

Agent's tools:
{tools}

User's message:
{user_input}

Tool calls and their results:
{steps}

Rubrics:
{rubrics}

"""
    + _RUBRIC_REPLY
    + "\n"
)

HALLUCINATION_SEGMENTER = """\
[{version}] Split the text below into its sentences, keeping each one's wording exactly.
Put every sentence between <sentence> and </sentence>, one after another, and write nothing
else. A list item or a table row counts as one sentence.

Text:
{response}
"""

HALLUCINATION_VALIDATOR = """\
[{version}] You check whether each sentence an AI agent wrote is backed by its context.

Label every sentence with one of:
- supported: the context states or directly implies it;
- unsupported: the context does not back it;
- contradictory: the context says otherwise;
- disputed: the context backs it and also says otherwise;
- not_applicable: it makes no claim to check (a greeting, a question, an offer to help).

Context:
{context}

Sentences:
{sentences}

For every sentence, in order, reply with exactly these five lines:
sentence: <the sentence>
label: <one label>
rationale: <one sentence>
supporting_excerpt: <the context that backs it, or null>
contradicting_excerpt: <the context that contradicts it, or null>
"""
