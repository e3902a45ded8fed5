"""What the agent did, written as google-adk's eval JSON (`Invocation`, snake_case).

The actual invocations of a rondo eval run in the shape ADK's evaluators and its eval results
hold them: `user_content`, `final_response`, and `intermediate_data.invocation_events` (each
step's author and content). ADK's own tools read them back unchanged.
"""

from __future__ import annotations

from rondo.evaluation.metrics import ActualInvocation
from rondo.types import Content

__all__ = ["content_json", "invocation_json"]


def content_json(content: Content) -> dict[str, object]:
    """A content as google-genai's JSON writes it (role always present, defaults left out)."""
    dumped = content.model_dump(mode="json", exclude_defaults=True, exclude={"role"})
    return {"role": content.role, "parts": dumped.get("parts", [])}


def _text_content(role: str, text: str) -> dict[str, object]:
    return {"role": role, "parts": [{"text": text}]}


def invocation_json(actual: ActualInvocation, invocation_id: str = "") -> dict[str, object]:
    """One actual invocation as ADK's `Invocation` JSON."""
    return {
        "invocation_id": invocation_id,
        "user_content": _text_content("user", actual.user_text),
        "final_response": _text_content("model", actual.final_text) if actual.final_text else None,
        "intermediate_data": {
            "invocation_events": [
                {
                    "author": step.author,
                    "content": content_json(step.content) if step.content else None,
                }
                for step in actual.steps
            ]
        },
    }
