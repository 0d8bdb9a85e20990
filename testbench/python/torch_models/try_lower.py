"""Tries stepsim.torch.lower(module, inputs) on every style of the corpus (prefill; decode too
where the style has a KV cache, on a module whose cache a prefill filled; the Qwen3 MoE block as
a root) and on every construct, and prints a table: name, lowered? (yes / no), the first line of
the error. It only lowers (no run, no comparison). Run from the repository's root:

    PYTHONPATH=build/python /usr/bin/python3 testbench/python/torch_models/try_lower.py [NAME...]

(NAMEs select rows by substring.) Each attempt has 120 s; the exit status is 0 whatever fails."""
import copy
import os
import signal
import sys
import traceback

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import torch  # noqa: E402

import stepsim.torch  # noqa: E402
import torch_models as tm  # noqa: E402
from torch_models import constructs, qwen3_moe  # noqa: E402
from torch_models.sdpa_torch2 import sdpa_shim  # noqa: E402

TIMEOUT = 120


def cases():
    """(name, thunk -> (module, inputs)) of every attempt, in table order."""
    for name, mod in tm.STYLES.items():
        yield name, mod.make
        if hasattr(mod, "decode_steps"):
            def decode(mod=mod):
                module, _ = mod.make(batch=1)
                steps = mod.decode_steps(module, [12])
                with torch.no_grad():
                    module(*steps[0])  # the prefill fills the cache
                return module, steps[1]
            yield name + " (decode)", decode
    yield "qwen3_moe (MoE block as root)", qwen3_moe.make_moe
    for name, factory in constructs.CONSTRUCTS.items():
        yield "construct " + name, factory


class Timeout(Exception):
    pass


def _alarm(signum, frame):
    raise Timeout("no result after %d s" % TIMEOUT)


def attempt(thunk):
    """(lowered?, first line of the error or '')."""
    signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(TIMEOUT)
    try:
        module, inputs = thunk()
        stepsim.torch.lower(copy.deepcopy(module), inputs)
        return True, ""
    except Exception as e:  # report whatever the lowering raises
        lines = str(e).strip().splitlines()
        first = lines[0] if lines else ""
        if not first:
            first = traceback.format_exception_only(type(e), e)[-1].strip()
        return False, "%s: %s" % (type(e).__name__, first)
    finally:
        signal.alarm(0)


def main(selected):
    rows = []
    with sdpa_shim():
        for name, thunk in cases():
            if selected and not any(s in name for s in selected):
                continue
            ok, err = attempt(thunk)
            rows.append((name, "yes" if ok else "no", err))
    width = max(len(r[0]) for r in rows)
    print("%-*s  %-8s %s" % (width, "name", "lowered", "error (first line)"))
    print("%s  %s %s" % ("-" * width, "-" * 8, "-" * 18))
    for name, ok, err in rows:
        print("%-*s  %-8s %s" % (width, name, ok, err[:160]))
    print("\n%d of %d lowered" % (sum(r[1] == "yes" for r in rows), len(rows)))


if __name__ == "__main__":
    main(sys.argv[1:])
