"""Bounded number types: every number in a config has the bound TensorFlow or the OS can honour.

``hookrun validate`` (and the JSON Schema, which carries the same ``maximum``) rejects a value
beyond its bound, so no value that passes validation fails later as an overflow inside
TensorFlow, numpy or the OS.

- Step counts (``save_steps``, ``every_n_steps``, ``num_steps``, ``epochs``, ...): at most
  :data:`INT64_MAX`, TensorFlow's ``global_step`` and ``tf.data`` counts being int64.
- Sizes of tensors and other counts (``batch_size``, ``hidden_units``, ``n_classes``, ``max_to_keep``,
  ...): at most :data:`INT32_MAX`.
- Thread counts: at most :data:`MAX_THREADS` (``ConfigProto`` holds an int32, but every thread is
  real: TensorFlow starts them all).
- Durations in seconds: at most :data:`MAX_SECONDS` (about 31 years; ``threading`` waits and
  ``time.sleep`` overflow near 2**63 nanoseconds).
- Seeds: 0 to :data:`MAX_SEED` (numpy and TensorFlow take 32- and 64-bit seeds).
- ``data.label_scale``: :data:`MIN_LABEL_SCALE` to :data:`MAX_LABEL_SCALE`, so that it and its square
  are finite ``float32`` numbers (the metrics are multiplied back by them; ``1e39`` is ``inf``).
- ``data.validation_split``: :data:`MIN_SPLIT` to ``1 - MIN_SPLIT``: a finer fraction holds out (or
  keeps) less than one row in a million. ``validate`` also splits the data when its quick read holds
  all of it, so it refuses a split that leaves no training or no validation row, as ``train`` does.
- A built-in builder's layers (``hidden_units``): each weight matrix at most :data:`INT32_MAX`
  elements, and all the weights, with their gradients and optimizer slots
  (:data:`BYTES_PER_WEIGHT`), within this machine's memory. Checked with the data's feature count by
  ``validate`` and ``train`` alike (``hookrun.runner.preflight.check_model_size``), before TensorFlow
  would allocate them (``[2147483647]`` was killed by the kernel, or crashed, after minutes).
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

#: Largest int64 (TensorFlow's ``global_step``, ``tf.data`` counts, ``RunOptions`` timeouts).
INT64_MAX = 2**63 - 1
#: Largest int32 (tensor dimensions and most counts TensorFlow keeps in 32 bits).
INT32_MAX = 2**31 - 1
#: Most threads per thread pool (``intra_op_parallelism_threads``, ``inter_op_parallelism_threads``).
MAX_THREADS = 1024
#: Longest duration in a config (seconds): about 31.7 years.
MAX_SECONDS = 1e9
#: Largest seed: numpy's ``default_rng`` and TensorFlow's graph seed both take it.
MAX_SEED = 2**32 - 1
#: Largest GPU index in ``device: gpu:N`` (three digits).
MAX_GPU_INDEX = 999

#: Smallest and largest ``data.label_scale``: it and its square stay finite float32 numbers (max 3.4e38).
MIN_LABEL_SCALE = 1e-18
MAX_LABEL_SCALE = 1e18
#: Smallest ``data.validation_split`` (and ``1 -`` it the largest): one row in a million.
MIN_SPLIT = 1e-6
#: Bytes one float32 weight of a built-in builder takes while training: itself, its gradient and two
#: optimizer slots (Adam's ``m`` and ``v``; SGD needs fewer).
BYTES_PER_WEIGHT = 16

#: Most training steps in one session call (``session.steps_per_run``): a window is an int32 loop count.
MAX_STEPS_PER_RUN = 1_000_000

#: A positive count of steps (or epochs).
Steps = Annotated[int, Field(gt=0, le=INT64_MAX)]
#: A count of steps that may be zero.
NonNegativeSteps = Annotated[int, Field(ge=0, le=INT64_MAX)]
#: A positive size or count kept in 32 bits.
Count = Annotated[int, Field(gt=0, le=INT32_MAX)]
#: A thread count; 0 lets TensorFlow choose.
Threads = Annotated[int, Field(ge=0, le=MAX_THREADS)]
#: A positive duration (seconds).
Seconds = Annotated[float, Field(gt=0, le=MAX_SECONDS)]
#: A random seed.
Seed = Annotated[int, Field(ge=0, le=MAX_SEED)]
