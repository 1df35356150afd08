#!/usr/bin/env python3
"""Counts the cases a ctest run passed and failed, from the JUnit file ctest wrote
(`ctest --output-junit FILE`: every test's verdict and whole output, whatever the terminal showed).

    tests/ctest_counts.py JUNIT_XML   ->   "PASSED FAILED SKIPPED TESTS"

A test that reports its own cases counts them: Qt Test's "Totals: P passed, F failed, S skipped",
a harness's "NAME: P passed, F failed" (gpu_parity_host), pytest's "P passed, F failed". A test
that reports none counts as one case. A test ctest failed with no failed case of its own (a
crash, a timeout, a non-zero exit) counts one failure more; one ctest skipped (gpu_parity without
a device, exit 77) counts as skipped, neither passed nor failed. TESTS: the ctest tests run.
ctest keeps only 1 KiB of a passed test's output unless told otherwise: the presets keep 1 MiB
(maxPassedTestOutputSize), so the summary lines at the end are there to read."""
import re
import sys
import xml.etree.ElementTree as ET

QT = re.compile(r"^Totals: (\d+) passed, (\d+) failed, (\d+) skipped", re.M)
HARNESS = re.compile(r"^[\w .-]+: (\d+) passed, (\d+) failed", re.M)
PYTEST = re.compile(r"^(?:=+ )?(?:\d+ (?:passed|failed)).*$", re.M)


def cases(output):
    """(passed, failed) the output reports of itself, or None."""
    qt = QT.findall(output)
    if qt:  # one Totals line per Qt Test executable
        return sum(int(p) for p, _, _ in qt), sum(int(f) for _, f, _ in qt)
    harness = HARNESS.findall(output)
    if harness:
        p, f = harness[-1]
        return int(p), int(f)
    summary = PYTEST.findall(output)
    if summary:
        last = summary[-1]
        num = lambda word: sum(int(n) for n in re.findall(r"(\d+) " + word, last))
        return num("passed"), num("failed") + num("errors?")
    return None


def main():
    passed = failed = skipped = tests = 0
    for case in ET.parse(sys.argv[1]).getroot().iter("testcase"):
        tests += 1
        status = case.get("status", "run")
        if case.find("skipped") is not None or status in ("notrun", "disabled"):
            skipped += 1
            continue
        ok = status == "run" and case.find("failure") is None and case.find("error") is None
        out = case.find("system-out")
        c = cases((out.text or "") if out is not None else "")
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
