"""Optional packages, imported when a feature needs them: a missing one is one line naming the extra that installs it.

The core install works without them; `require(package, purpose)` is called first thing by the code that needs one
(the Hugging Face hub client for model folders, the hub and the cards; `datasets` for Hugging Face datasets), which
then imports it as usual.
"""

from __future__ import annotations

import importlib

from vision_bench.errors import UserError

EXTRAS = {"huggingface_hub": "hf", "datasets": "hf"}
"""Optional package -> the extra of vision-bench that installs it (pyproject.toml's optional-dependencies)."""


class MissingPackageError(UserError):
    """A feature needs an optional package that is not installed."""


def require(package: str, purpose: str) -> None:
    """Import `package` (one of `EXTRAS`), or a one-line `MissingPackageError` saying that `purpose` needs it."""
    try:
        importlib.import_module(package)
    except ImportError:
        raise MissingPackageError(f"{purpose} needs the {package} package, which is not installed; "
                                  f"pip install 'vision-bench[{EXTRAS[package]}]'") from None


__all__ = ["EXTRAS", "MissingPackageError", "require"]
