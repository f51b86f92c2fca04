"""common/workspaces.py without a GPU: fake allocations stand in for PyCUDA's."""
from common.workspaces import Workspaces


class _Buf:
    def __init__(self, log, nbytes):
        self.log, self.nbytes, self.freed = log, nbytes, False

    def free(self):
        self.freed = True
        self.log.append(("free", self.nbytes))


def _fake(keep=None):
    log = []
    ws = Workspaces(keep, alloc=lambda n: (log.append(("alloc", n)), _Buf(log, n))[1],
                    zero=lambda buf, words: log.append(("zero", words)), synchronize=lambda: log.append(("sync",)))
    return ws, log


def test_a_kept_buffer_is_allocated_once_and_zeroed_only_when_asked():
    ws, log = _fake()
    a = ws.get("a", 10, zeroed=True)
    assert ws.get("a", 10, zeroed=True) is a and ws["a"] is a and "a" in ws
    b = ws.get("b", 3)
    assert log == [("alloc", 40), ("zero", 10), ("alloc", 12)] and b is not a and len(ws) == 2


def test_the_oldest_is_freed_after_a_synchronize_when_more_than_keep():
    ws, log = _fake(keep=2)
    first = ws.get(1, 1)
    ws.get(2, 2)
    ws.get(3, 3)
    assert first.freed and 1 not in ws and len(ws) == 2
    assert log[-3:] == [("sync",), ("free", 4), ("alloc", 12)]


def test_release_frees_everything():
    ws, log = _fake()
    bufs = [ws.get(k, 1) for k in range(3)]
    ws.release()
    assert all(b.freed for b in bufs) and len(ws) == 0 and ("sync",) in log
