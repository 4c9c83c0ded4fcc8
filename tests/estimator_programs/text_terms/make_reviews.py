"""Tiny deterministic review data for the ``text_terms`` program (the course exercise downloads its own).

``write_reviews(directory)`` writes ``train.tfrecord`` (192 reviews) and ``eval.tfrecord`` (64) of
``tf.train.Example`` protos: ``terms`` (2-9 byte strings, some not in ``terms.txt``) and ``labels`` (one float,
1.0 for a positive review). The same bytes on every machine (NumPy's ``RandomState``).
"""

from pathlib import Path

import numpy as np

POSITIVE = ["great", "best", "fun", "beautiful", "excellent", "loved", "amazing", "enjoyed", "brilliant"]
NEGATIVE = ["bad", "worst", "poor", "boring", "awful", "terrible", "waste", "horrible", "dull"]
NEUTRAL = ["movie", "film", "the", "a", "plot", "actor", "zebra", "quixotic"]  # the last two are not in terms.txt
SIZES = {"train": 192, "eval": 64}


def reviews(split):
    """``[(terms, label)]`` for ``split`` "train" or "eval": terms a list of bytes, label 0.0 or 1.0."""
    rng = np.random.RandomState({"train": 0, "eval": 1}[split])
    found = []
    for _ in range(SIZES[split]):
        label = float(rng.randint(0, 2))
        opinion = POSITIVE if label else NEGATIVE
        words = [opinion[rng.randint(len(opinion))] for _ in range(rng.randint(1, 4))]
        words += [NEUTRAL[rng.randint(len(NEUTRAL))] for _ in range(rng.randint(1, 6))]
        rng.shuffle(words)
        found.append(([word.encode() for word in words], label))
    return found


def write_reviews(directory):
    """Write ``train.tfrecord`` and ``eval.tfrecord`` into ``directory``; return their paths by split."""
    import tensorflow as tf

    paths = {}
    for split in SIZES:
        path = Path(directory) / f"{split}.tfrecord"
        with tf.io.TFRecordWriter(str(path)) as writer:
            for terms, label in reviews(split):
                example = tf.train.Example()
                example.features.feature["terms"].bytes_list.value.extend(terms)
                example.features.feature["labels"].float_list.value.append(label)
                writer.write(example.SerializeToString())
        paths[split] = path
    return paths
