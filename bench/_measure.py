"""Shared timing for the benches: whole processes, interleaved turns, medians, load average.

Not a bench itself (the leading underscore): ``load_labels.py``, ``load_sidecars.py`` and
``szz.py`` import it (a script's own folder is on ``sys.path``).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

MIB = 2**20
GIB = 2**30
REPO_ROOT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Run:
    """One timed run: wall seconds, CPU seconds (user + sys of the process and every child it
    waited for), peak memory and the 1-minute load average when it started."""

    wall: float
    cpu: float = 0.0
    #: largest sampled sum of RSS over the whole process tree (main process plus workers)
    tree_rss: int = 0
    #: ru_maxrss from wait4: the largest single process of the tree
    max_rss: int = 0
    load: float = 0.0
    stdout: str = ""


def load_average() -> float:
    return os.getloadavg()[0]


def child_env(src: Path = REPO_ROOT / "src") -> dict[str, str]:
    """The environment for ``python -m agent_reflection``: ``src`` (default this checkout's;
    another's from :func:`checkout_src`) first."""
    paths = [str(src), *filter(None, [os.environ.get("PYTHONPATH")])]
    return {**os.environ, "PYTHONPATH": os.pathsep.join(paths)}


def checkout_src(checkout: Path) -> Path:
    """The ``src/`` of ``checkout`` (a bench's ``--code``). Refuses a folder without the package:
    a child given it on ``PYTHONPATH`` would import the installed package instead, silently
    timing today's code against itself."""
    src = checkout.resolve() / "src"
    if not (src / "agent_reflection" / "__init__.py").is_file():
        raise SystemExit(
            f"--code {checkout}: no src/agent_reflection/ in it; give the root of a checkout "
            "(e.g. DIR after `git archive REV src | tar -x -C DIR`)"
        )
    return src


def _tree_rss(root: int, page: int = os.sysconf("SC_PAGE_SIZE")) -> int:
    """Total resident memory (bytes) of ``root`` and all its descendants, from /proc."""
    children: dict[int, list[int]] = {}
    rss: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                fields = f.read().rsplit(b")", 1)[1].split()
        except OSError:
            continue
        pid, ppid = int(entry), int(fields[1])
        children.setdefault(ppid, []).append(pid)
        rss[pid] = int(fields[21]) * page
    total, stack = 0, [root]
    while stack:
        pid = stack.pop()
        total += rss.get(pid, 0)
        stack.extend(children.get(pid, ()))
    return total


def run_process(
    command: Sequence[str],
    *,
    env: Mapping[str, str] | None = None,
    sample_memory: bool = False,
) -> Run:
    """Run ``command`` to its end; its wall time from start to reaped exit (the wait itself is
    exact: memory is sampled every 20 ms by a second thread, not by polling the exit)."""
    load = load_average()
    started = time.perf_counter()
    proc = subprocess.Popen(
        list(command),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=dict(env) if env is not None else child_env(),
    )
    peak = [0]
    done = threading.Event()

    def sample() -> None:
        while not done.wait(0.02):
            peak[0] = max(peak[0], _tree_rss(proc.pid))

    sampler = threading.Thread(target=sample, daemon=True)
    if sample_memory:
        sampler.start()
    # drain both pipes in threads so a chatty process cannot block on a full pipe
    stdout, stderr = proc.stdout, proc.stderr
    assert stdout is not None and stderr is not None
    out: list[bytes] = []
    err: list[bytes] = []
    readers = [
        threading.Thread(target=lambda: out.append(stdout.read()), daemon=True),
        threading.Thread(target=lambda: err.append(stderr.read()), daemon=True),
    ]
    for reader in readers:
        reader.start()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - started
    proc.returncode = os.waitstatus_to_exitcode(status)
    done.set()
    for reader in readers:
        reader.join()
    stdout.close()
    stderr.close()
    if sample_memory:
        sampler.join()
    if proc.returncode != 0:
        tail = b"".join(err).decode("utf-8", "replace")[-2000:]
        raise SystemExit(f"{' '.join(command)[:300]} failed (exit {proc.returncode}):\n{tail}")
    return Run(
        wall=wall,
        cpu=usage.ru_utime + usage.ru_stime,
        tree_rss=peak[0],
        max_rss=usage.ru_maxrss * 1024,
        load=load,
        stdout=b"".join(out).decode("utf-8", "replace"),
    )


def interleaved(contenders: Mapping[str, Callable[[], Run]], repeat: int) -> dict[str, list[Run]]:
    """``repeat`` turns of every contender; the order reverses every other turn (ABBA), so a
    load spike or a warm cache weighs on all alike. Prints each run as it ends."""
    runs: dict[str, list[Run]] = {name: [] for name in contenders}
    names = list(contenders)
    for turn in range(repeat):
        for name in names if turn % 2 == 0 else names[::-1]:
            run = contenders[name]()
            runs[name].append(run)
            memory = f"  peak tree RSS {run.tree_rss / MIB:,.0f} MiB" if run.tree_rss else ""
            print(
                f"    {name:<26} turn {turn + 1}: {run.wall:8.3f}s{memory}  (load {run.load:.1f})",
                flush=True,
            )
    return runs


def median_wall(runs: Sequence[Run]) -> float:
    return statistics.median(r.wall for r in runs)


def load_range(runs: Mapping[str, Sequence[Run]]) -> str:
    """The 1-minute load average the runs started at: median and range."""
    loads = [r.load for rs in runs.values() for r in rs]
    return f"load average {statistics.median(loads):.1f} ({min(loads):.1f}-{max(loads):.1f})"


def add_readme_install(parser: argparse.ArgumentParser) -> None:
    """The ``--readme-install VENV`` option of the hook benches (see :func:`as_readme_installs`)."""
    parser.add_argument(
        "--readme-install",
        type=Path,
        metavar="VENV",
        help="time the hooks through the console scripts of VENV, a venv made as README "
        "command 1 makes one (made there if missing; the bench then runs under its Python)",
    )


def as_readme_installs(venv: Path | None) -> None:
    """With ``venv`` (the ``--readme-install`` value), run this bench again, without that
    option, under the Python of ``venv``, a virtual environment made exactly as README command
    1 makes one (``python3 -m venv`` with the interpreter's bundled pip, then ``pip install -e``
    of this checkout; made here when ``venv`` has no Python yet): the hooks are then timed
    through the console scripts that pip wrote. Without ``venv``, nothing. Does not return
    otherwise."""
    if venv is None:
        return
    venv = venv.absolute()
    python = venv / "bin" / "python"
    if not python.exists():
        print(f"making {venv} as README command 1 does (a minute or two)...", flush=True)
        subprocess.run(["python3", "-m", "venv", str(venv)], check=True)
        subprocess.run(
            [str(venv / "bin" / "pip"), "install", "-q", "-e", str(REPO_ROOT)], check=True
        )
    pip = subprocess.run(
        [str(python), "-m", "pip", "--version"], capture_output=True, text=True, check=True
    )
    print(f"timing through {venv}'s console scripts ({pip.stdout.split(' from ')[0]})", flush=True)
    argv, skip = [], False
    for arg in sys.argv:
        if skip or arg == "--readme-install":
            skip = not skip
            continue
        if not arg.startswith("--readme-install="):
            argv.append(arg)
    os.execv(python, [str(python), *argv])
