"""`stepsim sweep --workers local:N --work-dir DIR` (issue 33, item 8): a second sweep given the
same DIR while the first runs is refused at once and touches nothing (before, it removed the
first's folder, and either could wait for ever or hand back the other's rows); a DIR holding
other files is refused, not emptied."""
import csv
import os
import subprocess
import time

from conftest import cli, stepsim_binary

# 100 points, a few seconds on one worker: the first sweep must still hold the folder when the
# second starts (20 points once finished first on a fast machine, and the second then ran).
ARGS = ["sweep", "--layer", "swiglu", "-p", "batch=32", "-p", "tile_f=32,64,128,256",
        "--set", "hbm.channels=2,4,8,16,32", "--set", "onchip_bw=32,64,128,256,512"]


def rows(path):
    with open(path) as f:
        return [{k: v for k, v in r.items() if k != "wall [s]"} for r in csv.DictReader(f)]


def test_a_second_sweep_in_the_same_work_dir_is_refused(tmp_path):
    work = tmp_path / "work"
    first = subprocess.Popen([stepsim_binary(), *ARGS, "--workers", "local:1", "--work-dir", str(work),
                              "--csv", str(tmp_path / "first.csv"), "--quiet"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.time() + 30
        while not (work / "job.json").exists():  # the first holds the folder
            assert time.time() < deadline and first.poll() is None, first.communicate()
            time.sleep(0.02)
        second = cli(*ARGS, "--workers", "local:1", "--work-dir", str(work), "--csv", str(tmp_path / "second.csv"),
                     check=False)
        assert second.returncode == 1, second.stderr
        assert second.stderr.startswith("error: %s is in use by another coordinator of workers (pid %d)"
                                        % (work, first.pid)), second.stderr
        assert not (tmp_path / "second.csv").exists()
        out, err = first.communicate(timeout=120)
    finally:
        if first.poll() is None:
            first.kill()
    assert first.returncode == 0, err
    cli(*ARGS, "--csv", str(tmp_path / "serial.csv"))
    assert rows(tmp_path / "first.csv") == rows(tmp_path / "serial.csv")
    assert (work / "logs").is_dir()  # --work-dir is kept


def test_a_work_dir_holding_other_files_is_refused_and_kept(tmp_path):
    work = tmp_path / "mine"
    work.mkdir()
    (work / "thesis.tex").write_text("precious")
    p = cli(*ARGS, "--workers", "local:1", "--work-dir", str(work), check=False)
    assert p.returncode == 1 and "holds files that are not a stepsim work folder's (thesis.tex)" in p.stderr
    assert (work / "thesis.tex").read_text() == "precious"
    # The same folder, emptied, serves; and again (it holds only a work folder's files then).
    os.remove(work / "thesis.tex")
    for _ in range(2):
        cli(*ARGS[:5], "-p", "tile_f=64", "--workers", "local:1", "--work-dir", str(work))
