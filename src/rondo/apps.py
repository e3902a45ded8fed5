"""Loading an app: the agent `rondo run`, the evals and the pytest plugin run, and the
session and artifact stores the CLI and the server keep its sessions in (below the faces,
which all use it)."""

from __future__ import annotations

import importlib
import importlib.util
import sys
import threading
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

from rondo.agents.base import BaseAgent
from rondo.errors import CliError

if TYPE_CHECKING:
    from rondo.artifacts.base import BaseArtifactService
    from rondo.models.base import Model
    from rondo.sessions.base import BaseSessionService

__all__ = [
    "CliError",
    "app_name_for",
    "import_app_folder",
    "is_app_folder",
    "load_agent",
    "open_artifact_service",
    "open_session_service",
    "override_model",
    "root_agent_of",
]


def _exec_module(name: str, file: Path, *, package_dir: Path | None = None) -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        name,
        file,
        submodule_search_locations=[str(package_dir)] if package_dir is not None else None,
    )
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {file}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(name, None)
        raise
    return module


def is_app_folder(path: Path) -> bool:
    """A folder that is an app, as google-adk lays them out: `agent.py` or `__init__.py` in it."""
    if path.name.startswith((".", "_")) or not path.is_dir():
        return False
    return (path / "agent.py").is_file() or (path / "__init__.py").is_file()


# Servers in one process (tests, an embedding app) may load apps from their own threads: one
# app import at a time, or one would drop the modules another is importing.
_import_lock = threading.Lock()


def import_app_folder(folder: Path) -> ModuleType:
    """Import an app folder: the one loader of `rondo run DIR`, the evals and the server.

    The folder becomes a package under a private name (a folder called e.g. `json` cannot
    shadow the standard library; its files may import each other relatively), then its
    `agent` module is imported. As with google-adk, the folder's parent goes on `sys.path`,
    so an app may import its siblings (`from chat import tools`, or a shared `echo_model.py`
    beside the app folders); as with running a script there, so does the folder itself
    (`import helpers`). Every call loads the code afresh (after a failed load, in a test run).
    """
    folder = folder.resolve()
    with _import_lock:
        return _import_app_locked(folder)


def _import_app_locked(folder: Path) -> ModuleType:
    package = f"_rondo_app_{folder.name}"
    for entry in (str(folder.parent), str(folder)):
        if entry not in sys.path:
            sys.path.insert(0, entry)
    # A copy first: another thread's import may add modules meanwhile.
    for key in [k for k in list(sys.modules) if k == package or k.startswith(f"{package}.")]:
        del sys.modules[key]
    init = folder / "__init__.py"
    module = _exec_module(
        package, init if init.is_file() else folder / "agent.py", package_dir=folder
    )
    if init.is_file() and (folder / "agent.py").is_file() and not hasattr(module, "agent"):
        module = importlib.import_module(f"{package}.agent")
    return module


def root_agent_of(module: ModuleType) -> object | None:
    """The module's `root_agent`, or its `agent` submodule's (a package app); None if neither."""
    agent = getattr(module, "root_agent", None)
    if agent is None:
        child = getattr(module, "agent", None)
        agent = getattr(child, "root_agent", None) if isinstance(child, ModuleType) else None
    return agent


def _module_for(path: str) -> ModuleType:
    target = Path(path)
    if target.is_dir():
        if not is_app_folder(target.resolve()):
            raise CliError(f"{path} is a directory without an agent.py")
        return import_app_folder(target)
    if target.suffix == ".py":
        if not target.is_file():
            raise CliError(f"no such file: {path}")
        sys.path.insert(0, str(target.resolve().parent))
        return _exec_module(f"_rondo_app_{target.stem}", target)
    if not path.replace(".", "").replace("_", "").isalnum():
        raise CliError(f"no such file or directory: {path}")
    try:
        module = importlib.import_module(path)
    except ModuleNotFoundError as exc:
        if exc.name is not None and path.startswith(exc.name):
            raise CliError(
                f"no agent at {path!r}: not a .py file, a directory with agent.py, "
                "or an importable module"
            ) from None
        raise
    if not hasattr(module, "root_agent") and importlib.util.find_spec(f"{path}.agent"):
        module = importlib.import_module(f"{path}.agent")
    return module


def load_agent(path: str) -> BaseAgent:
    """`root_agent` from a Python file, a directory holding agent.py, or a module name."""
    try:
        module = _module_for(path)
    except CliError:
        raise
    except Exception as exc:
        raise CliError(f"cannot load the agent from {path}: {type(exc).__name__}: {exc}") from exc
    agent = root_agent_of(module)
    if agent is None:
        raise CliError(f"{path} defines no `root_agent`")
    if not isinstance(agent, BaseAgent):
        raise CliError(f"`root_agent` in {path} is a {type(agent).__name__}, not an agent")
    return agent


def override_model(root: BaseAgent, model: Model) -> None:
    """Run `root` on `model`: the root and every agent that would inherit the root's model
    take it; an agent with a model of its own (and what inherits from it) keeps its own."""
    from rondo.agents.llm import Agent

    def visit(agent: BaseAgent, inherits: bool) -> None:
        if isinstance(agent, Agent):
            if agent is root or (inherits and agent.model is None):
                agent.model = model
            inherits = agent.model is model
        for child in agent.sub_agents:
            visit(child, inherits)

    visit(root, True)


def open_session_service(db: str | None) -> tuple[BaseSessionService, str]:
    """The store for `--db` and how to describe it: SQLite at `.rondo/sessions.db` by
    default, a SQLAlchemy URL, a file path, or `memory`."""
    from rondo.sessions.memory import InMemorySessionService

    if db in ("memory", ":memory:"):
        return InMemorySessionService(), "memory"
    try:
        from rondo.sessions.sql import SqlSessionService
    except ImportError as exc:  # a build without the SQL store
        if db is None:
            return InMemorySessionService(), "memory"
        raise CliError(f"--db needs the SQL session store: {exc}") from exc
    if db is None:
        return SqlSessionService(), ".rondo/sessions.db"
    if "://" in db:
        return SqlSessionService(db), db
    file = Path(db).expanduser().resolve()
    file.parent.mkdir(parents=True, exist_ok=True)
    return SqlSessionService(file), str(db)  # a path: the stdlib sqlite3 driver


def app_name_for(path: str) -> str:
    """The app name sessions of `path` are stored under, the one `rondo api-server` gives
    the same agent: a folder's name (for `DIR/agent.py` too); a file's stem; a module's
    last part (its package's, for `pkg.agent`). So `rondo run examples/weather` and the
    server of `examples/` share the sessions of app `weather`."""
    target = Path(path)
    if target.is_dir():
        return target.resolve().name
    if target.suffix == ".py":
        resolved = target.resolve()
        if resolved.stem in ("agent", "__init__"):
            return resolved.parent.name
        return resolved.stem
    parts = path.split(".")
    if len(parts) > 1 and parts[-1] == "agent":
        return parts[-2]
    return parts[-1]


def open_artifact_service(*, durable: bool) -> BaseArtifactService:
    """Artifacts live beside durable sessions (files under `.rondo/artifacts`, where the
    server keeps them too) and die with in-memory ones."""
    if durable:
        from rondo.artifacts.filesystem import FileArtifactService

        return FileArtifactService(Path(".rondo") / "artifacts")
    from rondo.artifacts.memory import InMemoryArtifactService

    return InMemoryArtifactService()
