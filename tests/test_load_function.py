"""common.kernels.load_function asks for the shared-memory opt-in exactly when a launch needs it (no GPU:
a stand-in driver records the calls). Found on the H200: a c6 build with 48 KB of dynamic memory and
a 1 KB static array failed to launch ("invalid argument") because only the dynamic part was counted."""
import sys
import types

import pytest

from common import kernels

OPT_IN = "max_dyn_smem"


class FakeFunction:
    def __init__(self, static_bytes):
        self.shared_size_bytes = static_bytes
        self.attributes = {}

    def set_attribute(self, attr, value):
        self.attributes[attr] = value

    def prepare(self, signature):
        return self


@pytest.fixture
def load(monkeypatch, tmp_path):
    driver = types.SimpleNamespace(function_attribute=types.SimpleNamespace(MAX_DYNAMIC_SHARED_SIZE_BYTES=OPT_IN))
    monkeypatch.setitem(sys.modules, "pycuda", types.SimpleNamespace(driver=driver))
    monkeypatch.setitem(sys.modules, "pycuda.driver", driver)

    def run(static_bytes, dynamic_bytes, name):
        cubin = tmp_path / f"{name}.cubin"
        cubin.write_bytes(b"")
        func = FakeFunction(static_bytes)
        monkeypatch.setattr(kernels, "_module", lambda path, mtime: types.SimpleNamespace(get_function=lambda e: func))
        kernels.load_function.cache_clear()
        return kernels.load_function(str(cubin), "entry", dynamic_bytes, "iiiPPP").attributes

    return run


def test_static_plus_dynamic_over_48_kb_opts_in(load):
    assert load(1024, 48 * 1024, "a") == {OPT_IN: 48 * 1024}


def test_dynamic_alone_over_48_kb_opts_in(load):
    assert load(0, 96 * 1024, "b") == {OPT_IN: 96 * 1024}


def test_under_48_kb_asks_for_nothing(load):
    assert load(1024, 47 * 1024, "c") == {}
