"""Which files are code, and which lines of a code file are cosmetic: the SZZ line filters.

Pure functions (no git here; :mod:`agent_reflection.load.git.szz` runs git). SZZ blames the
lines a fix deletes or changes; the improvements the literature made over the original
algorithm are mostly about *which* lines to blame:

* **Non-code files** (:data:`NON_CODE_NAMES`, :data:`NON_CODE_PREFIXES`,
  :data:`NON_CODE_SUFFIXES`, :data:`NON_CODE_DIRS`): documentation, changelogs, lockfiles and
  dependency pins, licence and repository metadata, media. Their lines are never blamed.
* **Cosmetic lines** of code files: blank, comment-only and documentation (docstring) lines
  (AG-SZZ, Kim et al. 2006), and lines whose change only touches whitespace (the ``-w`` of
  AG-SZZ's annotation, applied here to the fix's own diff by :func:`account_hunk`).
* **Text-only lines**: code lines whose change stays inside string literals (or, in markup,
  inside the text between tags): ``help="Flatten nested JSON objets"`` to ``objects``. They
  stay code (blamed, counted): a string can be an SQL query or a dict key. P2 reads their count
  only beside a commit's own typo words, to tell a typo in a message from one in a name.

A line is *code* when a code token touches it: ``x = 1  # why`` is code, ``# why`` is not.
Python is scanned for its strings, comments and brackets (a string that is a whole statement
outside brackets is documentation; a blank line inside brackets is blank): the same lines as
the stdlib tokenizer on every Python file of flask's history, about 10x faster. Other languages
are scanned line by line with the comment syntax of their extension (:data:`COMMENT_SYNTAX`),
block comments included, ignoring string literals (a ``/*`` inside a string opens a comment
here: a documented approximation).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import PurePosixPath

#: Kind of a file that is code (everything not listed below).
CODE = "code"

#: Exact basenames (lower-cased) of files that are not code, with their kind.
NON_CODE_NAMES: dict[str, str] = {
    # lockfiles and pinned dependency sets: regenerated, never where a bug is written
    "poetry.lock": "lockfile",
    "pipfile.lock": "lockfile",
    "uv.lock": "lockfile",
    "pdm.lock": "lockfile",
    "package-lock.json": "lockfile",
    "npm-shrinkwrap.json": "lockfile",
    "yarn.lock": "lockfile",
    "pnpm-lock.yaml": "lockfile",
    "bun.lockb": "lockfile",
    "cargo.lock": "lockfile",
    "gemfile.lock": "lockfile",
    "composer.lock": "lockfile",
    "go.sum": "lockfile",
    "flake.lock": "lockfile",
    "podfile.lock": "lockfile",
    # repository metadata
    ".gitignore": "meta",
    ".gitattributes": "meta",
    ".mailmap": "meta",
    ".git-blame-ignore-revs": "meta",
    ".editorconfig": "meta",
    "codeowners": "meta",
}

#: Basename prefixes (lower-cased, before any extension) of files that are not code.
NON_CODE_PREFIXES: dict[str, str] = {
    "changes": "changelog",
    "changelog": "changelog",
    "history": "changelog",
    "news": "changelog",
    "release-notes": "changelog",
    "release_notes": "changelog",
    "license": "license",
    "licence": "license",
    "copying": "license",
    "notice": "license",
    "authors": "docs",
    "contributors": "docs",
    "contributing": "docs",
    "readme": "docs",
    "code_of_conduct": "docs",
    "security": "docs",
    "requirements": "lockfile",
    "constraints": "lockfile",
}

#: File suffixes (lower-cased) that are not code. ``.txt`` is documentation unless its name
#: says requirements/constraints (then it is a dependency pin: ``lockfile``).
NON_CODE_SUFFIXES: dict[str, str] = {
    ".md": "docs",
    ".markdown": "docs",
    ".rst": "docs",
    ".txt": "docs",
    ".adoc": "docs",
    ".asciidoc": "docs",
    ".rdoc": "docs",
    ".textile": "docs",
    ".pod": "docs",
    ".lock": "lockfile",
    ".png": "media",
    ".jpg": "media",
    ".jpeg": "media",
    ".gif": "media",
    ".svg": "media",
    ".ico": "media",
    ".webp": "media",
    ".bmp": "media",
    ".pdf": "media",
    ".woff": "media",
    ".woff2": "media",
    ".ttf": "media",
    ".eot": "media",
    ".otf": "media",
    ".mp4": "media",
    ".zip": "media",
    ".gz": "media",
}

#: Folders whose every file is documentation (any depth): ``docs/conf.py`` included, since a
#: change there is a documentation-build change, not product code.
NON_CODE_DIRS: dict[str, str] = {
    "docs": "docs",
    "doc": "docs",
    "changelog.d": "changelog",
    "changes.d": "changelog",
    "newsfragments": "changelog",
    "licenses": "license",
}


@dataclass(frozen=True)
class CommentSyntax:
    """Line-comment prefixes and (open, close) block-comment delimiters of a language."""

    line: tuple[str, ...] = ()
    block: tuple[tuple[str, str], ...] = ()


_HASH = CommentSyntax(line=("#",))
_C_LIKE = CommentSyntax(line=("//",), block=(("/*", "*/"),))
_CSS = CommentSyntax(block=(("/*", "*/"),))
_SQL = CommentSyntax(line=("--",), block=(("/*", "*/"),))
_MARKUP = CommentSyntax(block=(("<!--", "-->"), ("{#", "#}")))  # HTML/XML, Jinja templates
_INI = CommentSyntax(line=("#", ";"))

#: Comment syntax per file suffix (lower-cased; ``Makefile``/``Dockerfile`` by name). Python
#: (``.py``, ``.pyi``) is tokenized instead. Unknown suffixes: only blank lines are cosmetic.
COMMENT_SYNTAX: dict[str, CommentSyntax] = {
    **dict.fromkeys(
        (
            ".sh",
            ".bash",
            ".zsh",
            ".fish",
            ".rb",
            ".pl",
            ".pm",
            ".r",
            ".yaml",
            ".yml",
            ".toml",
            ".cmake",
            ".nix",
            ".ps1",
            ".tcl",
            ".pyx",
            ".pxd",
            ".mk",
            "makefile",
            "dockerfile",
            ".dockerfile",
            ".tf",
        ),
        _HASH,
    ),
    **dict.fromkeys(
        (
            ".c",
            ".h",
            ".cc",
            ".cpp",
            ".cxx",
            ".hpp",
            ".hh",
            ".java",
            ".js",
            ".jsx",
            ".mjs",
            ".cjs",
            ".ts",
            ".tsx",
            ".mts",
            ".cts",
            ".go",
            ".rs",
            ".cs",
            ".kt",
            ".kts",
            ".scala",
            ".swift",
            ".dart",
            ".php",
            ".groovy",
            ".gradle",
            ".proto",
            ".m",
            ".mm",
            ".scss",
            ".less",
            ".jsonc",
            ".zig",
        ),
        _C_LIKE,
    ),
    ".css": _CSS,
    **dict.fromkeys((".sql", ".lua", ".hs", ".elm"), _SQL),
    **dict.fromkeys(
        (".html", ".htm", ".xml", ".xhtml", ".vue", ".svelte", ".jinja", ".j2", ".jinja2"), _MARKUP
    ),
    **dict.fromkeys((".ini", ".cfg", ".conf", ".properties"), _INI),
}

#: Suffixes scanned as Python.
PYTHON_SUFFIXES = (".py", ".pyi", ".pyw")

_WHITESPACE = re.compile(r"\s+")
#: A string literal within one line: single, double or back quotes, backslash escapes.
_LINE_STRING = re.compile(r"""(?P<q>["'`])(?:\\.|(?!(?P=q))[^\\])*(?P=q)""")
#: Markup text between two tags (what a reader of the page sees).
_MARKUP_TEXT = re.compile(r">[^<>]*<")
#: Suffixes whose text between tags is prose (the markup comment syntax's files).
MARKUP_SUFFIXES = frozenset(
    (".html", ".htm", ".xml", ".xhtml", ".vue", ".svelte", ".jinja", ".j2", ".jinja2")
)


def is_markup(path: str) -> bool:
    """Whether the text between the tags of ``path`` is prose (HTML, XML, templates)."""
    return _suffix_key(path) in MARKUP_SUFFIXES


def text_key(line: str, markup: bool = False) -> str:
    """The line with the contents of its string literals (and, in markup, the text between its
    tags) and all whitespace removed: two lines with the same key differ only in that text.

    >>> text_key('help="JSON objets"') == text_key('help="JSON objects"')
    True
    >>> text_key("last_pk = 1") == text_key("last_pkk = 1")
    False
    """
    masked = _LINE_STRING.sub(lambda m: m.group("q") * 2, line)
    if markup:
        masked = _MARKUP_TEXT.sub("><", masked)
    return _squeeze(masked)


@lru_cache(maxsize=4096)  # a history changes the same files again and again
def _suffix_key(path: str) -> str:
    pure = PurePosixPath(path)
    name = pure.name.lower()
    if name in ("makefile", "gnumakefile", "dockerfile"):
        return "makefile" if name != "dockerfile" else "dockerfile"
    return pure.suffix.lower()


@lru_cache(maxsize=4096)
def file_kind(path: str) -> str:
    """``code``, or why the file is not code: docs, changelog, lockfile, license, meta, media.
    (The loader also calls a code-named file ``binary`` or ``submodule`` from its diff.)

    >>> file_kind("src/flask/app.py"), file_kind("CHANGES.rst"), file_kind("uv.lock")
    ('code', 'changelog', 'lockfile')
    """
    pure = PurePosixPath(path)
    for folder in pure.parts[:-1]:
        kind = NON_CODE_DIRS.get(folder.lower())
        if kind is not None:
            return kind
    name = pure.name.lower()
    if name in NON_CODE_NAMES:
        return NON_CODE_NAMES[name]
    suffix = pure.suffix.lower()
    if suffix not in COMMENT_SYNTAX and suffix not in PYTHON_SUFFIXES:  # news.py is code
        stem = name.split(".", 1)[0]
        if stem in NON_CODE_PREFIXES:
            return NON_CODE_PREFIXES[stem]
        for prefix, kind in NON_CODE_PREFIXES.items():
            if stem.startswith(prefix) and not stem[len(prefix) : len(prefix) + 1].isalpha():
                return kind  # CHANGES-2.x, requirements-dev, LICENSE_APACHE
    if pure.parent.name.lower() == "requirements" and pure.suffix.lower() in (".txt", ".in"):
        return "lockfile"
    return NON_CODE_SUFFIXES.get(pure.suffix.lower(), CODE)


def comment_syntax(path: str) -> CommentSyntax | None:
    """The comment syntax used for ``path`` (None: Python, scanned apart, or unknown suffix)."""
    return COMMENT_SYNTAX.get(_suffix_key(path))


def cosmetic_lines(text: str, path: str, upto: int | None = None) -> frozenset[int]:
    """1-based numbers of the lines of ``text`` that carry no code (blank, comment, doc).

    ``upto``: only lines up to this one are wanted; the scan stops there (same answer for
    them, less work: the lines a diff touches are often near the top)."""
    # git's lines: "\n" ends one and nothing else (not str.splitlines, which also breaks at
    # \f, \x1c..); a last line without its "\n" is one too
    total = text.count("\n") + (1 if text and not text.endswith("\n") else 0)
    wanted = total if upto is None else max(0, min(upto, total))
    if _suffix_key(path) in PYTHON_SUFFIXES:
        return _python_cosmetic(text, wanted)
    syntax = comment_syntax(path)
    lines = text.split("\n", wanted)[:wanted]
    return _scan(lines, syntax if syntax is not None else CommentSyntax())


#: Python string literals (any prefix, triple or single quoted) and comments, for the scanner.
#: Each body is written "unrolled" (a run of ordinary characters, then one escape or lone
#: quote and the next run): the same strings as one character at a time, in 60-70 % of the
#: time (the same tokens on every Python blob of flask's and sqlite-utils' histories). The
#: lookahead names every character a token can start with, so the engine skips to the next
#: one instead of trying the whole pattern at each character (the same tokens in half the time).
_PY_TOKEN = re.compile(
    r"(?=[rRbBuUfF\"'#])"
    r"(?:(?P<s>[rRbBuUfF]{0,2}(?:"
    r'"""[^"\\]*(?:(?:\\.|"(?!""))[^"\\]*)*"""'
    r"|'''[^'\\]*(?:(?:\\.|'(?!''))[^'\\]*)*'''"
    r'|"[^"\\\n]*(?:\\.[^"\\\n]*)*"'
    r"|'[^'\\\n]*(?:\\.[^'\\\n]*)*'"
    r"))|(?P<c>\#[^\n]*))",
    re.DOTALL,
)
#: What may follow a statement string on its line for it to be documentation.
_LINE_END = re.compile(r"[ \t\f\r]*(?:#[^\n]*)?(?:\n|$)")


def _python_cosmetic(text: str, n_lines: int) -> frozenset[int]:  # lines 1..n_lines
    """Lines no code touches. A scanner of strings, comments and brackets (the stdlib
    tokenizer, many times slower, gives the same lines on flask's history; tests/test_szz.py
    checks it): a string that is a whole statement (a docstring) is documentation; a line with
    anything but blanks outside strings and comments is code.

    Only a string that ends its line may be documentation; only there is the code before it
    read: the brackets still open, and whether a statement may start (which the code since
    the last string decides alone: no statement starts right after a string)."""
    head = text.split("\n", n_lines)
    stop = len(text) if len(head) <= n_lines else len(text) - len(head[-1]) - 1
    code: set[int] = set()
    outside: list[str] = []  # the text outside strings and comments; a string as its newlines
    depth = counted = 0  # the brackets open at the end of outside[:counted]
    since_string = 0  # where in ``outside`` the code since the last string starts
    line, line_at = 1, 0  # the line of text[line_at]
    pos = 0
    for match in _PY_TOKEN.finditer(text):
        start = match.start()
        if start > stop:  # every wanted line is decided
            break
        outside.append(text[pos:start])
        pos = match.end()
        if match.lastgroup != "s":
            continue  # a comment: the code on both sides of it reads as one
        line += text.count("\n", line_at, start)
        newlines = text.count("\n", start, pos)
        documentation = _LINE_END.match(text, pos) is not None and _statement_may_start(
            "".join(outside[since_string:]), first=since_string == 0
        )
        if documentation:
            stretch = "".join(outside[counted:])
            depth += (
                stretch.count("(")
                + stretch.count("[")
                + stretch.count("{")
                - stretch.count(")")
                - stretch.count("]")
                - stretch.count("}")
            )
            counted = len(outside)
            documentation = depth <= 0
        if not documentation and newlines:
            code.update(range(line, line + newlines + 1))
        elif not documentation:
            code.add(line)
        outside.append("\n" * newlines)
        line, line_at = line + newlines, pos
        since_string = len(outside)
    else:
        stop = len(text)
    outside.append(text[pos : max(pos, stop)])
    kept = "".join(outside).split("\n", n_lines)[:n_lines]
    blank = [n for n, piece in enumerate(kept, start=1) if not piece or piece.isspace()]
    return frozenset(blank).difference(code)


def _statement_may_start(since_string: str, first: bool) -> bool:
    """Whether a statement may start after ``since_string``, the code (comments taken out)
    since the last string (``first``: since the start of the file, where one may): it ends with
    a newline that ends a logical line (outside brackets, which the caller checks), not one
    continued by a backslash unless a blank line follows; or it is only blanks and newlines."""
    code = since_string.rstrip()
    if not code:
        return first or "\n" in since_string
    newlines = since_string.count("\n", len(code))
    return newlines >= 2 or (newlines == 1 and not code.endswith("\\"))


def _scan(lines: Sequence[str], syntax: CommentSyntax) -> frozenset[int]:
    """Lines that are blank or only comment, for a line/block comment syntax."""
    cosmetic: set[int] = set()
    closing: str | None = None  # the delimiter that ends the block comment we are in
    for number, line in enumerate(lines, start=1):
        rest = line.strip()
        has_code = False
        while rest:
            if closing is not None:
                end = rest.find(closing)
                if end < 0:
                    rest = ""
                    break
                rest = rest[end + len(closing) :].lstrip()
                closing = None
                continue
            if any(rest.startswith(p) for p in syntax.line):
                break
            opened = next(((o, c) for o, c in syntax.block if rest.startswith(o)), None)
            if opened is not None:
                closing, rest = opened[1], rest[len(opened[0]) :]
                continue
            has_code = True
            # code, then maybe a block comment opened later on the line and left open
            starts = [(rest.find(o), o, c) for o, c in syntax.block if o in rest]
            if starts:
                at, o, c = min(starts)
                if c not in rest[at + len(o) :]:
                    closing = c
            break
        if not has_code:
            cosmetic.add(number)
    return frozenset(cosmetic)


@dataclass(frozen=True)
class Hunk:
    """One ``@@ -old_start,len +new_start,len @@`` hunk of a ``-U0`` diff, with its lines."""

    old_start: int
    deleted: tuple[str, ...]
    new_start: int
    added: tuple[str, ...]


@dataclass(frozen=True)
class HunkLines:
    """A hunk's lines sorted: old line numbers of deleted code lines (what SZZ blames), and
    counts of code / cosmetic lines on each side."""

    blame: tuple[int, ...]
    code_added: int
    code_deleted: int
    cosmetic_added: int
    cosmetic_deleted: int
    #: of the code lines (both sides), those that only set a version string (release metadata)
    version_lines: int = 0
    #: of the code lines (both sides), those paired one to one with a line of the other side
    #: that differs from them only inside string literals (markup: text between tags)
    text_lines: int = 0


#: A line that only sets a version string: ``__version__ = "1.0"``, ``version='0.7.2-dev',``
#: (setup.py), ``version = "1.0"`` (pyproject.toml), ``"version": "1.0",`` (package.json).
VERSION_LINE = re.compile(
    r"""^\s*["']?(?:__version__|version|VERSION)["']?\s*[=:]\s*"""
    r"""\(?\s*(?P<q>["'])[\w.+!-]*(?P=q)\s*\)?\s*,?\s*$"""
)


def is_version_line(text: str) -> bool:
    """Whether a line only sets a version string (see :data:`VERSION_LINE`)."""
    return VERSION_LINE.match(text) is not None


def _squeeze(line: str) -> str:
    return _WHITESPACE.sub("", line)


def account_hunk(
    hunk: Hunk,
    old_cosmetic: frozenset[int],
    new_cosmetic: frozenset[int],
    markup: bool = False,
) -> HunkLines:
    """Sort a hunk's lines into code and cosmetic.

    Cosmetic: a line cosmetic in its file version (blank, comment, doc), or one side of a
    whitespace-only change (a deleted line equal to an added line of the same hunk once all
    whitespace is removed, matched one to one, as ``git diff -w`` would hide it).
    Text-only (``text_lines``, still code): deleted and added code lines matched one to one by
    :func:`text_key` (``markup``: the file's text between tags is prose too).
    """
    same: Counter[str] = Counter()  # whitespace-only pairs (none unless both sides have lines)
    if hunk.added and hunk.deleted:
        same = Counter(_squeeze(t) for t in hunk.added) & Counter(_squeeze(t) for t in hunk.deleted)
    spare_del, spare_add = Counter(same), Counter(same)
    blame: list[int] = []
    code_deleted = cosmetic_deleted = version = 0
    for offset, text in enumerate(hunk.deleted):
        number = hunk.old_start + offset
        key = _squeeze(text)
        if spare_del[key] > 0 and key:
            spare_del[key] -= 1
            cosmetic_deleted += 1
        elif number in old_cosmetic or not key:
            cosmetic_deleted += 1
        else:
            code_deleted += 1
            version += is_version_line(text)
            blame.append(number)
    code_added = cosmetic_added = 0
    added_code: list[str] = []
    for offset, text in enumerate(hunk.added):
        key = _squeeze(text)
        if spare_add[key] > 0 and key:
            spare_add[key] -= 1
            cosmetic_added += 1
        elif (hunk.new_start + offset) in new_cosmetic or not key:
            cosmetic_added += 1
        else:
            code_added += 1
            version += is_version_line(text)
            added_code.append(text)
    text_pairs: Counter[str] = Counter()
    if blame and added_code:
        deleted_code = [hunk.deleted[n - hunk.old_start] for n in blame]
        text_pairs = Counter(text_key(t, markup) for t in deleted_code) & Counter(
            text_key(t, markup) for t in added_code
        )
    return HunkLines(
        tuple(blame),
        code_added,
        code_deleted,
        cosmetic_added,
        cosmetic_deleted,
        version,
        2 * sum(text_pairs.values()),
    )


def ranges(numbers: Sequence[int]) -> list[tuple[int, int]]:
    """Sorted line numbers as inclusive (first, last) runs, for ``git blame -L first,last``."""
    runs: list[tuple[int, int]] = []
    for n in sorted(set(numbers)):
        if runs and runs[-1][1] == n - 1:
            runs[-1] = (runs[-1][0], n)
        else:
            runs.append((n, n))
    return runs
