"""The census sample's entry point in TensorFlow 1.x (TF 1.15): flags, then ``train_and_evaluate``.

Written for hookrun's tests after GoogleCloudPlatform/cloudml-samples ``census/customestimator/trainer/task.py``
(see SOURCE.md): the input functions as lambdas over the flags, a ``TrainSpec`` with ``max_steps``, an
``EvalSpec`` with a ``FinalExporter`` and a name, the model_fn from ``generate_model_fn``, ``model_dir`` from
``--job-dir``.
"""

import argparse

import model
import tensorflow.compat.v1 as tf

from hookrun import estimator as tf_estimator


def train_and_evaluate(args):
    """Run the training and evaluate using the high level API."""
    train_input = lambda: model.input_fn(args.train_files, num_epochs=args.num_epochs,  # noqa: E731
                                         batch_size=args.train_batch_size)
    eval_input = lambda: model.input_fn(args.eval_files, batch_size=args.eval_batch_size,  # noqa: E731
                                        shuffle=False, num_epochs=1)

    train_spec = tf_estimator.TrainSpec(train_input, max_steps=args.train_steps)
    exporter = tf_estimator.FinalExporter("census", model.SERVING_FUNCTIONS[args.export_format])
    eval_spec = tf_estimator.EvalSpec(eval_input, steps=args.eval_steps, exporters=[exporter], name="census-eval")

    model_fn = model.generate_model_fn(
        embedding_size=args.embedding_size,
        hidden_units=[max(2, int(args.first_layer_size * args.scale_factor**i)) for i in range(args.num_layers)],
        learning_rate=args.learning_rate,
    )
    run_config = tf_estimator.RunConfig(save_checkpoints_steps=args.checkpoint_steps)
    estimator = tf_estimator.Estimator(model_fn=model_fn, model_dir=args.job_dir, config=run_config)
    tf_estimator.train_and_evaluate(estimator, train_spec, eval_spec)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--train-files", nargs="+", default=["adult.data.csv"])
    parser.add_argument("--eval-files", nargs="+", default=["adult.test.csv"])
    parser.add_argument("--job-dir", default="/tmp/census-customestimator")
    parser.add_argument("--num-epochs", type=int)
    parser.add_argument("--train-batch-size", type=int, default=40)
    parser.add_argument("--eval-batch-size", type=int, default=40)
    parser.add_argument("--embedding-size", type=int, default=8)
    parser.add_argument("--learning-rate", type=float, default=0.1)
    parser.add_argument("--first-layer-size", type=int, default=100)
    parser.add_argument("--num-layers", type=int, default=4)
    parser.add_argument("--scale-factor", type=float, default=0.7)
    parser.add_argument("--train-steps", type=int, default=100)
    parser.add_argument("--checkpoint-steps", type=int, default=50)
    parser.add_argument("--eval-steps", type=int, default=None)
    parser.add_argument("--export-format", choices=["JSON"], default="JSON")
    parser.add_argument("--verbosity", choices=["DEBUG", "ERROR", "FATAL", "INFO", "WARN"], default="INFO")
    args, _ = parser.parse_known_args()
    tf.logging.set_verbosity(args.verbosity)
    train_and_evaluate(args)
