"""Serving runs (stepsim.serving, `stepsim serve`): the schedule's rules on hand-made cycles, a
tiny model whose latencies are derived by hand from its tasks' own runs, the same results inline
and on local workers, the task cache, resuming a killed run, and bad traces and models."""
import csv
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

import stepsim
from conftest import ROOT, cli
from stepsim.serving import models, policy
from stepsim.serving.requests import Request, load_requests

TRACE = "shared:traces/azure/AzureLLMInferenceTrace_conv.csv"
ROUTING = os.path.join(ROOT, "..", "shared", "traces", "moe", "mixtral8x7b_b1024_iter019_layer009.csv")


def reqs(*rows):
    """Requests from (arrival_s, prompt, output) rows."""
    return [Request(i, i + 1, t, p, o) for i, (t, p, o) in enumerate(rows)]


def walk(scheduler, cycles_of):
    """Runs a schedule with cycles_of(iteration) -> cycles; returns the iterations' (kind, start,
    decode, prefill)."""
    seen = []
    while True:
        it = scheduler.next_iteration()
        if it is None:
            return seen
        seen.append((it.kind(), it.start, it.decode, it.prefill, it.heads))
        scheduler.finish(it, cycles_of(it))


# ---- the policy, on cycles given by hand


def cost(it):
    return 100 * len(it.prefill) + 50 * bool(it.decode)


def test_whole_prompts_prefill_first_then_decode_together():
    # r0 at 0 (prompt 10, 3 tokens), r1 at 150 cycles (prompt 20, 2 tokens), 1 GHz.
    s = policy.Scheduler(reqs((0, 10, 3), (150e-9, 20, 2)), dict(policy.DEFAULTS), 1.0)
    seen = walk(s, cost)
    assert seen == [("prefill", 0, [], [(0, 10, 0)], 1),      # r0's first token at 100
                    ("decode", 100, [(0, 10)], [], 1),         # r1 not there yet
                    ("prefill", 150, [], [(1, 20, 0)], 1),     # r1 arrived at 150: prefill first
                    ("decode", 250, [(0, 11), (1, 20)], [], 2)]  # both decode; both done at 300
    st = s.states
    assert (st[0].first_token, st[0].finish, st[1].first_token, st[1].finish) == (100, 300, 250, 300)
    assert (st[0].scheduled, st[1].scheduled) == (0, 150)


def test_the_batch_limit_queues_a_request_until_one_leaves():
    config = dict(policy.DEFAULTS, max_batch=1)
    s = policy.Scheduler(reqs((0, 10, 2), (0, 20, 1)), config, 1.0)
    seen = walk(s, cost)
    assert seen == [("prefill", 0, [], [(0, 10, 0)], 1), ("decode", 100, [(0, 10)], [], 1),
                    ("prefill", 150, [], [(1, 20, 0)], 1)]
    assert s.states[1].scheduled == 150 and s.states[1].finish == 250  # one token: done at its prefill


def test_prompts_share_a_prefill_iteration_up_to_the_token_budget():
    config = dict(policy.DEFAULTS, max_prefill_tokens=30)
    s = policy.Scheduler(reqs((0, 10, 1), (0, 20, 1), (0, 5, 1), (0, 40, 1)), config, 1.0)
    seen = walk(s, cost)
    assert [x[3] for x in seen] == [[(0, 10, 0), (1, 20, 0)], [(2, 5, 0)], [(3, 40, 0)]]  # the oldest always goes


def test_chunked_prefill_carries_one_chunk_beside_the_decodes():
    config = dict(policy.DEFAULTS, chunk=8)
    s = policy.Scheduler(reqs((0, 4, 3), (0, 20, 2)), config, 1.0)
    seen = walk(s, cost)
    assert seen == [("prefill", 0, [], [(0, 4, 0)], 1),                # r0's prompt in one chunk
                    ("prefill+decode", 100, [(0, 4)], [(1, 8, 0)], 1),
                    ("prefill+decode", 250, [(0, 5)], [(1, 8, 8)], 1),  # r0 done at 400
                    ("prefill", 400, [], [(1, 4, 16)], 1),             # r1's last chunk: its first token
                    ("decode", 500, [(1, 20)], [], 1)]
    assert s.states[0].finish == 400 and s.states[1].first_token == 500 and s.states[1].finish == 550


def test_the_fabric_idles_until_the_next_arrival():
    s = policy.Scheduler(reqs((0, 10, 1), (1e-6, 10, 1)), dict(policy.DEFAULTS), 1.0)
    seen = walk(s, cost)
    assert [x[1] for x in seen] == [0, 1000]


def test_schedule_parameters_are_checked():
    with pytest.raises(stepsim.Error, match="unknown parameter 'max_batchs'"):
        policy.schedule_config({"max_batchs": 3}, 32)
    with pytest.raises(stepsim.Error, match="chunk 40 must be a multiple of the layers' tile_n 32"):
        policy.schedule_config({"chunk": 40}, 32)
    with pytest.raises(stepsim.Error, match="max_batch must be an integer in 1..4096"):
        policy.schedule_config({"max_batch": 0}, 32)


# ---- the tiny model: latencies from its tasks' own runs


def routing_file(tmp_path, tokens):
    """The trace routing of `tokens` tokens: the first rows of the Mixtral snapshot."""
    with open(ROUTING) as f:
        rows = list(csv.reader(f))
    path = tmp_path / ("routing%d.csv" % tokens)
    with open(path, "w") as f:
        f.write(",".join(rows[0]) + "\n")
        for i in range(tokens):
            f.write("%d,%s\n" % (i, ",".join(rows[1 + i][1:])))
    return str(path)


def layer_cycles(layer, tmp_path, **params):
    m = models.load_model("tiny-moe")
    base = {} if layer == "lm_head" else m.layer_params(layer)
    tokens = int(params.get("batch", params.get("tokens")))
    if layer != "lm_head":
        params["moe_trace"] = routing_file(tmp_path, tokens)
    return stepsim.Graph.from_layer(layer, **{**base, **params}).run().cycles


def test_tiny_model_latencies_are_the_sums_of_its_tasks(tmp_path):
    # r0 at 0 s (prompt 40, 3 tokens), r1 1 ns later (prompt 20, 2 tokens); tiny-moe has 2
    # layers and 2 regions (a decode batch is padded to a multiple of 2 with KV length 0).
    L = 2
    head = {n: layer_cycles("lm_head", tmp_path, tokens=n, hidden=64, vocab=512, regions=2) for n in (1, 2)}
    A = L * layer_cycles("prefill", tmp_path, tokens=40, offset=0) + head[1]    # r0's prefill
    B = L * layer_cycles("prefill", tmp_path, tokens=20, offset=0) + head[1]    # r1's prefill (it waited)
    C = L * layer_cycles("decoder", tmp_path, batch=2, kv_lengths="40 20") + head[2]  # both decode
    E = L * layer_cycles("decoder", tmp_path, batch=2, kv_lengths="41 0") + head[1]   # r0 alone
    r = stepsim.serve("tiny-moe", reqs((0, 40, 3), (1e-9, 20, 2)), cache=str(tmp_path / "cache"))
    got = r.requests.set_index("request")
    assert list(got["ttft_cycles"]) == [A, A + B - 1]
    assert list(got["e2e_cycles"]) == [A + B + C + E, A + B + C - 1]
    assert got.loc[0, "tpot_cycles"] == (B + C + E) / 2 and got.loc[1, "tpot_cycles"] == C
    assert list(r.iterations["cycles"]) == [A, B, C, E]
    assert list(r.iterations["decode_padded"]) == [0, 0, 2, 2]
    # 6 distinct: 2 prefills, 2 decodes, the LM head of 1 token (3 times) and of 2
    assert r.summary["tasks"]["distinct"] == 6 and r.summary["tasks"]["layer_tasks"] == 4 * L + 4
    # seconds at the preset's clock (1 GHz), and the breakdown adds up to the cycles
    assert got.loc[0, "ttft_s"] == pytest.approx(A * 1e-9, rel=1e-12)
    assert int(r.breakdown["cycles"].sum()) == A + B + C + E
    assert r.summary["metrics"]["tokens_per_s"] == pytest.approx(5 / ((A + B + C + E) * 1e-9))


def test_synthetic_routing_gives_every_layer_its_own_task(tmp_path):
    r = stepsim.serve("tiny-moe", reqs((0, 40, 2)), routing="synthetic", cache=str(tmp_path / "cache"))
    assert r.summary["tasks"]["distinct"] == 2 * 2 + 1  # (prefill, decode) x 2 layers; the 1-token LM head
    per_layer = r.breakdown[(r.breakdown["stage"] == "decode") & (r.breakdown["phase"] == "moe")]
    assert list(per_layer["layer"]) == [0, 1]
    with pytest.raises(stepsim.Error, match="routing must be one of trace, synthetic"):
        stepsim.serve("tiny-moe", reqs((0, 40, 2)), routing="random", cache=str(tmp_path / "cache"))


def test_a_routing_trace_per_layer_gives_each_layer_its_own_rows(tmp_path):
    model = open(os.path.join(ROOT, "graphs", "models", "tiny-moe.yaml")).read()
    b64 = "shared:traces/moe/mixtral8x7b_b64_iter008_layer010.csv"
    b1024 = "shared:traces/moe/mixtral8x7b_b1024_iter019_layer009.csv"
    path = write(tmp_path, "per_layer.yaml", model.replace("routing_trace: " + b1024,
                                                           "routing_trace: [%s, %s]" % (b64, b1024)))
    m = models.load_model(path)
    assert m.per_layer_routing and [len(t) for t in m.routing_tables] == [64, 1024]
    assert (models.routing_rows(m, 70, "trace", 1, "", 0)[64:] == m.routing_tables[0][:6]).all()
    r = stepsim.serve(m, reqs((0, 40, 2)), cache=str(tmp_path / "cache"))
    assert r.summary["tasks"]["distinct"] == 2 * 2 + 1  # (prefill, decode) x 2 layers; the LM head
    with pytest.raises(stepsim.Error, match="routing_trace: give one file, or a list of 2 files"):
        models.load_model(write(tmp_path, "three.yaml", model.replace(
            "routing_trace: " + b1024, "routing_trace: [%s, %s, %s]" % (b64, b64, b64))))


def test_synthetic_routing_draws_topk_distinct_experts_with_the_traces_frequencies():
    m = models.load_model("mixtral-8x7b")
    rows = models.routing_rows(m, 20000, "synthetic", 1, "x")
    assert rows.shape == (20000, 2) and all(len(set(r)) == 2 for r in rows[:500])
    table = m.routing_tables[0]
    freq = np.bincount(table.ravel(), minlength=8) / table.size
    drawn = np.bincount(rows.ravel(), minlength=8) / rows.size
    assert np.abs(drawn - freq).max() < 0.02  # without replacement, close to the trace's frequencies
    assert (models.routing_rows(m, 50, "synthetic", 1, "x") == rows[:50]).all()  # the same draw, row by row
    other = models.routing_rows(m, 50, "synthetic", 1, "y")  # another task: another draw
    assert not (other == rows[:50]).all()
    assert (models.routing_rows(m, 3000, "trace", 1, "")[1024:2048] == table).all()


# ---- the command line: outputs, workers, cache, resume, errors


def serve_cli(tmp_path, out, *extra, count="4", cache="cache"):
    return cli("serve", "tiny-moe", "--requests", TRACE, "--count", count, "--time-scale", "0.001",
               "--out", str(tmp_path / out), "--cache", str(tmp_path / cache), "--quiet", *extra, check=False)


def table(tmp_path, out, name):
    with open(tmp_path / out / name) as f:
        return f.read()


def test_the_same_results_inline_and_on_local_workers_and_from_the_cache(tmp_path):
    inline = serve_cli(tmp_path, "inline")
    assert inline.returncode == 0, inline.stderr
    assert "time to first token" in inline.stdout and "tasks" in inline.stdout
    for f in ("requests.csv", "iterations.csv", "breakdown.csv", "summary.json", "latency_cdf.png",
              "latency_over_time.png"):
        assert (tmp_path / "inline" / f).stat().st_size > 0
    header = table(tmp_path, "inline", "requests.csv").splitlines()[0].split(",")
    assert {"ttft_cycles", "ttft_s", "tpot_cycles", "tpot_s", "e2e_s", "arrival_s"} <= set(header)
    spread = serve_cli(tmp_path, "local", "--workers", "local:2", cache="cache2")  # its own, empty cache
    assert spread.returncode == 0, spread.stderr
    again = serve_cli(tmp_path, "again")  # the first cache: nothing to simulate
    assert again.returncode == 0, again.stderr
    for name in ("requests.csv", "iterations.csv", "breakdown.csv"):
        assert table(tmp_path, "local", name) == table(tmp_path, "inline", name)
        assert table(tmp_path, "again", name) == table(tmp_path, "inline", name)
    import json

    first = json.load(open(tmp_path / "inline" / "summary.json"))["tasks"]
    second = json.load(open(tmp_path / "again" / "summary.json"))["tasks"]
    assert first["simulated"] == first["distinct"] > 0 and first["from_cache"] == 0
    assert second["simulated"] == 0 and second["from_cache"] == first["distinct"]
    assert not os.path.exists(tmp_path / "local" / "work")  # the workers' folder goes after a run that ended well


def test_a_killed_coordinator_resumes_from_the_cache(tmp_path):
    args = [os.environ.get("STEPSIM_BINARY", os.path.join(ROOT, "build", "stepsim")), "serve", "tiny-moe",
            "--requests", TRACE, "--count", "6", "--time-scale", "0.001", "--out", str(tmp_path / "killed"),
            "--cache", str(tmp_path / "cache"), "--workers", "local:2", "--quiet"]
    p = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    cached = lambda: sum(len(fs) for d, _, fs in os.walk(tmp_path / "cache") if "routing" not in d)  # noqa: E731
    deadline = time.time() + 120
    while cached() < 20 and p.poll() is None and time.time() < deadline:
        time.sleep(0.05)
    assert p.poll() is None, "the run ended before it could be killed: %s" % p.communicate()[1]
    os.kill(p.pid, signal.SIGKILL)
    p.wait()
    done_before = cached()
    assert not os.path.exists(tmp_path / "killed" / "requests.csv")  # nothing that looks complete
    resumed = subprocess.run(args, capture_output=True, text=True)
    assert resumed.returncode == 0, resumed.stderr
    import json

    tasks = json.load(open(tmp_path / "killed" / "summary.json"))["tasks"]
    assert tasks["from_cache"] >= done_before - 2  # a task or two may have been looked ahead and not needed
    fresh = cli("serve", "tiny-moe", "--requests", TRACE, "--count", "6", "--time-scale", "0.001", "--out",
                str(tmp_path / "fresh"), "--cache", str(tmp_path / "cache-fresh"), "--quiet")
    assert fresh.returncode == 0
    for name in ("requests.csv", "iterations.csv"):
        assert table(tmp_path, "killed", name) == table(tmp_path, "fresh", name)


def write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text)
    return str(path)


@pytest.mark.parametrize("text, message", [
    ("TIMESTAMP,ContextTokens\n2023-11-16 18:15:46.68,10\n", "missing column(s) GeneratedTokens"),
    ("arrival_s,prompt_tokens,output_tokens\n0,10,-3\n", "data row 1: output_tokens is -3; it must be in 1.."),
    ("arrival_s,prompt_tokens,output_tokens\n0,10,3\n1.5,4,2\n1.0,5,1\n",
     "data row 3 arrives before row 2 (1.0 < 1.5): the trace must be sorted by arrival"),
    ("arrival_s,prompt_tokens,output_tokens\n0,ten,3\n", "prompt_tokens 'ten' is not a whole number of tokens"),
    ("arrival_s,prompt_tokens,output_tokens\n0,0,3\n", "prompt_tokens is 0; it must be in 1.."),
    ("arrival_s,prompt_tokens,output_tokens\nsoon,1,3\n", "arrival 'soon' is neither a time stamp"),
    ("arrival_s,prompt_tokens,output_tokens,prompt_tokens\n0,1,3,4\n", "a column name appears twice"),
    ("arrival_s,prompt_tokens,output_tokens\n0,1\n", "data row 1 has 2 cells, the header 3"),
    ("", "the file is empty"),
])
def test_bad_traces_are_refused_naming_the_row_and_column(tmp_path, text, message):
    path = write(tmp_path, "bad.csv", text)
    with pytest.raises(stepsim.Error, match=_re(message)):
        load_requests(path)
    p = cli("serve", "tiny-moe", "--requests", path, "--out", str(tmp_path / "out"), "--cache",
            str(tmp_path / "cache"), check=False)
    assert p.returncode == 1 and message in p.stderr and "Traceback" not in p.stderr
    assert not os.path.exists(tmp_path / "out" / "requests.csv")


def _re(text):
    import re

    return re.escape(text)


def test_trace_rows_are_selected_and_timed_from_the_first():
    r = load_requests(TRACE, first_row=2, count=3, time_scale=2.0)
    assert [(x.row, x.prompt, x.output) for x in r] == [(2, 396, 109), (3, 879, 55), (4, 91, 16)]
    assert r[0].arrival_s == 0.0 and r[1].arrival_s == pytest.approx(2 * (51.2224670 - 50.9951690))
    with pytest.raises(stepsim.Error, match="rows 19366..19367 are asked for; the file has 19366 data rows"):
        load_requests(TRACE, first_row=19366, count=2)


GOOD_MODEL = {"name": "x", "family": "mixtral", "layers": "2", "vocab": "8", "hidden": "64", "inter": "64",
              "q_heads": "4", "kv_heads": "2", "head_dim": "16", "experts": "8", "topk": "2",
              "routing_trace": "shared:traces/moe/mixtral8x7b_b64_iter008_layer010.csv"}


@pytest.mark.parametrize("change, message", [
    ({"family": None, "vocab": None}, "missing key(s) family, vocab"),
    ({"kv_heads": "3"}, "kv_heads 3 must divide q_heads 4"),
    ({"layers": "0"}, "layers must be an integer in 1..1024, not 0"),
    ({"hidden": "'64'"}, "hidden must be an integer in 1..16777216, not '64'"),
    ({"layerz": "2"}, "unknown key(s) layerz"),
    ({"experts": "16"}, "experts 16, topk 2: the mixtral family's MoE layers have 8 experts, top-2"),
    ({"family": "llama"}, "family must be one of the layer library's (mixtral, qwen), not 'llama'"),
    ({"routing_trace": "shared:traces/moe/qwen3_30b_a3b_b64_iter032_layer012.csv"},
     "expected a header token,expert0..expert1"),
    ({"layer": "{tile: 3}"}, "layer.tile is not a parameter of the decoder or prefill layers"),
    ({"layer": "{batch: 3}"}, "layer.batch is set by the model or the run"),
    ({"routing_trace": "nowhere.csv"}, "routing trace"),
])
def test_bad_model_files_are_refused(tmp_path, change, message):
    fields = {k: v for k, v in {**GOOD_MODEL, **change}.items() if v is not None}
    models.load_model(write(tmp_path, "good.yaml", "".join("%s: %s\n" % kv for kv in GOOD_MODEL.items())))
    path = write(tmp_path, "model.yaml", "".join("%s: %s\n" % kv for kv in fields.items()))
    with pytest.raises(stepsim.Error, match=_re(message)):
        models.load_model(path)


def test_unknown_model_and_unwritable_output_are_clear_errors(tmp_path):
    p = cli("serve", "gpt-9", "--requests", TRACE, "--out", str(tmp_path / "o"), check=False)
    assert p.returncode == 1 and "model 'gpt-9': no such model file" in p.stderr and "mixtral-8x7b" in p.stderr
    blocker = write(tmp_path, "file", "x")
    p = cli("serve", "tiny-moe", "--requests", TRACE, "--count", "2", "--out", os.path.join(blocker, "o"),
            check=False)
    assert p.returncode == 1 and "cannot write there" in p.stderr


def test_a_task_that_fails_ends_the_run_with_its_error(tmp_path):
    model = open(os.path.join(ROOT, "graphs", "models", "tiny-moe.yaml")).read()
    path = write(tmp_path, "coarse.yaml", model.replace("layer: {moe_tile_f: 32, regions: 2}",
                                                        "layer: {moe_tile_f: 32, regions: 2, attention: coarse}"))
    p = cli("serve", path, "--requests", TRACE, "--count", "2", "--out", str(tmp_path / "o"), "--cache",
            str(tmp_path / "cache"), "--quiet", check=False)
    assert p.returncode == 1 and "serving: a task failed: prefill tokens=374 offset=0" in p.stderr
    assert "attention must be interleaved or dynamic" in p.stderr and "Traceback" not in p.stderr
    assert not os.path.exists(tmp_path / "o" / "requests.csv")
    p = cli("serve", "tiny-moe", "--requests", TRACE, "--count", "2", "--out", str(tmp_path / "o"), "--set",
            "hbm.channel=4", check=False)
    assert p.returncode == 1 and "set hbm.channel: not a hardware parameter" in p.stderr


def test_the_serve_command_is_listed_and_documented():
    assert "serve MODEL" in cli("--help").stdout
    out = subprocess.run([sys.executable, "-m", "stepsim", "serve", "--help"], capture_output=True, text=True).stdout
    for option in ("--requests", "--workers", "--out", "--max-batch", "--chunk", "--routing", "--cache"):
        assert option in out


# ---- a serving run as a design space's program


def test_a_design_space_searches_a_serving_run_on_its_metrics(tmp_path):
    space = tmp_path / "space.yaml"
    space.write_text("""name: serve-tiny
program: {serve: tiny-moe, params: {requests: "%s", count: 3, time_scale: 0.001}}
parameters:
  max_batch: [1, 4]
objectives: {ttft_p99_s: min, tokens_per_s: max}
search: {method: grid}
""" % TRACE)
    env = dict(os.environ, STEPSIM_CACHE=str(tmp_path / "cache"))
    binary = os.environ.get("STEPSIM_BINARY", os.path.join(ROOT, "build", "stepsim"))
    p = subprocess.run([binary, "dse", str(space), "--out", str(tmp_path / "o"), "--quiet"], capture_output=True,
                       text=True, env=env)
    assert p.returncode == 0, p.stderr
    assert "ttft_p99_s [s]" in p.stdout and "tokens_per_s [tokens/s]" in p.stdout
    with open(tmp_path / "o" / "trials.csv") as f:
        rows = {r["max_batch"]: r for r in csv.DictReader(f)}
    for batch in ("1", "4"):  # each trial's metrics are its serving run's
        r = stepsim.serve("tiny-moe", TRACE, count=3, time_scale=0.001, schedule={"max_batch": int(batch)},
                          cache=str(tmp_path / "cache"))
        assert float(rows[batch]["ttft_p99_s"]) == pytest.approx(r.summary["metrics"]["ttft_p99_s"], rel=1e-9)
        assert r.summary["tasks"]["simulated"] == 0  # the trials left every task in the shared cache
    # A batch limit of 1 queues the requests behind each other: the worse TTFT.
    assert float(rows["1"]["ttft_p99_s"]) > float(rows["4"]["ttft_p99_s"])
    space.write_text(space.read_text().replace("ttft_p99_s: min", "cycles: min"))
    bad = subprocess.run([binary, "dse", str(space), "--out", str(tmp_path / "o2")], capture_output=True, text=True,
                         env=env)
    assert bad.returncode == 1 and "unknown objective 'cycles' (metrics: ttft_p50_s" in bad.stderr


# ---- fuzzing what parses input: the trace reader and the model reader


def mutations(text, seed, count):
    """`count` variants of `text`, each with a few random byte edits (deterministic per seed)."""
    import random

    rng = random.Random(seed)
    alphabet = list("0123456789,.-:e \n\r\t\"'xyz{}[]#") + ["\x00", "\u00e9", "\ufeff", "99999999999999999999"]
    for _ in range(count):
        t = list(text)
        for _ in range(rng.randint(1, 6)):
            i = rng.randrange(len(t) + 1)
            op = rng.random()
            if op < 0.4 and t:
                t[min(i, len(t) - 1)] = rng.choice(alphabet)
            elif op < 0.7:
                t.insert(i, rng.choice(alphabet))
            elif t:
                del t[min(i, len(t) - 1)]
        yield "".join(t)


def test_fuzzed_traces_load_or_give_a_clear_error(tmp_path):
    azure_file = os.path.join(ROOT, "..", "shared", "traces", "azure", "AzureLLMInferenceTrace_conv.csv")
    with open(azure_file, newline="") as f:
        azure = "".join(f.readline() for _ in range(6))
    plain = "arrival_s,prompt_tokens,output_tokens\n0,10,3\n0.5,20,2\n1.25,7,9\n"
    loaded = refused = 0
    for k, text in enumerate(list(mutations(azure, 1, 250)) + list(mutations(plain, 2, 250))):
        path = tmp_path / ("t%d.csv" % k)
        path.write_bytes(text.encode("utf-8", "surrogatepass"))
        try:
            got = load_requests(str(path))
        except stepsim.Error:
            refused += 1
            continue
        loaded += 1
        assert got and all(r.prompt >= 1 and r.output >= 1 and r.arrival_s >= 0 for r in got)
        assert [r.arrival_s for r in got] == sorted(r.arrival_s for r in got)
    assert loaded > 10 and refused > 100  # the edits reach both ends


def test_fuzzed_model_files_load_or_give_a_clear_error(tmp_path):
    with open(os.path.join(ROOT, "graphs", "models", "tiny-moe.yaml")) as f:
        text = f.read()
    loaded = refused = 0
    for k, variant in enumerate(mutations(text, 3, 300)):
        path = tmp_path / ("m%d.yaml" % k)
        path.write_bytes(variant.encode("utf-8", "surrogatepass"))
        try:
            m = models.load_model(str(path))
        except stepsim.Error:
            refused += 1
            continue
        loaded += 1
        assert m.layers >= 1 and m.q_heads % m.kv_heads == 0 and m.routing_tables[0].shape[1] == m.topk
    assert loaded > 20 and refused > 20
    (tmp_path / "binary.yaml").write_bytes(text.encode()[:40] + b"\xff\xfe" + text.encode()[40:])
    with pytest.raises(stepsim.Error, match="not a text"):
        models.load_model(str(tmp_path / "binary.yaml"))
    (tmp_path / "binary.csv").write_bytes(b"arrival_s,prompt_tokens,output_tokens\n0,1\xff,2\n")
    with pytest.raises(stepsim.Error, match="not a text"):
        load_requests(str(tmp_path / "binary.csv"))
