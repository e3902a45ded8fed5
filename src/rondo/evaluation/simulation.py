"""A simulated user for eval cases with a `conversation_scenario` (google-adk's shape).

    {"eval_id": "book", "conversation_scenario": {
        "starting_prompt": "I need a flight.",
        "conversation_plan": "One-way SFO to LAX next Tuesday, morning, under $150; confirm."}}

The first user message is the starting prompt, as written. After each agent turn, the
simulator — a rondo model, configured as ADK's `user_simulator_config` in test_config.json
(`model`, default `gemini-2.5-flash`; `max_allowed_invocations`, default 20;
`include_function_calls`, default false) — is shown the plan and the conversation so far and
writes the user's next message. Stopping rules, checked in this order:

1. the turn limit: after `max_allowed_invocations` user messages, the conversation ends;
2. the stop signal: a reply containing `</finished>` (any case) ends it — the plan is done,
   or the agent cannot do what it asks;
3. a reply with no text is an error of the case (a simulator that cannot write is not a user
   who is finished).

Every user message the simulator writes is recorded with the agent's exchanges (`--record`),
so a simulated conversation replays offline like any other. The prompt is `SIMULATOR_PROMPT`.
"""

from __future__ import annotations

import json

from rondo.errors import RondoError
from rondo.evaluation.config import SimulatorOptions
from rondo.evaluation.evalset import Scenario
from rondo.evaluation.judge import ask_judge
from rondo.evaluation.metrics import ActualInvocation
from rondo.evaluation.prompts import PROMPT_VERSION
from rondo.models.base import Model

__all__ = ["SIMULATOR_PROMPT", "STOP_SIGNAL", "UserSimulationError", "next_user_message"]

STOP_SIGNAL = "</finished>"

SIMULATOR_PROMPT = """\
[{version}] You play the user of an AI agent, in a test. Stay in that role: you are not an
assistant and you never answer your own questions.

Your plan for this conversation:
{plan}

The conversation so far:
{history}

Write your next message to the agent: short, in the user's words, giving only what the plan
says and only when the agent needs it. Follow the plan's order; if the agent asks for
something the plan does not cover, say you do not know or have no preference.

When everything in the plan is done, or the agent has made clear it cannot do what the plan
needs, reply with exactly {stop} and nothing else.
"""


class UserSimulationError(RondoError):
    """The user simulator could not write a message (an empty reply)."""


def _history(turns: list[ActualInvocation], include_calls: bool) -> str:
    lines: list[str] = []
    for turn in turns:
        lines.append(f"user: {turn.user_text}")
        for step in turn.steps:
            for part in step.content.parts if step.content else ():
                if part.text and not part.thought:
                    lines.append(f"{step.author}: {part.text}")
                elif include_calls and part.function_call is not None:
                    args = json.dumps(dict(part.function_call.args), default=str)
                    lines.append(f"{step.author} called {part.function_call.name}({args})")
                elif include_calls and part.function_response is not None:
                    result = json.dumps(dict(part.function_response.response), default=str)
                    lines.append(f"{part.function_response.name} returned {result}")
        if turn.final_text:
            lines.append(f"agent: {turn.final_text}")
    return "\n\n".join(lines)


async def next_user_message(
    model: Model | None,
    scenario: Scenario,
    turns: list[ActualInvocation],
    options: SimulatorOptions,
) -> str | None:
    """The simulated user's next message, or None when the conversation is over.

    The first message is the scenario's starting prompt; `model` writes the others.
    """
    if not turns:
        return scenario.starting_prompt
    if len(turns) >= options.max_allowed_invocations or model is None:
        return None
    prompt = SIMULATOR_PROMPT.format(
        version=PROMPT_VERSION,
        plan=scenario.conversation_plan,
        history=_history(turns, options.include_function_calls),
        stop=STOP_SIGNAL,
    )
    reply = (await ask_judge(model, prompt) or "").strip()
    if STOP_SIGNAL in reply.lower():
        return None
    if not reply:
        raise UserSimulationError(
            f"the user simulator ({model.name}) wrote no message after turn {len(turns)}"
        )
    return reply
