"""Executes the tutorials and writes their paired notebooks with outputs.

Each `tutorials/NN_name.py` (jupytext `py:percent`) is the source; this script
turns it into `tutorials/NN_name.ipynb`, runs every cell in a fresh kernel and
stores the outputs, so the notebooks on disk show the full-mode figures.

    python scripts/run_tutorials.py                 # every tutorial, full mode
    python scripts/run_tutorials.py 05 06 --quick   # a few, in quick mode
"""

import argparse
import os
import pathlib
import sys
import time

import jupytext
import nbclient

TUTORIALS = pathlib.Path(__file__).resolve().parent.parent / "tutorials"


def run(source, quick, timeout):
    notebook = jupytext.read(source)
    notebook.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    os.environ["KERAS_SEQ_QUICK"] = "1" if quick else "0"
    os.environ.setdefault("KERAS_BACKEND", "tensorflow")
    client = nbclient.NotebookClient(
        notebook,
        timeout=timeout,
        kernel_name="python3",
        resources={"metadata": {"path": str(TUTORIALS)}},
    )
    start = time.time()
    client.execute()
    jupytext.write(notebook, source.with_suffix(".ipynb"))
    return time.time() - start


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("only", nargs="*", help="tutorial number prefixes")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--timeout", type=int, default=1800, help="seconds per cell")
    args = parser.parse_args(argv)
    sources = sorted(TUTORIALS.glob("[0-9][0-9]_*.py"))
    if args.only:
        sources = [s for s in sources if s.name[:2] in args.only]
    for source in sources:
        seconds = run(source, args.quick, args.timeout)
        print(f"{source.name}: {seconds:.0f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
