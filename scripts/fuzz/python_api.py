#!/usr/bin/env python3
"""Long campaign of the Python API fuzzer (testbench/python/api_fuzz.py):

    PYTHONPATH=build/python python3 scripts/fuzz/python_api.py --minutes 10 --seed 7

runs seeded mutated calls of the public API in worker processes until the time is up and prints
the counts: ran, clean error, ok (valid success), silent (success with an invalid argument),
unclean (another exception or an unclear message), crash, hang. Each finding is printed with its
case number; `--case N --seed S` runs that case alone in this process, to debug it. Exit status 1
when there is a finding."""
import argparse
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "testbench", "python"))
import api_fuzz  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--minutes", type=float, default=1.0)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--case", type=int, help="run this one case in-process and print its outcome")
    ap.add_argument("--timeout", type=float, default=20.0, help="seconds a case may take before it is a hang")
    args = ap.parse_args()
    if args.case is not None:
        print(api_fuzz.run_case(args.seed, args.case))
        return 0
    c = api_fuzz.Campaign(args.seed, case_timeout=args.timeout, batch=200, log=sys.stdout)
    end = time.monotonic() + args.minutes * 60
    case = 0
    while time.monotonic() < end:
        case = c.run(case, 50)
    n = c.counts
    print("seed %d, %.1f min: ran %d, clean error %d, ok %d, silent %d, unclean %d, crash %d, hang %d"
          % (args.seed, args.minutes, n["ran"], n["clean"], n["ok"], n["silent"], n["unclean"], n["crash"], n["hang"]))
    return 1 if c.findings else 0


if __name__ == "__main__":
    sys.exit(main())
