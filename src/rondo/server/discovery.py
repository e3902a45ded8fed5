"""AGENTS_DIR → apps, laid out as google-adk lays them out (SPEC W1).

Each folder of AGENTS_DIR that holds `agent.py` or `__init__.py` is one app, named after the
folder; its `root_agent` (in `agent.py`, or in the package itself) becomes one `Runner`,
built on first use and kept; the folder is imported by `rondo.apps.import_app_folder`, the
loader `rondo run DIR` and the evals use too. A folder whose code fails to load is reported for that app only,
and tried again on the next request, so fixing the file needs no restart.
"""

from __future__ import annotations

import asyncio
import logging
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from rondo.agents.base import BaseAgent
from rondo.apps import import_app_folder, is_app_folder, root_agent_of
from rondo.errors import RondoError

if TYPE_CHECKING:
    from rondo.artifacts.base import BaseArtifactService
    from rondo.memory.base import BaseMemoryService
    from rondo.runner import Runner
    from rondo.sessions.base import BaseSessionService

__all__ = ["AppLoadError", "AppNotFoundError", "AppRegistry"]

logger = logging.getLogger("rondo.server")


class AppNotFoundError(RondoError, LookupError):
    """No app folder of that name in AGENTS_DIR."""


class AppLoadError(RondoError):
    """An app folder exists but its code does not give a `root_agent`."""


@dataclass(frozen=True)
class _Services:
    sessions: BaseSessionService
    artifacts: BaseArtifactService | None
    memory: BaseMemoryService | None


class AppRegistry:
    """The apps of one AGENTS_DIR and their runners."""

    def __init__(
        self,
        agents_dir: str | Path,
        *,
        session_service: BaseSessionService,
        artifact_service: BaseArtifactService | None = None,
        memory_service: BaseMemoryService | None = None,
    ) -> None:
        self.root = Path(agents_dir).expanduser().resolve()
        if not self.root.is_dir():
            raise AppNotFoundError(f"AGENTS_DIR {str(agents_dir)!r} is not a directory")
        self._services = _Services(session_service, artifact_service, memory_service)
        self._runners: dict[str, Runner] = {}
        self._lock = asyncio.Lock()

    @property
    def session_service(self) -> BaseSessionService:
        return self._services.sessions

    @property
    def artifact_service(self) -> BaseArtifactService | None:
        return self._services.artifacts

    def names(self) -> list[str]:
        """The app names, sorted; read from the directory each time (apps may be added)."""
        return sorted(p.name for p in self.root.iterdir() if is_app_folder(p))

    def check(self, name: str) -> None:
        """Raise `AppNotFoundError` unless `name` is an app of this directory."""
        if name in self._runners:
            return
        # Only a plain folder name can be an app: no separators, no '..'.
        if not name or "/" in name or "\\" in name or name != Path(name).name:
            raise self._not_found(name)
        try:
            found = is_app_folder(self.root / name)
        except (OSError, ValueError):  # a name too long for the file system, a NUL in it
            found = False
        if not found:
            raise self._not_found(name)

    def _not_found(self, name: str) -> AppNotFoundError:
        known = ", ".join(self.names()) or "none"
        return AppNotFoundError(
            f"Agent not found: {name!r}. No app folder of that name in AGENTS_DIR (apps: {known})."
        )

    async def runner(self, name: str) -> Runner:
        """The app's runner, loading its agent on first use."""
        found = self._runners.get(name)
        if found is not None:
            return found
        self.check(name)
        async with self._lock:
            found = self._runners.get(name)
            if found is None:
                found = self._build(name)
                self._runners[name] = found
        return found

    def loaded(self, name: str) -> Runner | None:
        """The app's runner if it is loaded (None: its agent never ran in this process)."""
        return self._runners.get(name)

    async def root_agent(self, name: str) -> BaseAgent:
        return (await self.runner(name)).agent

    def _build(self, name: str) -> Runner:
        from rondo.runner import Runner

        agent = _load_root_agent(self.root / name)
        services = self._services
        return Runner(
            agent=agent,
            app_name=name,
            session_service=services.sessions,
            artifact_service=services.artifacts,
            memory_service=services.memory,
        )

    async def close(self) -> None:
        """Close every loaded runner's toolsets (MCP connections, processes)."""
        runners = list(self._runners.values())
        self._runners.clear()
        for runner in runners:
            try:
                await runner.close()
            except Exception:  # one app's failing close must not keep the others open
                logger.exception("closing app %r failed", runner.app_name)


def _load_root_agent(folder: Path) -> BaseAgent:
    name = folder.name
    try:
        module = import_app_folder(folder)
    except Exception as exc:
        logger.exception("app %r failed to load", name)
        # The client reads what went wrong, not where: paths become names relative to
        # AGENTS_DIR (or bare file names); the server log above has the traceback.
        problem = _without_paths(f"{type(exc).__name__}: {exc}", folder.parent)
        raise AppLoadError(
            f"app {name!r} cannot be loaded ({problem}); fix its code and send the request "
            "again (the server log has the traceback)"
        ) from exc
    agent = root_agent_of(module)
    if agent is None:
        raise AppLoadError(f"app {name!r} defines no `root_agent` (in agent.py or __init__.py)")
    if not isinstance(agent, BaseAgent):
        raise AppLoadError(
            f"`root_agent` of app {name!r} is a {type(agent).__name__}, not a rondo agent"
        )
    return agent


_PATH = re.compile(r"(?:[A-Za-z]:)?[\\/](?:[^\s'\"\\/]+[\\/])+([^\s'\"\\/,:()]*)")


def _without_paths(text: str, root: Path) -> str:
    """`text` with AGENTS_DIR's path cut off and any other absolute path cut to its name."""
    text = text.replace(f"{root}{'/' if str(root) != '/' else ''}", "")
    return _PATH.sub(lambda m: m.group(1) or "…", text)
