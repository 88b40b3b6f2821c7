"""Credential detection: secrets are masked everywhere, ordinary values are left alone.

Secrets are recognised by name (``is_secret_key``), by value once registered (from the environment and
the config, any length from 8 characters) and by shape (provider keys, URL credentials, assignments).
Planted secrets here are short and not key-shaped on purpose: only the registry can catch them.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from verify.cli import app
from verify.cli.log_filter import SecretFilter, install_log_filter
from verify.config.models import ModelConfig
from verify.config.preset import load_preset, save_preset
from verify.config.report import config_to_dict
from verify.config.verification import VerificationConfig
from verify.secrets import (
    MASK,
    clear_secrets,
    is_secret_key,
    mask_data,
    mask_json,
    mask_secrets,
    may_hold_secret,
    redact,
    register_config_secrets,
    register_env_secrets,
    register_secrets,
    scrub,
)

REPO = Path(__file__).resolve().parent.parent
DEMO = REPO / "verify" / "examples" / "demo" / "demo.jsonld"
DEMO_PRESET = REPO / "verify" / "config" / "presets" / "demo.json"
KEY = "sk-proj-" + "A1b2C3d4" * 6
URL_PASSWORD = "pw12345678"  # 10 characters, not key-shaped
HEADER_SECRET = "abc12345xyz"  # 11 characters, under a header no earlier version knew
CREDENTIAL_URL = f"http://user:{URL_PASSWORD}@127.0.0.1:9/v1"


@pytest.fixture(autouse=True)
def empty_registry() -> Iterator[None]:
    clear_secrets()
    yield
    clear_secrets()


def endpoint_model(**fields: Any) -> ModelConfig:
    return ModelConfig.model_validate({
        "id": "local", "model_name": "llama3.1:8b", "interface": "openai_endpoint",
        "endpoint_base_url": CREDENTIAL_URL,
        "extra_kwargs": {"default_headers": {"X-Custom-Auth": HEADER_SECRET, "X-Team": "eval"}},
        **fields,
    })


# --------------------------------------------------------------------------- names


@pytest.mark.parametrize("name", [
    "api_key", "X-Api-Key", "Authorization", "access_token", "OPENAI_API_KEY", "cookie", "X-Custom-Auth",
    "Proxy-Authorization", "authentication", "Set-Cookie", "X-Signature", "password", "db_password",
    "credentials", "client_secret", "apiKey", "xApiKey", "PGPASSWORD", "cache_key", "X-Goog-Api-Key",
])
def test_secret_keys(name: str) -> None:
    assert is_secret_key(name)


@pytest.mark.parametrize("name", [
    "max_tokens", "secretary", "tokenizer", "model_name", "base_url", "author", "authority", "keyboard",
    "sort_keys", "temperature", "structured_output_method", "endpoint_base_url_mode", "X-Team",
])
def test_ordinary_keys(name: str) -> None:
    assert not is_secret_key(name)


# --------------------------------------------------------------------------- free text


@pytest.mark.parametrize("text", [
    "token=5 tokens left", "xai-grok-beta-2", "rk-llama-3-70b", "What is the secret: the ratio",
    "http://localhost:11434/v1", "pk-research-team-01", "see https://example.org/search?q=token&page=2",
    "a bearer instruments market", "Aizawa wrote it",
])
def test_redact_leaves_ordinary_text(text: str) -> None:
    assert redact(text) == text


def test_redact_removes_keys_in_free_text() -> None:
    text = f"401 for key {KEY}; headers Authorization: Bearer abcdefgh12345678; api_key=hunter2hunter2"
    out = redact(text)
    assert KEY not in out and "abcdefgh12345678" not in out and "hunter2" not in out


def test_a_short_registered_key_echoed_in_an_error_is_masked() -> None:
    echoed = f'Error code: 401 - {{"error": "invalid api token {HEADER_SECRET} for tenant"}}'
    assert HEADER_SECRET in scrub(echoed)  # not key-shaped: nothing but the registry can know it
    register_secrets([HEADER_SECRET, "short7!"])
    assert scrub(echoed) == f'Error code: 401 - {{"error": "invalid api token {MASK} for tenant"}}'
    assert HEADER_SECRET not in redact(echoed, 60)
    assert scrub("short7! is too short to be masked") == "short7! is too short to be masked"


def test_registered_values_are_masked_in_every_form_and_json_stays_valid() -> None:
    quoted = 'p"w\\1234567'  # a quote and a backslash: escaped in JSON, percent-encoded in a URL
    register_secrets([quoted, "Bearer tok9876543210"])
    line = json.dumps({
        "trait_status": {"reason": f"judge failed: {quoted} rejected"},
        "url": "http://h/v1?k=p%22w%5C1234567", "echo": "token tok9876543210 expired",
        "nested": json.dumps({"password": "s3cret!!"}),
    })
    out = scrub(line)
    assert scrub(out) == out  # masks are never masked again
    assert json.loads(out) == {
        "trait_status": {"reason": f"judge failed: {MASK} rejected"},
        "url": f"http://h/v1?k={MASK}", "echo": f"token {MASK} expired",
        "nested": '{"password": "***"}',
    }


def test_url_credentials_are_masked() -> None:
    assert scrub(f"cannot reach {CREDENTIAL_URL}/chat") == "cannot reach http://***@127.0.0.1:9/v1/chat"
    assert scrub("GET https://ghp_tok3n@github.com/x") == "GET https://***@github.com/x"
    assert scrub("https://h/v1?api_key=zz9&token=tt&page=2#top") == "https://h/v1?api_key=***&token=***&page=2#top"


def test_register_env_secrets() -> None:
    register_env_secrets({
        "MY_SERVICE_API_KEY": "k3y-abcdefgh", "HF_TOKEN": "hfabc12345", "DB_PASSWORD": "lowercaseonly",
        "X_SESSION_COOKIE": "c00kie-value", "SHORT_TOKEN": "abc", "AUTH_MODE": "disabled",
        "GIT_AUTHOR_NAME": "Ada Lovelace", "HOME": "/home/ada/projects",
        "HTTPS_PROXY": "http://ada:pr0xy-pass@proxy:3128", "DATABASE_URL": "postgres://postgres@db/app",
    })
    text = "k3y-abcdefgh hfabc12345 lowercaseonly c00kie-value abc disabled Ada Lovelace /home/ada/projects"
    assert scrub(text) == f"{MASK} {MASK} {MASK} {MASK} abc disabled Ada Lovelace /home/ada/projects"
    assert scrub("proxy said: bad password pr0xy-pass for postgres") == f"proxy said: bad password {MASK} for postgres"


def test_register_config_secrets() -> None:
    model = endpoint_model(
        endpoint_api_key="sk-12345678",
        extra_kwargs={
            "default_headers": {"X-Custom-Auth": HEADER_SECRET},
            "header_pairs": [["X-Signature", "sig-0987654321"]],
            "entries": [{"name": "Proxy-Authorization", "value": "Basic dXNlcjpwYXNz"}],
            "model_kwargs": {"user": "team-research-01"},
        },
    )
    config = VerificationConfig(
        answering_models=[model], parsing_models=[model], rubric_trait_names=["token_usage", "completeness"]
    )
    register_config_secrets(config)
    echoed = f"sk-12345678 {URL_PASSWORD} {HEADER_SECRET} sig-0987654321 dXNlcjpwYXNz"
    assert scrub(echoed) == " ".join([MASK] * 5)
    # names are not secrets, and only free-form settings read [name, value] as a pair
    assert scrub("team-research-01 completeness") == "team-research-01 completeness"


# --------------------------------------------------------------------------- settings dumps


def test_mask_and_drop_nested_structures() -> None:
    value = {"headers": {"Authorization": "Bearer x" * 3, "X-Team": "eval"}, "pairs": [["X-Api-Key", "abc"]],
             "entries": [{"name": "api-key", "value": "abc"}], "note": f"key {KEY}", "flag": {"secret": True}}
    masked = mask_secrets(value)
    assert masked["headers"] == {"Authorization": MASK, "X-Team": "eval"}
    assert masked["pairs"] == [["X-Api-Key", MASK]] and masked["entries"] == [{"name": "api-key", "value": MASK}]
    assert KEY not in masked["note"] and masked["flag"] == {"secret": True}
    dropped = mask_secrets(value, drop=True)
    assert dropped == {"headers": {"X-Team": "eval"}, "pairs": [], "entries": [], "flag": {"secret": True}}


def test_mask_secrets_masks_urls_and_registered_values() -> None:
    register_secrets([HEADER_SECRET])
    value = {"base_url": CREDENTIAL_URL, "X-Tenant": f"t-{HEADER_SECRET}", "names": ["token_usage", "clarity"]}
    assert mask_secrets(value, by_name=False) == {
        "base_url": "http://***@127.0.0.1:9/v1", "X-Tenant": f"t-{MASK}", "names": ["token_usage", "clarity"]
    }
    assert mask_secrets(value, drop=True, by_name=False) == {
        "base_url": "http://127.0.0.1:9/v1", "names": ["token_usage", "clarity"]
    }
    assert mask_secrets("https://h/v1?key=zz&v=2", drop=True) == "https://h/v1?v=2"


def test_config_dump_masks_credentials_and_registers_them() -> None:
    model = endpoint_model()
    dumped = json.dumps(config_to_dict(VerificationConfig(answering_models=[model], parsing_models=[model])))
    assert URL_PASSWORD not in dumped and HEADER_SECRET not in dumped and '"X-Team": "eval"' in dumped
    assert f"error from {HEADER_SECRET}" != scrub(f"error from {HEADER_SECRET}")  # now known everywhere


def test_show_config_never_prints_url_or_header_credentials(tmp_path: Path) -> None:
    preset = json.loads(DEMO_PRESET.read_text(encoding="utf-8"))
    preset["config"]["answering_models"] = [endpoint_model().model_dump(mode="json", exclude_none=True)]
    path = tmp_path / "creds.json"
    path.write_text(json.dumps(preset), encoding="utf-8")
    result = CliRunner().invoke(app, [str(DEMO), "--preset", str(path), "--show-config"])
    assert result.exit_code == 0, result.output
    assert URL_PASSWORD not in result.output and HEADER_SECRET not in result.output
    shown = json.loads(result.stdout)["answering_models"][0]
    assert shown["endpoint_base_url"] == "http://***@127.0.0.1:9/v1"
    assert shown["extra_kwargs"] == {"default_headers": {"X-Custom-Auth": MASK, "X-Team": "eval"}}


def test_saved_preset_has_no_url_or_header_credentials(tmp_path: Path) -> None:
    model = endpoint_model()
    config = VerificationConfig(answering_models=[model], parsing_models=[model])
    path = save_preset(config, tmp_path / "p.json", "p")
    text = path.read_text(encoding="utf-8")
    assert URL_PASSWORD not in text and HEADER_SECRET not in text and "***" not in text
    reloaded = load_preset(path)
    assert reloaded.answering_models[0].endpoint_base_url == "http://127.0.0.1:9/v1"
    assert reloaded.answering_models[0].extra_kwargs == {"default_headers": {"X-Team": "eval"}}
    assert config.answering_models[0].endpoint_base_url == CREDENTIAL_URL  # the config itself keeps them


# --------------------------------------------------------------------------- logs


@pytest.fixture
def log_filter() -> Iterator[None]:
    logger, factory = logging.getLogger("verify"), logging.getLogRecordFactory()
    yield
    logging.setLogRecordFactory(factory)
    for found in [f for f in logger.filters if isinstance(f, SecretFilter)]:
        logger.removeFilter(found)


def test_log_records_are_scrubbed(log_filter: None, caplog: pytest.LogCaptureFixture) -> None:
    register_secrets([HEADER_SECRET])
    install_log_filter()
    install_log_filter()
    assert sum(isinstance(f, SecretFilter) for f in logging.getLogger("verify").filters) == 1
    with caplog.at_level(logging.INFO, logger="verify"):
        logging.getLogger("verify").info("retrying %s after 401 (%s)", CREDENTIAL_URL, HEADER_SECRET)
        try:
            raise RuntimeError(f"rejected {HEADER_SECRET}")
        except RuntimeError:
            logging.getLogger("verify.llm.resilience").exception("call failed with key %s", HEADER_SECRET)
    assert caplog.messages == [
        f"retrying http://***@127.0.0.1:9/v1 after 401 ({MASK})", f"call failed with key {MASK}"
    ]
    assert URL_PASSWORD not in caplog.text and HEADER_SECRET not in caplog.text and "RuntimeError" in caplog.text


def test_scrub_leaves_json_literals_under_credential_names_valid() -> None:
    text = '{"endpoint_api_key": null, "anthropic_api_key": null, "password": true, "api_key": "abcdefghij"}'
    data = json.loads(scrub(text))
    assert data["endpoint_api_key"] is None and data["password"] is True and data["api_key"] == "***"


# --------------------------------------------------------------------------- values, never names


@pytest.mark.parametrize("text", [
    "export OPENAI_API_KEY=... (or put it in your environment) and run again",
    "preset passwd: not valid JSON: Expecting value at line 1 column 1",
    "export ANTHROPIC_API_KEY=<your key>", "export OPENAI_API_KEY=sk-...", "api_key=$OPENAI_API_KEY",
    "password: required", "api_key=disabled", "client_secret: xxxxxxxxxx", "token_usage: 12345678",
    "set api_key=your-api-key-here", '{"password": null, "api_key": 123456789, "secret_key": true}',
    "Authorization: Bearer ***", "passwd=**********",
])
def test_placeholders_and_plain_words_after_credential_names_stay(text: str) -> None:
    assert scrub(text) == text


@pytest.mark.parametrize(("text", "masked"), [
    ("api_key=Abc123xyz789 rejected", "api_key=*** rejected"),
    ("password: hunter2hunter2", "password: ***"),
    ('{"client_secret": "abcdefghij"}', '{"client_secret": "***"}'),  # a whole quoted value: one word counts
    ("Authorization: Basic dXNlcjpwYXNz", "Authorization: Basic ***"),
    ("DB_PASSWORD=Tr0ub4dor&3", "DB_PASSWORD=***&3"),
])
def test_assignments_of_credential_looking_values_are_masked(text: str, masked: str) -> None:
    assert scrub(text) == masked


def test_cli_hints_and_errors_about_credentials_come_out_unchanged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    missing = CliRunner().invoke(app, [str(DEMO), "--preset", "openai", "--no-cache", "--output", str(tmp_path / "o.json")])
    assert "hint: export OPENAI_API_KEY=... (or put it in your environment) and run again" in missing.output
    monkeypatch.chdir(tmp_path)
    (tmp_path / "passwd").write_text("{bad", encoding="utf-8")
    broken = CliRunner().invoke(app, [str(DEMO), "--preset", "./passwd"])
    assert "error: preset passwd: not valid JSON: Expecting property name" in broken.output, broken.output


def test_mask_data_masks_values_at_any_depth_and_never_keys_or_names() -> None:
    register_secrets([HEADER_SECRET, "12345678"])
    data = {
        "password": {"api_key": "fingerprint-abcdef0987", "reset-password": ["auth-token", 12345678]},
        "answer": f"the key {KEY} and {HEADER_SECRET}, see {CREDENTIAL_URL}",
        "trace": ({"content": f"api_key=Abc123xyz789\n{HEADER_SECRET}"},), "n": 1.5, "none": None,
    }
    masked = mask_data(data)
    assert masked["password"] == {"api_key": "fingerprint-abcdef0987", "reset-password": ["auth-token", 12345678]}
    assert masked["answer"] == f"the key {MASK} and {MASK}, see http://***@127.0.0.1:9/v1"
    assert masked["trace"] == [{"content": f"api_key=***\n{MASK}"}] and masked["n"] == 1.5 and masked["none"] is None
    assert {f"id-{HEADER_SECRET}": 1} != mask_data({f"id-{HEADER_SECRET}": 1})  # a registered value, even in a key
    assert data["answer"].startswith("the key sk-")  # the data itself is left as it was


def test_mask_json_keeps_the_text_when_nothing_can_be_a_credential() -> None:
    text = json.dumps({"clarity": 4, "question_id": "reset-password", "answer": "fine, see https://h/x?page=2"})
    assert mask_json(text) is text
    register_secrets([HEADER_SECRET])
    assert mask_json(text) is text
    named = json.dumps({"password": 4, "api_key": {"question_id": "reset-password"}, "token": "abcdefghijk"})
    assert mask_json(named) == named  # looked at value by value: names are not values


@pytest.mark.parametrize("answer", [
    f"first line\n{KEY}",  # after an escape: "\\nsk-..." has no word boundary in the text
    "password:\n\tS3cretValue99",  # whitespace escapes between the name and the value
    'config: {"api_key": "Abc123xyz789"}',  # quotes escaped in the text
])
def test_mask_json_finds_credentials_that_json_escapes_hide_from_a_text_scan(answer: str) -> None:
    line = json.dumps({"trait": "password", "answer": answer})
    masked = json.loads(mask_json(line))
    assert masked["trait"] == "password" and masked["answer"] != answer
    assert masked["answer"] == scrub(answer)


def test_the_first_look_sees_credentials_in_html_safe_json() -> None:
    from verify.report.page import script_json

    assert may_hold_secret(script_json({"a": "GET https://h/v1?page=2&token=tt12345678"}))
    register_secrets(["p<w&rd1234"])
    text = script_json({"answer": "it said p<w&rd1234", "trait": "password"})
    assert "p<w&rd1234" not in text and may_hold_secret(text)
    assert not may_hold_secret(script_json({"answer": "a < b & c", "password": 4}))
