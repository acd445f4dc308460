"""The bubblewrap command line that walls the verifier's fork server off from the machine.

Inside: no network, the filesystem read-only, home folders and other users' scratch
folders hidden (only the Python installation and this package are bound back in),
a synthetic /etc/passwd, its own /proc and /dev with the GPU's device nodes, no
capabilities, a new session (no terminal to inject keys into), and death with the
judge. The sandbox keeps the user's id (its Python may live where only that user can
read), so for a judge running as root, whatever in /etc only root may read is hidden
too. Each worker is then confined further (confine.py).
"""

from __future__ import annotations

import functools
import glob
import os
import shutil
import stat
import subprocess
import sys
import sysconfig
from pathlib import Path

from ..task import TaskError

# Folders that hold people's files or other programs' scratch: hidden behind empty tmpfs.
_HIDDEN = (
    "/home", "/root", "/tmp", "/var/tmp", "/run", "/var/run", "/mnt", "/media", "/srv",
    "/var/mail", "/var/spool", "/var/log", "/var/lib", "/var/backups", "/var/cache",
)
# Environment variables a worker may see: the rest (tokens, keys, the user's paths) stays out.
_ENV_KEEP = ("PATH", "LANG", "LANGUAGE", "TZ", "LD_LIBRARY_PATH", "SSL_CERT_FILE")
_ENV_PREFIXES = (
    "LC_", "CUDA_", "NVIDIA_", "TRITON_", "TORCH_", "PYTORCH_", "OMP_", "MKL_", "OPENBLAS_",
    "NCCL_", "MALLOC_", "TORCHINDUCTOR_",
)
_ENV_DROP = ("TRITON_CACHE_DIR", "TORCHINDUCTOR_CACHE_DIR", "TRITON_HOME", "TRITON_DUMP_DIR")
# Whatever the prefix, these look like credentials (NVIDIA_API_KEY, TORCH_HUB_TOKEN ...).
_SECRET_WORDS = ("KEY", "TOKEN", "SECRET", "PASSW", "CREDENTIAL", "AUTH", "COOKIE", "SESSION")


class SandboxUnavailable(TaskError):
    """The OS sandbox cannot be set up on this machine (the message says what to do)."""


def executable() -> str | None:
    """The bwrap program: $AUTOTRITON_BWRAP, else the one on PATH."""
    return os.environ.get("AUTOTRITON_BWRAP") or shutil.which("bwrap")


def _root_only(top: str = "/etc") -> tuple[list[str], list[str]]:
    """Files and folders under `top` that others may not read: (files, folders)."""
    files, folders = [], []
    for dirpath, dirnames, filenames in os.walk(top):
        for d in list(dirnames):
            full = os.path.join(dirpath, d)
            try:
                mode = os.lstat(full).st_mode
            except OSError:
                continue
            if stat.S_ISLNK(mode):
                continue
            if not mode & stat.S_IROTH or not mode & stat.S_IXOTH:
                folders.append(full)
                dirnames.remove(d)
        for f in filenames:
            full = os.path.join(dirpath, f)
            try:
                mode = os.lstat(full).st_mode
            except OSError:
                continue
            if stat.S_ISREG(mode) and not mode & stat.S_IROTH:
                files.append(full)
    return files, folders


def device_nodes() -> list[str]:
    """The GPU device files a sandbox binds (some appear only once a process starts CUDA)."""
    return sorted(glob.glob("/dev/nvidia*")) + sorted(glob.glob("/dev/dri"))


def worker_environment(extra: dict[str, str]) -> dict[str, str]:
    """The environment the fork server and its workers start with."""
    env = {
        k: v
        for k, v in os.environ.items()
        if (k in _ENV_KEEP or k.startswith(_ENV_PREFIXES))
        and k not in _ENV_DROP
        and not any(w in k.upper() for w in _SECRET_WORDS)
    }
    env.update(HOME="/tmp", TMPDIR="/tmp", USER="autotriton", LOGNAME="autotriton")
    env.update(extra)
    return env


def _python_paths() -> list[str]:
    """Folders the fork server needs to import this package, torch and triton.

    sys.path[0] (the running script's folder, or the notebook's) is left out, and so is
    any entry that is itself a hidden folder (such as /tmp or a home folder).
    """
    paths = {sys.prefix, sys.base_prefix, sys.exec_prefix, str(Path(sys.executable).resolve().parent)}
    paths.update(sysconfig.get_paths().values())
    paths.update(p for p in sys.path[1:] if p and os.path.isdir(p))
    paths.add(str(Path(__file__).resolve().parents[1]))  # the package itself
    paths.discard(package_parent())  # only the package is bound back, not what sits beside it
    roots = set(_hidden_roots())
    return sorted(p for p in paths if os.path.isdir(p) and p not in roots and p != "/")


def _hidden(path: str) -> bool:
    return any(path == h or path.startswith(h + "/") for h in _hidden_roots())


@functools.lru_cache(maxsize=1)
def _hidden_roots() -> tuple[str, ...]:
    roots = list(_HIDDEN)
    home = os.path.expanduser("~")
    if home not in ("/", "") and not any(home.startswith(h + "/") for h in roots):
        roots.append(home)
    # A symlink (/var/run -> /run) is hidden through its target.
    return tuple(r for r in roots if os.path.isdir(r) and not os.path.islink(r))


def command(bwrap: str, etc_dir: Path, argv: list[str]) -> list[str]:
    """The full bwrap command line that runs argv inside the sandbox."""
    # As root, bwrap needs no user namespace of its own; without one, the fork server
    # stays in the machine's, where `nobody` exists to map workers to.
    unshare = (
        ["--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts", "--unshare-cgroup-try"]
        if os.geteuid() == 0
        else ["--unshare-all"]
    )
    cmd = [
        bwrap,
        *unshare,
        "--die-with-parent",
        "--new-session",
        "--cap-drop", "ALL",
        # For a root judge, the fork server maps each worker's root to `nobody` from
        # outside, which takes these two; workers drop every capability.
        *(["--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID"] if os.geteuid() == 0 else []),
        "--ro-bind", "/", "/",
        "--proc", "/proc",
        "--dev", "/dev",
    ]
    for dev in device_nodes():
        cmd += ["--dev-bind", dev, dev]
    for root in _hidden_roots():
        cmd += ["--tmpfs", root]
    made: set[str] = set()
    for path in _python_paths():
        if _hidden(path) and os.path.exists(path):
            # bwrap would make the folders above it private (0700): workers run as
            # another user, so make them traversable first.
            root = next(h for h in _hidden_roots() if path.startswith(h + "/"))
            parts = Path(path).relative_to(root).parts[:-1]
            for i in range(1, len(parts) + 1):
                parent = os.path.join(root, *parts[:i])
                if parent not in made:
                    made.add(parent)
                    cmd += ["--perms", "0755", "--dir", parent]
            cmd += ["--ro-bind", path, path]
    for name in ("passwd", "group"):
        cmd += ["--ro-bind", str(etc_dir / name), f"/etc/{name}"]
    if os.geteuid() == 0:
        files, folders = _root_only()
        for f in files:
            cmd += ["--ro-bind", "/dev/null", f]
        for d in folders:
            cmd += ["--tmpfs", d]
    cmd += ["--chdir", "/tmp", "--", *argv]
    return cmd


# Workers of a root judge get ids from here up, one each (far above any real user's).
WORKER_ID_BASE = 0x7F000000


def worker_ids() -> tuple[int, int] | None:
    """The first (uid, gid) outside the sandbox for a worker's root, when the judge is root.

    Each worker then gets ids of its own from there, so no two workers can signal or
    read each other even without a pid namespace, and none can write what root could.
    None when the judge is an ordinary user: workers then keep that user's id, which
    can write nothing the user could not.
    """
    if os.geteuid() != 0:
        return None
    return WORKER_ID_BASE, WORKER_ID_BASE


def write_etc(etc_dir: Path, uid: int, gid: int) -> None:
    """A passwd and group file naming only the sandbox's own user."""
    etc_dir.mkdir(mode=0o755, exist_ok=True)
    (etc_dir / "passwd").write_text(f"autotriton:x:{uid}:{gid}::/tmp:/usr/sbin/nologin\n")
    (etc_dir / "group").write_text(f"autotriton:x:{gid}:\n")
    for name in ("passwd", "group"):
        (etc_dir / name).chmod(0o644)


def package_parent() -> str:
    """The folder that holds this package (it goes first on the fork server's path)."""
    return str(Path(__file__).resolve().parents[2])


def python_path() -> str:
    """PYTHONPATH for the fork server: this package, then the judge's own import path.

    The judge may find torch through PYTHONPATH or a user site (`pip install --user`),
    which a plain interpreter in the sandbox (HOME elsewhere) would not search.
    """
    entries = [package_parent()]
    for p in sys.path[1:]:
        if p and os.path.isdir(p) and p not in entries:
            entries.append(p)
    return os.pathsep.join(entries)


HOW_TO_FIX = (
    "Install bubblewrap (Debian/Ubuntu: apt-get install bubblewrap; Fedora: dnf install "
    "bubblewrap), or set AUTOTRITON_BWRAP to its path; it needs user namespaces, which "
    "current distributions allow. "
    "To verify without the sandbox (generated code then runs with your privileges), pass "
    "--no-sandbox or set sandbox = false under [verify] in the config file."
)


@functools.lru_cache(maxsize=4)
def check(bwrap: str | None) -> None:
    """Raise SandboxUnavailable, saying why and what to do, unless bwrap runs here."""
    if not bwrap:
        raise SandboxUnavailable(
            f"The verifier's sandbox needs bubblewrap (bwrap), which is not on PATH. {HOW_TO_FIX}"
        )
    try:
        out = subprocess.run(
            [bwrap, "--unshare-all", "--die-with-parent", "--cap-drop", "ALL",
             "--ro-bind", "/", "/", "--proc", "/proc", "--dev", "/dev", "--", "/bin/true"],
            capture_output=True, text=True, timeout=30,
        )
    except (OSError, subprocess.SubprocessError) as e:
        raise SandboxUnavailable(f"The verifier's sandbox (bwrap at {bwrap}) cannot start: {e}. {HOW_TO_FIX}") from e
    if out.returncode != 0:
        why = (out.stderr.strip().splitlines() or [f"exit code {out.returncode}"])[-1]
        raise SandboxUnavailable(f"The verifier's sandbox (bwrap at {bwrap}) cannot start: {why}. {HOW_TO_FIX}")
