"""Loaded before the tests' own conftest, which imports the installed package: a stale strict
editable install stops the run with the command that mends it."""

pytest_plugins = ["tests.support.installed"]
