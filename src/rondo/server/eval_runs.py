"""google-adk's eval routes that do work (issue 24 item 4): add a session as a case, run an
eval set, list the metrics.

A run scores the chosen cases with the chosen metrics through `rondo.evaluation` on the
server's own session service (each case on a fresh `adk-eval-session-…`, as ADK names them),
stores ADK's `EvalSetResult` where ADK keeps it (so the results routes list it) and rondo's
report beside it, and answers as ADK's dev server does. `…/run-report` runs the same way
and answers with rondo's report (scores, failing cases' diffs, tokens and dollars).
"""

from __future__ import annotations

import dataclasses
import json
import time
import uuid
from typing import Annotated, Any, cast

from fastapi import APIRouter, Body, Request
from fastapi.responses import Response

from rondo.errors import ConfigurationError
from rondo.evaluation import (
    RESPONSE_MATCH,
    EvalConfig,
    EvalSetError,
    SessionInput,
    parse_eval_config,
    parse_eval_set,
    resolve_judge_model,
    run_case,
)
from rondo.evaluation.adk_results import (
    COMPUTED_METRICS,
    EFFICIENCY_METRICS,
    METRICS_INFO,
    case_result_json,
    invocations_from_events,
)
from rondo.evaluation.config import parse_simulator_options
from rondo.evaluation.report import CaseResult, EvalReport
from rondo.evaluation.rouge import require_rouge
from rondo.server.errors import BadRequestError, InvalidValueError, NotFoundError, SafeRoute
from rondo.server.eval_routes import (
    RESULT_SUFFIX,
    camel,
    case_id,
    cases_of,
    history_dir,
    json_response,
    read_set,
    set_path,
)
from rondo.server.state import owner, server_state

__all__ = ["router"]

router = APIRouter(route_class=SafeRoute)

_REPORT_SUFFIX = ".rondo_report.json"
_DEFAULT_USER = "test_user_id"  # ADK's user for a case that names none


def _field(body: dict[str, object], name: str) -> object:
    head, *rest = name.split("_")
    return body.get(name, body.get(head + "".join(w.title() for w in rest)))


def _text_field(body: dict[str, object], name: str) -> str:
    value = _field(body, name)
    if not isinstance(value, str):
        raise InvalidValueError(f"{name} is required (a string)")
    return value


def _drop_none(value: Any) -> Any:
    # ADK dumps its models with exclude_none.
    if isinstance(value, dict):
        items = cast("dict[str, object]", value).items()
        return {k: _drop_none(v) for k, v in items if v is not None}
    if isinstance(value, list):
        return [_drop_none(v) for v in cast("list[object]", value)]
    return value


async def _add_session(
    app_name: str,
    eval_set_id: str,
    request: Request,
    body: Annotated[dict[str, object], Body()],
) -> Response:
    eval_id = _text_field(body, "eval_id")
    session_id = _text_field(body, "session_id")
    user_id = _text_field(body, "user_id")
    state = owner(request, user_id)  # only the session's own user may copy it
    session = await state.sessions.get_session(
        app_name=app_name, user_id=user_id, session_id=session_id
    )
    if session is None:
        raise NotFoundError("Session not found")
    path = set_path(request, app_name, eval_set_id)
    data = read_set(path)
    if data is None:
        raise NotFoundError(f"Eval set `{eval_set_id}` not found.")
    cases = cases_of(data)
    if any(case_id(c) == eval_id for c in cases):
        raise BadRequestError(f"Eval id `{eval_id}` already exists in `{eval_set_id}` eval set.")
    cases.append(
        {
            "eval_id": eval_id,
            "conversation": invocations_from_events(session.events),
            # ADK starts the case from the agent's empty state (written as no state).
            "session_input": {"app_name": app_name, "user_id": user_id},
            "creation_timestamp": time.time(),
        }
    )
    data.pop("evalCases", None)
    data["eval_cases"] = cases
    path.write_text(json.dumps(data, indent=2), encoding="utf-8")
    return json_response(None)


for _path, _kind in (
    ("/dev/apps/{app_name}/eval-sets/{eval_set_id}/add-session", ""),
    ("/dev/apps/{app_name}/eval_sets/{eval_set_id}/add_session", "_legacy"),
):
    router.add_api_route(
        _path, _add_session, methods=["POST"], operation_id="add_session_to_eval_set" + _kind
    )


def _criteria(metrics: object) -> tuple[EvalConfig, list[str]]:
    """ADK's `eval_metrics` as a rondo config, and the metrics rondo does not score."""
    if not isinstance(metrics, list):
        raise InvalidValueError("evalMetrics is required (a list)")
    criteria: dict[str, object] = {}
    for item in cast("list[object]", metrics):
        if not isinstance(item, dict):
            raise InvalidValueError("each of evalMetrics is an object")
        metric = cast("dict[str, object]", item)
        name = _text_field(metric, "metric_name")
        if name in EFFICIENCY_METRICS:
            continue  # reported for every run anyway
        spec: dict[str, object] = {"threshold": _field(metric, "threshold") or 0.0}
        criterion = _field(metric, "criterion")
        if isinstance(criterion, dict):
            spec.update(cast("dict[str, object]", criterion))
        options = _field(metric, "judge_model_options")
        if options is not None:
            spec["judge_model_options"] = options
        criteria[name] = spec
    if not any(name in COMPUTED_METRICS for name in criteria):
        # Nothing rondo scores: each is reported not evaluated (ADK logs and skips such).
        return EvalConfig(()), list(criteria)
    try:
        config = parse_eval_config({"criteria": criteria}, source="evalMetrics")
    except EvalSetError as exc:
        raise BadRequestError(str(exc)) from None
    return config, [name for name, _ in config.not_evaluated]


def _run_options(config: EvalConfig, body: dict[str, object]) -> EvalConfig:
    """The request's run options on `config`, or 400 for what rondo cannot run."""
    if _field(body, "live_model_config") is not None:
        # ADK's dev UI sends this for its "Live" run mode; rondo scores standard runs only,
        # and running one instead would pass off a standard run as a live one.
        raise BadRequestError(
            "rondo runs eval cases in standard mode only: live_model_config is not supported"
        )
    simulator = _field(body, "user_simulator_config")
    if simulator is not None:
        try:
            options = parse_simulator_options(simulator, "userSimulatorConfig")
        except EvalSetError as exc:
            raise BadRequestError(str(exc)) from None
        config = dataclasses.replace(config, user_simulator=options)
    if any(c.metric == RESPONSE_MATCH for c in config.criteria):
        try:
            require_rouge()  # before any case runs, as ADK checks its eval extra first
        except ConfigurationError as exc:
            # ADK answers 400 saying its eval module "is not installed"; its dev UI shows
            # such an answer to the user (and no other error of a run).
            raise BadRequestError(f"rondo's eval extra is not installed: {exc}") from None
    return config


async def _run(
    app_name: str, eval_set_id: str, request: Request, body: dict[str, object]
) -> tuple[str, list[dict[str, object]], EvalReport]:
    state = server_state(request)
    data = read_set(set_path(request, app_name, eval_set_id))
    if data is None:
        raise BadRequestError(f"Eval set `{eval_set_id}` not found.")
    if _field(body, "eval_metrics") is None:
        raise InvalidValueError("evalMetrics is required")
    config, skipped = _criteria(_field(body, "eval_metrics"))
    config = _run_options(config, body)
    chosen = _field(body, "eval_case_ids") or _field(body, "eval_ids")
    listed = cast("list[object]", chosen) if isinstance(chosen, list) else []
    wanted = {str(w) for w in listed}
    try:
        eval_set = parse_eval_set(data, source=f"{eval_set_id}.evalset.json")
    except EvalSetError as exc:
        raise BadRequestError(str(exc)) from None
    agent = await state.apps.root_agent(app_name)
    raw_cases = {case_id(c): c for c in cases_of(data)}
    adk_results: list[dict[str, object]] = []
    results: list[CaseResult] = []
    for case in eval_set.eval_cases:
        if wanted and case.eval_id not in wanted:
            continue
        given = case.session_input
        user_id = given.user_id if given and given.user_id else _DEFAULT_USER
        session_id = f"adk-eval-session-{uuid.uuid4()}"
        start = SessionInput(
            app_name=app_name,
            user_id=user_id,
            session_id=session_id,
            state=dict(given.state) if given else {},
        )
        fixed = case.model_copy(update={"session_input": start})
        result = await run_case(agent, fixed, config, state.sessions, judge=resolve_judge_model)
        results.append(result)
        adk_results.append(
            case_result_json(
                result,
                raw_cases.get(case.eval_id, {}),
                eval_set_id,
                user_id=user_id,
                session_id=session_id,
                skipped=skipped,
            )
        )
    report = EvalReport(eval_set_id, tuple(results), config)
    result_id = _store(request, app_name, eval_set_id, adk_results, report)
    return result_id, adk_results, report


def _store(
    request: Request,
    app_name: str,
    eval_set_id: str,
    adk_results: list[dict[str, object]],
    report: EvalReport,
) -> str:
    created = time.time()
    result_id = f"{app_name}_{eval_set_id}_{created}"
    folder = history_dir(request, app_name)
    folder.mkdir(parents=True, exist_ok=True)
    stored = {
        "eval_set_result_id": result_id,
        "eval_set_result_name": result_id,
        "eval_set_id": eval_set_id,
        # ADK reads its stored results back without the deprecated per-metric pairs.
        "eval_case_results": [
            {k: v for k, v in _drop_none(r).items() if k != "eval_metric_results"}
            for r in adk_results
        ],
        "creation_timestamp": created,
    }
    (folder / (result_id + RESULT_SUFFIX)).write_text(json.dumps(stored, indent=2), "utf-8")
    (folder / (result_id + _REPORT_SUFFIX)).write_text(report.to_json(), "utf-8")
    return result_id


async def _run_adk(
    app_name: str, eval_set_id: str, request: Request, body: Annotated[dict[str, object], Body()]
) -> Response:
    _, results, _ = await _run(app_name, eval_set_id, request, body)
    return json_response({"runEvalResults": camel(_drop_none(results))})


@router.post("/dev/apps/{app_name}/eval-sets/{eval_set_id}/run")
async def run_eval_route(
    app_name: str, eval_set_id: str, request: Request, body: Annotated[dict[str, object], Body()]
) -> Response:
    return await _run_adk(app_name, eval_set_id, request, body)


@router.post("/dev/apps/{app_name}/eval_sets/{eval_set_id}/run_eval")
async def run_eval_legacy(
    app_name: str, eval_set_id: str, request: Request, body: Annotated[dict[str, object], Body()]
) -> Response:
    _, results, _ = await _run(app_name, eval_set_id, request, body)
    return json_response(camel(_drop_none(results)))


@router.post("/dev/apps/{app_name}/eval-sets/{eval_set_id}/run-report")
async def run_eval_report(
    app_name: str, eval_set_id: str, request: Request, body: Annotated[dict[str, object], Body()]
) -> Response:
    """rondo's view of a run: its report (scores, diffs of failing cases, tokens, dollars)."""
    result_id, _, report = await _run(app_name, eval_set_id, request, body)
    return json_response({"eval_result_id": result_id, "report": report.to_dict()})


@router.get("/dev/apps/{app_name}/eval-results/{eval_result_id}/report")
async def get_eval_report(app_name: str, eval_result_id: str, request: Request) -> Response:
    """The rondo report stored beside an ADK eval result."""
    path = history_dir(request, app_name) / (eval_result_id + _REPORT_SUFFIX)
    if "/" in eval_result_id or "\\" in eval_result_id or not path.is_file():
        raise NotFoundError(f"No rondo report for eval result `{eval_result_id}`.")
    return json_response(json.loads(path.read_text(encoding="utf-8")))


@router.get("/dev/apps/{app_name}/metrics-info")
async def list_metrics_info(app_name: str, request: Request) -> Response:
    del app_name, request  # as in ADK, the metrics are not tied to an app
    return json_response({"metricsInfo": camel(list(METRICS_INFO))})
