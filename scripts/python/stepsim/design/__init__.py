"""Design-space exploration (docs/dse.md): the space file (design.space), one point's program and
figures (design.evaluate, design.torch_program for PyTorch programs), the search (design.explore,
which stepsim.dse runs) and its pictures (design.plots)."""
