"""How a serving run schedules its requests: which requests' prefill and decode each iteration
of the model carries. The whole policy is here; its parameters are the run's configuration.

The fabric runs one iteration at a time: the model's layers one after the other (each layer
hands its output to the next through HBM), then the LM head. An iteration is
    decode    one token for each request of the decode batch (its KV length = prompt + tokens
              generated so far - 1: the token it decodes is the one generated last), and/or
    prefill   chunks of prompts: (request, tokens, offset), the offset tokens already in the KV cache.
Its cycles are the sum of its parts' cycles (they run back to back; stepsim.serving.run).

Continuous batching (Orca, vLLM): requests join and leave the running set at iteration boundaries.
At each boundary, the requests that have arrived by then queue, first come first served, and
    chunk = 0 (whole prompts, vLLM's default scheduler): if requests wait and fewer than
        max_batch run, the iteration prefills waiting requests, oldest first, while the batch has
        room and their prompts add up to at most max_prefill_tokens (the oldest one always goes);
        otherwise it decodes every running request;
    chunk > 0 (chunked prefill, Sarathi-Serve): the iteration decodes every request past its
        prefill and carries the next chunk (at most `chunk` tokens) of the oldest request still in
        prefill, admitting the next waiting one when none is and the batch has room.
A request's first token comes at the end of the iteration that finishes its prompt; each decode
iteration adds one; it leaves when it has its output length. With nothing running or waiting,
the fabric idles until the next arrival.
"""
from .. import _stepsim

DEFAULTS = {"max_batch": 64, "max_prefill_tokens": 8192, "chunk": 0}
LIMITS = {"max_batch": (1, 4096), "max_prefill_tokens": (1, 1 << 20), "chunk": (0, 1 << 20)}
DOCS = {"max_batch": "requests running at once (in prefill or decode): the decode batch limit",
        "max_prefill_tokens": "prompt tokens one whole-prompt prefill iteration may carry (chunk = 0)",
        "chunk": "chunked prefill: prompt tokens per iteration, a multiple of the layers' tile_n (0 = whole prompts)"}


def schedule_config(values, tile_n):
    """The policy's parameters: DEFAULTS with `values` ({name: int}), checked."""
    config = dict(DEFAULTS)
    for key, value in (values or {}).items():
        if key not in DEFAULTS:
            raise _stepsim.Error("schedule: unknown parameter '%s' (the parameters: %s)" % (key, ", ".join(DEFAULTS)))
        low, high = LIMITS[key]
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            raise _stepsim.Error("schedule: %s must be an integer in %d..%d, not %r" % (key, low, high, value))
        config[key] = value
    if config["chunk"] % tile_n:
        raise _stepsim.Error("schedule: chunk %d must be a multiple of the layers' tile_n %d (a chunk's keys and "
                             "values are stored as whole KV-cache tiles)" % (config["chunk"], tile_n))
    return config


class RequestState:
    __slots__ = ("request", "arrival", "prefilled", "generated", "scheduled", "first_token", "finish")

    def __init__(self, request, arrival_cycles):
        self.request, self.arrival = request, arrival_cycles
        self.prefilled = self.generated = 0
        self.scheduled = self.first_token = self.finish = None  # cycles


class Iteration:
    """One iteration: `decode` [(request index, KV length before its token)], `prefill`
    [(request index, tokens, offset)], `heads` (tokens whose logits the LM head computes), the
    cycle it starts at and its index."""

    def __init__(self, index, start, decode, prefill):
        self.index, self.start, self.decode, self.prefill = index, start, decode, prefill
        self.heads = len(decode)

    def kind(self):
        return "+".join(k for k, v in (("prefill", self.prefill), ("decode", self.decode)) if v)


class Scheduler:
    """The state of a run: the clock (cycles) and every request's progress. next_iteration() says
    what runs next; finish(iteration, cycles) moves the clock past it. The state copies cheaply
    (copy.deepcopy), so that a coordinator can look ahead."""

    def __init__(self, requests, config, clock_ghz):
        self.config = config
        self.states = [RequestState(r, int(round(r.arrival_s * clock_ghz * 1e9))) for r in requests]
        self.time = 0
        self.iterations = 0
        self.arrived = 0                           # requests 0..arrived-1 have arrived
        self.waiting, self.running = [], []        # request indices, oldest first

    def done(self):
        return all(s.finish is not None for s in self.states)

    def _admit_arrivals(self):
        while self.arrived < len(self.states) and self.states[self.arrived].arrival <= self.time:
            self.waiting.append(self.arrived)
            self.arrived += 1

    def next_iteration(self):
        """The next iteration (None when every request is done); idles the clock to the next
        arrival when nothing can run."""
        self._admit_arrivals()
        if not self.waiting and not self.running:
            if self.arrived == len(self.states):
                return None
            self.time = max(self.time, self.states[self.arrived].arrival)
            self._admit_arrivals()
        if self.config["chunk"]:
            return self._chunked()
        return self._whole_prompts()

    def _whole_prompts(self):
        config, prefill, tokens = self.config, [], 0
        while self.waiting and len(self.running) + len(prefill) < config["max_batch"]:
            r = self.states[self.waiting[0]]
            if prefill and tokens + r.request.prompt > config["max_prefill_tokens"]:
                break
            prefill.append((self.waiting.pop(0), r.request.prompt, 0))
            tokens += r.request.prompt
        if prefill:
            self.running.extend(i for i, _, _ in prefill)
            for i, _, _ in prefill:
                self.states[i].scheduled = self.time
            it = Iteration(self.iterations, self.time, [], prefill)
            it.heads = len(prefill)
            return it
        return Iteration(self.iterations, self.time, self._decode_batch(), [])

    def _decode_batch(self):
        return [(i, self.states[i].request.prompt + self.states[i].generated - 1) for i in self.running
                if self.states[i].generated >= 1]

    def _chunked(self):
        chunk = None
        in_prefill = [i for i in self.running if self.states[i].prefilled < self.states[i].request.prompt]
        if not in_prefill and self.waiting and len(self.running) < self.config["max_batch"]:
            i = self.waiting.pop(0)
            self.running.append(i)
            self.states[i].scheduled = self.time
            in_prefill = [i]
        if in_prefill:
            s = self.states[in_prefill[0]]
            chunk = (in_prefill[0], min(self.config["chunk"], s.request.prompt - s.prefilled), s.prefilled)
        it = Iteration(self.iterations, self.time, self._decode_batch(), [chunk] if chunk else [])
        it.heads += sum(1 for i, n, o in it.prefill if o + n == self.states[i].request.prompt)
        return it

    def finish(self, it, cycles):
        """Moves the clock past iteration `it`, which took `cycles`."""
        self.time += cycles
        self.iterations += 1
        for i, n, _ in it.prefill:
            s = self.states[i]
            s.prefilled += n
            if s.prefilled == s.request.prompt:
                s.generated, s.first_token = 1, self.time
        for i, _ in it.decode:
            self.states[i].generated += 1
        for i in list(self.running):
            s = self.states[i]
            if s.generated >= s.request.output and s.finish is None:
                s.finish = self.time
                self.running.remove(i)
