"""`python3 -m stepsim dse SPACE.yaml ...` (what `stepsim dse` runs): see stepsim.cli."""
import sys

from .cli import main

sys.exit(main())
