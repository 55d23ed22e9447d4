"""Modules that are type-checked, not run: ``tests/test_typing.py`` runs ``mypy --strict`` on
them (``typed.py`` must pass; each line of ``refused.py`` must be the error its ``# type:
ignore[...]`` names, checked with ``--warn-unused-ignores``)."""
