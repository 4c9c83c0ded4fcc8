"""Tiny deterministic stand-in for MNIST (the original program downloads it; hookrun's tests never download).

Each class ``c`` (0-9) is a 28x28 image with a bright bar at a class-specific place, plus uniform noise:
learnable in a few steps, and identical on every machine (NumPy's ``RandomState``).
"""

import numpy as np

SIZES = {"train": 256, "eval": 64}
SEEDS = {"train": 0, "eval": 1}


def load_digits(split):
    """``(images, labels)``: float32 [n, 784] in [0, 1] and int32 [n] class ids, for ``split`` "train" or "eval"."""
    rng = np.random.RandomState(SEEDS[split])
    n = SIZES[split]
    labels = rng.randint(0, 10, size=n).astype(np.int32)
    images = rng.uniform(0.0, 0.3, size=(n, 28, 28)).astype(np.float32)
    for i, label in enumerate(labels):
        row = 2 + 2 * label
        images[i, row : row + 2, 4:24] = 1.0
    return images.reshape(n, 784), labels
