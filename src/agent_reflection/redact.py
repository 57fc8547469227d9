"""Secrets stay out: the one redaction step every loader of agents' free text runs.

:func:`redact_text` replaces well-known credential formats and high-entropy strings by a typed
placeholder with a short keyed hash, ``[REDACTED:github-token:3f9a1c2b]``: the same secret gives
the same placeholder within one database (joins and counts still work), a different database
gives a different one, and the hash cannot be used to confirm a guessed password without the
database's key (HMAC-SHA256 with a random per-database key, see :func:`database_redactor`).

The rules (:data:`RULES`, documented in docs/loading.md "Secrets") follow gitleaks' default
configuration where it has a rule for the format, detect-secrets' keyword and high-entropy
plugins for assignments and entropy; each names its source.

Safe on JSON text: no rule's match contains a ``"`` or a backslash (a private-key block's
``\\n`` escapes excepted: its match starts and ends outside any escape), and a token may start
right after an escape such as ``\\n``. So a JSON line redacted as text stays valid JSON, and
loaders redact a line once, as text, before parsing it.

Stdlib only and free of DuckDB (worker processes and the OTLP receiver import it), and light
to import: the Stop hook redacts the agent's self-report at capture (no ``typing``,
``dataclasses`` or ``secrets`` at import; ``tests/test_hook_stop.py`` checks the hook's imports).
"""

from __future__ import annotations

import math
import os
import re
from collections import Counter, namedtuple

TYPE_CHECKING = False  # annotations only
if TYPE_CHECKING:
    from collections.abc import Callable, Iterator
    from typing import Any, TypeVar

    import duckdb

    _Record = TypeVar("_Record")

#: Placeholder text: ``[REDACTED:<kind>:<8 hex of HMAC-SHA256(key, secret)>]``.
PLACEHOLDER = "[REDACTED:{kind}:{digest}]"
#: Hex digits of the keyed hash kept in the placeholder (32 bits: collisions between two
#: different secrets of one database are ~1 in 4 billion per pair).
DIGEST_CHARS = 8
#: High-entropy rule: shortest and longest run considered, and the Shannon entropy (bits per
#: character) at or above which it is redacted. 4.5 is detect-secrets' Base64 limit; hex-only
#: runs (commit SHAs, SHA-256 digests, UUIDs) never exceed 4.0 and are never redacted by it.
ENTROPY_MIN_LENGTH = 32
ENTROPY_MAX_LENGTH = 128
ENTROPY_THRESHOLD = 4.5
#: Shortest run of ``[A-Za-z0-9_-]`` every ``long_token`` format holds (a Slack token's
#: ``xoxb-`` + 10; a JWT's first part is ``eyJ`` + 17 or more, as in gitleaks).
TOKEN_MIN_RUN = 15
#: Key used when no database key is given (tests, one-off calls): a plain, public key.
UNKEYED = b"agent-reflection-unkeyed"

# Characters of an assigned value: not a quote, backslash, space or bracket, so a match never
# crosses a JSON string boundary or escape.
_VALUE = r"""[^\s"'\\`,;()\[\]{}<>]"""
#: (the lower-case text that must be present, the key's pattern): one rule each, so every
#: pattern starts with a literal (Python's ``re`` then skips to it; an alternation of keywords
#: is tried at every position, ten times slower).
_ASSIGNMENT_KEYWORDS = (
    ("pass", r"pass(?:word|wd|phrase)"),
    ("pwd", r"pwd"),
    ("secret", r"secret(?:[_-]?key)?"),
    ("token", r"token"),
    ("api", r"api[_-]?key"),
    ("apikey", r"apikey"),
    ("access", r"access[_-]?key"),
    ("private", r"private[_-]?key"),
)
_ASSIGNED = r"\\?[\"']?\s{0,3}[=:]\s{0,3}(?:\\?[\"'])?(?P<v4>" + _VALUE + r"{6,200})"
_TOKEN_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_")


class Rule:
    """One secret format: its placeholder kind, pattern, and where the rule comes from.

    ``keywords`` (lower case): the rule runs only on text containing one of them (gitleaks'
    keyword pre-filter); empty: always (a pattern that starts with a literal is its own
    pre-filter, faster than looking for keywords). ``group``: the named group holding the
    secret (the rest of the match is kept), or None for the whole match. ``token_start``: the
    match must not continue a longer word (or must follow a JSON escape such as ``\\n``).
    ``check``: an extra test of the secret (a match failing it is kept as it is).
    ``lower_case``: the pattern is written in lower case and runs on the lower-cased text (a
    case-insensitive pattern is ten times slower in Python's ``re``). ``long_token``: every
    secret of the format is a run of at least :data:`TOKEN_MIN_RUN` characters of
    ``[A-Za-z0-9_-]`` holding its prefix (:data:`_TOKEN_PREFIX`); text without one skips it.
    """

    __slots__ = (
        "_regex",
        "_regex_ignoring_case",
        "check",
        "example",
        "group",
        "keywords",
        "kind",
        "long_token",
        "lower_case",
        "pattern",
        "source",
        "token_start",
    )

    def __init__(
        self,
        kind: str,
        pattern: str,
        keywords: tuple[str, ...],
        source: str,
        example: str,
        group: str | None = None,
        token_start: bool = False,
        lower_case: bool = False,
        long_token: bool = False,
        check: Callable[[str], bool] | None = None,
    ) -> None:
        self.kind = kind
        self.pattern = pattern
        self.keywords = keywords
        self.source = source
        self.example = example
        self.group = group
        self.token_start = token_start
        self.lower_case = lower_case
        self.long_token = long_token
        self.check = check
        self._regex: re.Pattern[str] | None = None
        self._regex_ignoring_case: re.Pattern[str] | None = None

    def regex(self) -> re.Pattern[str]:
        """The compiled pattern, compiled on first use: most text meets few rules (keywords,
        token prefixes), and compiling all of them costs the Stop hook tens of milliseconds."""
        if self._regex is None:
            self._regex = re.compile(self.pattern)
        return self._regex

    def regex_ignoring_case(self) -> re.Pattern[str]:
        """For a ``lower_case`` rule on text whose lower-cased form has another length (a few
        non-ASCII letters): the pattern ignoring case instead."""
        if self._regex_ignoring_case is None:
            self._regex_ignoring_case = re.compile(self.pattern, re.IGNORECASE)
        return self._regex_ignoring_case

    def __repr__(self) -> str:
        return f"Rule({self.kind!r}, {self.pattern!r})"


def shannon_entropy(text: str | bytes) -> float:
    """Bits per character of ``text``'s own character frequencies (0 for empty text)."""
    n = len(text)
    if n == 0:
        return 0.0
    return -sum(c / n * math.log2(c / n) for c in Counter(text).values())


_HEX_CHARS = "0123456789abcdefABCDEF-"
_DIGIT = re.compile(r"\d")
_UPPER = re.compile(r"[A-Z]")
_WORD_SEGMENT = re.compile(r"[A-Za-z][a-z]+|[a-z]+|[A-Z]+")


def _high_entropy(run: str) -> bool:
    """A run of base64/base64url characters that looks random, not an id or a path."""
    if len(run) < ENTROPY_MIN_LENGTH or len(run) > ENTROPY_MAX_LENGTH:
        return False  # shorter: too little to tell; longer: data blobs (images, signatures)
    if not run.strip(_HEX_CHARS):
        return False  # SHAs, digests, UUIDs: hex is never above 4 bits a character
    if not (_DIGIT.search(run) and _UPPER.search(run)):
        return False  # random base64 of this length has both; words and paths often do not
    segments = [s for s in re.split(r"[/_.=+-]", run) if s]
    words = [s for s in segments if _WORD_SEGMENT.fullmatch(s)]
    if (
        len(segments) >= 3
        and 2 * len(words) > len(segments)
        and 2 * sum(map(len, words)) > len(run)
    ):
        # a path or identifier made of words (src/agent_reflection/...): most of its segments
        # and most of its characters. By count alone, 1 in 200 random 48-character keys
        # whose separators cut off a letter or two at each end (Q+MK...P+K) passed for one.
        return False
    return shannon_entropy(run) >= ENTROPY_THRESHOLD


_NOT_SECRETS = frozenset({"none", "null", "true", "false", "undefined", "changeme", "required"})


def _assigned_value(value: str) -> bool:
    """An assigned value that is a literal secret, not a reference, placeholder or word."""
    if len(value) < 6 or value.startswith(("$", "{", "<", "%(", "%s")):
        return False
    if value.lower() in _NOT_SECRETS or set(value) <= {"*", "x", "X", "."}:
        return False  # a literal that is no secret, or one masked already
    if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)+|[A-Za-z_]+", value):
        return False  # a variable or attribute: token=self.token, password=PASSWORD
    return not re.fullmatch(r"[\d.]+", value)  # a number: max_token=4096


def _openai_like(secret: str) -> bool:
    body = secret.split("-", 1)[1]
    return any(c.isdigit() for c in body) and any(c.isupper() for c in body)


#: The rules; where two overlap, the one that starts first wins, then the one listed first.
RULES: tuple[Rule, ...] = (
    Rule(
        "private-key",
        r"-----BEGIN[ A-Z0-9_-]{0,100}PRIVATE KEY(?: BLOCK)?-----"
        r"(?:[A-Za-z0-9+/=\s:,.-]|\\[nrt]){0,16384}?"
        r"(?:-----END[ A-Z0-9_-]{0,100}PRIVATE KEY(?: BLOCK)?-----"
        r"|(?=[^A-Za-z0-9+/=\s:,.\\-]|\\[^nrt])|\Z)",
        (),
        "gitleaks private-key (a clipped key without its END line is redacted to its end)",
        "-----BEGIN RSA PRIVATE KEY-----\\nMIIEpAIB...\\n-----END RSA PRIVATE KEY-----",
    ),
    Rule(
        "aws-access-key",
        r"(?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA)[A-Z2-7]{16}(?![A-Za-z0-9_])",
        (),
        "gitleaks aws-access-token",
        "AKIA + 16 characters A-Z2-7",
        token_start=True,
        long_token=True,
    ),
    Rule(
        "aws-secret-key",
        r"aws[a-z0-9_.-]{0,20}secret[a-z0-9_.-]{0,20}\\?[\"']?\s{0,3}[=:]\s{0,3}"
        r"\\?[\"']?(?P<v1>[a-z0-9/+]{40})(?![a-z0-9/+=])",
        (),
        "detect-secrets AWSKeyDetector, trufflehog aws: 40 base64 characters named aws..secret",
        "aws_secret_access_key = <40 base64 characters>",
        group="v1",
        lower_case=True,
    ),
    Rule(
        "github-token",
        r"(?:gh[pousr]_[0-9A-Za-z]{36}|github_pat_[0-9A-Za-z_]{82})(?![A-Za-z0-9_])",
        (),
        "gitleaks github-pat, github-oauth, github-app-token, github-refresh-token, "
        "github-fine-grained-pat",
        "ghp_ + 36 letters and digits",
        token_start=True,
        long_token=True,
    ),
    Rule(
        "gitlab-token",
        r"gl(?:pat|ptt|rt|dt|cbt|oas|ft)-[0-9A-Za-z_-]{20,}(?![A-Za-z0-9_])",
        (),
        "gitleaks gitlab-pat and the other gl...- GitLab token rules",
        "glpat- + 20 characters",
        token_start=True,
        long_token=True,
    ),
    Rule(
        "slack-token",
        r"xox[baprse]-[0-9A-Za-z-]{10,}(?![A-Za-z0-9_])",
        (),
        "gitleaks slack-bot-token, slack-user-token, slack-legacy-token (xoxb-, xoxp-, ...)",
        "xoxb-<digits>-<digits>-<24 characters>",
        token_start=True,
        long_token=True,
    ),
    Rule(
        "stripe-key",
        r"(?:sk|rk)_(?:test|live|prod)_[0-9A-Za-z]{10,99}(?![A-Za-z0-9_])",
        ("k_live_", "k_test_", "k_prod_"),
        "gitleaks stripe-access-token",
        "sk_live_ + 24 characters",
        token_start=True,
        long_token=True,
    ),
    Rule(
        "anthropic-key",
        r"sk-ant-(?:api|admin|oat|ort)\d{2}-[A-Za-z0-9_-]{20,}(?![A-Za-z0-9_])",
        (),
        "gitleaks anthropic-api-key, anthropic-admin-api-key (length loosened)",
        "sk-ant-api03- + 95 characters",
        token_start=True,
        long_token=True,
    ),
    Rule(
        "openai-key",
        r"sk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}(?![A-Za-z0-9_])",
        (),
        "gitleaks openai-api-key (without its T3BlbkFJ marker: must mix digits and capitals)",
        "sk-proj- + 48 or more characters",
        token_start=True,
        long_token=True,
        check=_openai_like,
    ),
    Rule(
        "gcp-api-key",
        r"AIza[0-9A-Za-z_-]{35}(?![A-Za-z0-9_-])",
        (),
        "gitleaks gcp-api-key",
        "AIza + 35 characters",
        token_start=True,
        long_token=True,
    ),
    Rule(
        "azure-storage-key",
        r"(?:accountkey|sharedaccesskey)=(?P<v2>[a-z0-9+/]{40,100}={0,2})",
        ("accountkey=", "sharedaccesskey="),
        "Azure Storage / Service Bus connection strings (trufflehog azure detectors)",
        "AccountKey=<88 base64 characters>",
        group="v2",
        lower_case=True,
    ),
    Rule(
        "azure-client-secret",
        r"[A-Za-z0-9_~.]{3}\dQ~[A-Za-z0-9_~.-]{31,34}(?![A-Za-z0-9_~.-])",
        ("q~",),
        "gitleaks azure-ad-client-secret",
        "abc8Q~ + 31 to 34 characters",
        token_start=True,
    ),
    Rule(
        "jwt",
        r"eyJ[A-Za-z0-9_-]{17,}\.eyJ[A-Za-z0-9_-]{17,}\.[A-Za-z0-9_-]{10,}(?![A-Za-z0-9_-])",
        (),
        "gitleaks jwt",
        "eyJhbGciOi....eyJzdWIi....<signature>",
        token_start=True,
        long_token=True,
    ),
    Rule(
        "url-credentials",
        r"://[^\s:@/\"'\\]{1,100}:(?P<v3>[^\s@/\"'\\]{1,200})@",
        (),
        "trufflehog URI detector, gitleaks' basic-auth URL rules (only the password is replaced)",
        "https://user:pass@host",
        group="v3",
    ),
    *(
        Rule(
            "assignment",
            keyword + _ASSIGNED,
            (gate,),
            "detect-secrets KeywordDetector; gitleaks generic-api-key (keyword = value)",
            'password="hunter22" / "api_key": "..." / TOKEN=...',
            group="v4",
            lower_case=True,
            check=_assigned_value,
        )
        for gate, keyword in _ASSIGNMENT_KEYWORDS
    ),
    Rule(
        "high-entropy",
        r"(?:(?<=[^A-Za-z0-9+/_-])|^)[A-Za-z0-9+/_-]{" + str(ENTROPY_MIN_LENGTH) + r",}={0,2}"
        r"(?![A-Za-z0-9+/_-])",
        (),
        "detect-secrets Base64HighEntropyString (limit 4.5), with length bounds",
        "32 to 128 random base64 characters",
        check=_high_entropy,
    ),
)


#: One redaction: the rule's kind, where the secret was (``start``, ``end``), its placeholder.
Finding = namedtuple("Finding", "kind start end placeholder")


_PLACEHOLDER_START = "[REDACTED:"
_ESCAPES = frozenset("nrtbf")
_UNICODE_ESCAPE = re.compile(r"u[0-9a-fA-F]{4}")


def _inside_placeholder(text: str, at: int) -> bool:
    opened = text.rfind(_PLACEHOLDER_START, 0, at + len(_PLACEHOLDER_START))
    return opened >= 0 and text.find("]", opened) >= at


def _token_start(text: str, start: int) -> bool:
    """``text[start:]`` starts a token: after a non-word character or a JSON escape (``\\n``,
    ``\\u0001``)."""
    if start == 0 or text[start - 1] not in _TOKEN_CHARS:
        return True
    if start >= 2 and text[start - 2] == "\\" and text[start - 1] in _ESCAPES:
        return True
    return (
        start >= 6
        and text[start - 6] == "\\"
        and bool(_UNICODE_ESCAPE.fullmatch(text, start - 5, start))
    )


_RUN_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/_-")
_RUNS_APART = bytes(c if chr(c) in _RUN_CHARS else 0x20 for c in range(256))


def _runs(text: str) -> list[bytes]:
    """The runs of ``[A-Za-z0-9+/_-]`` in ``text`` (as ASCII bytes), in order."""
    return text.encode("utf-8", "surrogatepass").translate(_RUNS_APART).split()


def long_runs(text: str, pattern: re.Pattern[str]) -> Iterator[tuple[int, int]]:
    """The high-entropy rule's candidates: the matches of its ``pattern`` less leading
    ``/+-_`` (``://``, ``--``) and the letter of a JSON escape (``\\nAbc…`` in JSON text)."""
    for match in pattern.finditer(text):
        start, end = match.span()
        if start >= 1 and text[start - 1] == "\\":
            start += 5 if _UNICODE_ESCAPE.match(text, start) else 1  # \uXXXX, \n, ...
        while start < end and text[start] in "/+-_":
            start += 1
        yield start, end


#: The literal every ``long_token`` format starts with (checked in its long run).
_TOKEN_PREFIX = re.compile(
    rb"A3T|AKIA|ASIA|ABIA|ACCA|gh[pousr]_|github_pat_|gl[a-z]{2,3}-|xox|k_(?:live|test|prod)_"
    rb"|sk-|AIza|eyJ"
)


def _run_lengths(runs: list[bytes]) -> tuple[bool, bool]:
    """(whether the text holds a token-like run for the ``long_token`` rules, whether it holds
    a run long enough for the high-entropy rule): a quick look at the text's :func:`_runs`
    that skips most rules for most text."""
    runs = [run for run in runs if len(run) >= TOKEN_MIN_RUN]
    long_pieces = b" ".join(
        piece
        for run in runs
        for piece in run.replace(b"/", b" ").replace(b"+", b" ").split()
        if len(piece) >= TOKEN_MIN_RUN
    )
    token_like = _TOKEN_PREFIX.search(long_pieces) is not None
    return token_like, any(len(run) >= ENTROPY_MIN_LENGTH for run in runs)


#: Per rule, what :func:`_spans` needs, looked up once: (rule index, rule, is it the
#: high-entropy rule). Rules for long tokens are left out of the plan used for text without one.
_PLAN = tuple((i, rule, rule.kind == "high-entropy") for i, rule in enumerate(RULES))
_PLAN_WITHOUT_TOKENS = tuple(step for step in _PLAN if not step[1].long_token)


def _spans(text: str) -> list[tuple[int, int, int]]:
    """(start, end, rule index) of every candidate secret, overlapping ones included."""
    lower = text.lower()
    same_length = len(lower) == len(text)
    token_like, entropy_long = _run_lengths(_runs(text))
    spans: list[tuple[int, int, int]] = []
    for index, rule, entropy in _PLAN if token_like else _PLAN_WITHOUT_TOKENS:
        for keyword in rule.keywords:
            if keyword in lower:
                break
        else:
            if rule.keywords:
                continue  # none of the rule's keywords is in the text
        if entropy:
            if not entropy_long:
                continue
            found: Iterator[tuple[int, int]] = long_runs(text, rule.regex())
        elif not rule.lower_case:
            found = (m.span(rule.group or 0) for m in rule.regex().finditer(text))
        elif same_length:
            found = (m.span(rule.group or 0) for m in rule.regex().finditer(lower))
        else:  # lower-casing changed the length (a few non-ASCII letters): ignore case instead
            found = (m.span(rule.group or 0) for m in rule.regex_ignoring_case().finditer(text))
        for start, end in found:
            if start and text[start - 1] == "\\":
                continue  # JSON text: the letter of an escape (\r, \u0041) is not a token's start
            if rule.token_start and not _token_start(text, start):
                continue
            if rule.check is not None and not rule.check(text[start:end]):
                continue
            spans.append((start, end, index))
    # Format rules first (the first listed wins a tie), then high-entropy runs in the gaps.
    spans.sort(key=lambda span: (RULES[span[2]].kind == "high-entropy", span[0], span[2]))
    return spans


class Redactor:
    """Redacts text with one key; ``enabled=False`` returns text unchanged (``--no-redact``)."""

    __slots__ = ("enabled", "key")

    def __init__(self, key: bytes = UNKEYED, *, enabled: bool = True) -> None:
        self.key = key
        self.enabled = enabled

    def placeholder(self, kind: str, secret: str) -> str:
        import hashlib  # here, not at import: loading OpenSSL costs the Stop hook ~20 ms
        import hmac

        digest = hmac.new(self.key, secret.encode("utf-8", "surrogatepass"), hashlib.sha256)
        return PLACEHOLDER.format(kind=kind, digest=digest.hexdigest()[:DIGEST_CHARS])

    def findings(self, text: str) -> list[Finding]:
        """Every secret in ``text``: the span replaced and its placeholder, in text order."""
        taken: list[tuple[int, int, int]] = []
        for start, end, index in _spans(text):
            if any(start < e and s < end for s, e, _ in taken):
                continue  # overlaps one already taken
            if not _inside_placeholder(text, start):  # redacted already: leave it
                taken.append((start, end, index))
        taken.sort()
        return [
            Finding(RULES[i].kind, s, e, self.placeholder(RULES[i].kind, text[s:e]))
            for s, e, i in taken
        ]

    def text(self, text: str) -> str:
        """``text`` with every secret replaced by its placeholder."""
        if not self.enabled or not text:
            return text
        found = self.findings(text)
        if not found:
            return text
        pieces: list[str] = []
        last = 0
        for finding in found:
            pieces += (text[last : finding.start], finding.placeholder)
            last = finding.end
        pieces.append(text[last:])
        return "".join(pieces)

    def texts(self, texts: list[str]) -> list[str]:
        """Each of ``texts`` redacted, in one pass over them as one JSON array: the rules are
        safe on JSON text (see the module), and one pass over many short strings costs a
        fraction of one call each (the OTLP receiver redacts a whole export so)."""
        if not self.enabled or not texts:
            return list(texts)
        import json  # here, not at import: the Stop hook does not pay for it

        joined = json.dumps(texts, ensure_ascii=False)
        redacted = self.text(joined)
        if redacted is joined:
            return list(texts)
        out: list[str] = json.loads(redacted)
        return out

    def bytes(self, data: bytes) -> bytes:
        """UTF-8 ``data`` redacted (bytes that are not UTF-8 are returned unchanged)."""
        if not self.enabled:
            return data
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            return data
        redacted = self.text(text)
        return data if redacted is text else redacted.encode("utf-8")

    def fields(self, record: _Record) -> _Record:
        """A frozen dataclass record with every ``str`` field redacted (the same object when
        nothing changed)."""
        if not self.enabled:
            return record
        import dataclasses

        changes = {
            f.name: redacted
            for f in dataclasses.fields(record)  # type: ignore[arg-type]
            if isinstance(value := getattr(record, f.name), str)
            and (redacted := self.text(value)) is not value
        }
        return dataclasses.replace(record, **changes) if changes else record  # type: ignore[type-var]

    def value(self, value: Any) -> Any:
        """Every string inside a JSON-like value (dict keys too) redacted."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            return {self.value(k): self.value(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return type(value)(self.value(v) for v in value)
        return value


def redact_text(text: str, key: bytes = UNKEYED) -> str:
    """``text`` with every secret replaced by ``[REDACTED:<kind>:<hash>]`` (see the module)."""
    return Redactor(key).text(text)


def redact_unlinkable(value: Any) -> Any:
    """Every string inside a JSON-like ``value`` redacted with a key of this call only: what the
    Stop hook writes to a sidecar and the post-commit hook to a git note (no database, so no
    database key). A placeholder says which kind of secret was there; it cannot be used to
    confirm a guess of it, nor matched with another call's."""
    return Redactor(os.urandom(32)).value(value)


def new_key() -> bytes:
    """A fresh random redaction key (32 bytes)."""
    import secrets

    return secrets.token_bytes(32)


def database_redactor(con: duckdb.DuckDBPyConnection, *, enabled: bool = True) -> Redactor:
    """The redactor of this database: its key is made on first use and kept in
    ``redaction_key`` (never exported: see ``sql/core/export_tables.sql``)."""
    from agent_reflection.store.db import read_sql

    row = con.execute(read_sql("redact/key.sql")).fetchone()
    if row is None:
        con.execute(read_sql("redact/insert_key.sql"), {"key": new_key()})
        row = con.execute(read_sql("redact/key.sql")).fetchone()
    assert row is not None
    return Redactor(bytes(row[0]), enabled=enabled)
