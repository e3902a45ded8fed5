"""An app whose code fails to import: only this app may report it."""

raise RuntimeError("this app is broken on purpose")
