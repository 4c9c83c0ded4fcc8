"""``resolve_device`` (pure logic, every branch without a GPU) and ``session_config``."""

from __future__ import annotations

import pytest
import tensorflow as tf

from hookrun.common.errors import SetupError
from hookrun.runner.graph.device import DevicePlan, resolve_device, session_config

CPU = "/device:CPU:0"


@pytest.mark.parametrize("num_gpus", [0, 1, 2])
@pytest.mark.parametrize("soft", [False, True])
def test_cpu_is_always_the_cpu(num_gpus, soft):
    plan = resolve_device("cpu", num_gpus, soft)
    assert plan == DevicePlan("cpu", CPU, soft)
    assert not plan.uses_gpu and plan.note == ""


@pytest.mark.parametrize("soft", [False, True])
def test_auto_without_gpu_uses_the_cpu_with_a_note(soft):
    plan = resolve_device("auto", 0, soft)
    assert plan.device == CPU and plan.soft_placement is soft
    assert "no GPU" in plan.note


@pytest.mark.parametrize("num_gpus", [1, 2])
@pytest.mark.parametrize("soft", [False, True])
def test_auto_with_gpus_uses_gpu_0_with_soft_placement(num_gpus, soft):
    plan = resolve_device("auto", num_gpus, soft)
    assert plan.device == "/device:GPU:0" and plan.uses_gpu
    assert plan.soft_placement is True
    assert "GPU 0" in plan.note


@pytest.mark.parametrize(
    ("requested", "num_gpus", "device"),
    [
        ("gpu", 1, "/device:GPU:0"),
        ("gpu", 2, "/device:GPU:0"),
        ("gpu:0", 1, "/device:GPU:0"),
        ("gpu:1", 2, "/device:GPU:1"),
    ],
)
@pytest.mark.parametrize("soft", [False, True])
def test_an_existing_gpu_is_used_as_asked(requested, num_gpus, device, soft):
    plan = resolve_device(requested, num_gpus, soft)
    assert plan == DevicePlan(requested, device, soft)


@pytest.mark.parametrize(("requested", "num_gpus"), [("gpu", 0), ("gpu:1", 0), ("gpu:1", 1), ("gpu:2", 2)])
def test_a_missing_gpu_without_soft_placement_is_a_setup_error(requested, num_gpus):
    with pytest.raises(SetupError) as info:
        resolve_device(requested, num_gpus, False)
    message = str(info.value)
    assert requested in message
    seen = "has no GPU visible" if num_gpus == 0 else f"has only {num_gpus} GPU(s) visible"
    assert f"requested but TensorFlow {seen};" in message, message  # not "sees no GPU visible"
    assert "allow_soft_placement" in message
    assert info.value.exit_code == 2


@pytest.mark.parametrize(("requested", "num_gpus"), [("gpu", 0), ("gpu:1", 1)])
def test_a_missing_gpu_with_soft_placement_falls_back_with_a_note(requested, num_gpus):
    plan = resolve_device(requested, num_gpus, True)
    index = requested.partition(":")[2] or "0"
    assert plan.device == f"/device:GPU:{index}"
    assert plan.soft_placement is True
    assert "fall back to the CPU" in plan.note


@pytest.mark.parametrize("requested", ["tpu", "gpu:x", "gpu:", "GPU", ""])
def test_other_strings_are_rejected(requested):
    with pytest.raises(SetupError, match="is not one of"):
        resolve_device(requested, 2, True)


def test_session_config_hides_gpus_on_a_cpu_plan():
    config = session_config(tf, resolve_device("cpu", 2, False), intra_op_threads=2, inter_op_threads=1)
    assert config.device_count["GPU"] == 0
    assert config.allow_soft_placement is False
    assert (config.intra_op_parallelism_threads, config.inter_op_parallelism_threads) == (2, 1)


def test_session_config_keeps_gpus_on_a_gpu_plan():
    config = session_config(tf, resolve_device("gpu:1", 2, False))
    assert "GPU" not in config.device_count
    assert config.allow_soft_placement is False
    assert session_config(tf, resolve_device("auto", 1, False)).allow_soft_placement is True


# --- issue 28: which TensorFlow build, which devices, which CUDA/cuDNN ---


def test_the_install_is_read_without_tensorflow_as_tf_sysconfig_reports_it():
    from importlib.metadata import version

    from hookrun.runner.graph.device import installed_tensorflow

    install = installed_tensorflow()
    assert dict(install.build) == dict(tf.sysconfig.get_build_info())
    assert install.packages and install.packages[0][1] == tf.__version__ == version(install.packages[0][0])


@pytest.mark.parametrize(
    ("build", "expected"),
    [
        ({"is_cuda_build": True, "cuda_version": "12.5.1", "cudnn_version": "9"},
         "tensorflow 2.21.0, CUDA build (CUDA 12.5.1, cuDNN 9)"),
        ({"is_cuda_build": False, "is_rocm_build": False}, "tensorflow 2.21.0, CPU-only build"),
        ({}, "tensorflow 2.21.0, build unknown"),
    ],
)
def test_describe_build(build, expected):
    from hookrun.runner.graph.device import describe_build

    assert describe_build("2.21.0", build) == expected


def test_describe_install_warns_of_two_tensorflow_packages_and_missing_cuda_wheels():
    from hookrun.runner.graph.device import TensorFlowInstall, describe_install

    cuda = {"is_cuda_build": True, "cuda_version": "12.5.1", "cudnn_version": "9"}
    both = describe_install(TensorFlowInstall((("tensorflow", "2.21.0"), ("tensorflow-cpu", "2.21.0")), cuda))
    assert both[0].endswith("; package tensorflow and tensorflow-cpu")
    assert "tensorflow[and-cuda]" in both[1] and both[2].startswith("warning: both tensorflow and tensorflow-cpu")
    wheels = describe_install(TensorFlowInstall((("tensorflow", "2.21.0"),), cuda, (("nvidia-cudnn-cu12", "9.3"),)))
    assert wheels == ["tensorflow 2.21.0, CUDA build (CUDA 12.5.1, cuDNN 9); package tensorflow",
                      "CUDA libraries (pip): nvidia-cudnn-cu12 9.3"]
    assert describe_install(TensorFlowInstall()) == ["tensorflow: not installed (pip install tensorflow)"]


def test_train_says_which_build_and_devices_before_training(make_config, run_train, captured):
    run_train(make_config(hooks=[{"type": "stop_at_step", "last_step": 1}]))
    first = captured.text.splitlines()[0]
    assert first.startswith(f"tensorflow {tf.__version__}, "), captured.text
    assert "; devices: CPU:0" in first
