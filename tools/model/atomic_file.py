"""Files written atomically, for the tools of tools/model/ (standard library only).

    write_bytes_atomic(path, data)   data to a temporary file beside `path`, synced,
                                     then renamed over it (mode 0644): a reader sees
                                     the old file or the whole new one; on failure
                                     the temporary goes and `path` is untouched
    write_json_atomic(path, value)   the same with JSON (indented, UTF-8, a final newline)

Both go through the project's one atomic writer
(tools/vkblr-fit/python/atomic_write.py, standard library only too).
"""
from __future__ import annotations

import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "vkblr-fit", "python"))
from atomic_write import write_file_atomic  # noqa: E402


def write_bytes_atomic(path: str, data: bytes) -> None:
    write_file_atomic(path, lambda f: f.write(data))


def write_json_atomic(path: str, value) -> None:
    write_bytes_atomic(path, (json.dumps(value, indent=1, ensure_ascii=False) + "\n").encode("utf-8"))
