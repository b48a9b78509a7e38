"""`allocator.tune_allocator`: large freed blocks stay with the process.

The setting is process-wide, so each check runs in a fresh interpreter.
"""

import ctypes
import ctypes.util
import json
import subprocess
import sys

import pytest

from zoo.recipes import runtime

# In a child process: allocate and free 64 MB blocks with numpy (whose
# buffers come from malloc), on the main thread and on another, and report
# how many bytes glibc held in mmap'd blocks while one was alive, and how
# many free bytes it kept afterwards.
_PROBE = """
import ctypes, json, sys
import numpy as np

class MallInfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in (
        "arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks",
        "fsmblks", "uordblks", "fordblks", "keepcost")]

libc = ctypes.CDLL("libc.so.6")
libc.mallinfo2.restype = MallInfo2
tuned = None
if sys.argv[1] == "tuned":
    from zoo.recipes import runtime
    tuned = runtime.tune_allocator()
def allocate(held):
    for _ in range(3):
        block = np.ones(64 << 20, np.uint8)
        held.append(libc.mallinfo2().hblkhd)
        del block

held, off_main = [], []
allocate(held)
kept_free = libc.mallinfo2().fordblks
# XLA allocates on its own threads, whose glibc arenas are separate.
import threading
thread = threading.Thread(target=allocate, args=(off_main,))
thread.start()
thread.join()
print(json.dumps({"tuned": tuned, "mmapped": held, "kept_free": kept_free,
                  "mmapped_off_main": off_main}))
"""


def _glibc():
    try:
        return hasattr(ctypes.CDLL(ctypes.util.find_library("c")), "mallinfo2")
    except OSError:
        return False


def _probe(mode):
    out = subprocess.run(
        [sys.executable, "-c", _PROBE, mode],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.skipif(not _glibc(), reason="needs glibc (mallinfo2)")
def test_large_blocks_come_from_the_heap_and_stay():
    default = _probe("default")
    tuned = _probe("tuned")
    block = 64 << 20
    # By default every 64 MB block is a fresh mmap, returned when freed.
    assert all(held >= block for held in default["mmapped"])
    assert all(held >= block for held in default["mmapped_off_main"])
    assert default["kept_free"] < block
    # Tuned: served from the heap on every thread, and the freed block is
    # kept for reuse.
    assert tuned["tuned"] is True
    assert all(held < block for held in tuned["mmapped"])
    assert all(held < block for held in tuned["mmapped_off_main"])
    assert tuned["kept_free"] >= block


@pytest.mark.parametrize(
    "threshold, message",
    [(1.5e9, "must be an int"), (True, "must be an int"), (1024, r"\[1 MiB, 2 GiB\)")],
)
def test_bad_threshold_is_refused(threshold, message):
    with pytest.raises(ValueError, match=message):
        runtime.tune_allocator(threshold)
