"""The C library's allocator, tuned for the large buffers of a training step.

Kept apart from `zoo.recipes.runtime` because it needs neither TensorFlow
nor Keras: the benchmark workers call it on machines that have only JAX.
"""

import ctypes
import ctypes.util

# glibc's mallopt(3) parameters.
_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3
_M_ARENA_MAX = -8
ALLOCATOR_THRESHOLD = 1 << 30  # bytes


def tune_allocator(threshold=ALLOCATOR_THRESHOLD):
    """Lets glibc's malloc keep large freed blocks for the next step to reuse.

    By default glibc serves every allocation over 32 MB with a fresh
    `mmap` and returns it to the system when it is freed, so each training
    step of a translator pays page faults to touch its (B, T, V) logits and
    their gradient again. Here allocations up to `threshold` bytes come
    from the heap and up to `threshold` free bytes stay with the process
    (`M_MMAP_THRESHOLD`, `M_TRIM_THRESHOLD`), and all threads share the
    main heap (`M_ARENA_MAX` 1: a per-thread arena cannot hold a block over
    64 MB, so without it JAX's buffers, allocated off the main thread,
    would still be fresh maps). The process's resident memory can stay up
    to `threshold` above what it uses; `benchmarks/README.md` measures the
    gain.

    The setting is process-wide and applies to every allocation after the
    call; the `keras-seq` commands and the benchmark workers make it at
    start-up. TensorFlow recommends tcmalloc for the same reason; this
    needs no extra library.

    Args:
        threshold: int, bytes, in [1 MiB, 2 GiB).

    Returns:
        True where the C library took the setting (glibc), False elsewhere.
    """
    if isinstance(threshold, bool) or not isinstance(threshold, int):
        raise ValueError(f"`threshold` must be an int; received {threshold!r}.")
    if not (1 << 20) <= threshold < (1 << 31):
        raise ValueError(
            "`threshold` must be in [1 MiB, 2 GiB) bytes (a C int); "
            f"received {threshold}."
        )
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False  # Not glibc (macOS, musl without mallopt): nothing to do.
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    took = [
        mallopt(_M_MMAP_THRESHOLD, threshold),
        mallopt(_M_TRIM_THRESHOLD, threshold),
        mallopt(_M_ARENA_MAX, 1),
    ]
    return all(took)
