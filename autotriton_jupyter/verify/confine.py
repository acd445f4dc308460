"""Confine one freshly forked worker inside the sandbox, before any task or candidate code runs.

bubblewrap (sandbox.py) walls the fork server off from the machine: no network, a
read-only filesystem, its own process tree. The workers it forks share that wall, so
each one is also walled off from the others and from the server, with the kernel's
own mechanisms:

- its own user, pid, mount, IPC, UTS and network namespaces: it sees no other
  worker's processes as its own, cannot signal or trace them, and everything it
  starts dies with it (it is the init of its pid namespace);
- a private tmpfs for /tmp and /dev/shm (its scratch, Triton's and inductor's caches),
  gone with its mount namespace;
- limits on open files, file sizes and core dumps (processes and memory are watched
  by the fork server, which sees the whole tree);
- no privileges: every capability dropped, no way to regain one through exec, and
  not dumpable (its memory cannot be read or written through /proc by a neighbour).
"""

from __future__ import annotations

import ctypes
import os
import resource
import signal
import time
from collections.abc import Callable

CLONE_NEWNS = 0x00020000
CLONE_NEWUTS = 0x04000000
CLONE_NEWIPC = 0x08000000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000
_NAMESPACES = (
    CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNS | CLONE_NEWIPC | CLONE_NEWUTS | CLONE_NEWNET
)

_MS_RDONLY, _MS_NOSUID, _MS_NODEV, _MS_REMOUNT, _MS_BIND = 1, 2, 4, 32, 4096
_MS_REC, _MS_PRIVATE = 16384, 1 << 18
_PR_SET_PDEATHSIG, _PR_SET_DUMPABLE, _PR_CAPBSET_DROP = 1, 4, 24
_PR_SET_SECUREBITS, _PR_SET_NO_NEW_PRIVS, _PR_CAP_AMBIENT = 28, 38, 47
_PR_CAP_AMBIENT_CLEAR_ALL = 4
# SECBIT_NOROOT, SECBIT_NO_SETUID_FIXUP, SECBIT_NO_CAP_AMBIENT_RAISE, each locked, and
# SECBIT_KEEP_CAPS locked off: root in the worker's namespace gains nothing by exec.
_SECUREBITS = 0x01 | 0x02 | 0x04 | 0x08 | 0x20 | 0x40 | 0x80
_CAP_LAST = 63
_LINUX_CAPABILITY_VERSION_3 = 0x20080522

_libc = ctypes.CDLL(None, use_errno=True)


class ConfineError(OSError):
    """A worker could not be confined; it must not go on to run anything."""


def _check(result: int, what: str) -> None:
    if result != 0:
        err = ctypes.get_errno()
        raise ConfineError(err, f"{what}: {os.strerror(err)}")


def _unshare(flags: int) -> None:
    if hasattr(os, "unshare"):  # Python 3.12+
        try:
            os.unshare(flags)
        except OSError as e:
            raise ConfineError(e.errno, f"unshare: {e.strerror}") from None
        return
    _check(_libc.unshare(ctypes.c_int(flags)), "unshare")


def _mount(source: str, target: str, fstype: str | None, flags: int, data: str | None) -> None:
    _check(
        _libc.mount(
            source.encode(),
            target.encode(),
            fstype.encode() if fstype else None,
            ctypes.c_ulong(flags),
            data.encode() if data else None,
        ),
        f"mount {target}",
    )


def _prctl(option: int, arg: int = 0) -> None:
    _check(
        _libc.prctl(ctypes.c_int(option), ctypes.c_ulong(arg), ctypes.c_ulong(0),
                    ctypes.c_ulong(0), ctypes.c_ulong(0)),
        f"prctl {option}",
    )


def enter_namespaces(mapped_by_parent: bool, pid_namespace: bool = True) -> None:
    """New user, pid, mount, IPC, UTS and network namespaces; the next fork is their init.

    A process may map only its own id into a namespace it creates. For a judge running as
    root that id is root, and a worker mapped to the machine's root could write whatever
    root may (/proc/sys, root's sockets and files); so then the fork server, which holds
    CAP_SETUID and CAP_SETGID, maps the worker's root to `nobody` from outside
    (`mapped_by_parent`), and this returns before the maps exist: the caller waits.
    """
    uid, gid = os.geteuid(), os.getegid()
    _prctl(_PR_SET_DUMPABLE, 1)  # the id maps of a non-dumpable process cannot be written
    _unshare(_NAMESPACES if pid_namespace else _NAMESPACES & ~CLONE_NEWPID)
    if mapped_by_parent:
        return
    write_id_maps("self", uid, gid, uid, gid, deny_setgroups=True)
    _prctl(_PR_SET_DUMPABLE, 0)


def become_mapped_root() -> None:
    """After the parent wrote the maps: take the mapped ids for real, with no extra groups.

    Writing a map does not change a process's credentials: until it sets its ids, it
    still holds the machine's root and root's supplementary groups.
    """
    os.setgroups([])
    os.setresgid(0, 0, 0)
    os.setresuid(0, 0, 0)


def write_id_maps(
    pid: str,
    inside_uid: int,
    inside_gid: int,
    outside_uid: int,
    outside_gid: int,
    deny_setgroups: bool = False,
) -> None:
    """Map one id into the user namespace of `pid`.

    A process mapping itself must give up setgroups (the kernel's rule); a parent with
    CAP_SETGID need not, so the worker can then drop its supplementary groups.
    """
    steps = [("setgroups", "deny")] if deny_setgroups else []
    steps += [("uid_map", f"{inside_uid} {outside_uid} 1"), ("gid_map", f"{inside_gid} {outside_gid} 1")]
    try:
        for name, text in steps:
            with open(f"/proc/{pid}/{name}", "w") as f:
                f.write(text)
    except OSError as e:
        raise ConfineError(e.errno, f"writing /proc/{pid}/{name}: {e.strerror}") from None


def adopt_orphans() -> None:
    """Become the parent of every orphan below this process (PR_SET_CHILD_SUBREAPER).

    Where a worker cannot have a pid namespace of its own (CUDA's driver refuses to work
    in one whose /proc it cannot see), its keeper adopts whatever the worker leaves
    behind, even after setsid, and ends it with the worker.
    """
    _prctl(36, 1)


def die_with_parent() -> None:
    """SIGKILL this process when the one that forked it ends."""
    _prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


def private_scratch(scratch: str, scratch_bytes: int) -> None:
    """A private, size-capped tmpfs at `scratch` and on /dev/shm; every other mount read-only.

    Mounts made here stay in this worker's mount namespace and vanish with it. The
    sandbox's own tmpfs folders (its /tmp, the hidden home folders, /dev) are shared by
    all workers, so they are made read-only here: nothing a worker writes can reach
    another one.
    """
    _mount("none", "/", None, _MS_REC | _MS_PRIVATE, None)
    size = max(16 << 20, scratch_bytes)
    private = {scratch, "/dev/shm"}
    for target in sorted(private):
        if os.path.isdir(target):
            _mount("tmpfs", target, "tmpfs", _MS_NOSUID | _MS_NODEV, f"size={size},mode=1777")
    for target, flags, fstype in _mounts():
        if target in private or flags & _MS_RDONLY:
            continue
        if fstype in _KERNEL_FS:
            continue  # /proc, /sys ...: the worker's own ids may not write them (CUDA reads them)
        if target == "/dev" or target.startswith("/dev/"):
            # Device nodes on a read-only mount cannot be opened for writing (not even
            # /dev/null, nor the GPU's); the sandbox's /dev belongs to its owner, not to
            # the worker's own ids, so a worker of a root judge cannot add to it anyway.
            continue
        try:
            _mount("none", target, None, _MS_REMOUNT | _MS_BIND | _MS_RDONLY | flags, None)
        except ConfineError:
            try:  # a mount locked with strict atime takes that flag back, and nothing else
                _mount("none", target, None, _MS_REMOUNT | _MS_BIND | _MS_RDONLY | flags | (1 << 24), None)
            except ConfineError:
                if fstype in _KERNEL_FS:
                    continue  # kernel filesystems: no files a worker could leave for another
                raise


_FLAG_NAMES = {"nosuid": _MS_NOSUID, "nodev": _MS_NODEV, "noexec": 8, "ro": _MS_RDONLY,
               "noatime": 1024, "nodiratime": 2048, "relatime": 1 << 21}


_KERNEL_FS = frozenset(
    "proc sysfs devpts mqueue cgroup cgroup2 bpf tracefs debugfs securityfs pstore hugetlbfs "
    "fusectl configfs binfmt_misc nsfs".split()
)


def _mounts() -> list[tuple[str, int, str]]:
    """(mount point, flags, filesystem type) of every mount this process sees."""
    out = []
    with open("/proc/self/mountinfo") as f:
        for line in f:
            head, _, tail = line.partition(" - ")
            fields = head.split()
            target = fields[4].encode().decode("unicode_escape")
            flags = 0
            for opt in fields[5].split(","):
                flags |= _FLAG_NAMES.get(opt, 0)
            out.append((target, flags, tail.split()[0] if tail else ""))
    return out


def new_session_keyring() -> None:
    """Leave the judge's session keyring (it may hold the user's secrets) for an empty one."""
    keyctl = 250 if os.uname().machine == "x86_64" else 219
    _libc.syscall(ctypes.c_long(keyctl), ctypes.c_long(1), None)  # KEYCTL_JOIN_SESSION_KEYRING


def set_limits(open_files: int, file_bytes: int, processes: int) -> None:
    """Hard limits the worker cannot raise again."""
    for what, value in (
        (resource.RLIMIT_NOFILE, open_files),
        (resource.RLIMIT_FSIZE, file_bytes),
        (resource.RLIMIT_NPROC, processes),  # not enforced for root: the fork server counts too
        (resource.RLIMIT_CORE, 0),
    ):
        soft, hard = resource.getrlimit(what)
        value = value if hard == resource.RLIM_INFINITY else min(value, hard)
        resource.setrlimit(what, (value, value))


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [
        ("effective", ctypes.c_uint32),
        ("permitted", ctypes.c_uint32),
        ("inheritable", ctypes.c_uint32),
    ]


def drop_privileges(have_capabilities: bool) -> None:
    """No capabilities now or after any exec, and not dumpable."""
    if have_capabilities:
        _prctl(_PR_SET_SECUREBITS, _SECUREBITS)
        for cap in range(_CAP_LAST + 1):
            if _libc.prctl(_PR_CAPBSET_DROP, ctypes.c_ulong(cap), 0, 0, 0) != 0:
                break  # past the kernel's last capability
    _libc.prctl(_PR_CAP_AMBIENT, ctypes.c_ulong(_PR_CAP_AMBIENT_CLEAR_ALL), 0, 0, 0)
    header = _CapHeader(_LINUX_CAPABILITY_VERSION_3, 0)
    data = (_CapData * 2)()
    _check(_libc.capset(ctypes.byref(header), ctypes.byref(data)), "capset")
    _prctl(_PR_SET_NO_NEW_PRIVS, 1)
    _prctl(_PR_SET_DUMPABLE, 0)


def not_dumpable() -> None:
    """Keep this process's memory and descriptors out of reach through /proc."""
    _prctl(_PR_SET_DUMPABLE, 0)


def prefer_to_be_killed_first() -> None:
    """If the machine runs out of memory, the kernel kills this worker before anything else."""
    try:
        with open("/proc/self/oom_score_adj", "w") as f:
            f.write("1000")
    except OSError:
        pass


_PF_EXITING = 0x4
_SIGKILL_BIT = 1 << (signal.SIGKILL - 1)


def doomed(pid: int) -> bool:
    """Whether process `pid` is gone or will be with no help: a zombie, exiting, or with
    SIGKILL pending (a kill loop need not signal it again)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            raw = f.read()
        rest = raw[raw.rfind(b")") + 2 :].split()
        if rest[0] in (b"Z", b"X", b"x") or int(rest[6]) & _PF_EXITING:
            return True
        with open(f"/proc/{pid}/status", "rb") as f:
            for line in f:
                if line.startswith((b"SigPnd:", b"ShdPnd:")) and int(line.split()[1], 16) & _SIGKILL_BIT:
                    return True
    except (OSError, IndexError, ValueError):
        return True  # no such process (any more)
    return False


def kill_until_dying(pids: Callable[[], list[int]], within_s: float) -> None:
    """SIGKILL every process `pids()` lists, again for any it lists after (forked
    meanwhile), until every one is dying (doomed) or `within_s` is over."""
    deadline = time.monotonic() + within_s
    while True:
        live = [p for p in pids() if not doomed(p)]
        if not live or time.monotonic() > deadline:
            return
        for p in live:
            try:
                os.kill(p, signal.SIGKILL)
            except OSError:
                pass
