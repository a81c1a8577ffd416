"""`stepwise services up`'s supervisor on real child processes: restart with backoff, give up
after fast failures, never restart a refusal."""

from __future__ import annotations

import subprocess
import sys

import pytest

from stepwise.cli import services_supervise
from stepwise.cli.services_supervise import MAX_FAST_FAILURES, REFUSED, Part, supervise


def _part(code: int, started: list[int]) -> Part:
    def start() -> subprocess.Popen[bytes]:
        process = subprocess.Popen([sys.executable, "-c", f"raise SystemExit({code})"])
        started.append(process.pid)
        return process

    return Part(label="service flaky", start=start, announce=lambda pid: f"flaky (pid {pid})")


def test_a_part_that_keeps_dying_is_restarted_with_backoff_then_given_up(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(services_supervise, "FIRST_DELAY_S", 0.01)
    assert services_supervise.FIRST_DELAY_S == 0.01
    started: list[int] = []
    part = _part(3, started)
    part.launch()
    assert supervise([part]) == 1
    out, err = capsys.readouterr()
    assert len(started) == MAX_FAST_FAILURES  # The first start and 4 restarts.
    assert out.count("stepwise services up: restarted flaky (pid") == MAX_FAST_FAILURES - 1
    delays = [line.rsplit(" ", 2)[-2] for line in err.splitlines() if "restarting it in" in line]
    assert delays == ["0.01", "0.02", "0.04", "0.08"]  # Doubling from the first delay.
    assert (
        f"service flaky exited {MAX_FAST_FAILURES} times within 10 s of starting (last exit "
        "status 3); giving up and stopping every part"
    ) in err


def test_a_part_that_refused_to_start_is_not_restarted(capsys: pytest.CaptureFixture[str]) -> None:
    started: list[int] = []
    part = _part(REFUSED, started)
    part.launch()
    assert supervise([part]) == 1
    assert len(started) == 1
    assert "refused to start (why is above); stopping every part" in capsys.readouterr().err
