"""A package's public classes name the package as their module.

``errors``, ``chunks``, ``hooks`` and ``tools`` are packages whose classes live in private
modules (``errors/_model.py``...). Their public home is the package: a class's qualified name
(telemetry's ``error.type``, a repr, a pickle) must not name a private module, nor change when
a class moves between them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["claim_classes"]


def claim_classes(namespace: Mapping[str, Any]) -> None:
    """Give each class a package exports (``namespace``: its ``globals()``) the package as its
    ``__module__``, when the class is defined in one of the package's private modules."""
    package = namespace["__name__"]
    for name in namespace["__all__"]:
        value = namespace[name]
        if isinstance(value, type) and value.__module__.startswith(package + "._"):
            value.__module__ = package
