"""``RunWindow``: what one session call computes when it runs several training steps (``session.steps_per_run``).

With ``session.steps_per_run: N`` (N > 1) the runner's train op is a ``tf.compat.v1.while_loop`` of up to
N training steps in one session call (a *window*), as TPUEstimator's ``iterations_per_loop`` and Keras'
``steps_per_execution`` do. Each step pulls its own batch and adds one to ``global_step``. The loop
carries what the hooks need from the window, and the runner hands them to every hook as
:attr:`hookrun.hooks.context.HookContext.window` (None when N = 1, today's one step per call):

- ``steps``: steps the call ran (1 to N; fewer than N when ``stop_at_step`` shortened the window,
  or the data ended inside it);
- ``global_step``: ``global_step`` after the window, exact;
- ``sums``: the sum over the window's steps of the loss and of each scalar named tensor the hooks read;
- ``last``: the value at the window's last step of each named tensor the hooks read (``loss``, a metric,
  ``predictions``, ``learning_rate``); the hook tensor names resolve to these;
- ``any_nonfinite``: True when any step's loss was NaN or infinite.

A hook asking for a tensor in ``before_run`` gets, as with TensorFlow's ``SessionRunArgs`` under
``iterations_per_loop``, its value as of the last step of the window; for a custom hook's fetches and
feeds of every kind, see :mod:`hookrun.hooks.custom.window` and docs/engine.md ("What a hook's
fetches and feeds give").

This module imports no TensorFlow: the fields hold tensors the runner built.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class RunWindow:
    """The tensors of a fused train op (``session.steps_per_run`` > 1); see the module docstring.

    Attributes:
        steps_per_run: N, the most steps one session call runs (count, > 1).
        steps: ``int32`` scalar: steps this call ran (1 to N; the call raises ``OutOfRangeError``
            instead of running 0).
        global_step: ``int64`` scalar: ``global_step`` after the window (steps).
        any_nonfinite: ``bool`` scalar: a step of the window had a NaN or infinite loss.
        sums: name -> ``float32`` scalar: the sum over the window's steps (``loss`` and each scalar metric).
        last: name -> tensor: the value at the window's last step (every hook-visible named tensor
            but ``global_step``).
        first: name -> tensor: for each name of :attr:`last`, the builder's first call's tensor of that name
            (outside the loop, never run: the one a hook naming ``loss:0`` finds in the graph).
        step_global_step: ``int64`` scalar: ``global_step`` as the window's last step read it, before that
            step's update (what a hook fetching ``global_step`` gets at that step under
            ``MonitoredTrainingSession``), or None when not carried (no custom hook).
        variables: the op names of the variables the loop's steps may write (every variable there was when
            the loop was built: the model's, the optimizer's, ``global_step``).
        bound: the ``int32`` local variable holding the window's length (N unless shortened).
        bound_value: the ``int32`` placeholder :attr:`set_bound` assigns from.
        set_bound: the op assigning ``bound_value`` to ``bound`` (see
            :meth:`hookrun.hooks.step_clock.StepClock.limit`).
    """

    steps_per_run: int
    steps: Any
    global_step: Any
    any_nonfinite: Any
    sums: dict[str, Any] = field(default_factory=dict)
    last: dict[str, Any] = field(default_factory=dict)
    first: dict[str, Any] = field(default_factory=dict)
    step_global_step: Any = None
    variables: frozenset[str] = frozenset()
    bound: Any = None
    bound_value: Any = None
    set_bound: Any = None

    def sum_of(self, tensor: Any) -> Any:
        """The window sum of a last-step tensor of :attr:`last` (the same object), or None when none is kept."""
        for name, value in self.last.items():
            if value is tensor:
                return self.sums.get(name)
        return None
