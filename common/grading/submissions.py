"""A class's submissions: found in a folder, unpacked safely, copied into a private folder each.

    find(folder)                      -> [Submission]: each subfolder, .tar, .tar.gz, .tgz or .zip one
                                      student's workspace, named after it (hidden entries skipped)
    stage(g, sub, dest)               -> (workspace folder, sha256) in `dest`; raises Refused
    check_includes(g, workspace)      raises Refused for an #include the grader must not follow
    Refused                           why a submission is not graded (an unsafe archive, a link out
                                      of it, an #include of a reference kernel): its row says so

Submissions are untrusted. An archive is read member by member and refused whole when one member is
an absolute path, has a `..` component, is a device, FIFO or socket, or a link (symbolic or hard)
pointing outside the archive; it may hold at most MAX_FILES files and MAX_BYTES bytes in all. A
folder is copied file by file: a symbolic link is followed only when it points inside the folder.
One top folder in an archive (alice.tar.gz holding alice/...) is looked through.
"""
import hashlib
import os
import re
import shutil
import stat
import tarfile
import zipfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from ..errors import CourseError

MAX_FILES = 2000
MAX_BYTES = 64 << 20              # 64 MiB unpacked: a workspace is a few hundred kB
ARCHIVES = (".tar.gz", ".tgz", ".tar", ".zip")
_NAME_OK = re.compile(r"[^A-Za-z0-9._@+-]+")


class Refused(Exception):
    """A submission that is not graded, with the reason (one line)."""


@dataclass
class Submission:
    name: str                     # the student's name: the folder's, or the archive's without its suffix
    path: Path
    kind: str                     # "folder", "tar" or "zip"

    def to_json(self):
        return {"name": self.name, "path": str(self.path), "kind": self.kind}


def _archive_suffix(name):
    return next((s for s in ARCHIVES if name.lower().endswith(s)), None)


def safe_name(raw):
    name = _NAME_OK.sub("_", raw).strip("._") or "unnamed"
    return name[:80]


def find(folder):
    """Every submission in `folder`, sorted by name. Two entries of one name: CourseError."""
    folder = Path(folder)
    if not folder.is_dir():
        raise CourseError(f"there is no submissions folder at {folder}",
                          hint="SUBMISSIONS=dir: one subfolder (a workspace) or one .tar.gz/.tgz/.tar/.zip per student")
    subs, ignored = {}, []
    for p in sorted(folder.iterdir()):
        if p.name.startswith("."):
            continue
        suffix = _archive_suffix(p.name)
        if p.is_dir() and not p.is_symlink():
            sub = Submission(safe_name(p.name), p, "folder")
        elif suffix and p.is_file() and not p.is_symlink():
            sub = Submission(safe_name(p.name[:-len(suffix)]), p, "zip" if suffix == ".zip" else "tar")
        else:
            ignored.append(p.name)
            continue
        if sub.name in subs:
            raise CourseError(f"two submissions are named {sub.name}: {subs[sub.name].path.name} and {p.name}",
                              hint="rename one of them: each student's folder or archive needs a name of its own")
        subs[sub.name] = sub
    if not subs:
        raise CourseError(f"{folder} holds no submissions"
                          + (f" (ignored: {', '.join(ignored[:5])})" if ignored else ""),
                          hint="one subfolder (a workspace) or one .tar.gz/.tgz/.tar/.zip per student")
    return list(subs.values()), ignored


# ---------------------------------------------------------------------------------------------
# Unpacking and copying
# ---------------------------------------------------------------------------------------------

def _member_path(name):
    """The member's path as parts, or Refused: absolute or with `..`."""
    p = PurePosixPath(name.replace("\\", "/"))
    if p.is_absolute() or re.match(r"^[A-Za-z]:", name):
        raise Refused(f"unsafe archive: member {name!r} is an absolute path")
    if ".." in p.parts:
        raise Refused(f"unsafe archive: member {name!r} climbs out of the archive (..)")
    return [x for x in p.parts if x not in ("", ".")]


def _inside(parts_of_link, target):
    """Does a link at `parts_of_link` pointing at `target` (relative) stay inside the archive?"""
    if target.startswith("/"):
        return False
    depth = len(parts_of_link) - 1
    for x in PurePosixPath(target).parts:
        depth += -1 if x == ".." else (0 if x == "." else 1)
        if depth < 0:
            return False
    return True


def _budget(count, total):
    if count > MAX_FILES:
        raise Refused(f"too many files: more than {MAX_FILES} (a workspace has a dozen)")
    if total > MAX_BYTES:
        raise Refused(f"too large: more than {MAX_BYTES >> 20} MiB unpacked (a workspace is a few hundred kB)")


def _extract_tar(path, dest):
    try:
        tf = tarfile.open(path)
    except (tarfile.TarError, OSError, EOFError) as e:
        raise Refused(f"not a readable tar archive: {e}") from None
    with tf:
        try:
            members = tf.getmembers()
        except (tarfile.TarError, OSError, EOFError) as e:
            raise Refused(f"a damaged tar archive: {e}") from None
        files, total = [], 0
        for m in members:
            parts = _member_path(m.name)
            if m.issym() or m.islnk():
                target = m.linkname
                ok = _inside(parts, target) if m.issym() else bool(_member_path(target))
                if not ok:
                    kind = "symbolic" if m.issym() else "hard"
                    raise Refused(f"unsafe archive: {m.name!r} is a {kind} link to {target!r}, outside the archive")
                continue                        # a link inside: not needed, not copied
            if m.isdev() or m.isfifo() or not (m.isfile() or m.isdir()):
                raise Refused(f"unsafe archive: {m.name!r} is a device, FIFO or other special file")
            if m.isfile() and parts:
                total += m.size
                files.append((m, parts))
        _budget(len(files), total)
        for m, parts in files:
            out = dest.joinpath(*parts)
            out.parent.mkdir(parents=True, exist_ok=True)
            src = tf.extractfile(m)
            with src, open(out, "wb") as f:
                shutil.copyfileobj(src, f)


def _extract_zip(path, dest):
    try:
        zf = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError) as e:
        raise Refused(f"not a readable zip archive: {e}") from None
    with zf:
        files, total = [], 0
        for info in zf.infolist():
            parts = _member_path(info.filename)
            mode = info.external_attr >> 16
            if stat.S_ISLNK(mode):
                target = zf.read(info).decode("utf-8", "replace")
                if not _inside(parts, target):
                    raise Refused(f"unsafe archive: {info.filename!r} is a symbolic link to {target!r}, "
                                  "outside the archive")
                continue
            if mode and not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
                raise Refused(f"unsafe archive: {info.filename!r} is a device, FIFO or other special file")
            if not info.is_dir() and parts:
                total += info.file_size
                files.append((info, parts))
        _budget(len(files), total)
        for info, parts in files:
            out = dest.joinpath(*parts)
            out.parent.mkdir(parents=True, exist_ok=True)
            with zf.open(info) as src, open(out, "wb") as f:
                shutil.copyfileobj(src, f)


def _copy_folder(src, dest):
    src = src.resolve()
    files, total = [], 0
    for root, dirs, names in os.walk(src, followlinks=False):
        root = Path(root)
        dirs[:] = [d for d in dirs if not (root / d).is_symlink() or _link_inside(root / d, src)]
        for n in names:
            p = root / n
            if p.is_symlink():
                if not _link_inside(p, src):
                    raise Refused(f"{p.relative_to(src)} is a symbolic link to {os.readlink(p)}, outside the "
                                  "submission")
            st = p.stat()
            if not stat.S_ISREG(st.st_mode):
                raise Refused(f"{p.relative_to(src)} is a device, FIFO or other special file")
            total += st.st_size
            files.append(p)
        _budget(len(files), total)
    for p in files:
        out = dest / p.relative_to(src)
        out.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(p, out)


def _link_inside(p, root):
    try:
        return Path(os.path.realpath(p)).is_relative_to(root)
    except OSError:
        return False


def _workspace_root(g, top):
    """The folder of the unpacked tree that holds the workspace: the top, a single folder below it,
    or the first folder (breadth first, 3 levels) holding a kernel file of the lab."""
    names = {f.name for f in g.kernel_files().values()} | {"answers.toml"}
    entries = [p for p in top.iterdir() if not p.name.startswith(".") and p.name != "__MACOSX"]
    if any(p.name in names for p in entries):
        return top
    if len(entries) == 1 and entries[0].is_dir():
        return _workspace_root(g, entries[0])
    level = [top]
    for _ in range(3):
        level = sorted(d for parent in level for d in parent.iterdir() if d.is_dir())
        for d in level:
            if any((d / n).exists() for n in names):
                return d
    return top


def digest(sub):
    """sha256 of the submission as handed in: the archive's bytes, or the folder's files and names."""
    h = hashlib.sha256()
    if sub.kind == "folder":
        for root, dirs, names in os.walk(sub.path):
            dirs.sort()
            for n in sorted(names):
                p = Path(root) / n
                h.update(str(p.relative_to(sub.path)).encode() + b"\0")
                try:
                    if p.is_file():
                        with open(p, "rb") as f:
                            for block in iter(lambda: f.read(1 << 20), b""):
                                h.update(block)
                except OSError:
                    h.update(b"unreadable")
    else:
        with open(sub.path, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                h.update(block)
    return h.hexdigest()


def stage(g, sub, dest):
    """The submission unpacked or copied into dest/files (regular files only); returns the workspace
    folder inside it. Raises Refused with the reason."""
    files = Path(dest) / "files"
    if files.exists():
        shutil.rmtree(files)
    files.mkdir(parents=True)
    if sub.kind == "folder":
        _copy_folder(sub.path, files)
    elif sub.kind == "zip":
        _extract_zip(sub.path, files)
    else:
        _extract_tar(sub.path, files)
    ws = _workspace_root(g, files)
    check_includes(g, ws)
    return ws


# ---------------------------------------------------------------------------------------------
# What a kernel may #include
# ---------------------------------------------------------------------------------------------

_INCLUDE = re.compile(r"^\s*#\s*(?:include_next|include|import)\b\s*(.*?)\s*$")   # gcc reads all three
_SOURCES = (".cu", ".cuh", ".h", ".hpp", ".hh", ".inc", ".inl", ".c", ".cc", ".cpp")


def _directives(text):
    """[(line number, text)] of the logical lines as the preprocessor reads its directives: a comment is
    one space (a block comment over several lines too, so that `# /* ... */ include` stays one line),
    line continuations are joined, and the digraph `%:` (or the trigraph `??=`) at the start of a line
    is `#`: `#/**/include`, `%:include`, `#include_next` and `#import` all include. The numbers are the lines' first physical lines."""
    hidden = "\x01"                           # a physical line break the preprocessor does not see
    text = text.replace("\\\n", hidden)
    text = re.sub(r'"(?:\\.|[^"\\\n])*"|/\*.*?\*/|//[^\n]*',
                  lambda m: m.group(0) if m.group(0).startswith('"') else " " + hidden * m.group(0).count("\n"),
                  text, flags=re.S)
    out, n = [], 1
    for line in text.split("\n"):
        out.append((n, re.sub(r"^([ \t]*)(?:%:|\?\?=)", r"\1#", line.replace(hidden, ""))))
        n += 1 + line.count(hidden)
    return out


def include_dirs(g):
    """The folders the grader's nvcc searches for a submission's includes (static.compile_student)."""
    dirs = {g.lab.kernels_dir}
    for p in g.code_parts:
        if p.kernel:                      # a rules part has no kernel
            dirs |= {Path(d) for d in g.lab._include_dirs(g.lab.kernel(p.kernel))}
    return sorted(dirs)


def check_includes(g, workspace):
    """Refused when a source file of the workspace includes an absolute path, a path with `..`, a
    computed name (#include MACRO), or a .cu file of the lab's (a reference kernel) it does not hold
    itself. System headers and the headers kernels/ shares (.cuh, .h) are fine."""
    workspace = Path(workspace)
    dirs = include_dirs(g)
    for f in sorted(workspace.rglob("*")):
        if not f.is_file() or f.suffix.lower() not in _SOURCES:
            continue
        try:
            text = f.read_bytes().decode("utf-8", "replace")
        except OSError:
            continue
        for n, line in _directives(text):
            m = _INCLUDE.match(line)
            if not m:
                continue
            where = f"{f.relative_to(workspace)}:{n}"
            arg = re.sub(r"/\*.*?\*/|//.*$", "", m.group(1)).strip()
            q = re.fullmatch(r'"([^"]+)"|<([^>]+)>', arg)
            if not q:
                raise Refused(f"{where}: `#include {arg}` is a computed include; name the header in quotes or <>")
            name, quoted = (q.group(1), True) if q.group(1) is not None else (q.group(2), False)
            p = PurePosixPath(name)
            if p.is_absolute() or ".." in p.parts:
                raise Refused(f"{where}: `#include {arg}` reaches outside the workspace (an absolute path or ..); "
                              "a kernel may include only its own files and the course's headers")
            own = quoted and (f.parent / name).is_file()
            if not own and any((d / name).is_file() and (d / name).suffix == ".cu" for d in dirs):
                raise Refused(f"{where}: `#include {arg}` would compile the lab's reference kernel {name} "
                              "into this one (the submission has no file of that name)")
