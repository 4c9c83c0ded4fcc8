"""Tests of the step loop's signal handling (real signals sent to this process)."""

from __future__ import annotations

import os
import signal

import pytest

from hookrun.runner.session.monitored import StopSignals


def test_first_signal_is_recorded_second_sigint_interrupts_at_once() -> None:
    before = signal.getsignal(signal.SIGINT)
    with StopSignals() as stop:
        os.kill(os.getpid(), signal.SIGTERM)
        assert stop.signum == signal.SIGTERM  # recorded, nothing raised: the loop stops at the next step
        with pytest.raises(KeyboardInterrupt):
            os.kill(os.getpid(), signal.SIGINT)  # a second signal: out at once
    assert signal.getsignal(signal.SIGINT) is before  # handlers restored on exit


def test_a_first_sigint_only_sets_the_flag() -> None:
    with StopSignals() as stop:
        os.kill(os.getpid(), signal.SIGINT)
        assert stop.signum == signal.SIGINT
    assert stop.signum == signal.SIGINT
