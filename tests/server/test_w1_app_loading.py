"""SPEC W1: apps load from AGENTS_DIR. Several servers in one process (tests, an app that
embeds two) load apps from their own threads; a load must not trip over another thread's
imports changing `sys.modules` (seen in CI as "dictionary changed size during iteration")."""

from __future__ import annotations

import sys
import threading
import traceback
import types
from pathlib import Path

import pytest

pytest.importorskip("fastapi")

from rondo.apps import import_app_folder as _import_app

APPS = Path(__file__).parent / "apps"


def _untraced() -> None:
    """No tracer in this thread. Under `--cov`, coverage's tracer, seeing `sys.path` change
    (the first load adds the app's folders), snapshots `sys.modules` and then deletes what was
    added since — a KeyError when the churn removed one first: its race, not the loader's."""
    sys.settrace(None)


def test_w1_apps_load_while_other_threads_import_modules() -> None:
    stop = threading.Event()
    errors: list[str] = []

    def churn() -> None:  # another thread's imports: sys.modules grows and shrinks
        _untraced()
        n = 0
        while not stop.is_set():
            name = f"_rondo_test_churn_{n % 64}"
            sys.modules[name] = types.ModuleType(name)
            sys.modules.pop(f"_rondo_test_churn_{(n + 32) % 64}", None)
            n += 1

    def load() -> None:
        _untraced()
        try:
            for _ in range(30):
                module = _import_app(APPS / "tally")
                assert module.root_agent.name
        except BaseException:
            errors.append(traceback.format_exc())  # where it broke: the next run's clue

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads often: the race shows within a few loads
    churner = threading.Thread(target=churn)
    loaders = [threading.Thread(target=load) for _ in range(3)]
    churner.start()
    for thread in loaders:
        thread.start()
    for thread in loaders:
        thread.join()
    stop.set()
    churner.join()
    sys.setswitchinterval(interval)
    for n in range(64):
        sys.modules.pop(f"_rondo_test_churn_{n}", None)
    assert errors == []
