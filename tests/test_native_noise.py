"""TensorFlow's CUDA build logs to file descriptor 2 before ``TF_CPP_MIN_LOG_LEVEL`` applies ("Could not find
cuda drivers", "failed call to cuInit" on a machine without a GPU driver): hookrun's import holds those lines
back and lets every other line through."""

from __future__ import annotations

import os
import subprocess
import sys

from hookrun.runner.tf_env import NATIVE_NOISE

IMPORT = "from hookrun.runner.tf_env import import_tensorflow; import_tensorflow(); print('ok')"

FILTER = r"""
import os, sys
from hookrun.runner.tf_env import native_noise_filtered
with native_noise_filtered():
    os.write(2, b"I0000 cudart_stub.cc:31] Could not find cuda drivers on your machine\n")
    os.write(2, b"a line of the user's own\n")
    print("from Python", file=sys.stderr)
    os.write(2, b"E0000 cuda_platform.cc:52] failed call to cuInit: UNKNOWN ERROR (303)\n")
os.write(2, b"after\n")
"""


def run(code: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("TF_CPP_MIN_LOG_LEVEL", "TF_USE_LEGACY_KERAS")}
    return subprocess.run([sys.executable, "-c", code], capture_output=True, env=env, timeout=300, check=False)


def test_importing_tensorflow_prints_none_of_its_native_start_up_noise():
    result = run(IMPORT)
    assert result.returncode == 0, result.stderr
    assert result.stdout.decode().strip() == "ok"
    assert not any(noise in result.stderr for noise in NATIVE_NOISE), result.stderr.decode(errors="replace")


def test_the_filter_keeps_every_other_line_in_order():
    result = run(FILTER)
    assert result.returncode == 0, result.stderr
    assert result.stderr.decode() == "a line of the user's own\nfrom Python\nafter\n"
