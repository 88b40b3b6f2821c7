"""What a command imports before it does useful work (the timings are benchmarks/bench_startup.py's;
these check the causes, which do not depend on the machine)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from verify.llm.simulated.server import start_server

ROOT = Path(__file__).resolve().parent.parent
DEMO = ROOT / "verify" / "examples" / "demo"
HEAVY = ("langchain", "langchain_core", "langchain_openai", "langchain_anthropic", "langchain_ollama", "openai",
         "anthropic")  # fmt: skip


def _loaded(code: str) -> set[str]:
    out = subprocess.run(
        [sys.executable, "-c", code + "\nimport sys, json; print(json.dumps(sorted(sys.modules)))"],
        capture_output=True, text=True, check=True, cwd=ROOT,
    ).stdout  # fmt: skip
    return set(json.loads(out.strip().splitlines()[-1]))


def test_import_verify_loads_no_submodule_until_a_name_is_used() -> None:
    loaded = _loaded("import verify")
    assert not {m for m in loaded if m.startswith("verify.")}
    used = _loaded("from verify import run_verification, VerificationConfig")
    assert {"verify.run.runner", "verify.config.verification"} <= used
    assert "verify.config.report" in _loaded("import verify\nassert verify.config.INERT_FIELDS")  # subpackages too


def test_the_cli_module_loads_no_runner_and_no_provider_package() -> None:
    loaded = _loaded("import verify.cli")
    assert "verify.run.runner" not in loaded
    assert not loaded & set(HEAVY)


def test_a_run_with_an_openai_compatible_judge_imports_no_langchain_or_sdk(tmp_path: Path) -> None:
    server = start_server(record=False)
    try:
        preset = json.loads((ROOT / "verify" / "config" / "presets" / "demo.json").read_text())
        preset["config"]["parsing_models"] = [{
            "id": "judge", "model_name": "simulated-judge", "interface": "openai_endpoint",
            "endpoint_base_url": server.url, "endpoint_api_key": "sk-test", "temperature": 0.0,
        }]  # fmt: skip
        path = tmp_path / "preset.json"
        path.write_text(json.dumps(preset), encoding="utf-8")
        code = (
            "import sys\nfrom verify.cli import main\nsys.argv = ['verify', " + ", ".join(repr(a) for a in [
                str(DEMO / "demo.jsonld"), "--preset", str(path), "--answers", str(DEMO / "answers.json"),
                "--output", str(tmp_path / "out.json"), "--no-cache", "--question-ids", "demo-capital",
            ]) + "]\ntry:\n    main()\nexcept SystemExit as exit:\n    assert not exit.code, exit.code"
        )  # fmt: skip
        loaded = _loaded(code)
    finally:
        server.stop()
    assert server.request_count > 0
    assert "verify.llm.adapters.openai_compatible" in loaded
    assert not loaded & set(HEAVY), sorted(loaded & set(HEAVY))
