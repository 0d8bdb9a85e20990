"""Where the points of a search or a sweep run: in this process, in N local processes, or in a
Slurm array job of N tasks.

The workers share one folder with the coordinator (on a cluster: a shared filesystem), and the
folder is the queue, so nothing but files has to reach a compute node:

    job.json            the task function's name and what a point is (a design space's program, a sweep spec)
    queue/KEY.json      a point waiting; a worker claims it by renaming it into claimed/
    claimed/KEY@W.json  a point worker W is running
    done/KEY.json       its result (written to a temporary name, then renamed)
    heartbeat           touched by the coordinator; a worker whose coordinator went away stops
    stop                written at the end: every worker exits
    logs/               each worker's stderr

A rename is atomic on POSIX filesystems and NFS, so two workers never run the same point. A
point whose worker died (a local process exited, a Slurm task ended) goes back to the queue; after
MAX_ATTEMPTS it is reported as failed with the worker's exit status.

The pool runs any task: a module-level function task(job, point) -> a JSON-able result, which the
pool's user hands it and a worker imports by its name ("stepsim.design.evaluate:evaluate_point"),
so the pool imports none of its users.
"""
import importlib
import json
import os
import shlex
import shutil
import subprocess
import sys
import time

from .. import _stepsim

MAX_ATTEMPTS = 2
# What a work folder holds (anything else in it is not ours to remove).
WORK_ENTRIES = {"lock", "job.json", "queue", "claimed", "done", "logs", "heartbeat", "stop"}
POLL_SECONDS = 0.05
HEARTBEAT_TIMEOUT_SECONDS = 300
# The worker process's module: python3 -m WORKER FOLDER --id W.
WORKER = "stepsim.pool.worker"
# squeue states of a Slurm task that is waiting or running (others are ending or over).
SLURM_ALIVE = {"PENDING", "CONFIGURING", "RUNNING", "SUSPENDED", "REQUEUED", "RESIZING", "REQUEUE_HOLD"}


def parse_workers(text):
    """"inline", "local:N" or "slurm:N" -> (kind, N)."""
    if text in (None, "", "inline"):
        return "inline", 1
    kind, _, n = str(text).partition(":")
    if kind not in ("local", "slurm") or not n.isdigit() or not 1 <= int(n) <= 4096:
        raise _stepsim.Error("--workers: give inline, local:N or slurm:N with N in 1..4096, not '%s'" % text)
    return kind, int(n)


def task_name(task):
    """A task function's name as job.json gives it, "module:function"; a function a worker could
    not import by that name (a lambda, a nested function) is refused here, not in every worker."""
    name = "%s:%s" % (getattr(task, "__module__", "?"), getattr(task, "__qualname__", "?"))
    try:
        same = resolve_task(name) is task
    except _stepsim.Error:
        same = False
    if not same:
        raise _stepsim.Error("pool: the task %s is not a module-level function a worker can import by its name"
                             % name)
    return name


def resolve_task(name):
    """"module:function" -> the function, imported (what a worker runs its points with)."""
    module, _, function = name.partition(":")
    try:
        task = getattr(importlib.import_module(module), function)
    except (ImportError, AttributeError, ValueError) as e:
        raise _stepsim.Error("pool: task %s: cannot import it: %s" % (name, e)) from None
    if not callable(task):
        raise _stepsim.Error("pool: task %s is not a function" % name)
    return task


def write_json(path, data):
    """Written whole or not at all: a reader never sees half a file."""
    tmp = "%s.tmp%d" % (path, os.getpid())
    with open(tmp, "w") as f:
        json.dump(data, f, sort_keys=True)
    os.replace(tmp, path)


def _remove(path):
    if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path)
    elif os.path.lexists(path):
        os.remove(path)


def read_json(path):
    with open(path) as f:
        return json.load(f)


class FolderLock:
    """One process at a time in a folder (a study, a work folder): an exclusive flock on
    FOLDER/lock, held while the process runs and released by the kernel when it exits, however
    it exits. A second process is refused at once, naming the first one's pid."""

    def __init__(self, folder, what):
        self.folder, self.what = folder, what
        self.path = os.path.join(folder, "lock")
        self.f = None

    def __enter__(self):
        import fcntl

        for _ in range(10):
            try:
                os.makedirs(self.folder, exist_ok=True)
                f = open(self.path, "a+")
            except OSError as e:
                raise _stepsim.Error("cannot create %s: %s" % (self.path, e.strerror)) from None
            try:
                fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                f.seek(0)
                owner = f.read().strip() or "?"
                f.close()
                raise _stepsim.Error("%s is in use by another %s (pid %s)" % (self.folder, self.what, owner)) from None
            # The holder before us may have removed the folder, lock and all, as we opened it:
            # then the lock we hold is on a file nobody else will see. Take the one now there.
            try:
                current = os.stat(self.path).st_ino == os.fstat(f.fileno()).st_ino
            except FileNotFoundError:
                current = False
            if current:
                f.seek(0)
                f.truncate()
                f.write("%d\n" % os.getpid())
                f.flush()
                self.f = f
                return self
            f.close()
        raise _stepsim.Error("cannot lock %s: it keeps being removed" % self.path)

    def __exit__(self, *exc):
        self.release()

    def release(self):
        if self.f is not None:
            self.f.close()
            self.f = None


class Pool:
    """Runs points through `task(job, point)` on the workers."""

    def __init__(self, workers, folder, task, job, sbatch_options=(), keep=False, lazy=False):
        """`task`: a module-level function task(job, point) -> result (a dict; whatever it raises
        is a bug: inline it is raised, in a worker it kills the worker). `keep`: leave the folder
        (the workers' logs) after a run that ended well; a run that failed always leaves it.
        `lazy`: start the workers at the first submit (a user whose points may all be cached
        starts none), not on entering the `with`."""
        self.kind, self.count = parse_workers(workers)
        self.task, self.task_name = task, task_name(task)
        self.folder, self.job, self.keep = os.path.abspath(folder), job, keep
        self.sbatch_options = list(sbatch_options)
        self.procs, self.slurm_job, self.submissions, self.respawns = {}, None, 0, 0
        self.retried = set()  # keys of points run again because their worker died
        self.given_up = set()  # keys of points whose worker died MAX_ATTEMPTS times
        self.lazy, self.started = lazy, False
        self.lock = FolderLock(self.folder, "coordinator of workers")
        self.pending = {}  # inline: the points submitted and not yet waited for
        self.arrived = {}  # results of points given up on, until they are waited for

    def __enter__(self):
        if not self.lazy:
            self.start()
        return self

    def __exit__(self, kind, *exc):
        if not self.started:
            return
        try:
            self.close()
            if kind is None and not self.keep and self.kind != "inline":
                self._remove_keeping_logs()
        finally:
            self.lock.release()

    def _remove_keeping_logs(self):
        """Removes the folder after a run that ended well, but for the logs of workers that
        died or wrote anything (a worker writes nothing when all is well): those stay, and the
        folder with them."""
        logs = self.path("logs")
        kept = [os.path.join(logs, n) for n in sorted(os.listdir(logs)) if os.path.getsize(os.path.join(logs, n))]
        if not kept and not self.given_up:
            shutil.rmtree(self.folder, ignore_errors=True)
            return
        for name in WORK_ENTRIES - {"logs", "lock"}:
            _remove(self.path(name))
        for name in os.listdir(logs):
            if os.path.join(logs, name) not in kept:
                os.remove(os.path.join(logs, name))
        print("workers: the log(s) of workers that died or reported errors are kept: %s" % ", ".join(kept or [logs]),
              file=sys.stderr)

    def path(self, *parts):
        return os.path.join(self.folder, *parts)

    def start(self):
        self.started = True
        if self.kind == "inline":
            return
        self.lock.__enter__()  # a second coordinator in the same folder would take its points
        try:
            self._prepare_folder()
            write_json(self.path("job.json"), {"task": self.task_name, "job": self.job})
            self.beat()
            if self.kind == "local":
                for i in range(self.count):
                    self._spawn("l%d" % i)
            else:
                self._submit()
        except BaseException:  # __exit__ will not run: stop what started, let the folder go
            if self.procs or self.slurm_job:
                self.close()
            self.lock.release()
            raise

    def _prepare_folder(self):
        """Empties the folder of an earlier run; a folder holding anything else is refused (it
        is not ours to remove)."""
        other = sorted(set(os.listdir(self.folder)) - WORK_ENTRIES)
        other = [n for n in other if ".tmp" not in n]
        if other:
            raise _stepsim.Error("work folder %s holds files that are not a stepsim work folder's (%s): give a new "
                                 "or empty folder" % (self.folder, ", ".join(other[:3])))
        for name in WORK_ENTRIES - {"lock"}:
            _remove(self.path(name))
        for name in os.listdir(self.folder):
            if ".tmp" in name:
                _remove(self.path(name))
        for d in ("queue", "claimed", "done", "logs"):
            os.makedirs(self.path(d))

    def beat(self):
        with open(self.path("heartbeat"), "w") as f:
            f.write("%f\n" % time.time())

    def _spawn(self, wid):
        log = open(self.path("logs", "worker_%s.log" % wid), "ab")
        # --parent: a local worker stops when its coordinator is gone (killed, even with -9).
        self.procs[wid] = subprocess.Popen([sys.executable, "-m", WORKER, self.folder, "--id", wid,
                                            "--parent", str(os.getpid())],
                                           stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        log.close()

    def _submit(self):
        if shutil.which("sbatch") is None:
            raise _stepsim.Error("--workers slurm:N: no sbatch on PATH (is this a Slurm login node?)")
        self.submissions += 1
        command = "exec %s -m %s %s --id s$SLURM_ARRAY_TASK_ID" % (shlex.quote(sys.executable), WORKER,
                                                                   shlex.quote(self.folder))
        args = ["sbatch", "--parsable", "--job-name=stepsim-worker", "--array=0-%d" % (self.count - 1),
                # The coordinator's directory, so that relative paths (graph files, traces) mean the same.
                "--cpus-per-task=1", "--export=ALL", "--chdir=" + os.getcwd(),
                "--output=" + self.path("logs", "worker_s%a.log"), *self.sbatch_options, "--wrap", command]
        done = subprocess.run(args, capture_output=True, text=True)
        if done.returncode != 0:
            raise _stepsim.Error("sbatch failed (exit %d): %s" % (done.returncode, done.stderr.strip()))
        self.slurm_job = done.stdout.strip().split(";")[0]

    def map(self, points, on_result=None):
        """{key: point} -> {key: result}; on_result(key, result) as each one arrives."""
        self.submit(points)
        return self.wait(list(points), on_result)

    def submit(self, points):
        """Queues {key: point} without waiting; the workers claim queued points in the order of
        their keys (so a user who names keys by urgency has the urgent ones run first). Inline,
        a point runs when it is waited for."""
        if points and not self.started:
            self.start()
        for key, point in points.items():
            if self.kind == "inline":
                self.pending[key] = point
            else:
                write_json(self.path("queue", key + ".json"), {"key": key, "point": point, "attempt": 1})

    def wait(self, keys, on_result=None):
        """{key: result} of the submitted points `keys`, once all have finished; results of other
        points that arrive meanwhile are kept for their own wait."""
        if self.kind == "inline":
            results = {}
            for key in keys:
                results[key] = self.task(self.job, self.pending.pop(key))
                if on_result:
                    on_result(key, results[key])
            return results
        return self._collect(set(keys), on_result)

    def poll(self):
        """{key: result} of every submitted point finished by now and not yet waited for (without
        waiting; inline: none, as inline points run when waited for)."""
        if self.kind == "inline" or not self.started:
            return {}
        results, self.arrived = self.arrived, {}
        for name in sorted(os.listdir(self.path("done"))):
            if name.endswith(".json") and ".tmp" not in name:
                results[name[:-len(".json")]] = read_json(self.path("done", name))
                os.remove(self.path("done", name))
        return results

    def _collect(self, waiting, on_result):
        results, last_check = {}, 0.0
        while waiting:
            for key in sorted(waiting):
                done = self.path("done", key + ".json")
                if key in self.arrived:
                    results[key] = self.arrived.pop(key)
                elif os.path.exists(done):
                    results[key] = read_json(done)
                    os.remove(done)
                else:
                    continue
                waiting.discard(key)
                if on_result:
                    on_result(key, results[key])
            if time.time() - last_check > (0.5 if self.kind == "local" else 3.0):
                last_check = time.time()
                self.beat()
                self.arrived.update(self._recover_dead_workers())
            if waiting and not any(k in self.arrived for k in waiting):
                time.sleep(POLL_SECONDS)
        return results

    def _recover_dead_workers(self):
        """Requeues the points of workers that died; returns the points given up on."""
        dead = self._dead_workers()
        given_up = {}
        for name in os.listdir(self.path("claimed")):
            key, _, wid = name[:-len(".json")].partition("@")
            if wid not in dead:
                continue
            claimed = self.path("claimed", name)
            task = read_json(claimed)
            if task["attempt"] >= MAX_ATTEMPTS:
                given_up[key] = {"error": "worker %s died (%s) running this point, %d times; its log: %s"
                                 % (wid, dead[wid], task["attempt"], self.log_tail(wid, 3).replace("\n", " | ")),
                                 "wall_seconds": 0.0, "worker": wid}
                self.given_up.add(key)
            else:
                task["attempt"] += 1
                self.retried.add(key)
                write_json(self.path("queue", key + ".json"), task)
            os.remove(claimed)
        self._replace(dead)
        return given_up

    def _dead_workers(self):
        if self.kind == "local":
            return {w: "exit status %d" % p.returncode for w, p in self.procs.items() if p.poll() is not None}
        listed = subprocess.run(["squeue", "-h", "-j", self.slurm_job, "-o", "%K %T"], capture_output=True, text=True)
        if listed.returncode != 0 and "Invalid job id" not in listed.stderr:
            return {}  # the controller did not answer: ask again later
        # squeue keeps a finished task listed for MinJobAge (COMPLETED, FAILED, ...): not alive.
        alive = {"s" + task for task, state in (line.split()[:2] for line in listed.stdout.splitlines() if line.split())
                 if state in SLURM_ALIVE}
        claimed = {n[:-5].partition("@")[2] for n in os.listdir(self.path("claimed"))}
        dead = {w: "its Slurm task ended" for w in claimed if w not in alive}
        if not alive:
            dead["*"] = "the array job %s ended" % self.slurm_job
        return dead

    def _replace(self, dead):
        if not dead:
            return
        if self.kind == "local":
            for wid in dead:
                self.respawns += 1
                if self.respawns > 3 * self.count:
                    raise _stepsim.Error("workers keep dying; last log: %s" % self.log_tail(wid))
                self._spawn(wid)
        elif "*" in dead:
            if self.submissions >= MAX_ATTEMPTS + 1:
                raise _stepsim.Error("the Slurm workers ended before the work was done (job %s); log: %s"
                                     % (self.slurm_job, self.log_tail("s0")))
            self._submit()

    def log_tail(self, wid, lines=10):
        try:
            with open(self.path("logs", "worker_%s.log" % wid)) as f:
                return "".join(f.readlines()[-lines:]).strip() or "(empty)"
        except OSError:
            return "(no log)"

    def close(self):
        if self.kind == "inline" or not os.path.isdir(self.folder):
            return
        with open(self.path("stop"), "w"):
            pass
        deadline = time.time() + 10
        for p in self.procs.values():
            try:
                p.wait(max(0.1, deadline - time.time()))
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        if self.slurm_job:
            subprocess.run(["scancel", self.slurm_job], capture_output=True)
