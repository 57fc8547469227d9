"""Error signatures from the text a tool call showed: did it fail, was that expected, and why.

One pure function, :func:`read_failure`, turns what the agent saw after a call into a
:class:`FailureReading`; the live hook (the tool output in Claude Code's ``PostToolUse`` /
``PostToolUseFailure`` payload) and the replays (an agent run's observation, a transcript's
tool result) both call it, so a failure is read the same way live and in replay.

* **The text decides, not only the exit code.** A shell call whose output ends in a Python
  exception or a test runner's failure summary failed, even when it exited 0
  (``... | tail -5`` exits 0 with a traceback); a non-zero exit failed too.
* **The decisive line**: the last test-failure line (``FAILED path::test - ...``), else the
  last exception line (``KeyError: 'user'``), else the last error-looking line, else the last
  line. Lines that are *noise* (:func:`is_noise_line`: printed on unrelated commands that
  otherwise worked, such as a broken ``.pth`` file's traceback on every Python start) are left
  out first.
* **The cause** (:func:`cause_key`) is that line normalised: addresses, numbers, timings, temp
  and other paths masked, whitespace collapsed; and grouped when the text changes but the
  cause does not: the same missing module, the same missing file, the same exception type and
  message whatever the line number.
* **Expected and trivial** failures are read but not counted: a search that found nothing
  (``grep``, ``find``, ``ls``, ``diff`` exiting 1 with no error text), an edit tool reporting how
  many matches it found, a ``cd`` into or a ``cat`` / ``rm`` of a missing path, a command that is
  not installed. They neither count towards a loop nor break one.

Stdlib only and import-light (``re`` and ``collections.namedtuple``; no ``dataclasses``): the
in-loop hook imports this module on every tool call. A reading is a namedtuple, immutable like
a frozen dataclass.
"""

from __future__ import annotations

import re
from collections import namedtuple


class _Lazy:
    """A pattern compiled on first use: the hook pays only for the patterns a call needs."""

    __slots__ = ("args", "compiled")

    def __init__(self, pattern: str, flags: int = 0) -> None:
        self.args = (pattern, flags)
        self.compiled: re.Pattern[str] | None = None

    def get(self) -> re.Pattern[str]:
        if self.compiled is None:
            self.compiled = re.compile(*self.args)
        return self.compiled

    def search(self, text: str) -> re.Match[str] | None:
        return self.get().search(text)

    def match(self, text: str) -> re.Match[str] | None:
        return self.get().match(text)

    def sub(self, repl: str, text: str, count: int = 0) -> str:
        return self.get().sub(repl, text, count=count)


#: Characters of a cause key kept.
CAUSE_LIMIT = 200
#: Characters of a line read (longer lines are cut: the patterns stay linear-time).
LINE_LIMIT = 400
#: Characters of an observation read (its decisive lines are near the end).
TEXT_LIMIT = 20_000
#: A shell call that exited 0 failed when one of its last this-many lines is an exception
#: line or a test failure summary.
TAIL_LINES = 3

#: What :func:`read_failure` makes of one call. ``kind``: ``ok`` (nothing failed),
#: ``failed`` (counts), ``expected`` (a failure that is the point: nothing found, a match count),
#: ``trivial`` (a typo-level slip: missing path for cd/cat/rm, command not installed).
#: ``cause``: the normalised cause (empty for ``ok``); ``line``: the decisive line as shown;
#: ``causes``: every cause the text shows (a test run names each failing test: each is a cause
#: of its own, so a test that keeps failing is counted whichever other tests fail beside it).
FailureReading = namedtuple("FailureReading", ("kind", "cause", "line", "causes"))
OK = FailureReading("ok", "", "", ())
#: Failing tests counted per call at most.
MAX_TESTS = 8

# mini-swe-agent's wrapper around an observation, and Claude Code's first line of an error
_WRAPPER = _Lazy(
    r"<warning>.*?</warning>|<elided_chars>.*?</elided_chars>|"
    r"</?(?:returncode|output|output_head|output_tail)>|\n\[\.\.\.\]\n",
    re.DOTALL,
)
#: mini-swe-agent's notice for a command it killed.
_TIMEOUT = _Lazy(r"The last command <command>(.*?)</command> timed out", re.DOTALL)
#: Lines that are code or traceback furniture, not a message (shown source, a traceback's head).
_CODE = _Lazy(
    r"^(?:Traceback \(most recent call last\)|File \"|>>>|\.\.\.|#|def |class |raise |except\b|"
    r"print\(|return\b|if |for |\d+\s)|\(f[\"']|\bprint\("
)
_RETURNCODE = _Lazy(r"<returncode>(-?\d+)</returncode>")
_EXIT_LINE = _Lazy(r"\AExit code (-?\d+)\s*\n?")
_TEST_STARTS = ("FAILED ", "ERROR ")
_TEST_LINE = _Lazy(r"^(?:FAILED|ERROR) (\S+::\S+)")
#: The words an exception's type name ends with (the last, ``Invalid``, may go on:
#: ``InvalidArgument``). Text without any of them holds no exception line.
_EXCEPTION_WORDS = (
    "Error",
    "Exception",
    "Exit",
    "Interrupt",
    "Failure",
    "Warning",
    "NotFound",
    "Invalid",
)
_EXCEPTION = _Lazy(
    r"^(?:E\s+)?((?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*(?:"
    + "|".join(_EXCEPTION_WORDS)
    + r"\w*))(?::\s*(.*))?$"
)
_ERRORISH = _Lazy(
    r"error|fail|cannot|can't|not found|no such file|traceback|exception|denied|refused|timed out",
    re.IGNORECASE,
)
_SUMMARY = _Lazy(
    r"^=+ .*\b(?:failed|errors?)\b.* in [\d.]+s|^FAILED \((?:failures|errors)=|"
    r"tests finished: .*(?:failed|exceptions)|^Interrupted: \d+ errors? during collection",
)
_NUMBER = _Lazy(r"\d+(?:\.\d+)?")
_HEX = _Lazy(r"0[xX][0-9a-fA-F]+|\b(?=[0-9a-f]*[a-f])(?=[0-9a-f]*\d)[0-9a-f]{7,}\b")
_DURATION = _Lazy(r"\b\d+(?:\.\d+)?\s*(?:s|ms|seconds?)\b")
_PATH = _Lazy(r"(?:[\w.~-]*/)+[\w.-]+/?")
_MODULE = _Lazy(r"No module named ['\"]?([\w.]+)")
_MISSING_FILE = _Lazy(
    r"(?:No such file or directory|cannot access|can't open file|not found)", re.IGNORECASE
)
#: Programs whose exit status 1 with no error text means "found nothing" or "differs".
SEARCHES = frozenset(
    (
        "grep",
        "egrep",
        "fgrep",
        "rg",
        "ag",
        "find",
        "ls",
        "which",
        "test",
        "[",
        "diff",
        "cmp",
        "pgrep",
    )
)
#: Linters and checkers: a non-zero exit with no exception or failing test is their report.
LINTERS = frozenset(
    (
        "pylint",
        "flake8",
        "pycodestyle",
        "pydocstyle",
        "mypy",
        "ruff",
        "black",
        "isort",
        "pyflakes",
        "bandit",
    )
)
#: Programs whose complaint about a missing path, with nothing else wrong, is a slip.
PATH_SLIPS = frozenset(
    (
        "cd",
        "cat",
        "rm",
        "ls",
        "head",
        "tail",
        "mv",
        "cp",
        "mkdir",
        "rmdir",
        "python",
        "python3",
        "sed",
        "nl",
        "wc",
    )
)
_EDIT_MATCHES = _Lazy(r"Found \d+ matches of the string to replace")


def response_text(response: object) -> str:
    """The text a tool's response shows (Claude Code's ``tool_response``, a transcript's
    ``toolUseResult``): a string as is, Bash's ``stdout`` then ``stderr``, else nothing."""
    if isinstance(response, str):
        return response
    if isinstance(response, dict):
        parts = [response.get("stdout"), response.get("stderr")]
        return "\n".join(p for p in parts if isinstance(p, str) and p)
    return ""


def exit_code(text: str) -> int | None:
    """The exit code an observation states (``<returncode>N`` or Claude Code's ``Exit code N``)."""
    # cheap substring tests first: each pattern compiled costs the hook time on every call
    found = (_RETURNCODE.search(text[:200]) if "<returncode>" in text[:200] else None) or (
        _EXIT_LINE.match(text) if text.startswith("Exit code ") else None
    )
    return int(found.group(1)) if found else None


def text_lines(text: str) -> list[str]:
    """The non-empty lines of an observation, wrapper tags and the ``Exit code`` line removed."""
    body = text[-TEXT_LIMIT:]
    if body.startswith("Exit code "):
        body = _EXIT_LINE.sub("", body, count=1)
    if "</" in body or "[...]" in body:
        body = _WRAPPER.sub("\n", body)
    return [line.strip()[:LINE_LIMIT] for line in body.splitlines() if line.strip()]


def normalise_line(line: str) -> str:
    """``line`` with durations, hex ids, paths and numbers masked, whitespace collapsed."""
    line = line[:LINE_LIMIT]
    if any(c.isdigit() for c in line):
        line = _HEX.sub("<hex>", _DURATION.sub("<t>", line))
    if "/" in line:
        line = _PATH.sub("<path>", line)
    if any(c.isdigit() for c in line):
        line = _NUMBER.sub("N", line)
    return " ".join(line.split())[:CAUSE_LIMIT]


def cause_key(line: str) -> str:
    """The underlying cause a decisive line names, so that reworded sightings of one cause
    match: a missing module by its name, a missing file by its last path part, an exception by
    its type and normalised message, a failing test by its id, anything else normalised."""
    test = _TEST_LINE.match(line) if line.startswith(_TEST_STARTS) else None
    if test:
        return "test " + test.group(1)[:CAUSE_LIMIT]
    module = _MODULE.search(line) if "No module named" in line else None
    if module:
        return "missing module " + module.group(1).split(".")[0]
    exception = _EXCEPTION.match(line)
    if exception:
        return normalise_line(f"{exception.group(1)}: {exception.group(2) or ''}".rstrip(": "))
    return normalise_line(line)


def is_noise_line(line: str, noise: frozenset[str] | set[str]) -> bool:
    """Whether ``line``'s normalised form is one of the ``noise`` lines of the session."""
    return bool(noise) and normalise_line(line) in noise


def _has_exception_word(text: str) -> bool:
    return any(word in text for word in _EXCEPTION_WORDS)


def _may_hold_summary(text: str) -> bool:
    """Whether ``text`` may hold a :data:`_SUMMARY` line (a necessary condition)."""
    return (
        (" in " in text and ("failed" in text or "error" in text))
        or "FAILED (" in text
        or "tests finished: " in text
        or "Interrupted: " in text
    )


def decisive_line(lines: list[str], *, clear_only: bool = False) -> tuple[str, bool]:
    """The line that says why a call failed, and whether it is an exception, test-failure or
    summary line (a *clear* failure) rather than a line that only looks like an error.
    ``clear_only``: a caller that needs only a clear line gets ``("", False)`` instead of a
    line that is not one. (Cheap substring tests first: each pattern tried on every line of a
    long output is most of a replay's time.)"""
    for line in reversed(lines):
        if line.startswith(_TEST_STARTS) and _TEST_LINE.match(line):
            return line, True
    text = "\n".join(lines)
    if _has_exception_word(text):
        for line in reversed(lines):
            if _EXCEPTION.match(line):
                return line, True
    if _may_hold_summary(text):
        for line in reversed(lines):
            if _SUMMARY.search(line):
                return line, True
    if clear_only:
        return "", False
    for line in reversed(lines):
        if _ERRORISH.search(line) and not _CODE.search(line):
            return line, False
    return (lines[-1] if lines else ""), False


def _programs(command: str) -> list[str]:
    """The program of each stage of a shell command's last line (``a | b`` -> [a, b])."""
    last = command.strip().splitlines()[-1] if command.strip() else ""
    stages = last.replace("||", ";").replace("|", ";").replace("&&", ";").split(";")
    return [s.split()[0].rsplit("/", 1)[-1] for s in stages if s.split()]


def read_failure(
    text: str,
    *,
    failed: bool,
    command: str = "",
    shell: bool = True,
    noise: frozenset[str] | set[str] = frozenset(),
) -> FailureReading:
    """What one call's text says (pure). ``failed``: the tool reported a failure (a non-zero
    exit, a timeout, ``PostToolUseFailure``); ``command``: the shell command, when there is
    one; ``shell``: the text is a command's output (only then can text show a failure behind
    exit 0); ``noise``: normalised lines to leave out (:func:`noise_candidates`)."""
    if not failed and not shell:  # a tool that worked and shows no command output
        return OK
    if "matches of the string to replace" in text[:500] and _EDIT_MATCHES.search(text[:500]):
        return FailureReading("expected", "edit match count", "", ())
    timeout = _TIMEOUT.search(text[:2000]) if "timed out" in text[:2000] else None
    if timeout:
        what = " ; ".join(line.strip() for line in timeout.group(1).splitlines() if line.strip())
        cause = "timed out: " + normalise_line(what)
        return FailureReading("failed", cause, "timed out", (cause,))
    lines = [line for line in text_lines(text) if not is_noise_line(line, noise)]
    line, clear = decisive_line(lines, clear_only=not failed)
    if not failed:
        if not shell or not clear or line not in lines[-TAIL_LINES:]:
            return OK
        return _failed(line, lines)
    programs = _programs(command)
    quiet = not clear and not (line and _ERRORISH.search(line))
    searched = bool(programs) and (programs[-1] in SEARCHES or "grep" in programs)
    if quiet and searched:  # no error text: a search that found nothing, a diff that differs
        return FailureReading("expected", "nothing found", line, ())
    if not clear and any(p in LINTERS for p in programs):  # the linter's report is its output
        return FailureReading("expected", "linter findings", line, ())
    if programs and not clear and _MISSING_FILE.search(line) and programs[0] in PATH_SLIPS:
        return FailureReading("trivial", "missing path", line, ())
    if "command not found" in line or re.search(r"No module named (?:pytest|pip)\b", line):
        return FailureReading("trivial", "tool not installed", line, ())
    if quiet:  # a non-zero exit whose text names no error: the command is the cause
        code = exit_code(text)
        what = normalise_line(" ; ".join(command.split("\n")[-1:])) if command else "no output"
        cause = f"exit {'' if code is None else code}: {what}"
        return FailureReading("failed", cause, line, (cause,))
    return _failed(line, lines)


def _failed(line: str, lines: list[str]) -> FailureReading:
    """A counted failure: its decisive line's cause, and each failing test the text names."""
    cause = cause_key(line)
    tests = [cause_key(x) for x in lines if x.startswith(_TEST_STARTS) and _TEST_LINE.match(x)]
    causes = list(dict.fromkeys([*tests[-MAX_TESTS:], cause]))
    return FailureReading("failed", cause, line, tuple(causes))


def noise_candidates(text: str) -> list[str]:
    """The normalised exception lines of a call that otherwise worked (exit 0): if they show
    up on enough different commands they are noise, not failures (the caller counts)."""
    if not _has_exception_word(text):
        return []
    return [normalise_line(line) for line in text_lines(text) if _EXCEPTION.match(line)]
