"""The one check for an optional dependency, used by every module that needs one (each
integration, the numpy and Parquet paths): ``require_extra("openai", "openai")`` at the top of
``loopbreak.integrations.openai`` turns a bare ``No module named 'openai'`` into an error that
says which extra to install."""

from __future__ import annotations

import importlib

from loopbreak.errors import MissingExtra


def require_extra(extra: str, *modules: str) -> None:
    """Imports ``modules``; raises ``MissingExtra`` naming ``pip install 'loopbreak[extra]'``
    if one of them (or a module it needs) is not installed."""
    for module in modules:
        try:
            importlib.import_module(module)
        except ModuleNotFoundError as error:
            raise MissingExtra(
                f"{error}: pip install 'loopbreak[{extra}]'", name=error.name
            ) from None
