"""`python -m vision_bench ...` (also what `torchrun -m vision_bench train CONFIG` runs)."""

import sys

from vision_bench.cli import main

sys.exit(main())
