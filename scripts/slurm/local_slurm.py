#!/usr/bin/python3
"""A real, throw-away, single-node Slurm cluster in one directory: munged, slurmctld and slurmd.

Used by the test suite (testbench/python/test_slurm_cluster.py) and by hand for benchmarks:

    /usr/bin/python3 scripts/slurm/local_slurm.py start DIR   # prints `export SLURM_CONF=...`
    eval "$(/usr/bin/python3 scripts/slurm/local_slurm.py start /tmp/ss1)"; sbatch --wrap hostname
    /usr/bin/python3 scripts/slurm/local_slurm.py status DIR
    /usr/bin/python3 scripts/slurm/local_slurm.py stop DIR

or, as a module:

    with LocalSlurm("/tmp/ss1") as cluster:         # start() ... stop()
        subprocess.run(["sbatch", "--wait", ...], env=cluster.client_env())

Everything (munge key, socket, seed, pid and log files, slurm.conf, state and spool directories)
lives in DIR; nothing under /etc, /run or /var is read or written, so a system-wide Slurm or munge
(running or not) is left alone. Made for root (as in CI): SlurmUser=root, and munged runs as root.
Needs Debian's slurmctld, slurmd, slurm-client and munge packages (22.05 / 0.5.15 tested).

Processes we start carry LOCAL_SLURM_DIR=DIR in their environment, which is how stop() finds them
(and the slurmstepd they fork) even when called from another process than start(); their pids are
also kept in DIR/local_slurm.json. stop() is idempotent and also cleans up after a failed start().
"""

import argparse
import json
import os
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import time

MARKER = "LOCAL_SLURM_DIR"
STATE_FILE = "local_slurm.json"
DAEMONS = ("munged", "slurmctld", "slurmd")
# A unix socket's path is at most 107 bytes (sun_path); munge.socket is the longest one we make.
MAX_SOCKET_PATH = 100
SBIN_DIRS = ("/usr/sbin", "/sbin", "/usr/local/sbin")


class LocalSlurmError(RuntimeError):
    pass


def find_binary(name):
    """Absolute path of a Slurm/munge program (daemons live in /usr/sbin, often not on PATH)."""
    path = shutil.which(name) or shutil.which(name, path=os.pathsep.join(SBIN_DIRS))
    return path


def missing_binaries():
    """The programs the cluster needs that are not installed (empty when all are there)."""
    need = ("munged", "slurmctld", "slurmd", "sbatch", "sinfo", "squeue", "scancel", "srun")
    return [n for n in need if find_binary(n) is None]


def _free_port():
    """A TCP port nobody listens on now. Bound on all addresses, as slurmctld/slurmd will bind."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("", 0))
        return s.getsockname()[1]


def _tail(path, lines=25):
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            size = f.tell()
            f.seek(max(0, size - 16384))
            text = f.read().decode("utf-8", "replace")
    except OSError as e:
        return "(%s: %s)" % (path, e.strerror)
    return "\n".join(text.splitlines()[-lines:]) or "(empty)"


def _proc_alive(pid):
    """True if pid exists and is not a zombie."""
    try:
        with open("/proc/%d/stat" % pid, "rb") as f:
            stat = f.read()
    except OSError:
        return False
    # the state follows the command name in parentheses (which may itself hold spaces/parens)
    state = stat[stat.rfind(b")") + 2:stat.rfind(b")") + 3]
    return state not in (b"Z", b"X")


def _proc_environ(pid):
    try:
        with open("/proc/%d/environ" % pid, "rb") as f:
            return f.read().split(b"\0")
    except OSError:
        return []


def _proc_cmdline(pid):
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            return f.read().replace(b"\0", b" ").decode("utf-8", "replace").strip()
    except OSError:
        return ""


def _ancestors():
    """This process and its ancestors: never to be killed by stop()."""
    pids, pid = set(), os.getpid()
    while pid > 1 and pid not in pids:
        pids.add(pid)
        try:
            with open("/proc/%d/stat" % pid, "rb") as f:
                stat = f.read()
            pid = int(stat[stat.rfind(b")") + 2:].split()[1])
        except (OSError, ValueError, IndexError):
            break
    return pids


def _node_hardware():
    """(cpus, sockets, cores_per_socket, threads_per_core, real_memory_mb) as slurmd sees them.

    `slurmd -C` is what slurmd will report when it registers, so the NodeName line matches it and
    slurmctld does not drain the node for a configuration mismatch."""
    hw = {}
    slurmd = find_binary("slurmd")
    if slurmd:
        env = {k: v for k, v in os.environ.items() if not k.startswith("SLURM")}
        try:
            out = subprocess.run([slurmd, "-C"], capture_output=True, text=True, timeout=30,
                                 env=env).stdout
            for tok in out.split():
                if "=" in tok:
                    k, v = tok.split("=", 1)
                    hw[k] = v
        except (OSError, subprocess.SubprocessError):
            pass
    try:
        cpus = int(hw["CPUs"])
        sockets = int(hw.get("SocketsPerBoard", 0)) * int(hw.get("Boards", 1)) or 1
        cores = int(hw.get("CoresPerSocket", cpus // sockets))
        threads = int(hw.get("ThreadsPerCore", 1))
        mem = int(hw["RealMemory"])
    except (KeyError, ValueError):
        cpus = len(os.sched_getaffinity(0))
        sockets, cores, threads = 1, cpus, 1
        with open("/proc/meminfo") as f:
            mem = int(f.readline().split()[1]) // 1024
    return cpus, sockets, cores, threads, mem


class LocalSlurm:
    """A single-node Slurm cluster kept in `directory` (created if missing)."""

    def __init__(self, directory, partition="debug", cluster_name="localslurm",
                 start_timeout=60.0, stop_timeout=10.0, min_job_age=4):
        self.dir = os.path.abspath(str(directory))
        self.partition = partition
        self.cluster_name = cluster_name
        self.start_timeout = start_timeout
        self.stop_timeout = stop_timeout
        self.min_job_age = min_job_age
        self.conf = os.path.join(self.dir, "slurm.conf")
        self.munge_socket = os.path.join(self.dir, "munge.socket")
        self.log_dir = os.path.join(self.dir, "log")
        self.hostname = socket.gethostname().split(".")[0]
        self.cpus = None          # set by start() (or read back from DIR by status/stop)
        self.ports = None
        self._procs = {}          # name -> Popen, for the daemons this object started
        self._load_state()

    # ----------------------------------------------------------------------------- public API
    def env(self):
        """What a client (sbatch, srun, squeue, sinfo, scancel, scontrol) needs to reach this
        cluster. SLURM_CONF is all: the munge socket is named in slurm.conf (AuthInfo=socket=...),
        which the client commands read too; libmunge has no environment variable for it."""
        return {"SLURM_CONF": self.conf}

    def client_env(self, base=None):
        """A full environment for client commands: `base` (default os.environ) without any
        SLURM_*/SBATCH_*/SRUN_*/SALLOC_*/SQUEUE_* variables inherited from elsewhere, plus env()."""
        base = os.environ if base is None else base
        drop = ("SLURM_", "SBATCH_", "SRUN_", "SALLOC_", "SQUEUE_", "SINFO_", "SCANCEL_", MARKER)
        env = {k: v for k, v in base.items() if not k.startswith(drop)}
        env.update(self.env())
        return env

    def run(self, args, check=True, timeout=120, **kw):
        """Runs a client command against this cluster; returns the CompletedProcess (text)."""
        p = subprocess.run(args, env=self.client_env(), capture_output=True, text=True,
                           timeout=timeout, **kw)
        if check and p.returncode != 0:
            raise LocalSlurmError("%s failed (%d):\n%s%s" % (shlex.join(args), p.returncode,
                                                            p.stdout, p.stderr))
        return p

    def start(self):
        """Starts munged, slurmctld and slurmd; returns once the node is idle. On any failure
        everything started so far is stopped and LocalSlurmError (with the log tails) is raised."""
        missing = missing_binaries()
        if missing:
            raise LocalSlurmError("not installed: %s (Debian: slurmctld slurmd slurm-client munge)"
                                  % ", ".join(missing))
        if len(self.munge_socket.encode()) > MAX_SOCKET_PATH:
            raise LocalSlurmError("directory path too long for a unix socket (%d > %d bytes): %s"
                                  % (len(self.munge_socket.encode()), MAX_SOCKET_PATH,
                                     self.munge_socket))
        running = self.running()
        if running:
            raise LocalSlurmError("a cluster is already running in %s: %s" % (self.dir, running))
        t0 = time.monotonic()
        try:
            self._prepare_dirs()
            self._save_state(running=False)   # forget the pids of an earlier run
            self._start_munged()
            self._write_config()
            self._start_slurmctld()
            self._start_slurmd()
            self._wait_idle(t0 + self.start_timeout)
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self):
        """Cancels all jobs, stops slurmd, slurmctld and munged (SIGTERM, then SIGKILL after
        stop_timeout) and any process they left. Idempotent; safe after a failed start()."""
        pids = self._known_pids()
        if pids.get("slurmctld") and _proc_alive(pids["slurmctld"]):
            # Jobs first, so their processes end the normal way (KillWait below is short).
            try:
                self.run([find_binary("scancel"), "--partition", self.partition, "--quiet"],
                         check=False, timeout=10)
                deadline = time.monotonic() + 5
                while time.monotonic() < deadline:
                    q = self.run([find_binary("squeue"), "-h", "-t", "PD,R,CG,CF,S", "-o", "%i"],
                                 check=False, timeout=10)
                    if q.returncode != 0 or not q.stdout.strip():
                        break
                    time.sleep(0.2)
            except (OSError, subprocess.SubprocessError):
                pass
        # slurmd (and its slurmstepd) before slurmctld, munged last: each may still need the next.
        for name in ("slurmd", "slurmctld", "munged"):
            pid = pids.get(name)
            if pid:
                self._terminate(name, pid)
        # Anything left: slurmstepd, slurmscriptd or job processes (see _belongs).
        leftovers = self._stray_pids()
        for pid in leftovers:
            self._signal(pid, signal.SIGTERM)
        self._wait_gone(leftovers, self.stop_timeout)
        for pid in self._stray_pids():
            self._signal(pid, signal.SIGKILL)
        self._wait_gone(self._stray_pids(), 5)
        self._procs.clear()
        self._save_state(running=False)

    def status(self):
        """{'daemons': {name: pid or None}, 'sinfo': text or None, 'running': bool}."""
        pids = self._known_pids()
        daemons = {n: (pids.get(n) if pids.get(n) and self._is_ours(pids[n]) else None)
                   for n in DAEMONS}
        sinfo = None
        if daemons["slurmctld"]:
            p = self.run([find_binary("sinfo"), "-N", "-o", "%N %P %c %T"], check=False, timeout=15)
            sinfo = (p.stdout + p.stderr).strip()
        return {"daemons": daemons, "sinfo": sinfo, "running": all(daemons.values()),
                "cpus": self.cpus, "partition": self.partition, "env": self.env()}

    def running(self):
        """Pids of any of this directory's processes still alive (daemons or strays)."""
        pids = self._known_pids()
        alive = {n: p for n, p in pids.items() if p and self._is_ours(p)}
        strays = self._stray_pids() - set(alive.values())
        if strays:
            alive["other"] = sorted(strays)
        return alive

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()
        return False

    # ----------------------------------------------------------------------------- internals
    def _path(self, *parts):
        return os.path.join(self.dir, *parts)

    def _prepare_dirs(self):
        for d in (self.dir, self.log_dir, self._path("state"), self._path("spool")):
            os.makedirs(d, exist_ok=True)
        # slurmstepd/job processes of other users would need to reach the munge socket and the
        # config; harmless for root, useful if a job drops privileges.
        os.chmod(self.dir, 0o755)

    def _daemon_env(self):
        env = {k: v for k, v in os.environ.items() if not k.startswith(("SLURM", "MUNGE"))}
        env[MARKER] = self.dir
        env["PATH"] = os.pathsep.join([env.get("PATH", "/usr/bin:/bin")] + list(SBIN_DIRS))
        return env

    def _spawn(self, name, args):
        """Starts a daemon in the foreground of its own session (so its pid is the one we record,
        and stop() can signal its process group), output appended to log/NAME.out."""
        out = open(os.path.join(self.log_dir, name + ".out"), "ab")
        try:
            p = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=out,
                                 stderr=subprocess.STDOUT, cwd=self.dir, env=self._daemon_env(),
                                 start_new_session=True)
        finally:
            out.close()
        self._procs[name] = p
        self._save_state(running=True)
        return p

    def _start_munged(self):
        key = self._path("munge.key")
        if not os.path.exists(key):
            # 1024 random bytes, as munge's docs suggest (mungekey --create would do as well)
            fd = os.open(key, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o400)
            with os.fdopen(fd, "wb") as f:
                f.write(os.urandom(1024))
        os.chmod(key, 0o400)  # munged refuses a key readable or writable by others
        for stale in (self.munge_socket, self.munge_socket + ".lock"):
            if os.path.exists(stale):
                os.unlink(stale)
        self._spawn("munged", [
            find_binary("munged"),
            # --foreground: we keep its pid and catch an early exit; logs go to log/munged.out
            # (munged writes to stderr instead of --log-file in the foreground).
            "--foreground",
            # --force: munged refuses to start when the socket's directory is not executable by
            # all (a pytest tmp_path or a mkdtemp dir is 0700), or on a few other "insecure"
            # setups; with --force these are warnings. Our clients are root, so it is harmless.
            "--force",
            "--socket=" + self.munge_socket,
            "--key-file=" + key,
            "--pid-file=" + self._path("munged.pid"),
            "--log-file=" + os.path.join(self.log_dir, "munged.log"),
            "--seed-file=" + self._path("munged.seed"),
            "--num-threads=2",
        ])
        # Wait for the socket, so slurmctld does not start with munge unavailable.
        deadline = time.monotonic() + 15
        while not os.path.exists(self.munge_socket):
            if self._procs["munged"].poll() is not None:
                self._fail("munged exited with code %d" % self._procs["munged"].returncode)
            if time.monotonic() > deadline:
                self._fail("munged did not create %s" % self.munge_socket)
            time.sleep(0.05)

    def _write_config(self):
        cpus, sockets, cores, threads, mem = _node_hardware()
        self.cpus = cpus
        self.ports = {"slurmctld": _free_port(), "slurmd": _free_port()}
        while self.ports["slurmd"] == self.ports["slurmctld"]:
            self.ports["slurmd"] = _free_port()
        # CR_Core gives each 1-CPU task a core; on a machine with SMT that would be two CPUs, so
        # there CR_CPU (a hardware thread per task) keeps one task per CPU.
        select_params = "CR_Core" if threads == 1 else "CR_CPU"
        # A little below what slurmd measures: a node registering less memory than configured is
        # drained ("Low RealMemory"). Jobs ask for no memory here (memory is not a consumable).
        real_memory = max(1, int(mem * 0.98))
        d = self.dir
        lines = [
            "# Written by scripts/slurm/local_slurm.py: a single-node cluster living in this",
            "# directory. Regenerated at every start.",
            "ClusterName=%s" % self.cluster_name,
            # slurmctld only runs on the host named here (the short hostname, `hostname -s`); the
            # address in parentheses spares a name lookup and keeps traffic on the loopback.
            "SlurmctldHost=%s(127.0.0.1)" % self.hostname,
            # Ports picked free at start, so this cluster neither needs nor clashes with 6817/6818.
            "SlurmctldPort=%d" % self.ports["slurmctld"],
            "SlurmdPort=%d" % self.ports["slurmd"],
            "SlurmUser=root",
            "SlurmdUser=root",
            # Our own munged: the socket is named here for the daemons and for the client commands
            # (which read this file through SLURM_CONF); auth/munge and cred/munge both use it.
            "AuthType=auth/munge",
            "CredType=cred/munge",
            "AuthInfo=socket=%s" % self.munge_socket,
            "StateSaveLocation=%s/state" % d,
            "SlurmdSpoolDir=%s/spool/slurmd-%%n" % d,
            "SlurmctldPidFile=%s/slurmctld.pid" % d,
            "SlurmdPidFile=%s/slurmd.pid" % d,
            "SlurmctldLogFile=%s/slurmctld.log" % self.log_dir,
            "SlurmdLogFile=%s/slurmd.log" % self.log_dir,
            "SlurmctldDebug=info",
            "SlurmdDebug=info",
            # Otherwise SPANK plugins would be read from /etc/slurm/plugstack.conf (the default is
            # beside the system slurm.conf); an empty file of our own keeps the system's out.
            "PlugStackConfig=%s/plugstack.conf" % d,
            # No cgroups: containers (and CI) often have no writable, delegated cgroup tree, and
            # with these three plugins slurmd needs no cgroup.conf at all.
            "ProctrackType=proctrack/linuxproc",
            "TaskPlugin=task/none",
            "JobAcctGatherType=jobacct_gather/none",
            "AccountingStorageType=accounting_storage/none",
            "JobCompType=jobcomp/none",
            "MpiDefault=none",
            # No mail (slurmctld complains at start when /usr/bin/mail is missing).
            "MailProg=/bin/true",
            "SwitchType=switch/none",
            # Consumable cores: several 1-CPU tasks (array tasks) run at once on one node.
            "SelectType=select/cons_tres",
            "SelectTypeParameters=%s" % select_params,
            # FIFO scheduling (no backfill pass to wait for). Batch jobs are not scheduled at
            # submit time but by slurmctld's background loop, after batch_sched_delay (3 s by
            # default): 0 starts them at its next tick (about 1 s); a job's end triggers a pass
            # too. sched_interval (the full pass, 60 s by default) is a safety net only.
            "SchedulerType=sched/builtin",
            "SchedulerParameters=batch_sched_delay=0,sched_interval=2,sched_min_interval=0",
            # Fast failure detection and short waits: this is one node on the loopback.
            "MessageTimeout=5",
            "SlurmctldTimeout=30",
            "SlurmdTimeout=30",
            "InactiveLimit=0",
            "KillWait=2",
            "Waittime=0",
            # How long a finished job stays visible to squeue/scontrol. sbatch --wait polls after
            # 2 s, then at 8 s, 32 s, ... but stays at 2 s when MinJobAge <= 4.
            "MinJobAge=%d" % self.min_job_age,
            # The node becomes usable as soon as slurmd registers, even after an unclean stop.
            "ReturnToService=2",
            "NodeName=%s NodeAddr=127.0.0.1 NodeHostname=%s CPUs=%d Sockets=%d CoresPerSocket=%d "
            "ThreadsPerCore=%d RealMemory=%d State=UNKNOWN"
            % (self.hostname, self.hostname, cpus, sockets, cores, threads, real_memory),
            "PartitionName=%s Nodes=ALL Default=YES MaxTime=INFINITE State=UP"
            % self.partition,
        ]
        with open(self.conf, "w") as f:
            f.write("\n".join(lines) + "\n")
        open(self._path("plugstack.conf"), "w").close()
        self._save_state(running=True)

    def _start_slurmctld(self):
        # -D: foreground (our pid, our process group); -c: a fresh start, no jobs or node states
        # recovered from an earlier run in the same directory; -f: this cluster's config.
        self._spawn("slurmctld", [find_binary("slurmctld"), "-D", "-c", "-f", self.conf])

    def _start_slurmd(self):
        # -N: the node name (also in slurm.conf), so slurmd does not need to match its own
        # hostname lookups against the config.
        self._spawn("slurmd", [find_binary("slurmd"), "-D", "-N", self.hostname, "-f", self.conf])

    def _wait_idle(self, deadline):
        sinfo = find_binary("sinfo")
        last = ""
        while True:
            for name, p in self._procs.items():
                if p.poll() is not None:
                    self._fail("%s exited with code %d" % (name, p.returncode))
            try:
                r = self.run([sinfo, "-h", "-N", "-n", self.hostname, "-o", "%T"], check=False,
                             timeout=15)
                last = (r.stdout + r.stderr).strip()
                if r.returncode == 0 and r.stdout.strip() == "idle":
                    return
            except subprocess.TimeoutExpired:
                last = "sinfo timed out"
            if time.monotonic() > deadline:
                self._fail("node %s not idle after %.0f s (sinfo: %r)"
                           % (self.hostname, self.start_timeout, last))
            time.sleep(0.1)

    def _fail(self, why):
        logs = []
        for name in ("munged", "slurmctld", "slurmd"):
            # NAME.out has all: in the foreground the daemons copy their log to stdout, and it
            # also holds what they print before they open their log file (config errors).
            path = os.path.join(self.log_dir, name + ".out")
            if not os.path.exists(path) or os.path.getsize(path) == 0:
                path = os.path.join(self.log_dir, name + ".log")
            if os.path.exists(path):
                logs.append("--- %s (tail) ---\n%s" % (path, _tail(path)))
        raise LocalSlurmError("local Slurm cluster in %s failed to start: %s\n%s"
                              % (self.dir, why, "\n".join(logs)))

    # process bookkeeping ---------------------------------------------------------------------
    def _save_state(self, running):
        state = {"pids": {n: p.pid for n, p in self._procs.items()} if running else {},
                 "cpus": self.cpus, "partition": self.partition, "ports": self.ports,
                 "conf": self.conf, "hostname": self.hostname}
        if running:  # keep pids recorded earlier (another process may have started some)
            old = self._read_state().get("pids", {})
            state["pids"] = dict(old, **state["pids"])
        if not os.path.isdir(self.dir):
            return
        tmp = self._path(STATE_FILE + ".tmp")
        with open(tmp, "w") as f:
            json.dump(state, f)
        os.replace(tmp, self._path(STATE_FILE))

    def _read_state(self):
        try:
            with open(self._path(STATE_FILE)) as f:
                return json.load(f)
        except (OSError, ValueError):
            return {}

    def _load_state(self):
        s = self._read_state()
        if s:
            self.cpus = s.get("cpus")
            self.ports = s.get("ports")
            self.partition = s.get("partition") or self.partition

    def _known_pids(self):
        pids = dict(self._read_state().get("pids", {}))
        pids.update({n: p.pid for n, p in self._procs.items()})
        return pids

    def _is_ours(self, pid):
        """pid is alive and one of this cluster's processes (guards against a recycled pid)."""
        return _proc_alive(pid) and self._belongs(pid)

    def _belongs(self, pid):
        """One of this cluster's processes:
        - started by us: LOCAL_SLURM_DIR=DIR in its environment;
        - a Slurm daemon process whose environment is gone: slurmstepd (slurmd execs it with an
          environment of its own) and slurmctld's slurmscriptd rewrite the memory holding their
          environment to set their process title, so they are known by name and by their
          working directory (DIR, inherited from the daemons) or a log file of ours held open;
        - a job's process: SLURM_JOB_ID set and SLURM_CONF naming our slurm.conf (a user's
          shell may export our SLURM_CONF too, but has no SLURM_JOB_ID)."""
        env = _proc_environ(pid)
        if (MARKER + "=" + self.dir).encode() in env:
            return True
        if ("SLURM_CONF=" + self.conf).encode() in env and any(
                e.startswith(b"SLURM_JOB_ID=") for e in env):
            return True
        try:
            with open("/proc/%d/comm" % pid) as f:
                comm = f.read().strip()
        except OSError:
            return False
        if not comm.startswith(("slurm", "munge")):
            return False
        try:
            if os.readlink("/proc/%d/cwd" % pid) == self.dir:
                return True
            fd_dir = "/proc/%d/fd" % pid
            for fd in os.listdir(fd_dir):
                if os.readlink(os.path.join(fd_dir, fd)).startswith(self.dir + "/"):
                    return True
        except OSError:
            pass
        return False

    def _stray_pids(self):
        """Live processes of this cluster (see _belongs), never this process nor its ancestors."""
        skip = _ancestors()
        found = set()
        for entry in os.listdir("/proc"):
            if entry.isdigit() and int(entry) not in skip:
                pid = int(entry)
                if _proc_alive(pid) and self._belongs(pid):
                    found.add(pid)
        return found

    @staticmethod
    def _signal(pid, sig, group=False):
        try:
            if group:
                os.killpg(pid, sig)
            else:
                os.kill(pid, sig)
        except (ProcessLookupError, PermissionError):
            pass

    def _reap(self):
        for p in self._procs.values():
            try:
                p.poll()
            except OSError:
                pass

    def _wait_gone(self, pids, timeout):
        deadline = time.monotonic() + timeout
        pids = set(pids)
        while pids and time.monotonic() < deadline:
            self._reap()
            pids = {p for p in pids if _proc_alive(p)}
            if pids:
                time.sleep(0.05)
        self._reap()
        return {p for p in pids if _proc_alive(p)}

    def _terminate(self, name, pid):
        proc = self._procs.get(name)
        if proc is not None and proc.pid == pid:
            self._reap()
            if proc.returncode is not None:
                return
        elif not self._is_ours(pid):
            return  # gone already, or a recycled pid that is not ours
        # The daemon leads its own session/process group (start_new_session), so the group
        # signal also reaches whatever it forked that stayed in the group.
        self._signal(pid, signal.SIGTERM, group=True)
        self._signal(pid, signal.SIGTERM)
        if self._wait_gone([pid], self.stop_timeout):
            self._signal(pid, signal.SIGKILL, group=True)
            self._signal(pid, signal.SIGKILL)
            self._wait_gone([pid], 5)
        if proc is not None:
            try:
                proc.wait(timeout=1)
            except subprocess.TimeoutExpired:
                pass


def _main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("start", help="start the cluster in DIR; print shell export lines")
    s.add_argument("dir")
    s.add_argument("--partition", default="debug")
    s.add_argument("--timeout", type=float, default=60.0, help="seconds to wait for an idle node")
    s.add_argument("--min-job-age", type=int, default=4,
                   help="MinJobAge: seconds a finished job stays in squeue (<= 4: sbatch --wait "
                        "polls every 2 s)")
    for name, hlp in (("stop", "stop the cluster in DIR (idempotent)"),
                      ("status", "show the daemons and sinfo; exit 0 when running, 3 when not")):
        p = sub.add_parser(name, help=hlp)
        p.add_argument("dir")
    a = ap.parse_args(argv)
    if a.cmd == "start":
        c = LocalSlurm(a.dir, partition=a.partition, start_timeout=a.timeout,
                       min_job_age=a.min_job_age)
        t0 = time.monotonic()
        try:
            c.start()
        except LocalSlurmError as e:
            print(e, file=sys.stderr)
            return 1
        for k, v in c.env().items():
            print("export %s=%s" % (k, shlex.quote(v)))
        print("# local Slurm up in %.1f s: partition %s, %d CPUs; stop with: %s stop %s"
              % (time.monotonic() - t0, c.partition, c.cpus, shlex.quote(sys.argv[0]),
                 shlex.quote(c.dir)))
        return 0
    c = LocalSlurm(a.dir)
    if a.cmd == "stop":
        c.stop()
        left = c.running()
        if left:
            print("still running: %s" % left, file=sys.stderr)
            return 1
        return 0
    st = c.status()
    for n, pid in st["daemons"].items():
        print("%-10s %s" % (n, pid if pid else "not running"))
    if st["sinfo"]:
        print(st["sinfo"])
    return 0 if st["running"] else 3


if __name__ == "__main__":
    sys.exit(_main())
