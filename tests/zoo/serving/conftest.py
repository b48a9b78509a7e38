"""One tiny exported translator and one server over it, shared by the
serving tests of a process (each starts in tens of seconds, mostly tracing
the decoding loops)."""

import shutil

import keras
import pytest

if keras.backend.backend() != "tensorflow":
    pytest.skip("serving runs SavedModels: TensorFlow", allow_module_level=True)

from tests.zoo.serving import exports  # noqa: E402
from zoo.serving import ModelServer  # noqa: E402

NAME = "translator"


@pytest.fixture(scope="session")
def translator_base(tmp_path_factory):
    """`<base>/1` and a copy as `<base>/2`: the server must pick 2."""
    base = tmp_path_factory.mktemp("served") / NAME
    path = exports.export_translator(base)
    shutil.copytree(path, base / "2")
    return base


@pytest.fixture(scope="session")
def server(translator_base):
    server = ModelServer(
        str(translator_base / "2"), 2, NAME, port=0, request_timeout=2.0,
        max_body_bytes=1 << 20,
    ).start().load()  # fmt: skip
    yield server
    server.stop(grace=5)
