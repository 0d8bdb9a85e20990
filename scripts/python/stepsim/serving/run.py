"""A serving run: a model over the requests of a trace (docs/serving.md).

The coordinator walks the schedule (stepsim.serving.policy) iteration by iteration. Each
iteration is a set of tasks (stepsim.serving.tasks): per decoder layer, the decode batch's layer
and each prefill chunk's layer, then the LM head; its cycles are their sum. What the next
iteration holds depends on when this one ends (requests arrive meanwhile), so the schedule itself
is sequential; the tasks are not. With workers, the coordinator looks ahead: it plays the
schedule forward on a copy, with the cycles of tasks not yet simulated estimated from the last
ones of their kind, and queues the tasks of the iterations it foresees, most urgent first. When
the real schedule gets there their results are (mostly) in; a foreseen task the real schedule
never needs was simulated for nothing, and stays in the cache. The result depends only on the
tasks the real schedule needs, so it is the same inline, on N local workers or on Slurm.
"""
import copy
import os
import sys
import time

from .. import _stepsim
from ..pool.workers import Pool, parse_workers
from . import models, policy, tasks
from .report import ServeResult, check_out, write_outputs
from .requests import load_requests

# How far ahead the coordinator plays the schedule, in iterations per worker: far enough to queue
# a few tasks each past iterations whose tasks are known already, not so far that a run whose
# tasks are all cached spends its time looking ahead.
LOOKAHEAD_PER_WORKER = 16
TASK_PHASES = {"decoder": "decode", "prefill": "prefill", "lm_head": "lm_head"}


def pool_name(urgency, key):
    """A task's name on the pool: its urgency (the cycle its iteration starts at, zero-padded, so
    that workers claim the most urgent first) and its cache key."""
    return "%015d-%s" % (urgency, key)


class Part:
    """One task of an iteration: the task, its cache key, the stage (decode, prefill, lm_head) and
    the decoder layer it stands for (None for the LM head)."""

    __slots__ = ("task", "key", "stage", "layer", "tokens")

    def __init__(self, task, key, stage, layer, tokens):
        self.task, self.key, self.stage, self.layer, self.tokens = task, key, stage, layer, tokens


class Serving:
    """A serving run's fixed inputs: the model, the hardware, the routing, the cache."""

    def __init__(self, model, preset, sets, routing, seed, cache, mode="timing"):
        if routing not in models.ROUTINGS:
            raise _stepsim.Error("routing must be one of %s, not '%s'" % (", ".join(models.ROUTINGS), routing))
        self.model, self.preset, self.routing, self.seed, self.mode = model, preset, routing, seed, mode
        self.sets = {str(k): str(v) for k, v in (sets or {}).items()}
        known = _stepsim.preset(preset)
        for key in self.sets:
            if key not in known:  # a node's parameter (NODE.PARAM) would name nodes of one task only
                raise _stepsim.Error("serve: set %s: not a hardware parameter of the preset (stepsim presets)" % key)
        self.cache = cache
        self.hardware = dict(tasks.hardware(preset, tuple(sorted(self.sets.items()))))
        self.clock_ghz = float(self.hardware["clock_ghz"])
        defaults = {p["name"]: p["default"] for d in _stepsim.layers() if d["name"] == "decoder" for p in d["params"]}
        self.decoder_params = {**{k: str(v) for k, v in defaults.items()}, **model.layer_params("decoder")}
        self.regions = int(self.decoder_params["regions"])
        self.tile_n = int(self.decoder_params["tile_n"])
        self._keys = {}  # (layer, params, routing digest) -> cache key, for the speed of the look-ahead
        self._routing = {}  # (tokens, salt) -> (routing file, its SHA-256)

    def _task(self, layer, params, stage, layer_index, tokens, salt):
        """A Part; `salt` names the routing draw (synthetic routing) of a task with an MoE."""
        params = dict(params)
        digest = ""
        if layer != "lm_head":
            params["moe_trace"], digest = self._routing_file(tokens, salt, layer_index)
        task = {"layer": layer, "params": params, "preset": self.preset, "set": self.sets, "mode": self.mode}
        memo = (layer, tuple(sorted(params.items())), digest)
        if memo not in self._keys:
            self._keys[memo] = tasks.task_key(task, digest)
        return Part(task, self._keys[memo], stage, layer_index, tokens)

    def _routing_file(self, tokens, salt, layer):
        """The routing of a task's tokens as a file (trace routing: the same for every task of as
        many tokens in a layer, or in every layer when the model has one routing trace)."""
        memo = (tokens, salt if self.routing == "synthetic" else layer)
        if memo not in self._routing:
            rows = models.routing_rows(self.model, tokens, self.routing, self.seed, salt, layer)
            self._routing[memo] = self.cache.routing_file(models.routing_csv(rows))
        return self._routing[memo]

    def parts(self, it):
        """The tasks of iteration `it`."""
        parts = []
        per_layer = range(self.model.layers) if self.routing == "synthetic" or self.model.per_layer_routing else [None]
        if it.decode:
            lengths = [n for _, n in it.decode]
            padded = lengths + [0] * (-len(lengths) % self.regions)  # the decoder needs regions | batch
            params = {**self.decoder_params, "batch": str(len(padded)), "kv_lengths": " ".join(map(str, padded))}
            for layer in per_layer:
                parts.append(self._task("decoder", params, "decode", layer, len(padded),
                                        "decode|%d|%s" % (it.index, layer)))
        for i, n, offset in it.prefill:
            params = {**self.model.layer_params("prefill"), "tokens": str(n), "offset": str(offset)}
            for layer in per_layer:
                parts.append(self._task("prefill", params, "prefill", layer, n,
                                        "prefill|%d|%d|%s" % (i, offset, layer)))
        if it.heads:
            params = {"tokens": str(it.heads), "hidden": str(self.model.hidden), "vocab": str(self.model.vocab),
                      "regions": str(self.regions)}
            parts.append(self._task("lm_head", params, "lm_head", None, it.heads, ""))
        return parts

    def layer_count(self, part):
        """How many decoder layers a part stands for (one routing for every layer: one task for all)."""
        return self.model.layers if part.stage != "lm_head" and part.layer is None else 1


class Coordinator:
    """Walks the schedule, runs its tasks on the pool, and records what happened."""

    def __init__(self, serving, scheduler, pool, workers, progress):
        self.s, self.sched, self.pool, self.workers, self.progress = serving, scheduler, pool, workers, progress
        self.known = {}          # cache key -> result
        self.submitted = set()   # cache keys queued on the pool (not yet known)
        self.simulated = set()   # keys this run simulated (not found in the cache)
        self.needed = set()      # keys the real schedule needed
        self.instances = 0       # layer tasks the real schedule needed (a task standing for L layers: L)
        self.last = {}           # stage -> (cycles, tokens) of the last known task, for estimates
        self.iterations = []     # (Iteration, parts, cycles)
        self._pending_parts = {}  # key -> (Part, urgency it was queued with)
        self.started = time.perf_counter()
        self.last_progress = 0.0

    def run(self):
        while True:
            it = self.sched.next_iteration()
            if it is None:
                return
            parts = self.s.parts(it)
            self._fetch(parts, it.start, wait=False)
            if self.pool.kind != "inline":  # inline, a task runs only when it is waited for
                self._look_ahead(it, parts)
            self._fetch(parts, it.start, wait=True)
            failed = [self.known[p.key]["error"] for p in parts if "error" in self.known[p.key]]
            if failed:
                raise _stepsim.Error("serving: a task failed: %s" % failed[0])
            cycles = sum(self.known[p.key]["cycles"] * self.s.layer_count(p) for p in parts)
            self.needed.update(p.key for p in parts)
            self.instances += sum(self.s.layer_count(p) for p in parts)
            self.iterations.append((it, parts, cycles))
            self.sched.finish(it, cycles)
            self._show_progress()

    def _fetch(self, parts, urgency, wait):
        """Looks the parts up in the cache and queues those it lacks; with `wait`, returns once
        every part is known (a failed task ends the run with its error)."""
        todo = {}
        for p in parts:
            if p.key in self.known or p.key in self.submitted or p.key in todo:
                continue
            found = self.s.cache.get(p.key)
            if found is not None:
                self._learn(p, found)
            else:
                todo[p.key] = p
        if todo:
            self.pool.submit({pool_name(urgency, k): {"key": k, "task": p.task} for k, p in todo.items()})
            self.submitted.update(todo)
            self.simulated.update(todo)
            self._pending_parts.update({k: (p, urgency) for k, p in todo.items()})
        if wait:
            missing = [p.key for p in parts if p.key not in self.known]
            if missing:
                names = {k: pool_name(self._pending_parts[k][1], k) for k in missing}
                results = self.pool.wait(sorted(set(names.values())))
                for k, name in names.items():
                    self._receive(k, results[name])
            self._poll()

    def _poll(self):
        """Takes in what the workers finished beyond what was waited for (look-ahead tasks)."""
        for name, result in self.pool.poll().items():
            self._receive(name.partition("-")[2], result)

    def _receive(self, key, result):
        if key in self.known:
            return
        part, _ = self._pending_parts.pop(key)
        self.submitted.discard(key)
        self._learn(part, result)  # a failed task too: the run fails if the real schedule needs it

    def _learn(self, part, result):
        self.known[part.key] = result
        if "error" not in result:
            self.last[part.stage] = (result["cycles"], max(1, part.tokens))

    def _estimate(self, part):
        if part.key in self.known and "error" not in self.known[part.key]:
            return self.known[part.key]["cycles"]
        cycles, tokens = self.last.get(part.stage, (1_000_000, 1))
        return cycles if part.stage == "decode" else cycles * max(1, part.tokens) // tokens

    def _look_ahead(self, it, parts):
        """Plays the schedule forward on a copy and queues the tasks of the iterations it foresees
        until the workers have about two tasks each."""
        target = 2 * self.workers
        clone = copy.deepcopy(self.sched)
        clone.finish(it, sum(self._estimate(p) * self.s.layer_count(p) for p in parts))
        for _ in range(LOOKAHEAD_PER_WORKER * self.workers):
            if len(self.submitted) >= target:
                return
            nxt = clone.next_iteration()
            if nxt is None:
                return
            ahead = self.s.parts(nxt)
            self._fetch(ahead, nxt.start, wait=False)
            clone.finish(nxt, sum(self._estimate(p) * self.s.layer_count(p) for p in ahead))

    def _show_progress(self):
        now = time.perf_counter()
        if not self.progress or now - self.last_progress < 2.0:
            return
        self.last_progress = now
        done = sum(1 for st in self.sched.states if st.finish is not None)
        print("serve: iteration %d at %.3f s simulated, %d/%d requests done, %d tasks simulated, %.0f s wall"
              % (len(self.iterations), self.sched.time / (self.s.clock_ghz * 1e9), done, len(self.sched.states),
                 len(self.simulated), now - self.started), file=sys.stderr, flush=True)


def serve(model, requests, out=None, workers="inline", preset="step-artifact", set=None, schedule=None,
          routing="trace", seed=1, cache=None, first_row=1, count=None, time_scale=1.0, progress=False,
          sbatch_options=()):
    """Runs `model` (a name, a model file or a Model) over `requests` (a trace file, or a list of
    stepsim.serving.Request) and returns a ServeResult; with `out`, writes its files there
    (stepsim.serving.report). workers: inline, local:N or slurm:N; cache: the task cache folder
    (default: stepsim.serving.tasks.default_cache_dir()); schedule: the policy's parameters."""
    m = model if isinstance(model, models.Model) else models.load_model(model)
    reqs = requests if isinstance(requests, list) else load_requests(requests, first_row, count, time_scale)
    if not reqs:
        raise _stepsim.Error("serve: no requests")
    kind, n = parse_workers(workers)
    if out is not None:
        check_out(out)
    s = Serving(m, preset, set, routing, seed, tasks.Cache(cache or tasks.default_cache_dir()))
    config = policy.schedule_config(schedule, s.tile_n)
    sched = policy.Scheduler(reqs, config, s.clock_ghz)
    folder = os.path.join(os.path.abspath(out), "work") if out else os.path.abspath(".stepsim-serve-%d" % os.getpid())
    job = {"cache": s.cache.folder}
    start = time.perf_counter()
    with Pool(workers, folder, tasks.run_task, job, sbatch_options=sbatch_options, lazy=True) as pool:
        c = Coordinator(s, sched, pool, n if kind != "inline" else 1, progress)
        c.run()
    result = ServeResult(s, sched, c, config, workers, time.perf_counter() - start)
    if out is not None:
        write_outputs(out, result)
    return result
