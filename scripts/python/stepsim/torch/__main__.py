"""python3 -m stepsim.torch [--write docs/python.md]: the table of supported ATen operations."""
from .ops import main

main()
