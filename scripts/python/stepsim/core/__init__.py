"""The API over the extension module: Graph and Stream (core.graph), Result and Analysis
(core.result), the layer library as functions (core.layers), the operators' specs (core._ops) and
the checks of every argument (core._checks). `import stepsim` exports the public names."""
