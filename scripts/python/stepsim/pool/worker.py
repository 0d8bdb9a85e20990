"""A worker of stepsim.pool.workers: `python3 -m stepsim.pool.worker FOLDER --id W` claims points
from FOLDER/queue, runs them through the job's task (imported by the name FOLDER/job.json gives)
and writes FOLDER/done, until FOLDER/stop appears or its coordinator's heartbeat goes stale.
Started by the coordinator (local processes or a Slurm array task)."""
import argparse
import os
import sys
import time

from . import workers


def claim(folder, wid):
    """The next queued task, renamed into claimed/ (None when the queue is empty)."""
    queue = os.path.join(folder, "queue")
    for name in sorted(n for n in os.listdir(queue) if n.endswith(".json")):
        target = os.path.join(folder, "claimed", "%s@%s.json" % (name[:-5], wid))
        try:
            os.rename(os.path.join(queue, name), target)
        except FileNotFoundError:
            continue  # another worker took it
        return target
    return None


def coordinator_gone(folder, parent=None):
    """The coordinator stopped: a local one's process is gone (this worker was handed to init),
    or its heartbeat is stale (a Slurm task cannot see the login node's processes)."""
    if parent is not None and os.getppid() != parent:
        return True
    try:
        return time.time() - os.path.getmtime(os.path.join(folder, "heartbeat")) > workers.HEARTBEAT_TIMEOUT_SECONDS
    except OSError:
        return True


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python3 -m " + workers.WORKER, description=__doc__)
    ap.add_argument("folder")
    ap.add_argument("--id", required=True)
    ap.add_argument("--parent", type=int, help="the local coordinator's pid")
    a = ap.parse_args(argv)
    spec = workers.read_json(os.path.join(a.folder, "job.json"))
    task, job = workers.resolve_task(spec["task"]), spec["job"]
    while not os.path.exists(os.path.join(a.folder, "stop")):
        if coordinator_gone(a.folder, a.parent):
            print("worker %s: no heartbeat from the coordinator; stopping" % a.id, file=sys.stderr)
            return 3
        claimed = claim(a.folder, a.id)
        if claimed is None:
            time.sleep(workers.POLL_SECONDS)
            continue
        entry = workers.read_json(claimed)
        result = task(job, entry["point"])
        result["worker"] = a.id
        workers.write_json(os.path.join(a.folder, "done", entry["key"] + ".json"), result)
        os.remove(claimed)
    return 0


if __name__ == "__main__":
    sys.exit(main())
