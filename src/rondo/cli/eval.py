"""`rondo eval AGENT EVALSET [--config test_config.json]`: score an agent on an ADK eval set.

Exit codes: 0 when every case passed, 1 when one failed (they are named), 2 when the input
cannot be used (an agent that does not load, a malformed eval set or config, a judge model
that cannot be built).
`--record FILE` / `--replay FILE` run the eval set through a cassette, as `rondo run` does:
every model exchange — the agent's, the judges' — is recorded once against the real models,
then the whole eval reruns offline with the same scores. `--junit FILE` writes JUnit XML for
CI, `--json FILE` the full report as JSON.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console
from rich.markup import escape

from rondo.apps import CliError
from rondo.cli.cassettes import CliCassette, RecordOption, ReplayOption
from rondo.errors import RondoError

if TYPE_CHECKING:
    from rondo.evaluation import CaseResult, EvalConfig, EvalReport, EvalSet, Progress
    from rondo.models.base import Model

__all__ = ["eval_command"]

EXIT_FAILED = 1
EXIT_UNUSABLE = 2
_PIPE_WIDTH = 160


def _config(config: str | None, evalset_file: str) -> EvalConfig:
    from rondo.evaluation import config_beside, load_eval_config

    return load_eval_config(config) if config is not None else config_beside(evalset_file)


def _initial_session(path: str | None) -> dict[str, object] | None:
    from rondo.evaluation import EvalSetError
    from rondo.evaluation.evalset import read_json

    if path is None:
        return None
    data = read_json(path, "initial session file")
    if not isinstance(data, dict):
        raise EvalSetError(f"{path}: an initial session is an object (app_name, user_id, state)")
    return dict(data)  # pyright: ignore[reportUnknownArgumentType]


def _load(evalset_file: str, config: str | None, session: str | None) -> tuple[EvalSet, EvalConfig]:
    from rondo.evaluation import load_eval_set

    eval_set = load_eval_set(evalset_file, initial_session=_initial_session(session))
    return eval_set, _config(config, evalset_file)


def _judges(
    eval_set: EvalSet, criteria: EvalConfig, cassette: CliCassette, override: str | None
) -> dict[str, Model]:
    """Every model the eval asks besides the agent's — the judges the criteria name, the user
    simulator if a case has a scenario — built now: one that cannot work fails first."""
    from rondo.evaluation import resolve_judge_model

    wanted: dict[str, tuple[str, str]] = {}  # configured name -> (name used, what for)
    for criterion in criteria.criteria:
        if criterion.judge is not None:
            name = criterion.judge.judge_model
            wanted.setdefault(name, (override or name, f"judge model of {criterion.metric}"))
    if any(case.conversation_scenario is not None for case in eval_set.eval_cases):
        name = criteria.user_simulator.model
        wanted.setdefault(name, (name, "user simulator model"))
    models: dict[str, Model] = {}
    for name, (used, role) in wanted.items():
        try:
            models[name] = cassette.model(used, resolve_judge_model)
        except RondoError as exc:
            raise CliError(f"{role} {used!r}: {exc}") from exc
    return models


def _write_reports(report: EvalReport, junit: str | None, json_path: str | None) -> None:
    from pathlib import Path

    from rondo.evaluation.junit import junit_xml

    try:
        if junit is not None:
            Path(junit).write_text(junit_xml(report), encoding="utf-8")
        if json_path is not None:
            Path(json_path).write_text(report.to_json(), encoding="utf-8")
    except OSError as exc:
        raise CliError(f"cannot write the report: {exc}") from exc


def _progress(errors: Console) -> Progress:
    def show(result: CaseResult, done: int, total: int) -> None:
        verdict = "[green]passed[/]" if result.passed else "[red]failed[/]"
        errors.print(f"[dim]\\[{done}/{total}][/] {escape(result.eval_id)} {verdict}")

    return show


def eval_command(
    agent_path: Annotated[
        str, typer.Argument(help="Agent: a .py file, a directory with agent.py, or a module.")
    ],
    evalset_file: Annotated[
        str, typer.Argument(help="An ADK eval set: *.evalset.json or *.test.json.")
    ],
    config: Annotated[
        str | None,
        typer.Option(
            "--config",
            help="Criteria JSON in ADK's test_config.json shape (default: test_config.json "
            "beside the eval set, else tool_trajectory_avg_score 1.0, response_match_score 0.8).",
        ),
    ] = None,
    initial_session: Annotated[
        str | None,
        typer.Option(
            "--initial-session",
            help="Session JSON (app_name, user_id, state) for a list-of-queries *.test.json.",
        ),
    ] = None,
    model: Annotated[
        str | None,
        typer.Option("--model", help="Model string overriding the agent's, e.g. local:smollm2."),
    ] = None,
    judge_model: Annotated[
        str | None,
        typer.Option(
            "--judge-model",
            help="Judge every LLM-judged metric with this model instead of the config's "
            "judge_model (a rondo model string or a bare name such as gemini-2.5-flash).",
        ),
    ] = None,
    junit: Annotated[
        str | None, typer.Option("--junit", help="Write the results as JUnit XML to this file.")
    ] = None,
    json_report: Annotated[
        str | None, typer.Option("--json", help="Write the full report as JSON to this file.")
    ] = None,
    record: RecordOption = None,
    replay: ReplayOption = None,
) -> None:
    """Run an ADK eval set against an agent and score it as `adk eval` does."""
    from rondo.evaluation import EvalSetError, run_eval

    out = Console(highlight=False)
    if not out.is_terminal:
        out.width = _PIPE_WIDTH  # logs and CI: no folded table cells
    errors = Console(stderr=True, soft_wrap=True, highlight=False)
    try:
        cassette = CliCassette(record=record, replay=replay)
        eval_set, criteria = _load(evalset_file, config, initial_session)
        agent = cassette.load_agent(agent_path, model)
        for name, why in criteria.not_evaluated:
            errors.print(f"[yellow]warning:[/] not evaluating {escape(name)}: {escape(why)}")
        count = len(eval_set.eval_cases)
        errors.print(
            f"[dim]{count} case{'' if count == 1 else 's'} of {escape(eval_set.eval_set_id)}; "
            f"criteria: {escape(criteria.describe())}[/]"
        )
        judges = _judges(eval_set, criteria, cassette, judge_model)
        report = asyncio.run(
            run_eval(
                agent,
                eval_set,
                criteria,
                progress=_progress(errors),
                judge=lambda name: judges[name],
            )
        )
        _write_reports(report, junit, json_report)
    except (CliError, RondoError) as exc:
        plain = isinstance(exc, CliError | EvalSetError)
        shown = str(exc) if plain else f"{type(exc).__name__}: {exc}"
        errors.print(f"[red]error:[/] {escape(shown)}")
        raise typer.Exit(EXIT_UNUSABLE) from None
    except KeyboardInterrupt:
        errors.print("[yellow]interrupted[/]")
        raise typer.Exit(130) from None
    out.print(report.table())
    for line in report.notes():
        out.print(line, markup=False)
    out.print(report.cost_line(), markup=False)
    out.print(report.summary(), markup=False)
    try:
        cassette.finish()
    except RondoError as exc:  # the replayed agent made fewer calls than were recorded
        errors.print(f"[red]error:[/] {escape(f'{type(exc).__name__}: {exc}')}")
        raise typer.Exit(EXIT_FAILED) from None
    raise typer.Exit(0 if report.passed else EXIT_FAILED)
