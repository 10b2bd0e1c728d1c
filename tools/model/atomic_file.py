"""Files written atomically, for the tools of tools/model/ (standard library only).

    write_bytes_atomic(path, data)   data to a temporary file beside `path`, synced,
                                     then renamed over it (mode 0644): a reader sees
                                     the old file or the whole new one; on failure
                                     the temporary goes and `path` is untouched
    write_json_atomic(path, value)   the same with JSON (indented, UTF-8, a final newline)
"""
from __future__ import annotations

import json
import os
import tempfile


def write_bytes_atomic(path: str, data: bytes) -> None:
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix="." + os.path.basename(path) + ".", dir=directory)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fchmod(f.fileno(), 0o644)
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def write_json_atomic(path: str, value) -> None:
    write_bytes_atomic(path, (json.dumps(value, indent=1, ensure_ascii=False) + "\n").encode("utf-8"))
