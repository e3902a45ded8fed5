"""Several agents: a sequence in which a researcher looks facts up and a writer turns them
into a short answer, handing over through the session's state.

    rondo run examples/team "Tell me about Paris"

`researcher` calls `look_up` and its answer is saved to `state["facts"]` (`output_key`);
`writer` reads it in its instruction (`{facts}`) and writes the reply. The CLI and the web
UI show which agent speaks. Offline on `FunctionModel`s; set `RONDO_MODEL` for a real model
(both agents then use it).
"""

from __future__ import annotations

import os
from typing import Any

from rondo import Agent, FunctionCall, SequentialAgent
from rondo.models import ModelRequest
from rondo.testing import FunctionModel

_FACTS = {
    "paris": "Paris is the capital of France, on the Seine; about 2.1 million people live there.",
    "tokyo": "Tokyo is the capital of Japan; its metropolis is home to about 14 million people.",
    "hangzhou": "Hangzhou, capital of Zhejiang, is known for West Lake and Longjing tea.",
}


def look_up(topic: str) -> dict[str, Any]:
    """Looks a topic up in the encyclopedia.

    Args:
        topic: What to look up, e.g. "Paris".
    """
    fact = _FACTS.get(topic.strip().lower())
    return {"topic": topic, "fact": fact or f"Nothing is known about {topic}."}


def research(request: ModelRequest) -> str | FunctionCall:
    """The researcher's offline model: look the last word up, then report the fact."""
    last = request.contents[-1]
    answered = [p.function_response for p in last.parts if p.function_response]
    if answered:
        return str(answered[0].response["fact"])
    words = [w.strip("?.!,") for w in last.text.split()]
    return FunctionCall(name="look_up", args={"topic": words[-1] if words else ""})


def write(request: ModelRequest) -> str:
    """The writer's offline model: the facts from its instruction, in one friendly line."""
    instruction = request.config.system_instruction or ""
    facts = instruction.split("Facts: ", 1)[-1].split("\n\n", 1)[0].strip()
    return f"Here is what I found: {facts}"


def _model(name: str, respond: Any) -> Any:
    return os.environ.get("RONDO_MODEL") or FunctionModel(respond, name=name)


researcher = Agent(
    name="researcher",
    model=_model("researcher-demo", research),
    instruction="Look the user's topic up with look_up and state the fact you found.",
    tools=[look_up],
    output_key="facts",
)
writer = Agent(
    name="writer",
    model=_model("writer-demo", write),
    instruction="Write a one-line friendly answer from these facts. Facts: {facts}",
)
root_agent = SequentialAgent(name="team", sub_agents=[researcher, writer])
