"""google-adk's eval-set routes (issue 24 item 4): the paths ADK 2.x's dev server serves.

Eval sets live where ADK keeps them, `<agents_dir>/<app>/<eval_set_id>.evalset.json` (written
snake_case, as ADK writes them); results under `<agents_dir>/<app>/.adk/eval_history/`.
Answers use ADK's camelCase aliases. Adding a session, running an eval and the metrics are in `eval_runs`.
"""

from __future__ import annotations

import copy
import json
import re
import time
from pathlib import Path
from typing import Annotated, Any, cast

from fastapi import APIRouter, Body, Request
from fastapi.responses import Response
from pydantic.alias_generators import to_camel, to_snake

from rondo.server.errors import BadRequestError, InvalidValueError, NotFoundError, SafeRoute
from rondo.server.state import server_state
from rondo.server.streams import dumps

__all__ = [
    "RESULT_SUFFIX",
    "app_dir",
    "camel",
    "case_id",
    "cases_of",
    "history_dir",
    "json_response",
    "read_set",
    "router",
    "set_path",
]

router = APIRouter(route_class=SafeRoute)

_SET_SUFFIX = ".evalset.json"
RESULT_SUFFIX = ".evalset_result.json"
_ID = re.compile(r"[a-zA-Z0-9_]+")
_SEGMENT = re.compile(r"[^/\\]+")


def json_response(value: Any) -> Response:
    return Response(dumps(value), media_type="application/json")


# Fields ADK's models type as free-form dicts: a by-alias dump leaves their own keys as written
# (a tool's argument `note_text` stays `note_text`).
_FREE_FORM = frozenset({"state", "finalSessionState", "args", "response", "customMetadata"})


def camel(value: Any) -> Any:
    """ADK's by-alias dump: keys camelCase, but the keys inside free-form dicts (session state,
    a tool call's arguments, a tool's response) left as written."""
    if isinstance(value, dict):
        out: dict[str, object] = {}
        for key, item in value.items():  # pyright: ignore[reportUnknownVariableType]
            name = to_camel(str(key))  # pyright: ignore[reportUnknownArgumentType]
            out[name] = item if name in _FREE_FORM else camel(item)
        return out
    if isinstance(value, list):
        return [camel(item) for item in value]  # pyright: ignore[reportUnknownVariableType]
    return value


def snake(value: Any) -> Any:
    """`camel`'s inverse, for what is written to disk: ADK writes its models snake_case."""
    if isinstance(value, dict):
        out: dict[str, object] = {}
        for key, item in value.items():  # pyright: ignore[reportUnknownVariableType]
            name = to_snake(str(key))  # pyright: ignore[reportUnknownArgumentType]
            out[name] = item if to_camel(name) in _FREE_FORM else snake(item)
        return out
    if isinstance(value, list):
        return [snake(item) for item in value]  # pyright: ignore[reportUnknownVariableType]
    return value


# What ADK's `EvalCase` fills in when it reads a case and leaves out of its files (written with
# `exclude_defaults`): (camelCase name, snake_case name, default), for the case and each turn.
_Defaults = tuple[tuple[str, str, object], ...]
_CASE_DEFAULTS: _Defaults = (
    ("creationTimestamp", "creation_timestamp", 0.0),
    ("finalSessionState", "final_session_state", {}),
)
_TURN_DEFAULTS: _Defaults = (
    ("invocationId", "invocation_id", ""),
    ("creationTimestamp", "creation_timestamp", 0.0),
)


def _turns(case: dict[str, Any]) -> list[dict[str, object]]:
    turns: Any = case.get("conversation")
    items = cast("list[object]", turns) if isinstance(turns, list) else []
    return [cast("dict[str, object]", t) for t in items if isinstance(t, dict)]


def _drop_defaults(fields: dict[str, object], defaults: _Defaults) -> None:
    for _, name, default in defaults:
        if name in fields and fields[name] == default:
            del fields[name]


def _without_defaults(case: dict[str, object]) -> dict[str, object]:
    """A snake_case case as ADK writes it: the fields that hold their default left out."""
    _drop_defaults(case, _CASE_DEFAULTS)
    for turn in _turns(case):
        _drop_defaults(turn, _TURN_DEFAULTS)
    return case


def _with_defaults(case: dict[str, Any]) -> dict[str, Any]:
    """A camelCase case with the defaults ADK's answers carry."""
    for name, _, default in _CASE_DEFAULTS:
        case.setdefault(name, copy.copy(default))
    for turn in _turns(case):
        for name, _, default in _TURN_DEFAULTS:
            turn.setdefault(name, default)
    given: Any = case.get("sessionInput")
    if isinstance(given, dict):
        cast("dict[str, object]", given).setdefault("state", {})
    return case


def app_dir(request: Request, app_name: str) -> Path:
    if not _SEGMENT.fullmatch(app_name) or app_name in {".", ".."}:
        raise BadRequestError(f"Invalid app_name {app_name!r}")
    return server_state(request).apps.root / app_name


def set_path(request: Request, app_name: str, eval_set_id: str) -> Path:
    if not _SEGMENT.fullmatch(eval_set_id) or eval_set_id in {".", ".."}:
        raise BadRequestError(f"Invalid eval_set_id {eval_set_id!r}")
    return app_dir(request, app_name) / (eval_set_id + _SET_SUFFIX)


def read_set(path: Path) -> dict[str, object] | None:
    try:
        data: Any = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    if not isinstance(data, dict):
        raise BadRequestError(f"{path.name} is not an EvalSet object")
    return data  # pyright: ignore[reportUnknownVariableType]


def cases_of(data: dict[str, object]) -> list[dict[str, object]]:
    cases: Any = data.get("eval_cases", data.get("evalCases", []))
    return [c for c in cases if isinstance(c, dict)] if isinstance(cases, list) else []  # pyright: ignore[reportUnknownVariableType]


def case_id(case: dict[str, object]) -> str:
    return str(case.get("eval_id", case.get("evalId", "")))


def _create(request: Request, app_name: str, eval_set_id: str) -> dict[str, object]:
    if not _ID.fullmatch(eval_set_id):
        raise BadRequestError(
            "Invalid Eval Set ID. Eval Set ID should have the `^[a-zA-Z0-9_]+$` format"
        )
    path = set_path(request, app_name, eval_set_id)
    if path.exists():
        raise BadRequestError(f"EvalSet {eval_set_id} already exists for app {app_name}.")
    data: dict[str, object] = {
        "eval_set_id": eval_set_id,
        "name": eval_set_id,
        "eval_cases": [],
        "creation_timestamp": time.time(),
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2), encoding="utf-8")
    return data


@router.post("/dev/apps/{app_name}/eval-sets")
async def create_eval_set(
    app_name: str, request: Request, body: Annotated[dict[str, object], Body()]
) -> Response:
    eval_set: Any = body.get("eval_set", body.get("evalSet"))
    if not isinstance(eval_set, dict):
        raise InvalidValueError("evalSet is required")
    # ADK's EvalSet model has no camelCase aliases: only `eval_set_id` is read (else 422).
    fields = cast("dict[str, object]", eval_set)
    set_id: Any = fields.get("eval_set_id")
    if not isinstance(set_id, str) or not isinstance(fields.get("eval_cases"), list):
        raise InvalidValueError("evalSet.eval_set_id and evalSet.eval_cases are required")
    # ADK answers with its EvalSet model, which has no aliases: snake_case, as on disk.
    return json_response(_create(request, app_name, set_id))


@router.post("/dev/apps/{app_name}/eval_sets/{eval_set_id}")
async def create_eval_set_legacy(app_name: str, eval_set_id: str, request: Request) -> Response:
    _create(request, app_name, eval_set_id)
    return json_response(None)


def _list_sets(request: Request, app_name: str) -> list[str]:
    folder = app_dir(request, app_name)
    if not folder.is_dir():
        return []
    return sorted(p.name.removesuffix(_SET_SUFFIX) for p in folder.glob("*" + _SET_SUFFIX))


@router.get("/dev/apps/{app_name}/eval-sets")
async def list_eval_sets(app_name: str, request: Request) -> Response:
    return json_response({"evalSetIds": _list_sets(request, app_name)})


@router.get("/dev/apps/{app_name}/eval_sets")
async def list_eval_sets_legacy(app_name: str, request: Request) -> Response:
    return json_response(_list_sets(request, app_name))


@router.get("/dev/apps/{app_name}/eval_sets/{eval_set_id}/evals")
async def list_evals(app_name: str, eval_set_id: str, request: Request) -> Response:
    data = read_set(set_path(request, app_name, eval_set_id))
    if data is None:
        raise BadRequestError(f"Eval set `{eval_set_id}` not found.")
    return json_response(sorted(case_id(c) for c in cases_of(data)))


async def _get_case(
    app_name: str, eval_set_id: str, eval_case_id: str, request: Request
) -> Response:
    data = read_set(set_path(request, app_name, eval_set_id))
    for case in cases_of(data) if data is not None else []:
        if case_id(case) == eval_case_id:
            return json_response(_with_defaults(camel(case)))
    raise NotFoundError(f"Eval set `{eval_set_id}` or Eval `{eval_case_id}` not found.")


async def _delete_case(
    app_name: str, eval_set_id: str, eval_case_id: str, request: Request
) -> None:
    path = set_path(request, app_name, eval_set_id)
    data = read_set(path)
    if data is None:
        raise NotFoundError(f"Eval set `{eval_set_id}` not found.")
    cases = cases_of(data)
    kept = [c for c in cases if case_id(c) != eval_case_id]
    if len(kept) == len(cases):
        raise NotFoundError(f"Eval case `{eval_case_id}` not found.")
    data.pop("evalCases", None)
    data["eval_cases"] = kept
    path.write_text(json.dumps(data, indent=2), encoding="utf-8")


async def _update_case(
    app_name: str,
    eval_set_id: str,
    eval_case_id: str,
    request: Request,
    case: Annotated[dict[str, object], Body()],
) -> None:
    given = case_id(case)
    if given and given != eval_case_id:
        raise BadRequestError("Eval id in EvalCase should match the eval id in the API route.")
    path = set_path(request, app_name, eval_set_id)
    data = read_set(path)
    if data is None:
        raise NotFoundError(f"Eval set `{eval_set_id}` not found.")
    cases = cases_of(data)
    index = next((i for i, c in enumerate(cases) if case_id(c) == eval_case_id), None)
    if index is None:
        raise NotFoundError(f"Eval case `{eval_case_id}` not found.")
    case.pop("evalId", None)
    # ADK's dev UI sends the case camelCase; ADK stores it as its files are written.
    cases[index] = _without_defaults({**snake(case), "eval_id": eval_case_id})
    data.pop("evalCases", None)
    data["eval_cases"] = cases
    path.write_text(json.dumps(data, indent=2), encoding="utf-8")


# ADK serves each under a current and a legacy path; the OpenAPI ids name which is which
# (FastAPI's own ids would clash: "eval-cases" and "eval_cases" make the same one).
for _case_path, _kind in (
    ("/dev/apps/{app_name}/eval-sets/{eval_set_id}/eval-cases/{eval_case_id}", ""),
    ("/dev/apps/{app_name}/eval_sets/{eval_set_id}/evals/{eval_case_id}", "_legacy"),
):
    router.add_api_route(
        _case_path, _get_case, methods=["GET"], operation_id="get_eval_case" + _kind
    )
    router.add_api_route(
        _case_path, _delete_case, methods=["DELETE"], operation_id="delete_eval_case" + _kind
    )
    router.add_api_route(
        _case_path, _update_case, methods=["PUT"], operation_id="update_eval_case" + _kind
    )


def history_dir(request: Request, app_name: str) -> Path:
    return app_dir(request, app_name) / ".adk" / "eval_history"


def _list_results(request: Request, app_name: str) -> list[str]:
    folder = history_dir(request, app_name)
    if not folder.is_dir():
        return []
    return sorted(p.name.removesuffix(RESULT_SUFFIX) for p in folder.glob("*" + RESULT_SUFFIX))


@router.get("/dev/apps/{app_name}/eval-results")
async def list_eval_results(app_name: str, request: Request) -> Response:
    return json_response({"evalResultIds": _list_results(request, app_name)})


@router.get("/dev/apps/{app_name}/eval_results")
async def list_eval_results_legacy(app_name: str, request: Request) -> Response:
    return json_response(_list_results(request, app_name))


async def _get_result(app_name: str, eval_result_id: str, request: Request) -> Response:
    if not _SEGMENT.fullmatch(eval_result_id):
        raise NotFoundError(f"Eval set result `{eval_result_id}` not found.")
    path = history_dir(request, app_name) / (eval_result_id + RESULT_SUFFIX)
    try:
        data: Any = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise NotFoundError(f"Eval set result `{eval_result_id}` not found.") from None
    if isinstance(data, str):  # ADK writes the result's JSON as a JSON string
        data = json.loads(data)
    return json_response(camel(data))


for _result_path, _kind in (
    ("/dev/apps/{app_name}/eval-results/{eval_result_id}", ""),
    ("/dev/apps/{app_name}/eval_results/{eval_result_id}", "_legacy"),
):
    router.add_api_route(
        _result_path, _get_result, methods=["GET"], operation_id="get_eval_result" + _kind
    )
