#!/usr/bin/env python3
"""Counts the cases a ctest run passed and failed, from its Testing/Temporary/LastTest.log
(ctest keeps every test's whole output there, whatever it printed to the terminal).

    tests/ctest_counts.py BUILD_DIR   ->   "PASSED FAILED SKIPPED TESTS"

A test that reports its own cases counts them: Qt Test's "Totals: P passed, F failed, S skipped",
pytest's "P passed, F failed", a harness's "NAME: P passed, F failed". A test that reports none
counts as one case. A test ctest failed with no failed case of its own (a crash, a timeout, a
non-zero exit) counts one failure more; one ctest skipped (gpu_parity without a device, exit 77)
counts as skipped. TESTS is the number of ctest tests the log holds."""
import pathlib
import re
import sys

QT = re.compile(r"^Totals: (\d+) passed, (\d+) failed, (\d+) skipped", re.M)
HARNESS = re.compile(r"^[\w .-]+: (\d+) passed, (\d+) failed", re.M)


def cases(output):
    """(passed, failed) the output reports of itself, or None."""
    qt = QT.findall(output)
    if qt:  # one Totals line per Qt Test executable
        return sum(int(p) for p, _, _ in qt), sum(int(f) for _, f, _ in qt)
    harness = HARNESS.findall(output)
    if harness:
        p, f = harness[-1]
        return int(p), int(f)
    lines = [l for l in output.splitlines() if re.match(r"^(=+ )?\d+ (passed|failed)", l)]
    if lines:
        last = lines[-1]
        p = re.search(r"(\d+) passed", last)
        f = re.search(r"(\d+) failed", last)
        e = re.search(r"(\d+) errors?", last)
        return int(p.group(1)) if p else 0, (int(f.group(1)) if f else 0) + (int(e.group(1)) if e else 0)
    return None


def main():
    log = pathlib.Path(sys.argv[1]) / "Testing" / "Temporary" / "LastTest.log"
    text = log.read_text(errors="replace")
    passed = failed = skipped = tests = 0
    # One block per test: "N/M Test: NAME" ... "Output:" ... "<end of output>" ... the verdict.
    for block in re.split(r"^\d+/\d+ Testing: ", text, flags=re.M)[1:]:
        tests += 1
        output = block.split("<end of output>")[0]
        verdict = block.split("<end of output>")[-1]
        ok = "Test Passed." in verdict
        if "Test Skipped" in verdict or "***Skipped" in verdict or re.search(r"Test (Not Run|Skipped)", verdict):
            skipped += 1
            continue
        c = cases(output)
        if c is None:
            c = (1, 0) if ok else (0, 1)
        p, f = c
        if not ok and f == 0:
            f = 1
        passed += p
        failed += f
    print(passed, failed, skipped, tests)


if __name__ == "__main__":
    main()
