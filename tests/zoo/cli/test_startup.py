"""`zoo.cli.startup`: TensorFlow's start-up lines held back, the others kept."""

import os

from zoo.cli.startup import STARTUP_LOG_PREFIXES, startup_lines_held


def test_only_the_start_up_lines_are_held_back(capfd):
    lines = [
        f"{prefix} something the runtime says\n" for prefix in STARTUP_LOG_PREFIXES
    ]
    kept = ["a warning the user should read\n", "I0000x is not a log prefix\n"]
    with startup_lines_held():
        # Written to the file descriptor, as a C++ runtime writes them.
        for line in [lines[0], kept[0], *lines[1:], kept[1]]:
            os.write(2, line.encode())
    assert capfd.readouterr().err == "".join(kept)


def test_the_compilation_cache_directory_follows_the_environment(monkeypatch):
    from zoo.cli import startup

    monkeypatch.setenv(startup.CACHE_VARIABLE, "/somewhere/cache")
    assert startup.compilation_cache_directory() == "/somewhere/cache"
    for off in ("off", "0", ""):
        monkeypatch.setenv(startup.CACHE_VARIABLE, off)
        assert startup.compilation_cache_directory() is None
    monkeypatch.delenv(startup.CACHE_VARIABLE)
    monkeypatch.setenv("XDG_CACHE_HOME", "/home/x/.cache")
    assert startup.compilation_cache_directory() == "/home/x/.cache/keras-seq/jax"


def test_jax_keeps_a_commands_compiled_loops_for_the_next_one(tmp_path):
    # A fresh JAX process that decodes writes its executables to the cache
    # directory; one on another backend is left alone.
    import subprocess
    import sys

    script = (
        "import sys, numpy as np\n"
        "from zoo.cli import startup\n"
        "print(startup.use_compilation_cache(sys.argv[1]))\n"
        "import zoo\n"
        "model = zoo.build_translator('tiny', vocabulary_size=40)\n"
        "model.generate(np.ones((2, 5), 'int32'), max_new_tokens=4)\n"
    )
    cache = tmp_path / "cache"
    for backend, used in (("tensorflow", False), ("jax", True)):
        env = dict(
            os.environ,
            KERAS_BACKEND=backend,
            JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS="0",
        )
        out = subprocess.run(
            [sys.executable, "-c", script, str(cache)],
            env=env, capture_output=True, text=True, check=True,
        ).stdout  # fmt: skip
        assert out.splitlines()[0] == (str(cache) if used else "None")
        assert (cache.exists() and any(cache.iterdir())) == used
