"""Credential detection: secrets are masked everywhere, ordinary values are left alone."""

from __future__ import annotations

import pytest

from verify.secrets import MASK, is_secret_key, mask_secrets, redact

KEY = "sk-proj-" + "A1b2C3d4" * 6


@pytest.mark.parametrize("name", ["api_key", "X-Api-Key", "Authorization", "access_token", "OPENAI_API_KEY", "cookie"])
def test_secret_keys(name: str) -> None:
    assert is_secret_key(name)


@pytest.mark.parametrize("name", ["max_tokens", "secretary", "tokenizer", "model_name", "base_url"])
def test_ordinary_keys(name: str) -> None:
    assert not is_secret_key(name)


@pytest.mark.parametrize("text", [
    "token=5 tokens left", "xai-grok-beta-2", "rk-llama-3-70b", "What is the secret: the ratio",
    "http://localhost:11434/v1", "pk-research-team-01",
])
def test_redact_leaves_ordinary_text(text: str) -> None:
    assert redact(text) == text


def test_redact_removes_keys_in_free_text() -> None:
    text = f"401 for key {KEY}; headers Authorization: Bearer abcdefgh12345678; api_key=hunter2hunter2"
    out = redact(text)
    assert KEY not in out and "abcdefgh12345678" not in out and "hunter2" not in out


def test_mask_and_drop_nested_structures() -> None:
    value = {"headers": {"Authorization": "Bearer x" * 3, "X-Team": "eval"}, "pairs": [["X-Api-Key", "abc"]],
             "entries": [{"name": "api-key", "value": "abc"}], "note": f"key {KEY}", "flag": {"secret": True}}
    masked = mask_secrets(value)
    assert masked["headers"] == {"Authorization": MASK, "X-Team": "eval"}
    assert masked["pairs"] == [["X-Api-Key", MASK]] and masked["entries"] == [{"name": "api-key", "value": MASK}]
    assert KEY not in masked["note"] and masked["flag"] == {"secret": True}
    dropped = mask_secrets(value, drop=True)
    assert dropped == {"headers": {"X-Team": "eval"}, "pairs": [], "entries": [], "flag": {"secret": True}}
