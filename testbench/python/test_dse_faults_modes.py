"""The DSE after faults, continued (test_dse_faults.py has the kills): SIGTERM (Ctrl-C, scancel)
and a folder turned read-only at any step, a kill while an interrupted batch is taken back, and
the same through the command line. STEPSIM_DSE_FAULT_STRIDE=1: every step."""
import os

from stepsim.design import explore

from conftest import cli
from test_dse_faults import every_step, faulted, folder, grid, key_columns, no_plots, nsga, steps_from  # noqa: F401


def test_sigterm_at_any_step_resumes_to_the_uninterrupted_trials(folder, no_plots):
    every_step(nsga(folder), folder, "term", "interrupted", first=3)


def test_a_folder_turned_read_only_at_any_step_resumes(folder, no_plots):
    every_step(grid(folder), folder, "readonly", "error", first=1)


def test_a_kill_while_a_batch_is_taken_back_resumes(folder, no_plots):
    """The repair itself may be killed at any of its steps (copying the study without the
    unasked trials, replacing study.db): the next run repairs again."""
    import shutil

    from stepsim.design import space as space_module

    space = nsga(folder)
    explore.run(space, os.path.join(folder, "ref"), progress=False)
    template = os.path.join(folder, "template")
    explore.run(space, template, trials=2, progress=False)
    study = explore.open_study(space_module.load(space), template)
    study._storage.create_new_trial(study._study_id)
    explore._close(study)
    for step in steps_from(1):
        out = os.path.join(folder, "o%03d" % step)
        shutil.copytree(template, out)
        end = faulted(space, out, step, "kill")
        if end == "done":
            break
        explore.run(space, out, progress=False)
        assert key_columns(out) == key_columns(os.path.join(folder, "ref")), "killed at step %d" % step
    assert step > 5


def test_the_command_line_after_sigterm_and_a_read_only_folder(folder):
    """Through the tool: SIGTERM says how to resume (exit 130), a read-only folder is an error
    naming it (exit 1), and the same command then completes the study of the uninterrupted run."""
    import subprocess

    import yaml

    from conftest import stepsim_binary

    f = os.path.join(folder, "space.yaml")
    with open(f, "w") as out:
        out.write(yaml.safe_dump(nsga(folder)))
    cli("dse", f, "--out", os.path.join(folder, "ref"), "--quiet")
    o = os.path.join(folder, "o")
    for step, mode, code, said in ((9, "term", 130, "interrupted: run the same command again to resume"),
                                   (30, "readonly", 1, "error: dse: cannot write in %s: Read-only" % o)):
        env = dict(os.environ, STEPSIM_DSE_FAULT="%d:%s" % (step, mode))
        p = subprocess.run([stepsim_binary(), "dse", f, "--out", o, "--quiet"], capture_output=True, text=True,
                           env=env)
        assert p.returncode == code and said in p.stderr, p.stderr
        assert "Traceback" not in p.stderr
    cli("dse", f, "--out", o, "--quiet")
    assert key_columns(o) == key_columns(os.path.join(folder, "ref"))
