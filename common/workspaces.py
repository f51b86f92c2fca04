"""Device scratch buffers that a kernel's launch hook keeps between calls (split-K partials, stream-K
partials and flags), so that a timed call allocates nothing.

    ws = Workspaces(keep=8)            at most `keep` buffers kept (None: no limit); the oldest is freed
                                       first, after a synchronize (no launch may still use it)
    ws.get(key, words, zeroed=False)   the buffer for `key`, allocated as `words` 32-bit words on first
                                       use; zeroed=True clears it once then (counters, flags: every launch
                                       must leave them zero again)
    ws[key], key in ws, len(ws)        the buffers kept (tests read them)
    ws.release()                       free them all (after a synchronize)
"""


class Workspaces:
    def __init__(self, keep=None, alloc=None, zero=None, synchronize=None):
        self.keep = keep
        self._buffers = {}             # key -> allocation, oldest first
        self._alloc, self._zero, self._sync = alloc, zero, synchronize   # tests pass fakes; PyCUDA's otherwise

    def _driver(self):
        if self._alloc is None:
            import pycuda.driver as cuda
            self._alloc = lambda nbytes: cuda.mem_alloc(nbytes)
            self._zero = lambda buf, words: cuda.memset_d32(buf, 0, words)
            self._sync = cuda.Context.synchronize
        return self._alloc, self._zero, self._sync

    def get(self, key, words, zeroed=False):
        buf = self._buffers.get(key)
        if buf is None:
            alloc, zero, sync = self._driver()
            while self.keep is not None and len(self._buffers) >= self.keep:
                sync()
                self._buffers.pop(next(iter(self._buffers))).free()
            buf = alloc(words * 4)
            if zeroed:
                zero(buf, words)
            self._buffers[key] = buf
        return buf

    def __getitem__(self, key):
        return self._buffers[key]

    def __contains__(self, key):
        return key in self._buffers

    def __len__(self):
        return len(self._buffers)

    def release(self):
        if self._buffers:
            self._driver()[2]()
        for buf in self._buffers.values():
            buf.free()
        self._buffers.clear()
