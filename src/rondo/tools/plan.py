"""Planning tools: the producer of Solon's plan events (SPEC V1, seed 002 §4.D).

`PlanToolset()` gives an agent three tools — `create_plan`, `update_plan_step` and
`revise_plan`. The plan lives in session state (`state["plan"]` by default: its steps, each
with a title and a status, and the index of the current step), so it survives the process
and every later turn sees it. Each call emits a `PlanUpdate` (stage `create`, `progress` or
`revise`, the step titles and the step index) between the call's `ToolCallStart` and
`ToolCallEnd`.

    agent = Agent(name="planner", model=..., tools=[PlanToolset()])
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from rondo.errors import ToolArgumentsError, ToolError
from rondo.lifecycle import PlanUpdate
from rondo.tools.base import BaseTool, BaseToolset
from rondo.tools.function import FunctionTool

if TYPE_CHECKING:
    from rondo.context import ReadonlyContext, ToolContext

__all__ = ["PLAN_STATE_KEY", "PlanToolset", "StepStatus"]

PLAN_STATE_KEY = "plan"
StepStatus = Literal["pending", "in_progress", "done", "skipped", "failed"]


def _steps(titles: list[str]) -> list[str]:
    cleaned = [t.strip() for t in titles if isinstance(t, str) and t.strip()]  # pyright: ignore[reportUnnecessaryIsInstance]
    if not cleaned:
        raise ToolArgumentsError("a plan needs at least one step (a non-empty title)")
    return cleaned


class PlanToolset(BaseToolset):
    """`create_plan`, `update_plan_step` and `revise_plan`, keeping the plan in state."""

    def __init__(self, *, state_key: str = PLAN_STATE_KEY) -> None:
        self.state_key = state_key
        self._tools = [
            FunctionTool(self._create, name="create_plan"),
            FunctionTool(self._update, name="update_plan_step"),
            FunctionTool(self._revise, name="revise_plan"),
        ]

    async def get_tools(self, ctx: ReadonlyContext) -> list[BaseTool]:
        return list(self._tools)

    # -- the tools (their docstrings are what the model reads) ----------------------------------

    def _create(self, steps: list[str], tool_context: ToolContext) -> dict[str, Any]:
        """Create a plan before starting multi-step work; it replaces any earlier plan.

        Args:
            steps: The steps to do, in order, each a short title.
        """
        titles = _steps(steps)
        plan = {"steps": [{"title": t, "status": "pending"} for t in titles], "current": 0}
        return self._save(tool_context, plan, "create", 0)

    def _update(
        self,
        index: int,
        status: StepStatus,
        tool_context: ToolContext,
        note: str = "",
    ) -> dict[str, Any]:
        """Record progress on one step of the plan.

        Args:
            index: The step's position in the plan, starting at 0.
            status: The step's new status.
            note: What was found or done, if worth keeping.
        """
        plan = self._load(tool_context)
        steps: list[dict[str, Any]] = plan["steps"]
        if not 0 <= index < len(steps):
            raise ToolArgumentsError(
                f"step index {index} is out of range: the plan has steps 0 to {len(steps) - 1}"
            )
        steps[index] = {**steps[index], "status": status, **({"note": note} if note else {})}
        if status in ("done", "skipped") and index == plan["current"]:
            plan["current"] = min(index + 1, len(steps) - 1)
        elif status == "in_progress":
            plan["current"] = index
        return self._save(tool_context, plan, "progress", index)

    def _revise(
        self, steps: list[str], tool_context: ToolContext, reason: str = ""
    ) -> dict[str, Any]:
        """Replace the plan's steps when the work turned out differently; steps whose title
        is unchanged keep their status.

        Args:
            steps: The new steps, in order.
            reason: Why the plan changed.
        """
        plan = self._load(tool_context)
        known = {s["title"]: s for s in plan["steps"]}
        revised = [dict(known.get(t, {"title": t, "status": "pending"})) for t in _steps(steps)]
        current = next(
            (i for i, s in enumerate(revised) if s["status"] in ("pending", "in_progress")),
            len(revised) - 1,
        )
        plan = {"steps": revised, "current": current, **({"reason": reason} if reason else {})}
        return self._save(tool_context, plan, "revise", current)

    # -- state and events -----------------------------------------------------------------------

    def _load(self, tool_context: ToolContext) -> dict[str, Any]:
        raw: Any = tool_context.state.get(self.state_key)
        if not isinstance(raw, dict) or not isinstance(raw.get("steps"), list):  # pyright: ignore[reportUnknownMemberType]
            raise ToolError("there is no plan yet: call create_plan first")
        plan: dict[str, Any] = {
            "steps": [dict(s) for s in raw["steps"]],  # pyright: ignore[reportUnknownArgumentType,reportUnknownVariableType]
            "current": int(raw.get("current", 0)),  # pyright: ignore[reportUnknownMemberType,reportUnknownArgumentType]
        }
        return plan

    def _save(
        self, tool_context: ToolContext, plan: dict[str, Any], stage: str, index: int
    ) -> dict[str, Any]:
        tool_context.state[self.state_key] = plan
        titles = [s["title"] for s in plan["steps"]]
        if tool_context.observed:
            tool_context.emit(
                PlanUpdate(
                    **tool_context.invocation_context.correlation(),
                    stage=stage,  # pyright: ignore[reportArgumentType]
                    plans=titles,
                    index=index,
                    statuses=[s["status"] for s in plan["steps"]],
                    reason_id=tool_context.reason_id or None,
                )
            )
        return {"plan": plan}
