"""The course's own writes into its tree, journaled, so that a watcher can tell them from anyone else's.

`make grade-class` watches what grading trusts (the course's code, the lab, the submissions) while a
submission is graded, and lays any change there at the door of the workers running at the time. A
build, a benchmark or another grading job that runs beside it writes into the same folders (cubins,
records): each such write is noted here, and the watcher excuses a change the journal explains.

    note(path)            after the course has put `path` in place whole: a line with the path, a digest
                          of its bytes, the process and whether it belongs to a grading worker
    note_temporary(path)  before a tool writes `path` as a scratch file that the course renames or
                          deletes (nvcc's -o target): a line with no digest
    digest(path)          the digest the journal uses (None for a file that cannot be read)
    Journal()             the lines written since it was made, and those of the LOOKBACK_S before (a
                          build that began before a class noted its scratch file then): .read() takes in new lines;
                          .explains(path, digest) is True when a process that grades no submission
                          noted `path` with these bytes (or as a scratch file); a folder ("dir/") is
                          explained by such a note of a path inside it (the course notes a file
                          before it makes the file's folder)

The journal is build/writes.jsonl at the course's root (git ignores build/). A grading worker has
GRADE_WORKER in its environment: what it notes is never excused, so a submission cannot launder a
write through the course's own code. Lines are appended with O_APPEND in one write each (atomic for
lines this short), so concurrent processes never interleave them. A process that may not write the
journal (under bubblewrap the course is read-only) notes nothing, and loses nothing by it: there it
cannot write into the watched folders either.
"""
import hashlib
import json
import os
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
JOURNAL = ROOT / "build" / "writes.jsonl"
WORKER_VAR = "GRADE_WORKER"
# A Journal made now also takes the lines of the last LOOKBACK_S (each line says when it was written):
# an nvcc run that began before `make grade-class` noted its scratch file (-o target) before the class
# watched, and its rename then showed as a removal nobody explained (CI, 2026-12-05). An nvcc run is
# stopped after build.NVCC_TIMEOUT_S (900 s); LOOKBACK_BYTES bounds what is read of a long journal.
LOOKBACK_S = 1200
LOOKBACK_BYTES = 4 << 20


def digest(path):
    h = hashlib.blake2b(digest_size=16)
    try:
        with open(path, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                h.update(block)
    except OSError:
        return None
    return h.hexdigest()


def _append(entry, journal=None):
    journal = Path(journal or JOURNAL)
    line = (json.dumps(entry, separators=(",", ":")) + "\n").encode()
    try:
        journal.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(journal, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    except OSError:
        return
    try:
        os.write(fd, line)
    except OSError:
        pass
    finally:
        os.close(fd)


def note(path, journal=None):
    path = Path(path).resolve()
    _append({"path": str(path), "digest": digest(path), "pid": os.getpid(),
             "worker": os.environ.get(WORKER_VAR) or None, "time": time.time()}, journal)


def note_temporary(path, journal=None):
    _append({"path": str(Path(path).resolve()), "digest": None, "temporary": True, "pid": os.getpid(),
             "worker": os.environ.get(WORKER_VAR) or None, "time": time.time()}, journal)


class Journal:
    """The journal's lines from the moment this object is made on, and those of the LOOKBACK_S before."""

    def __init__(self, journal=None, lookback_s=LOOKBACK_S):
        self.path = Path(journal or JOURNAL)
        try:
            self.offset = self.path.stat().st_size
        except OSError:
            self.offset = 0
        self.entries = {}           # path -> set of digests (None: a scratch file) noted by non-workers
        if self.offset and lookback_s > 0:
            since, end = time.time() - lookback_s, self.offset
            self.offset = max(0, end - LOOKBACK_BYTES)
            self.read(since=since, until=end)

    def read(self, since=None, until=None):
        """Take in the whole lines from self.offset on (to `until`); with `since`, only lines written
        since then (and a first line cut by a mid-line offset is dropped)."""
        try:
            with open(self.path, "rb") as f:
                f.seek(self.offset)
                data = f.read() if until is None else f.read(until - self.offset)
        except OSError:
            return
        start = 0
        if since is not None and self.offset:
            start = data.find(b"\n") + 1          # a mid-line start: that line is not whole
        end = data.rfind(b"\n") + 1            # a line still being written waits for the next read
        self.offset += end
        for line in data[start:end].splitlines():
            try:
                e = json.loads(line)
            except ValueError:
                continue
            if e.get("worker") or (since is not None and not e.get("time", 0) >= since):
                continue
            self.entries.setdefault(e.get("path"), set()).add(e.get("digest"))

    def explains(self, path, file_digest):
        self.read()
        path = str(path)
        if path.endswith("/"):          # a folder (a watcher's "dir/"): made when a noted file went into it
            return any(p and p.startswith(path) for p in self.entries)
        noted = self.entries.get(path)
        if not noted:
            return False
        return None in noted or file_digest in noted
