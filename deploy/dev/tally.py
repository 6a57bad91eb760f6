"""Runs and counts the named checks of the offline check scripts (helm/tests/check.py and
deploy/grafana/check.py; deploy/dev/test.sh runs both), so both report alike: a failure is
printed and the run goes on to the next check, `-v` prints each pass as well, and the last line
is the plain "N passed, N failed" that CI reads.

Each script puts this folder on sys.path itself: they are run as files, not as a package.
"""

from __future__ import annotations

import sys
import traceback
from typing import Callable


class Tally:
    """The checks run so far. `catch` is what counts as a failed check; anything else is a fault of
    the script itself and stops the run (the helm check counts every exception: a render that
    raises is a finding there)."""

    def __init__(self, catch: type[BaseException] = AssertionError) -> None:
        self.verbose = "-v" in sys.argv
        self.catch = catch
        self.passed = 0
        self.failed: list[str] = []

    def record(self, name: str, fn: Callable[[], object]) -> None:
        try:
            fn()
            self.passed += 1
            if self.verbose:
                print(f"ok    {name}")
        except self.catch as e:  # every failure is reported, then the run goes on
            self.failed.append(name)
            print(f"FAIL  {name}: {type(e).__name__ + ': ' if not isinstance(e, AssertionError) else ''}{e}")
            if self.verbose and not isinstance(e, AssertionError):
                traceback.print_exc()

    def summary(self, what: str) -> int:
        """Prints the closing line; the exit status: 1 on any failure."""
        print(f"{what}: {self.passed} passed, {len(self.failed)} failed")
        return 1 if self.failed else 0
