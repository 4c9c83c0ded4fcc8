"""Third-party-style hooks for the conformance corpus, written for this suite after public ones.

Each is modelled on a hook from a public repository, adapted to ``tf.compat.v1`` and to this graph
(a regression on ``features``/``labels``; the loss is ``loss:0``); none is a copy. They record what
they observe into :data:`RECORDS` as tuples, so the same hooks can run under hookrun's runner (as
``type: custom`` entries) and under a plain ``MonitoredTrainingSession`` script, and the records be
compared. Nothing recorded depends on timing, or on a ``global_step`` fetched in the same run as the
train op (that read races the increment in TensorFlow itself: ``tests/test_fetch_order.py``); hooks
whose originals use it count steps from a read in ``after_create_session`` instead.

The test writes this file beside its configs and imports it from there, as hookrun imports a user's
module, so both sides share one module object and one ``RECORDS``.
"""

import os
import signal

import tensorflow as tf

v1 = tf.compat.v1

#: Everything the hooks observed, in call order.
RECORDS = []


def record(*item):
    RECORDS.append(item)


def rounded(value):
    return float(f"{float(value):.5g}")


class TokensCounter(v1.train.SessionRunHook):
    """After google/seq2seq's ``TokensPerSecondCounter``: a counter variable made in ``begin()``.

    Counts the labels seen into ``tokens_counter/count`` (a variable the hook creates, so it must be
    checkpointed and restored), and every ``every_n_steps`` writes the count as a summary with a
    ``FileWriter`` from ``FileWriterCache``.
    """

    def __init__(self, output_dir, every_n_steps=2):
        self._timer = v1.train.SecondOrStepTimer(every_steps=every_n_steps)
        self._output_dir = output_dir

    def begin(self):
        labels = v1.get_default_graph().get_tensor_by_name("labels:0")
        with v1.variable_scope("tokens_counter"):
            self._count = v1.get_variable("count", [], tf.int64, initializer=v1.zeros_initializer(), trainable=False)
        self._add = v1.assign_add(self._count, tf.cast(tf.size(labels), tf.int64))
        self._global_step = v1.train.get_global_step()
        self._writer = v1.summary.FileWriterCache.get(self._output_dir)

    def after_create_session(self, session, coord):
        self._step = int(session.run(self._global_step))
        record("tokens_counter.start", self._step, int(session.run(self._count)))

    def before_run(self, run_context):
        return v1.train.SessionRunArgs(self._add)

    def after_run(self, run_context, run_values):
        self._step += 1
        if self._timer.should_trigger_for_step(self._step):
            self._timer.update_last_triggered_step(self._step)
            count = int(run_values.results)
            summary = v1.Summary(value=[v1.Summary.Value(tag="tokens/count", simple_value=count)])
            self._writer.add_summary(summary, self._step)
            record("tokens_counter", self._step, count)

    def end(self, session):
        self._writer.flush()


class ExamplesPerSecond(v1.train.SessionRunHook):
    """After tensorflow/models' ``ExamplesPerSecondHook``: a step timer and warm-up steps.

    Asks for ``global_step`` by its string name on every step (as the original asks for the
    tensor), but counts the steps from a read in ``after_create_session``; records the examples
    of each timed window (``batch_size`` x steps), not the rate.
    """

    def __init__(self, batch_size, every_n_steps=2, warm_steps=1):
        self._timer = v1.train.SecondOrStepTimer(every_steps=every_n_steps)
        self._batch_size = batch_size
        self._warm_steps = warm_steps
        self._total_steps = 0

    def begin(self):
        self._global_step = v1.train.get_global_step()

    def after_create_session(self, session, coord):
        self._step = int(session.run(self._global_step))

    def before_run(self, run_context):
        return v1.train.SessionRunArgs("global_step/Read/ReadVariableOp:0")

    def after_run(self, run_context, run_values):
        self._step += 1
        if self._timer.should_trigger_for_step(self._step) and self._step > self._warm_steps:
            elapsed_time, elapsed_steps = self._timer.update_last_triggered_step(self._step)
            if elapsed_time is not None:
                self._total_steps += elapsed_steps
                record("examples", self._step, elapsed_steps * self._batch_size, self._total_steps)


class LogTrainRun(v1.train.SessionRunHook):
    """After NVIDIA's BERT ``LogTrainRunHook``: ``session.run`` in ``after_create_session``, a summary at ``end``."""

    def begin(self):
        self._global_step = v1.train.get_global_step()
        self._steps = 0

    def after_create_session(self, session, coord):
        self._init_step = int(session.run(self._global_step))
        record("log_train_run.start", self._init_step)

    def after_run(self, run_context, run_values):
        self._steps += 1

    def end(self, session):
        record("log_train_run.end", self._init_step, self._steps, int(session.run(self._global_step)))


class MetadataCapture(v1.train.SessionRunHook):
    """After google/seq2seq's ``MetadataCaptureHook``: a full trace of one step through ``RunOptions``.

    On step ``step`` it asks for ``RunOptions(trace_level=FULL_TRACE)`` and writes the step's
    ``RunMetadata`` to ``output_dir/run_meta``.
    """

    def __init__(self, output_dir, step=2):
        self._step_to_trace = step
        self.output_dir = os.path.abspath(output_dir)

    def begin(self):
        self._global_step = v1.train.get_global_step()

    def after_create_session(self, session, coord):
        self._step = int(session.run(self._global_step))

    def before_run(self, run_context):
        if self._step + 1 == self._step_to_trace:
            options = v1.RunOptions(trace_level=v1.RunOptions.FULL_TRACE)
            return v1.train.SessionRunArgs(self._global_step, options=options)
        return None

    def after_run(self, run_context, run_values):
        self._step += 1
        if self._step == self._step_to_trace:
            metadata = run_values.run_metadata
            os.makedirs(self.output_dir, exist_ok=True)
            with open(os.path.join(self.output_dir, "run_meta"), "wb") as handle:
                handle.write(metadata.SerializeToString())
            record("metadata", self._step, len(metadata.step_stats.dev_stats) > 0, run_values.options.trace_level)


class ScaledLoss(v1.train.SessionRunHook):
    """Feeds a tensor it makes in ``begin()`` (a ``placeholder_with_default``), through ``feed_dict``."""

    def __init__(self, scale=2.0):
        self._scale_value = scale

    def begin(self):
        self._scale = v1.placeholder_with_default(1.0, [], name="corpus_scale")
        loss = v1.get_default_graph().get_tensor_by_name("loss:0")
        self._scaled = self._scale * loss

    def before_run(self, run_context):
        return v1.train.SessionRunArgs(
            {"scaled": self._scaled, "loss": "loss:0"}, feed_dict={self._scale: self._scale_value}
        )

    def after_run(self, run_context, run_values):
        results = run_values.results
        record("scaled", rounded(results["loss"]), rounded(results["scaled"] / results["loss"]))


class PrintLossAndTime:
    """After OpenSeq2Seq's ``PrintLossAndTimeHook``, duck-typed (no ``SessionRunHook`` base class).

    Every ``every_steps`` steps asks for the loss by its string name.
    """

    def __init__(self, every_steps=2):
        self._every = every_steps

    def begin(self):
        self._global_step = v1.train.get_global_step()

    def after_create_session(self, session, coord):
        self._iter_count = int(session.run(self._global_step))

    def before_run(self, run_context):
        if (self._iter_count + 1) % self._every == 0:
            return v1.train.SessionRunArgs(["loss:0"])
        return v1.train.SessionRunArgs([])

    def after_run(self, run_context, run_values):
        self._iter_count += 1
        if run_values.results:
            record("print_loss", self._iter_count, rounded(run_values.results[0]))

    def end(self, session):
        record("print_loss.end", self._iter_count)


class EarlyStopping(v1.train.SessionRunHook):
    """After tensor2tensor's ``EarlyStoppingHook``: ``request_stop`` after a plateau.

    The original reads a tag from event files every few steps; this one watches the loss it
    fetches, and stops once it has not decreased by more than ``plateau_delta`` for
    ``num_plateau_steps`` steps.
    """

    def __init__(self, num_plateau_steps=3, plateau_delta=0.0):
        self._num_plateau_steps = num_plateau_steps
        self._plateau_delta = plateau_delta

    def begin(self):
        self._loss = v1.get_default_graph().get_tensor_by_name("loss:0")
        self._global_step = v1.train.get_global_step()

    def after_create_session(self, session, coord):
        self._step = int(session.run(self._global_step))
        self._best, self._since = None, 0

    def before_run(self, run_context):
        return v1.train.SessionRunArgs(self._loss)

    def after_run(self, run_context, run_values):
        self._step += 1
        loss = float(run_values.results)
        if self._best is None or loss < self._best - self._plateau_delta:
            self._best, self._since = loss, 0
        else:
            self._since += 1
        if self._since >= self._num_plateau_steps:
            record("early_stopping.stop", self._step)
            run_context.request_stop()


class TrainingPartition(v1.train.SessionRunHook):
    """After NVIDIA's ConvNets ``TrainingPartitionHook``: its own signal handlers ask for a stop.

    The constructor installs a ``SIGTERM`` handler and ``begin()`` a ``SIGUSR1`` handler; when
    either signal arrives the next ``after_run`` requests a stop. To be self-contained it raises
    ``signum`` itself after global step ``signal_at``. ``end()`` puts the previous handlers back.
    """

    def __init__(self, signal_at=2, signum="SIGUSR1"):
        self._signal_at = signal_at
        self._signum = getattr(signal, signum)
        self._received = None
        self._previous = {signal.SIGTERM: signal.signal(signal.SIGTERM, self._handler)}

    def begin(self):
        self._global_step = v1.train.get_global_step()
        self._previous[signal.SIGUSR1] = signal.signal(signal.SIGUSR1, self._handler)

    def _handler(self, signum, frame):
        self._received = signum

    def after_create_session(self, session, coord):
        self._step = int(session.run(self._global_step))

    def after_run(self, run_context, run_values):
        self._step += 1
        if self._step == self._signal_at:
            signal.raise_signal(self._signum)
        if self._received is not None:
            record("partition.stop", self._step, int(self._received))
            self._received = None
            run_context.request_stop()

    def end(self, session):
        for signum, handler in self._previous.items():
            signal.signal(signum, handler)
        record("partition.end", self._step)


#: Optimizer slot variables a pretrained checkpoint's weights are not restored into (after NVIDIA's
#: ``build_assigment_map``, which skips the same suffixes).
OPTIMIZER_SLOTS = ("/Momentum", "/Adadelta", "/Adadelta_1", "/Adam", "/Adam_1", "/Adagrad", "/RMSProp", "/RMSProp_1")


class PretrainedWeightsLoading(v1.train.SessionRunHook):
    """After NVIDIA's MaskRCNN ``PretrainedWeightsLoadingHook`` without a skip pattern: ``global_step`` moves too.

    ``begin()`` builds one assign per global variable found in ``checkpoint_path`` (optimizer slots
    skipped), fed through placeholders as the original's ``assign_from_checkpoint``;
    ``after_create_session`` runs them once per hook (its ``_is_initialized``), so the step the
    checkpoint holds becomes the session's ``global_step``. ``end()`` records the step and the weights.
    """

    def __init__(self, checkpoint_path):
        self._checkpoint_path = checkpoint_path
        self._is_initialized = False

    def begin(self):
        reader = tf.train.load_checkpoint(self._checkpoint_path)
        saved = reader.get_variable_to_shape_map()
        self._init_feed_dict = {}
        assigns = []
        for var in v1.global_variables():
            name = var.op.name
            if name.endswith(OPTIMIZER_SLOTS) or name not in saved:
                continue
            value = v1.placeholder(var.dtype.base_dtype, var.shape, name=f"pretrained/{name.replace(':', '_')}")
            assigns.append(v1.assign(var, value))
            self._init_feed_dict[value] = reader.get_tensor(name)
        self._init_op = tf.group(*assigns)
        self._global_step = v1.train.get_global_step()
        self._weights = list(v1.trainable_variables())

    def after_create_session(self, session, coord=None):
        if not self._is_initialized:
            session.run(self._init_op, feed_dict=self._init_feed_dict)
            self._is_initialized = True
            record("pretrained.loaded", int(session.run(self._global_step)))

    def end(self, session):
        values = session.run(self._weights)
        record("pretrained.end", int(session.run(self._global_step)), [rounded(v) for w in values for v in w.flat])


class StopOnGlobalStep(v1.train.SessionRunHook):
    """Requests a stop once a predicate of ``global_step`` holds: here, ``global_step >= at_least``.

    ``global_step`` is read in ``after_run`` with ``run_context.session.run``, as TensorFlow's own
    ``_MultiStepStopAtStepHook`` reads it ("cannot be retrieved via SessionRunArgs and before_run due to
    race condition"): the value after the step, exact.
    """

    def __init__(self, at_least):
        self._at_least = at_least

    def begin(self):
        self._global_step = v1.train.get_global_step()

    def after_run(self, run_context, run_values):
        step = int(run_context.session.run(self._global_step))
        if step >= self._at_least:
            record("predicate.stop", step)
            run_context.request_stop()


class PreemptOnce(v1.train.SessionRunHook):
    """Simulates a preemption: raises ``AbortedError`` in ``before_run`` once, when ``global_step`` is ``at``.

    TensorFlow's ``_RecoverableSession`` closes the session, creates a new one (restoring the latest
    checkpoint) and calls every hook's ``after_create_session`` again.
    """

    def __init__(self, at):
        self._at = at
        self._done = False

    def begin(self):
        self._global_step = v1.train.get_global_step()

    def after_create_session(self, session, coord):
        record("preempt.session", int(session.run(self._global_step)) if self._done else None)

    def before_run(self, run_context):
        if not self._done and int(run_context.session.run(self._global_step)) == self._at:
            self._done = True
            raise tf.errors.AbortedError(None, None, f"simulated preemption at step {self._at}")
