"""The redaction step: every documented format is found, ids and code are left alone, the
placeholder is a keyed hash, and JSON text stays valid JSON after redaction."""

from __future__ import annotations

import gzip
import hashlib
import hmac
import json
import random
import re
import string
import subprocess
import uuid
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from _secrets import BASE64, GENERATORS, kinds, planted
from agent_reflection.redact import (
    ENTROPY_THRESHOLD,
    RULES,
    Redactor,
    database_redactor,
    long_runs,
    redact_text,
    shannon_entropy,
)
from agent_reflection.store.db import connect

PLACEHOLDER = re.compile(r"\[REDACTED:([a-z-]+):([0-9a-f]{8})\]")
KEY = b"k" * 32


def test_every_rule_has_a_generator_and_every_generator_a_rule() -> None:
    assert kinds() == {rule.kind for rule in RULES}


@pytest.mark.parametrize("index", range(len(GENERATORS)))
def test_each_format_is_replaced_by_its_typed_placeholder(index: int) -> None:
    redactor = Redactor(KEY)
    for seed in range(40):
        secret = GENERATORS[index](random.Random(seed))
        out = redactor.text(secret.text)
        assert secret.secret not in out, (secret.kind, secret.text, out)
        assert [m[0] for m in PLACEHOLDER.findall(out)] == [secret.kind], (secret.text, out)


@pytest.mark.parametrize("index", range(len(GENERATORS)))
def test_each_format_is_found_inside_json_text_and_the_json_stays_valid(index: int) -> None:
    redactor = Redactor(KEY)
    for seed in range(10):
        secret = GENERATORS[index](random.Random(seed))
        record = {
            "type": "user",
            "content": f"ran:\n{secret.text}\tdone",
            "n": [secret.text, f"\r{secret.text}", f"\x01{secret.text}\x02", f"é\t{secret.text}"],
        }
        for ensure_ascii in (True, False):
            line = json.dumps(record, ensure_ascii=ensure_ascii)
            out = redactor.text(line)
            decoded = json.loads(out)  # still one valid JSON object
            assert secret.secret not in out
            assert secret.secret not in json.dumps(decoded)
            assert f"[REDACTED:{secret.kind}:" in decoded["content"]


@pytest.mark.parametrize("index", range(len(GENERATORS)))
def test_many_texts_in_one_pass_lose_every_secret_and_keep_the_rest(index: int) -> None:
    """``texts`` redacts many strings as one JSON array (the OTLP receiver's path): each secret
    gets the placeholder one call would give it (a secret JSON escapes, such as a key block's
    newlines, one of the same kind), the other strings come back as they were."""
    redactor = Redactor(KEY)
    plain = ["", "true", "123", 'say "hi"\\n', "é\tbash -c 'ls'", "[REDACTED:x", "]"]
    for seed in range(10):
        secret = GENERATORS[index](random.Random(seed))
        texts = [*plain, secret.text, f"ran:\n{secret.text}\tdone", *plain, secret.text]
        out = redactor.texts(texts)
        assert len(out) == len(texts)
        assert out[: len(plain)] == plain and out[-len(plain) - 1 : -1] == plain
        for sent, got in zip(texts, out, strict=True):
            assert secret.secret not in got, (secret.kind, sent, got)
        assert out[len(plain)] == out[-1]
        one_call = redactor.text(secret.text)
        if not any(c in secret.text for c in "\n\r\t\\"):  # nothing JSON escapes but quotes
            assert out[len(plain)] == one_call
        else:  # a key block's newlines: its placeholder hashes the escaped text, same kind
            assert [m[0] for m in PLACEHOLDER.findall(out[len(plain)])] == [
                m[0] for m in PLACEHOLDER.findall(one_call)
            ]
        assert f"[REDACTED:{secret.kind}:" in out[len(plain) + 1]
    assert Redactor(KEY, enabled=False).texts([TOKEN_TEXT]) == [TOKEN_TEXT]


TOKEN_TEXT = "ghp_" + "aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3zA5"


def test_same_secret_same_placeholder_other_key_other_placeholder() -> None:
    token = "ghp_" + "".join(random.Random(1).choice(string.ascii_letters) for _ in range(35)) + "7"
    text = f"first {token} then again {token}"
    out = Redactor(KEY).text(text)
    found = PLACEHOLDER.findall(out)
    assert len(found) == 2 and found[0] == found[1]
    digest = hmac.new(KEY, token.encode(), hashlib.sha256).hexdigest()[:8]
    assert found[0] == ("github-token", digest)
    assert PLACEHOLDER.findall(Redactor(b"other" * 8).text(text))[0][1] != digest
    # without a database key: a fixed public key, same placeholder every time
    assert redact_text(text) == redact_text(text) != out


def test_redacting_twice_changes_nothing() -> None:
    redactor = Redactor(KEY)
    for secret in planted(random.Random(7)):
        once = redactor.text(secret.text)
        assert redactor.text(once) == once


def test_disabled_redactor_returns_the_text_unchanged() -> None:
    off = Redactor(KEY, enabled=False)
    for secret in planted(random.Random(3)):
        assert off.text(secret.text) is secret.text


# Seeded UUIDs: the parameter ids must be the same in every xdist worker's collection.
_UUIDS = random.Random(11)
NOT_SECRETS = [
    "commit 2ac89889a1b2c3d4e5f60718293a4b5c6d7e8f90 fixed it",
    f"session {uuid.UUID(int=_UUIDS.getrandbits(128), version=4)} "
    f"parent {uuid.UUID(int=_UUIDS.getrandbits(128), version=4)}",
    "sha256:" + hashlib.sha256(b"x").hexdigest(),
    "/home/dev/venvs/claude-reliability/bin/python src/agent_reflection/load/transcripts.py",
    'usage: {"input_tokens": 3, "cache_creation_input_tokens": 12345, "max_tokens": 4096}',
    "token = self.token  # the session's",
    "password=None",
    'password = os.environ["DB_PASSWORD"]',
    "secret: ${{ secrets.DEPLOY_KEY }}",
    "api_key = <YOUR_API_KEY>",
    "git clone git@github.com:pallets/flask.git",
    "see https://github.com/pallets/flask/pull/5000 and https://user@example.com/x",
    "risk-assessment-of-the-new-feature-flags-in-prod",
    "sk-learn-is-a-library-of-machine-learning-models",
    "toolu_01XyZabc123DEFghi456JKLmn msg_01ABCdefGHI789jklMNO012pqr",
    "ThisIsAVeryLongCamelCaseIdentifierThatIsNotASecretAtAll",
    "tests/test_load_transcripts.py::test_a_file_that_grew_adds_only_new_lines",
]


@pytest.mark.parametrize("text", NOT_SECRETS)
def test_ids_paths_and_code_are_not_redacted(text: str) -> None:
    assert Redactor(KEY).text(text) == text


def test_high_entropy_rule_detection_rate_by_length() -> None:
    """Random base64 secrets without a known prefix: the share found by the entropy rule."""
    rng = random.Random(0)
    redactor = Redactor(KEY)

    def rate(n: int) -> float:
        found = sum(
            "[REDACTED:high-entropy:" in redactor.text("k " + "".join(rng.choices(BASE64, k=n)))
            for _ in range(500)
        )
        return found / 500

    assert rate(48) >= 0.97  # measured 0.99+: a few random strings repeat too many characters
    assert rate(64) >= 0.99
    assert rate(24) == 0.0  # below the length bound: never


def test_entropy_of_hex_never_reaches_the_threshold() -> None:
    assert shannon_entropy("0123456789abcdef" * 4) == 4.0 < ENTROPY_THRESHOLD
    assert shannon_entropy("") == 0.0


@settings(max_examples=150, deadline=None)
@given(
    prefix=st.text(max_size=30),
    suffix=st.text(max_size=30),
    seed=st.integers(0, 10_000),
    index=st.integers(0, len(GENERATORS) - 1),
)
def test_json_lines_stay_valid_and_lose_the_secret(
    prefix: str, suffix: str, seed: int, index: int
) -> None:
    secret = GENERATORS[index](random.Random(seed))
    text = prefix + " " + secret.text + " " + suffix
    line = json.dumps({"text": text, "list": [text, 1]})
    out = Redactor(KEY).text(line)
    decoded = json.loads(out)
    assert secret.secret not in decoded["text"]
    assert decoded["list"][1] == 1


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.one_of(
            st.text(alphabet=string.ascii_letters + string.digits + "+/_-", min_size=20),
            st.sampled_from(["=", "==", "===", " ", "\\n", "é", "\n", '"', ":"]),
        ),
        max_size=12,
    )
)
def test_high_entropy_candidates_lie_inside_the_rules_matches(pieces: list[str]) -> None:
    text = "".join(pieces)
    pattern = re.compile(next(r.pattern for r in RULES if r.kind == "high-entropy"))
    matches = [m.span() for m in pattern.finditer(text)]
    candidates = list(long_runs(text, pattern))
    assert len(candidates) == len(matches)
    for (start, end), (m_start, m_end) in zip(candidates, matches, strict=True):
        assert m_start <= start <= end == m_end


def test_value_redacts_nested_strings() -> None:
    token = "xoxb-123456789012-1234567890123-" + "aB3" * 8
    value = {"a": [token, {"b": token}], "n": 1}
    out = Redactor(KEY).value(value)
    assert token not in json.dumps(out) and out["n"] == 1


def test_bytes_are_redacted_and_non_utf8_left_alone() -> None:
    token = "glpat-" + "aB3dE6gH9jK2mN5pQ8sT"
    assert token.encode() not in Redactor(KEY).bytes(f"x {token} y".encode())
    assert Redactor(KEY).bytes(b"\xff\xfe" + token.encode()) == b"\xff\xfe" + token.encode()


def test_database_key_is_made_once_and_kept(tmp_path: Path) -> None:
    con = connect(tmp_path / "a.duckdb")
    first = database_redactor(con)
    again = database_redactor(con)
    assert first.key == again.key and len(first.key) == 32
    other = database_redactor(connect(tmp_path / "b.duckdb"))
    assert other.key != first.key
    con.close()


@pytest.mark.shared
@pytest.mark.slow
def test_real_transcripts_and_flask_messages_have_no_false_positives(
    shared_dir: Path, tmp_path: Path
) -> None:
    """The real inputs hold no secrets: the measured count of redactions is zero (any
    finding would be a false positive to read; docs/loading.md reports the count)."""
    transcripts = sorted((shared_dir / "data/claude-code").glob("*.jsonl"))
    bundle = shared_dir / "data/git/flask.bundle"
    if not transcripts or not bundle.exists():
        pytest.skip("needs ../shared/data/claude-code/ and data/git/flask.bundle")
    redactor = Redactor(KEY)
    found = [f for path in transcripts for f in redactor.findings(path.read_text("utf-8"))]
    repo = tmp_path / "flask"
    subprocess.run(["git", "clone", "-q", "--bare", str(bundle), str(repo)], check=True)
    log = subprocess.run(
        ["git", "-C", str(repo), "log", "--all", "--format=%H%n%B%x00"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    messages = log.split("\x00")
    assert len(messages) > 5000
    found += [f for message in messages for f in redactor.findings(message)]
    assert found == []


@pytest.mark.shared
@pytest.mark.slow
def test_real_run_log_commands_only_lose_test_credentials(shared_dir: Path) -> None:
    """The 20,163 mini-swe-agent steps (shell commands, first 300 characters): what is
    redacted is the credentials of test fixtures (Django's SECRET_KEY, user:pass URLs), every
    one read by hand; no id, hash or path."""
    steps = shared_dir / "data/agent-runs/steps.jsonl.gz"
    if not steps.exists():
        pytest.skip("needs ../shared/data/agent-runs/steps.jsonl.gz")
    redactor = Redactor(KEY)
    with gzip.open(steps, "rt", encoding="utf-8") as fh:
        lines = fh.read().splitlines()
    assert len(lines) == 20_163
    found = [(line[f.start : f.end], f.kind) for line in lines for f in redactor.findings(line)]
    assert {kind for _, kind in found} == {"assignment", "url-credentials"}
    assert {value for value, _ in found} == {
        "fake-key",
        "secret1",
        "pass",
        "pass:word",
        "pass%40word",
    }
