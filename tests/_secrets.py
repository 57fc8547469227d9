"""Real-looking secrets, generated: each format's documented shape with a random body.

Never real keys: every body comes from a seeded ``random.Random``. ``planted(rng)`` gives one
of each kind as (kind, text to plant, the secret part that must never be stored).
"""

from __future__ import annotations

import base64
import json
import math
import random
import string
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

ALNUM = string.ascii_letters + string.digits
BASE64 = ALNUM + "+/"
BASE64URL = ALNUM + "-_"


@dataclass(frozen=True)
class Planted:
    kind: str  # the placeholder kind the redactor must give
    text: str  # what is planted (the secret in its usual surroundings)
    secret: str  # the part that must not survive


def _pick(rng: random.Random, alphabet: str, n: int) -> str:
    return "".join(rng.choice(alphabet) for _ in range(n))


def _mixed(rng: random.Random, alphabet: str, n: int) -> str:
    """Random text that has a digit, a capital and a small letter (as real keys do)."""
    while True:
        body = _pick(rng, alphabet, n)
        if (
            any(c.isdigit() for c in body)
            and any(c.isupper() for c in body)
            and any(c.islower() for c in body)
        ):
            return body


def _entropy(text: str) -> float:
    return -sum(c / len(text) * math.log2(c / len(text)) for c in Counter(text).values())


def _random_above(rng: random.Random, n: int, bits: float) -> str:
    """Random base64 text whose character entropy is at least ``bits`` (the rule's scope)."""
    while True:
        body = _mixed(rng, BASE64, n)
        if _entropy(body) >= bits:
            return body


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _jwt(rng: random.Random) -> str:
    header = _b64url(json.dumps({"alg": "HS256", "typ": "JWT"}).encode())
    claims = {"sub": str(rng.randrange(10**9)), "iat": rng.randrange(1_600_000_000, 1_800_000_000)}
    payload = _b64url(json.dumps(claims).encode())
    return f"{header}.{payload}.{_b64url(rng.randbytes(32))}"


def _private_key(rng: random.Random, label: str) -> str:
    body = base64.b64encode(rng.randbytes(240)).decode()
    lines = "\n".join(body[i : i + 64] for i in range(0, len(body), 64))
    return f"-----BEGIN {label}-----\n{lines}\n-----END {label}-----"


def _key_block(rng: random.Random, label: str, context: str) -> Planted:
    """A PEM private key; what must not survive is every line of its body."""
    block = _private_key(rng, label)
    return Planted("private-key", context.format(block), block.splitlines()[2])


def _token(
    kind: str, make: Callable[[random.Random], str], context: str = "{}"
) -> Callable[[random.Random], Planted]:
    def planted(rng: random.Random) -> Planted:
        secret = make(rng)
        return Planted(kind, context.format(secret), secret)

    return planted


GENERATORS: tuple[Callable[[random.Random], Planted], ...] = (
    _token(
        "aws-access-key",
        lambda r: "AKIA" + _pick(r, string.ascii_uppercase + "234567", 16),
        "aws_access_key_id = {}",
    ),
    _token("aws-secret-key", lambda r: _mixed(r, BASE64, 40), "aws_secret_access_key = {}"),
    _token("github-token", lambda r: "ghp_" + _mixed(r, ALNUM, 36), "git push https://{}@x"),
    _token("github-token", lambda r: "gho_" + _mixed(r, ALNUM, 36), "GITHUB_TOKEN is {}."),
    _token("github-token", lambda r: "ghs_" + _mixed(r, ALNUM, 36)),
    _token("github-token", lambda r: "ghu_" + _mixed(r, ALNUM, 36)),
    _token(
        "github-token", lambda r: "github_pat_" + _mixed(r, ALNUM, 22) + "_" + _mixed(r, ALNUM, 59)
    ),
    _token("gitlab-token", lambda r: "glpat-" + _mixed(r, ALNUM + "-_", 20)),
    _token(
        "slack-token",
        lambda r: (
            f"xoxb-{r.randrange(10**11, 10**12)}-"
            f"{r.randrange(10**12, 10**13)}-{_mixed(r, ALNUM, 24)}"
        ),
    ),
    _token(
        "slack-token",
        lambda r: (
            f"xoxp-{r.randrange(10**11, 10**12)}-"
            f"{r.randrange(10**11, 10**12)}-{r.randrange(10**11, 10**12)}-"
            + _pick(r, "abcdef0123456789", 32)
        ),
    ),
    _token("stripe-key", lambda r: "sk_live_" + _mixed(r, ALNUM, 24), "stripe.api_key = '{}'"),
    _token("stripe-key", lambda r: "rk_test_" + _mixed(r, ALNUM, 24)),
    _token(
        "anthropic-key",
        lambda r: "sk-ant-api03-" + _mixed(r, BASE64URL, 93) + "AA",
        "export ANTHROPIC_API_KEY={}",
    ),
    _token("openai-key", lambda r: "sk-proj-" + _mixed(r, BASE64URL, 64), "OPENAI_API_KEY={}"),
    _token(
        "openai-key", lambda r: "sk-" + _mixed(r, ALNUM, 20) + "T3BlbkFJ" + _mixed(r, ALNUM, 20)
    ),
    _token("gcp-api-key", lambda r: "AIza" + _mixed(r, BASE64URL, 35), "?key={}&q=x"),
    _token(
        "azure-storage-key",
        lambda r: _mixed(r, BASE64, 86) + "==",
        "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey={};EndpointSuffix=core.windows.net",
    ),
    _token(
        "azure-client-secret",
        lambda r: _pick(r, ALNUM, 3) + str(r.randrange(10)) + "Q~" + _mixed(r, ALNUM + "_~.-", 34),
    ),
    _token("jwt", _jwt, "curl -H 'Authorization: Bearer {}' https://api.example.com"),
    lambda r: _key_block(r, "RSA PRIVATE KEY", "{}"),
    lambda r: _key_block(r, "OPENSSH PRIVATE KEY", "{}"),
    lambda r: _key_block(r, "PRIVATE KEY", '{{"type": "service_account", "private_key": "{}"}}'),
    _token(
        "url-credentials",
        lambda r: _mixed(r, ALNUM, 16),
        "git clone https://deploy:{}@git.example.com/team/repo.git",
    ),
    _token(
        "url-credentials",
        lambda r: _mixed(r, ALNUM + "!*", 14),
        "DATABASE_URL=postgres://app:{}@db.internal:5432/prod",
    ),
    _token("assignment", lambda r: _mixed(r, ALNUM + "!#%&*", 14), 'password="{}"'),
    _token("assignment", lambda r: _mixed(r, ALNUM, 12) + "7", "DB_PASSWORD={}"),
    _token("assignment", lambda r: _mixed(r, ALNUM, 24), "client_secret: {}"),
    _token("assignment", lambda r: _mixed(r, ALNUM, 18), '"api_key": "{}"'),
    _token("high-entropy", lambda r: _random_above(r, 48, 4.5), "the signing key is {} (rotate)"),
)


def planted(rng: random.Random) -> list[Planted]:
    """One secret of every generator, with new random bodies."""
    return [make(rng) for make in GENERATORS]


def kinds() -> set[str]:
    return {make(random.Random(0)).kind for make in GENERATORS}
