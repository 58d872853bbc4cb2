"""vision-bench: symbolic grid tasks as image datasets, image-to-image models and metrics.

Importing the package is cheap: heavy dependencies (torch, timm) load only in the subpackages
that need them.
"""

__version__ = "0.1.0"
