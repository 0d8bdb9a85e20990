"""Self-test of scripts/slurm/local_slurm.py: a real single-node Slurm cluster (munged, slurmctld,
slurmd) started in a temporary directory, a job array run on it, and a clean stop.

Needs Debian's slurmctld, slurmd, slurm-client and munge (scripts/setup.sh all) and root, as in CI;
skipped only when those programs are not installed."""
import importlib.util
import os
import shutil
import tempfile
import time

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
_spec = importlib.util.spec_from_file_location(
    "local_slurm", os.path.join(ROOT, "scripts", "slurm", "local_slurm.py"))
local_slurm = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(local_slurm)

pytestmark = pytest.mark.skipif(
    bool(local_slurm.missing_binaries()),
    reason="Slurm/munge not installed (missing %s; Debian packages slurmctld slurmd slurm-client "
           "munge)" % ", ".join(local_slurm.missing_binaries()))


def short_dir(tmp_dir):
    """tmp_dir itself, or a short directory under /tmp when tmp_dir would make the munge socket's
    path too long for a unix socket (about 107 bytes). Returns (dir, made_here)."""
    if len(str(tmp_dir)) <= 60:
        return str(tmp_dir), False
    return tempfile.mkdtemp(prefix="ss", dir="/tmp"), True


def live_processes():
    """(pid, comm, command line, working directory) of every live (non-zombie) process but this."""
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        pid = int(entry)
        try:
            with open("/proc/%d/stat" % pid, "rb") as f:
                stat = f.read()
            if stat[stat.rfind(b")") + 2:stat.rfind(b")") + 3] in (b"Z", b"X"):
                continue
            with open("/proc/%d/cmdline" % pid, "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode(errors="replace")
            with open("/proc/%d/comm" % pid) as f:
                comm = f.read().strip()
            cwd = os.readlink("/proc/%d/cwd" % pid)
        except OSError:
            continue
        yield pid, comm, cmd, cwd


def processes_of(directory):
    """The cluster's processes, found independently of the module: the command line names the
    directory, or a Slurm/munge process works in it (slurmstepd, slurmscriptd)."""
    return [(pid, comm, cmd) for pid, comm, cmd, cwd in live_processes()
            if directory in cmd or (comm.startswith(("slurm", "munge")) and cwd == directory)]


def processes_running(token):
    return [(pid, comm, cmd) for pid, comm, cmd, _ in live_processes() if token in cmd]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    d, made = short_dir(tmp_path_factory.mktemp("slurm"))
    c = local_slurm.LocalSlurm(d)
    t0 = time.monotonic()
    try:
        c.start()
        print("\nlocal Slurm started in %.2f s" % (time.monotonic() - t0))
        yield c
    finally:
        t0 = time.monotonic()
        c.stop()
        print("\nlocal Slurm stopped in %.2f s" % (time.monotonic() - t0))
        left = processes_of(c.dir)
        if made:
            shutil.rmtree(d, ignore_errors=True)
    assert not left, left


def test_array_job_runs_each_task_and_two_at_once(cluster):
    assert cluster.cpus >= 1
    d = cluster.dir
    script = os.path.join(d, "task.sh")
    with open(script, "w") as f:
        # Each task: its index, then when it started and ended (0.5 s apart) on the node's clock.
        f.write("#!/bin/sh\n/usr/bin/python3 -c 'import os, time; t = time.time(); "
                "time.sleep(0.5); print(os.environ[\"SLURM_ARRAY_TASK_ID\"], t, time.time())'\n")
    t0 = time.monotonic()
    r = cluster.run(["sbatch", "--wait", "--array=0-3", "--cpus-per-task=1", "--chdir=" + d,
                     "--output=" + os.path.join(d, "out_%a.txt"), script], timeout=60)
    print("\nsbatch --wait of 4 half-second tasks: %.2f s" % (time.monotonic() - t0))
    assert r.stdout.startswith("Submitted batch job"), r.stdout
    spans = []
    for i in range(4):
        with open(os.path.join(d, "out_%d.txt" % i)) as f:
            task, start, end = f.read().split()
        assert int(task) == i
        spans.append((float(start), float(end)))
    overlaps = [(a, b) for a in range(4) for b in range(a + 1, 4)
                if spans[a][0] < spans[b][1] and spans[b][0] < spans[a][1]]
    if cluster.cpus >= 2:
        assert overlaps, "no two array tasks ran at the same time: %s" % spans


def test_trivial_array_and_srun(cluster):
    d = cluster.dir
    t0 = time.monotonic()
    cluster.run(["sbatch", "--wait", "--array=0-3", "--cpus-per-task=1", "--chdir=" + d,
                 "--output=" + os.path.join(d, "triv_%a.txt"), "--wrap",
                 '/usr/bin/python3 -c "import os; print(os.environ[\\"SLURM_ARRAY_TASK_ID\\"])"'],
                timeout=60)
    print("\nsbatch --wait of 4 trivial tasks: %.2f s" % (time.monotonic() - t0))
    for i in range(4):
        with open(os.path.join(d, "triv_%d.txt" % i)) as f:
            assert f.read().strip() == str(i)
    r = cluster.run(["srun", "--chdir=" + d, "-n", "1", "/usr/bin/python3", "-c",
                     "import os; print(os.environ['SLURM_JOB_ID'] != '')"], timeout=60)
    assert r.stdout.strip() == "True", r.stdout + r.stderr


def test_stop_ends_everything_and_is_idempotent(tmp_path):
    d, made = short_dir(tmp_path)
    c = local_slurm.LocalSlurm(d, partition="p1")
    try:
        c.start()
        assert c.env() == {"SLURM_CONF": os.path.join(d, "slurm.conf")}
        assert c.status()["running"]
        assert {comm for _, comm, _ in processes_of(d)} >= {"munged", "slurmctld", "slurmd"}
        # a job still running at stop time must not survive it
        token = "61.%d" % os.getpid()
        c.run(["sbatch", "--chdir=" + d, "--output=/dev/null", "--wrap", "sleep " + token])
        deadline = time.monotonic() + 20
        while not processes_running(token):
            assert time.monotonic() < deadline, "job never started"
            time.sleep(0.1)
    finally:
        c.stop()
    assert processes_of(d) == []
    assert processes_running(token) == []
    assert c.running() == {}
    c.stop()  # again: a no-op
    assert not c.status()["running"]
    if made:
        shutil.rmtree(d, ignore_errors=True)


# --- stepsim's scale-out through the cluster: `--workers slurm:N` and `stepsim sweep --slurm N` ---

DSE_SPACE = """name: slurm-dse
program: {layer: swiglu, params: {batch: 32}}
parameters:
  tile_f: [32, 64, 128]
  hbm.channels: {low: 2, high: 16}
objectives: {cycles: min, onchip_bytes: min}
search: {method: nsga2, trials: 12, seed: 5, batch: 6}
"""


def stepsim_cli(cluster, *args):
    import subprocess

    from conftest import stepsim_binary

    return subprocess.run([stepsim_binary(), *args], capture_output=True, text=True, timeout=300,
                          env=cluster.client_env())


def trial_columns(path):
    import csv

    with open(path) as f:
        return [{k: v for k, v in r.items() if k not in ("wall_seconds", "worker")} for r in csv.DictReader(f)]


def test_a_dse_on_slurm_workers_finds_the_trials_of_an_inline_run(cluster):
    d = cluster.dir
    with open(os.path.join(d, "space.yaml"), "w") as f:
        f.write(DSE_SPACE)
    inline = stepsim_cli(cluster, "dse", os.path.join(d, "space.yaml"), "--out", os.path.join(d, "inline"))
    assert inline.returncode == 0, inline.stderr
    t0 = time.monotonic()
    slurm = stepsim_cli(cluster, "dse", os.path.join(d, "space.yaml"), "--out", os.path.join(d, "slurm"),
                        "--workers", "slurm:2")
    print("\nDSE of 12 trials on 2 Slurm workers: %.2f s" % (time.monotonic() - t0))
    assert slurm.returncode == 0, slurm.stderr
    assert trial_columns(os.path.join(d, "slurm", "trials.csv")) == \
        trial_columns(os.path.join(d, "inline", "trials.csv"))
    import csv

    with open(os.path.join(d, "slurm", "trials.csv")) as f:
        workers = {r["worker"] for r in csv.DictReader(f)}
    assert workers & {"s0", "s1"} and workers <= {"s0", "s1", "cache"}, workers
    assert slurm.stdout.split("\n", 1)[1] == inline.stdout.split("\n", 1)[1].replace("/inline/", "/slurm/")


def test_a_sweep_on_slurm_prints_the_serial_table(cluster):
    d = cluster.dir
    args = ["sweep", "--layer", "swiglu", "-p", "batch=32", "-p", "tile_f=32,64", "--set", "hbm.channels=4,8,16"]
    serial = stepsim_cli(cluster, *args, "--csv", os.path.join(d, "serial.csv"))
    spread = stepsim_cli(cluster, *args, "--csv", os.path.join(d, "slurm.csv"), "--slurm", "2",
                         "--work-dir", os.path.join(d, "sweep-work"))
    assert serial.returncode == 0 and spread.returncode == 0, spread.stderr

    def rows(name):
        import csv

        with open(os.path.join(d, name)) as f:
            return [{k: v for k, v in r.items() if k != "wall [s]"} for r in csv.DictReader(f)]

    assert rows("slurm.csv") == rows("serial.csv") and len(rows("serial.csv")) == 6
    logs = os.listdir(os.path.join(d, "sweep-work", "logs"))
    assert sorted(logs) == ["worker_s0.log", "worker_s1.log"]


def test_a_serving_run_on_slurm_workers_gives_the_inline_results(cluster):
    d = cluster.dir
    args = ["serve", "tiny-moe", "--requests", "shared:traces/azure/AzureLLMInferenceTrace_conv.csv", "--count", "3",
            "--time-scale", "0.001", "--quiet"]
    inline = stepsim_cli(cluster, *args, "--out", os.path.join(d, "serve-inline"), "--cache",
                         os.path.join(d, "cache-inline"))
    spread = stepsim_cli(cluster, *args, "--out", os.path.join(d, "serve-slurm"), "--cache",
                         os.path.join(d, "cache-slurm"), "--workers", "slurm:2")
    assert inline.returncode == 0 and spread.returncode == 0, spread.stderr
    for name in ("requests.csv", "iterations.csv", "breakdown.csv"):
        with open(os.path.join(d, "serve-inline", name)) as a, open(os.path.join(d, "serve-slurm", name)) as b:
            assert a.read() == b.read(), name
    import json

    with open(os.path.join(d, "serve-slurm", "summary.json")) as f:
        tasks = json.load(f)["tasks"]
    assert tasks["simulated"] == tasks["distinct"] > 0  # simulated by the Slurm workers, into their own cache
