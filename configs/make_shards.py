"""Write the bundled California housing CSV as gzip'd CSV shards (for ``california_housing_sharded.yaml``).

Usage: ``python configs/make_shards.py [OUT_DIR] [--shards N] [--tfrecord]``; default
``configs/data/california_shards``, 4 shards: ``part-00000-of-00004.csv.gz``, ... (contiguous rows;
with ``--tfrecord`` also ``.tfrecord.gz`` shards of ``tf.train.Example``). No third-party package
beyond TensorFlow for ``--tfrecord``.
"""

from __future__ import annotations

import argparse
import csv
import gzip
from pathlib import Path

HERE = Path(__file__).resolve().parent
SOURCE = HERE / "data" / "california_housing.csv"


def write_csv_shards(out_dir: Path, shards: int, source: Path = SOURCE) -> list[Path]:
    """Split ``source`` into ``shards`` gzip'd CSV files of contiguous rows, each with the header."""
    with source.open(newline="", encoding="utf-8") as handle:
        rows = list(csv.reader(handle))
    header, body = rows[0], rows[1:]
    out_dir.mkdir(parents=True, exist_ok=True)
    per = -(-len(body) // shards)
    paths = []
    for index in range(shards):
        path = out_dir / f"part-{index:05d}-of-{shards:05d}.csv.gz"
        with gzip.open(path, "wt", encoding="utf-8", newline="") as out:
            writer = csv.writer(out, lineterminator="\n")
            writer.writerow(header)
            writer.writerows(body[index * per : (index + 1) * per])
        paths.append(path)
    return paths


def write_tfrecord_shards(out_dir: Path, shards: int, source: Path = SOURCE) -> list[Path]:
    """The same rows as GZIP TFRecord files of ``tf.train.Example`` (empty cells: the feature is left out)."""
    import tensorflow as tf

    with source.open(newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    out_dir.mkdir(parents=True, exist_ok=True)
    per = -(-len(rows) // shards)
    options = tf.io.TFRecordOptions(compression_type="GZIP")
    paths = []
    for index in range(shards):
        path = out_dir / f"part-{index:05d}-of-{shards:05d}.tfrecord.gz"
        with tf.io.TFRecordWriter(str(path), options) as writer:
            for row in rows[index * per : (index + 1) * per]:
                feature = {}
                for name, cell in row.items():
                    if cell == "":
                        continue
                    try:
                        feature[name] = tf.train.Feature(float_list=tf.train.FloatList(value=[float(cell)]))
                    except ValueError:
                        feature[name] = tf.train.Feature(bytes_list=tf.train.BytesList(value=[cell.encode()]))
                writer.write(tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString())
        paths.append(path)
    return paths


def main() -> None:
    """Parse the arguments and write the shards."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out_dir", nargs="?", type=Path, default=HERE / "data" / "california_shards")
    parser.add_argument("--shards", type=int, default=4)
    parser.add_argument("--tfrecord", action="store_true", help="also write .tfrecord.gz shards")
    args = parser.parse_args()
    for path in write_csv_shards(args.out_dir, args.shards):
        print(path)
    if args.tfrecord:
        for path in write_tfrecord_shards(args.out_dir, args.shards):
            print(path)


if __name__ == "__main__":
    main()
