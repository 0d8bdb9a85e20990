"""The models a serving run runs: N decoder layers of the layer library (`decoder` in decode,
`prefill` in prefill), an embedding and an LM head (`lm_head`), with the model's sizes.

A model is a YAML file (graphs/models/NAME.yaml; `stepsim serve NAME` finds it there, or give a
path), strict like the hardware presets: every key below is required but `layer` and
`description`, and an unknown key is an error.

    name, description   what the model is
    family              the layer library's model (mixtral or qwen): the layers' defaults
    layers, vocab       decoder layers; vocabulary (the embedding's rows, the LM head's columns)
    hidden, inter       hidden size; each expert's intermediate size
    q_heads, kv_heads, head_dim   the attention's heads (GQA)
    experts, topk       the MoE: experts, experts per token
    routing_trace       the MoE routing the run draws from (CSV token,expert0..): one file for every
                        layer, or a list of one file per layer where per-layer traces exist
    layer               other parameters of the decoder and prefill layers (regions, tile_n, ...)

The MoE routing: which experts a token goes to changes the MoE's cycles (dynamic tiling), so
every MoE task carries a routing table of its tokens. Two ways to draw it (the run's `routing`):
    trace       token i of a task takes row i mod N of the model's routing trace (the real routing
                snapshot; the same rows in every layer, so that the layers of one iteration are
                one simulation)
    synthetic   each token draws `topk` distinct experts with the trace's expert frequencies, seeded
                by the run's seed, the layer and the task (every layer different)
"""
import csv
import hashlib
import io
import os

import numpy as np
import yaml

from .. import _stepsim

MODEL_KEYS = {"name": str, "description": str, "family": str, "layers": int, "vocab": int, "hidden": int,
              "inter": int, "q_heads": int, "kv_heads": int, "head_dim": int, "experts": int, "topk": int,
              "routing_trace": (str, list), "layer": dict}
OPTIONAL_KEYS = {"description", "layer"}
# The model's sizes handed to the decoder and prefill layers under these names.
LAYER_SIZES = ("hidden", "inter", "q_heads", "kv_heads", "head_dim")
MAX_LAYERS = 1024
MAX_SIZE = 1 << 24
ROUTINGS = ("trace", "synthetic")


def models_dir():
    return os.path.join(_stepsim.source_dir, "graphs", "models")


def model_names():
    return sorted(n[:-5] for n in os.listdir(models_dir()) if n.endswith(".yaml"))


class Model:
    """A model file, checked. `path` is where it came from."""

    def __init__(self, data, path):
        self.path = path
        for key, kind in MODEL_KEYS.items():
            setattr(self, key, data.get(key, {} if kind is dict else ""))
        traces = self.routing_trace if isinstance(self.routing_trace, list) else [self.routing_trace]
        self.routing_tables = [read_routing(t, self.experts, self.topk, path) for t in traces]
        self.per_layer_routing = len(self.routing_tables) > 1

    def layer_params(self, layer):
        """The parameters every task of `layer` (decoder or prefill) gets from the model."""
        params = {"model": self.family, **{k: getattr(self, k) for k in LAYER_SIZES}, **self.layer}
        return {k: str(v) for k, v in params.items()}

    def describe(self):
        return "%s: %s" % (self.name, self.description or "%d layers" % self.layers)


def load_model(name_or_path):
    """A model by name (graphs/models/NAME.yaml) or by the path of its YAML file."""
    text = str(name_or_path)
    path = text if text.endswith((".yaml", ".yml")) or os.sep in text else os.path.join(models_dir(), text + ".yaml")
    if not os.path.isfile(path):
        raise _stepsim.Error("model '%s': no such model file %s (the models: %s; or give a model YAML file)"
                             % (text, path, ", ".join(model_names())))
    try:
        with open(path) as f:
            data = yaml.safe_load(f)
    except OSError as e:
        raise _stepsim.Error("model %s: cannot read it: %s" % (path, e.strerror)) from None
    except yaml.YAMLError as e:
        raise _stepsim.Error("model %s: not valid YAML: %s" % (path, e)) from None
    except UnicodeDecodeError:
        raise _stepsim.Error("model %s: not a text (UTF-8) file" % path) from None
    _check(data, path)
    return Model(data, path)


def _check(data, path):
    if not isinstance(data, dict):
        raise _stepsim.Error("model %s: the file must be a mapping of keys (%s)" % (path, ", ".join(MODEL_KEYS)))
    unknown = sorted(set(data) - set(MODEL_KEYS))
    if unknown:
        raise _stepsim.Error("model %s: unknown key(s) %s (the keys: %s)" % (path, ", ".join(map(str, unknown)),
                                                                          ", ".join(MODEL_KEYS)))
    missing = [k for k in MODEL_KEYS if k not in data and k not in OPTIONAL_KEYS]
    if missing:
        raise _stepsim.Error("model %s: missing key(s) %s" % (path, ", ".join(missing)))
    for key, kind in MODEL_KEYS.items():
        if key not in data:
            continue
        value = data[key]
        if kind is int:
            top = MAX_LAYERS if key == "layers" else MAX_SIZE
            if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= top:
                raise _stepsim.Error("model %s: %s must be an integer in 1..%d, not %r" % (path, key, top, value))
        elif not isinstance(value, kind):
            what = " or a ".join(k.__name__ for k in (kind if isinstance(kind, tuple) else (kind,)))
            raise _stepsim.Error("model %s: %s must be a %s, not %r" % (path, key, what, value))
    traces = data["routing_trace"]
    if isinstance(traces, list) and (len(traces) != data["layers"] or not all(isinstance(t, str) for t in traces)):
        raise _stepsim.Error("model %s: routing_trace: give one file, or a list of %d files (one per layer), not %r"
                             % (path, data["layers"], traces if len(traces) <= 4 else "%d entries" % len(traces)))
    if data["q_heads"] % data["kv_heads"]:
        raise _stepsim.Error("model %s: kv_heads %d must divide q_heads %d" % (path, data["kv_heads"], data["q_heads"]))
    families = _stepsim.moe_families()
    if data["family"] not in families:
        raise _stepsim.Error("model %s: family must be one of the layer library's (%s), not '%s'"
                             % (path, ", ".join(sorted(families)), data["family"]))
    experts, topk = families[data["family"]]
    if (data["experts"], data["topk"]) != (experts, topk):
        raise _stepsim.Error("model %s: experts %d, topk %d: the %s family's MoE layers have %d experts, top-%d"
                             % (path, data["experts"], data["topk"], data["family"], experts, topk))
    layer_names = {p["name"] for d in _stepsim.layers() if d["name"] in ("decoder", "prefill") for p in d["params"]}
    for key in data.get("layer", {}):
        if key in LAYER_SIZES or key in ("model", "batch", "tokens", "offset", "kv_lengths", "moe_trace"):
            raise _stepsim.Error("model %s: layer.%s is set by the model or the run, not in `layer`" % (path, key))
        if key not in layer_names:
            raise _stepsim.Error("model %s: layer.%s is not a parameter of the decoder or prefill layers (stepsim "
                                 "layers)" % (path, key))


def read_routing(path, experts, topk, model_path):
    """The routing trace as an int array [tokens, topk], checked against the model."""
    resolved = _stepsim.resolve_path(path, os.path.dirname(os.path.abspath(model_path)))
    try:
        with open(resolved, newline="") as f:
            rows = list(csv.reader(f))
    except OSError as e:
        raise _stepsim.Error("model %s: routing trace %s: %s" % (model_path, resolved, e.strerror)) from None
    except (UnicodeDecodeError, csv.Error) as e:
        raise _stepsim.Error("model %s: routing trace %s: not a CSV text file (%s)" % (model_path, resolved, e)) \
            from None
    where = "model %s: routing trace %s" % (model_path, resolved)
    if len(rows) < 2 or len(rows[0]) != topk + 1:
        raise _stepsim.Error("%s: expected a header token,expert0..expert%d and at least one row (topk %d)"
                             % (where, topk - 1, topk))
    try:
        table = np.array([[int(c) for c in r[1:]] for r in rows[1:] if r], dtype=np.int64)
    except ValueError:
        raise _stepsim.Error("%s: an expert id is not an integer" % where) from None
    if table.shape[1] != topk or table.min() < 0 or table.max() >= experts:
        raise _stepsim.Error("%s: every row must hold %d expert ids in 0..%d" % (where, topk, experts - 1))
    return table


def routing_rows(model, tokens, routing, seed, salt, layer=None):
    """The routing of a task's `tokens` tokens as [tokens, topk] expert ids (module doc), for
    decoder layer `layer` where the model has a routing trace per layer."""
    table = model.routing_tables[layer if model.per_layer_routing else 0]
    if routing == "trace":
        return table[np.arange(tokens) % len(table)]
    frequency = np.bincount(table.ravel(), minlength=model.experts).astype(np.float64) + 1e-3
    digest = hashlib.sha256(("%s|%s" % (seed, salt)).encode()).digest()
    rng = np.random.Generator(np.random.PCG64(int.from_bytes(digest[:8], "little")))
    # topk draws without replacement, each expert with its frequency: the Gumbel top-k trick
    # (the k largest of log p + Gumbel noise), one row per token at once.
    keys = np.log(frequency / frequency.sum()) + rng.gumbel(size=(tokens, model.experts))
    return np.argsort(-keys, axis=1, kind="stable")[:, :model.topk].astype(np.int64)


def routing_csv(rows):
    """The routing as the MoE layer's trace file text."""
    out = io.StringIO()
    out.write("token," + ",".join("expert%d" % k for k in range(rows.shape[1])) + "\n")
    for i, r in enumerate(rows):
        out.write("%d,%s\n" % (i, ",".join(str(int(e)) for e in r)))
    return out.getvalue()
