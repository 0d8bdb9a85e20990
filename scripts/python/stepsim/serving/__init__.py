"""Serving runs: a whole model over the requests of a trace, with continuous batching, on the
simulated fabric (docs/serving.md). stepsim.serve(...) / `stepsim serve MODEL --requests TRACE`."""
from .models import load_model, model_names
from .requests import Request, load_requests
from .run import serve

__all__ = ["serve", "load_model", "model_names", "load_requests", "Request"]
