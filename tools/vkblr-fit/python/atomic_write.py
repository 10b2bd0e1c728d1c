"""Files written atomically (standard library only): what every Python tool of the
project writes goes through write_file_atomic.

    write_file_atomic(path, write)   write(file object) on a temporary file beside
                                     `path`, synced, then renamed over it (mode 0644,
                                     as vkblr's own files): a reader sees the old file
                                     or the whole new one; on failure the temporary
                                     goes and `path` is untouched
"""
from __future__ import annotations

import os
import tempfile


def write_file_atomic(path: str, write) -> None:
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix="." + os.path.basename(path) + ".", dir=directory)
    try:
        with os.fdopen(fd, "wb") as f:
            write(f)
            f.flush()
            os.fchmod(f.fileno(), 0o644)
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
