"""SPEC W4: the web UI is self-contained files in the package — checked without a browser."""

from __future__ import annotations

import re
from pathlib import Path

import rondo

UI = Path(rondo.__file__).parent / "server" / "ui"
MODULES = sorted(p for p in (UI / "js").glob("*.js"))
IMPORT = re.compile(r"""^\s*import\s[^"']*["']([^"']+)["'];?\s*$""", re.M)
# Anything fetched from the network: a URL with a host, or a protocol-relative one.
REMOTE = re.compile(
    r"""(?:src|href)\s*=\s*["'](?:https?:)?//|url\(\s*["']?(?:https?:)?//|@import"""
)


def test_w4_every_module_import_resolves_to_a_bundled_file() -> None:
    assert MODULES, f"no modules in {UI / 'js'}"
    for module in MODULES:
        for target in IMPORT.findall(module.read_text()):
            assert target.startswith("./"), f"{module.name} imports {target!r}: not a local file"
            assert (module.parent / target).is_file(), f"{module.name} imports missing {target}"


def test_w4_the_page_loads_nothing_from_the_network() -> None:
    for path in [UI / "index.html", UI / "style.css", *MODULES]:
        found = REMOTE.findall(path.read_text())
        assert not found, f"{path.name} refers to remote resources: {found}"
    assert "@font-face" not in (UI / "style.css").read_text()  # local font stacks only


def test_w4_index_preloads_every_module() -> None:
    index = (UI / "index.html").read_text()
    preloaded = set(re.findall(r'<link rel="modulepreload" href="js/([\w.]+)">', index))
    entry = set(re.findall(r'<script type="module" src="js/([\w.]+)">', index))
    assert entry == {"main.js"}
    assert preloaded | entry == {m.name for m in MODULES}
