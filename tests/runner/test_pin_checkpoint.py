"""``pin_checkpoint``: a checkpoint's files hard-linked (or copied) out of reach of another run's max_to_keep."""

from __future__ import annotations

import errno
import os

import pytest

from hookrun.runner.run_dir import checkpoints
from hookrun.runner.run_dir.checkpoints import pin_checkpoint


def _checkpoint(directory, stem="model.ckpt-7", shards=2):
    directory.mkdir(exist_ok=True)
    (directory / f"{stem}.index").write_bytes(b"index")
    for i in range(shards):
        (directory / f"{stem}.data-{i:05d}-of-{shards:05d}").write_bytes(b"shard%d" % i)
    (directory / f"{stem}.meta").write_bytes(b"meta")  # not needed to read the values
    (directory / "model.ckpt-70.index").write_bytes(b"another checkpoint")  # same stem start: not taken
    return str(directory / stem)


def test_the_files_are_hard_linked_and_outlive_the_source_until_closed(tmp_path):
    prefix = _checkpoint(tmp_path / "run")
    pinned = pin_checkpoint(prefix, parent=str(tmp_path))
    names = sorted(os.listdir(pinned.directory))
    assert names == ["model.ckpt-7.data-00000-of-00002", "model.ckpt-7.data-00001-of-00002", "model.ckpt-7.index"]
    assert pinned.linked and pinned.source == prefix
    assert os.stat(pinned.prefix + ".index").st_ino == os.stat(prefix + ".index").st_ino
    for name in names:  # the source run deletes them (max_to_keep): the pinned names still read
        os.unlink(tmp_path / "run" / name)
    assert open(pinned.prefix + ".data-00001-of-00002", "rb").read() == b"shard1"
    assert oct(os.stat(pinned.directory).st_mode & 0o777) == "0o700"
    pinned.close()
    pinned.close()
    assert not pinned.directory.exists()


def test_where_links_are_refused_the_files_are_copied(tmp_path, monkeypatch):
    prefix = _checkpoint(tmp_path / "run", shards=1)

    def cross_device(src, dst, **kwargs):
        raise OSError(errno.EXDEV, "Invalid cross-device link")

    monkeypatch.setattr(checkpoints.os, "link", cross_device)
    pinned = pin_checkpoint(prefix, parent=str(tmp_path))
    assert not pinned.linked
    assert os.stat(pinned.prefix + ".index").st_ino != os.stat(prefix + ".index").st_ino
    assert open(pinned.prefix + ".data-00000-of-00001", "rb").read() == b"shard0"
    pinned.close()


@pytest.mark.parametrize("gone", ["model.ckpt-7.index", "model.ckpt-7.data-00001-of-00002"])
def test_a_checkpoint_with_a_file_gone_is_file_not_found_and_leaves_nothing(tmp_path, gone):
    prefix = _checkpoint(tmp_path / "run")
    os.unlink(tmp_path / "run" / gone)
    with pytest.raises(FileNotFoundError):
        pin_checkpoint(prefix, parent=str(tmp_path))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run"]


def test_a_file_deleted_while_it_is_being_linked_leaves_nothing(tmp_path, monkeypatch):
    prefix = _checkpoint(tmp_path / "run")
    link = os.link

    def deleted_meanwhile(src, dst, **kwargs):
        if ".data-00001" in src:
            os.unlink(src)
        link(src, dst)

    monkeypatch.setattr(checkpoints.os, "link", deleted_meanwhile)
    with pytest.raises(FileNotFoundError):
        pin_checkpoint(prefix, parent=str(tmp_path))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run"]
