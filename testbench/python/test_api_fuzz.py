"""The Python API under seeded mutations (api_fuzz.py): every mutated call ends in stepsim.Error,
TypeError or ValueError with a clear message, or succeeds only when its arguments were valid;
never another exception, a crash of the interpreter or a hang. Fixed seeds, a few hundred cases
in worker processes; scripts/fuzz/python_api.py runs long campaigns of the same cases."""
import pytest

from api_fuzz import Campaign

CASES = 240


@pytest.mark.parametrize("seed", [1, 2])
def test_mutated_calls_end_in_a_clean_error_or_a_valid_success(seed):
    c = Campaign(seed, case_timeout=15.0, batch=CASES)
    c.run(0, CASES // 2)
    assert c.counts["ran"] == CASES // 2
    assert not c.findings, "\n".join("case %d: %s in %s: %s" % f for f in c.findings)
    assert c.counts["clean"] > CASES // 8  # the mutations do reach the checks
