"""The settings module: every environment variable declared once, read at each call, documented
in docs/configuration.md, and parsed with the messages and exception types each reader had."""
from __future__ import annotations

import ast
import fcntl
import os
import re
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from synix_resources.errors import LLMConfigError, SettingsError, StoreLockedError
from synix_resources.settings import Settings, render_doc, settings, variables

REPO = Path(__file__).resolve().parents[1]
PRODUCT = [REPO / "synix_assets", REPO / "synix_resources"]
DOC = REPO / "docs" / "configuration.md"
# Markers in prompt text that make the fake LLM client fail (llm/fake.py), not variables.
PROMPT_MARKERS = {"SYNIX_FAIL_400", "SYNIX_REFUSE"}
# Modules that still touch os.environ, and why. Writes (a child's environment, a value set for
# Dagster, a save-and-restore) stay where they are; reads go through settings().
ENVIRON_USERS = {
    "synix_resources/settings.py": "the one reader",
    "synix_assets/dagster_defs/instance.py": "sets DAGSTER_HOME",
    "synix_assets/forget/verify.py": "the verifying child's environment",
    "synix_resources/process/helper.py": "a build helper process's environment (search index, ledger feed)",
    "synix_assets/scale/worker.py": "the Celery worker's environment",
    "synix_assets/cli/ui_cmd.py": "the `dagster dev` child's environment",
    "synix_assets/cli/branch_cmd.py": "EDITOR, read where the other team edits (step 17)",
    "synix_assets/dagster_defs/storage.py": "sets and restores DAGSTER_HOME and a Dagster switch",
    "synix_assets/app/demo.py": "sets the offline provider for the demo's own builds",
    "synix_assets/cli/build_cmds.py": "sets and restores SYNIX_SOURCE_DIR for `synix run --source-dir`",
    "synix_assets/serve/home.py": "drops an inherited DAGSTER_HOME",
    "synix_assets/eval/mem0_system.py": "mem0 reads MEM0_TELEMETRY/MEM0_DIR from os.environ at import",
    "synix_assets/dagster_defs/event_log.py": "the root dagster.yaml's storage: DAGSTER_HOME of the project it serves",
    "synix_assets/component/memory.py": "defs.yaml's model as the default SYNIX_LLM_PROVIDER/MODEL of the code location",
}


def _sources():
    for root in PRODUCT:
        for path in sorted(root.rglob("*.py")):
            yield path.relative_to(REPO).as_posix(), path.read_text(encoding="utf-8")


def test_configuration_doc_equals_the_table_rendered_from_the_settings():
    assert DOC.read_text(encoding="utf-8") == render_doc(), (
        "docs/configuration.md is out of date: python -m synix_resources.settings > docs/configuration.md")


def test_every_synix_variable_named_in_the_code_is_declared_with_its_documentation():
    declared = {v.name for v in variables()}
    named = {m for _, text in _sources() for m in re.findall(r"\bSYNIX_[A-Z0-9_]+", text)}
    assert named - PROMPT_MARKERS - declared == set()
    assert len([n for n in declared if n.startswith("SYNIX_")]) == 31  # + SYNIX_LOCOMO_DATA, SYNIX_LONGMEMEVAL_DATA, SYNIX_API_TOKEN, SYNIX_BACKGROUND_INDEX_MIN, SYNIX_BACKGROUND_FEED_MIN_BYTES
    assert {"ANTHROPIC_API_KEY", "OPENAI_API_KEY", "DAGSTER_HOME", "EDITOR"} <= declared
    for var in variables():
        assert var.doc and var.type and var.default and var.range and var.attr, var.name
        assert getattr(Settings, var.attr) is var
        assert f"| `{var.name}` |" in render_doc()


def test_os_environ_is_touched_only_by_the_settings_module_and_known_writers():
    users = set()
    for rel, text in _sources():
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.Attribute) and node.attr in ("environ", "getenv") \
                    and isinstance(node.value, ast.Name) and node.value.id == "os":
                users.add(rel)
    assert users == set(ENVIRON_USERS)


def test_settings_are_read_from_the_environment_at_each_call_not_at_import(monkeypatch):
    monkeypatch.delenv("SYNIX_LOCK_TIMEOUT_S", raising=False)
    assert settings().lock_timeout_s == 600.0
    monkeypatch.setenv("SYNIX_LOCK_TIMEOUT_S", "0.25")
    assert settings().lock_timeout_s == 0.25
    monkeypatch.setenv("SYNIX_BRANCH", "")
    assert settings().branch is None  # an empty variable is unset
    frozen = settings({"SYNIX_WORKER_ID": "w1"})
    monkeypatch.setenv("SYNIX_WORKER_ID", "w2")
    assert frozen.worker_id == "w1" and settings().worker_id == "w2"
    with pytest.raises(AttributeError):
        frozen.env = {}  # type: ignore[misc]


def test_a_bad_value_fails_only_where_it_is_read_with_the_readers_message_and_type():
    bad = settings({"SYNIX_LLM_CONCURRENCY": "many", "SYNIX_LOCK_TIMEOUT_S": "soon",
                    "SYNIX_FAKE_LATENCY_S": " fast ", "SYNIX_LLM_CONTEXT_TOKENS": "100",
                    "SYNIX_LIVE_MAX_ATTEMPTS": "2.5", "SYNIX_BRANCH": "b1"})
    assert bad.branch == "b1" and bad.debug is False
    with pytest.raises(LLMConfigError) as info:
        bad.llm_concurrency
    assert info.value.one_line() == ("SYNIX_LLM_CONCURRENCY='many' is not a number of requests — "
                                     "set it to a whole number of concurrent requests, e.g. 4")
    with pytest.raises(LLMConfigError) as info:
        bad.fake_latency_s
    assert info.value.one_line() == "SYNIX_FAKE_LATENCY_S='fast' is not a number — set SYNIX_FAKE_LATENCY_S to e.g. 0.2"
    with pytest.raises(LLMConfigError) as info:
        bad.llm_context_tokens
    assert info.value.one_line().startswith(
        "SYNIX_LLM_CONTEXT_TOKENS='100' is out of range (accepted: 512 to 10,000,000)")
    with pytest.raises(SettingsError) as info:
        bad.lock_timeout_s
    assert info.value.one_line() == ("SYNIX_LOCK_TIMEOUT_S='soon' is not a number of seconds — set "
                                     "SYNIX_LOCK_TIMEOUT_S to a number (0 to 604,800), or unset it (default 600)")
    with pytest.raises(SettingsError, match="SYNIX_LIVE_MAX_ATTEMPTS=.* is not a whole number"):
        bad.live_max_attempts
    for raw in ("-1", "nan", "inf", ""):
        with pytest.raises(SettingsError, match="SYNIX_FORGET_WAIT_S"):
            settings({"SYNIX_FORGET_WAIT_S": raw}).forget_wait_s


@pytest.mark.parametrize("name, raw", [
    ("SYNIX_LLM_CONCURRENCY", "7" * 5000), ("SYNIX_LLM_CONCURRENCY", "²"),
    ("SYNIX_LLM_CONTEXT_TOKENS", "9" * 4301), ("SYNIX_FAKE_LATENCY_S", "1.5.2"),
    ("SYNIX_FAKE_LATENCY_S", "nan"), ("SYNIX_LLM_MAX_REQUESTS_PER_S", "7" * 5000),
])
def test_an_llm_number_past_what_python_reads_is_one_line_naming_the_variable(name, raw):
    attr = name.removeprefix("SYNIX_").lower()
    with pytest.raises(LLMConfigError) as info:
        getattr(settings({name: raw}), attr)
    line = info.value.one_line()
    # digits past the largest float read as infinity: a number, out of range
    assert line.startswith((f"{name}={raw[:40]!r} is not ", f"{name}={raw[:40]!r} is out of range")), line
    assert len(line) < 200, line


def test_switch_and_number_parsing_keep_what_each_reader_did():
    assert [settings({"SYNIX_DEBUG": v}).debug for v in ("", "0", "1", "yes")] == [False, False, True, True]
    assert settings({}).llm_concurrency is None and settings({"SYNIX_LLM_CONCURRENCY": " 4 "}).llm_concurrency == 4
    assert settings({"SYNIX_LLM_SHARED_LIMIT_URL": "  "}).llm_shared_limit_url is None
    assert settings({}).editor == "vi" and settings({"EDITOR": ""}).editor == ""
    assert settings({}).live_idle_minutes * 60 == 900.0 and settings({}).forget_wait_s == 60.0


def _invoke(*args, cwd: Path):
    from synix_assets.cli.main import main

    old = os.getcwd()
    os.chdir(cwd)
    try:
        return CliRunner().invoke(main, list(args), catch_exceptions=True)
    finally:
        os.chdir(old)


def test_lock_timeout_variable_bounds_the_wait_of_branch_and_forget_commands(tmp_path, monkeypatch):
    from synix_assets.app.run import run_build
    from synix_assets.forget import forget
    from synix_assets.project import find_project

    assert _invoke("init", str(tmp_path / "p"), "--demo", cwd=tmp_path).exit_code == 0
    monkeypatch.setenv("SYNIX_LOCK_TIMEOUT_S", "0.3")
    paths = find_project(str(tmp_path / "p"))
    with open(paths.lock, "a+") as held:
        fcntl.flock(held, fcntl.LOCK_EX)  # as another build would
        started = time.monotonic()
        result = _invoke("branch", "create", "b1", cwd=tmp_path / "p")
        assert result.exit_code == 1 and "another Synix build holds" in result.stderr, result.output
        with pytest.raises(StoreLockedError):
            forget(paths, None, rebuild=run_build)
        assert time.monotonic() - started < 30


def test_worker_id_from_the_environment_is_recorded_in_what_the_build_writes(tmp_path, monkeypatch):
    from synix_assets.project import find_project

    assert _invoke("init", str(tmp_path / "p"), "--demo", cwd=tmp_path).exit_code == 0
    monkeypatch.setenv("SYNIX_WORKER_ID", "worker-7")
    result = _invoke("run", "--select", "episodes", cwd=tmp_path / "p")
    assert result.exit_code == 0, result.output
    store = find_project(str(tmp_path / "p")).open_store()
    try:
        workers = {(a.audit or {}).get("worker") for a in store.list_layer("episodes")}
    finally:
        store.close()
    assert workers == {"worker-7"}


def test_a_bad_lock_timeout_stops_run_branch_and_forget_with_one_line_naming_the_variable(tmp_path, monkeypatch):
    assert _invoke("init", str(tmp_path / "p"), "--demo", cwd=tmp_path).exit_code == 0
    monkeypatch.setenv("SYNIX_LOCK_TIMEOUT_S", "soon")
    for args in (["run"], ["branch", "create", "exp"], ["forget", "nothing-0000000000000000"]):
        result = _invoke(*args, cwd=tmp_path / "p")
        assert result.exit_code == 1, (args, result.output)
        lines = result.output.strip().splitlines()
        assert lines[-1].startswith("error: SYNIX_LOCK_TIMEOUT_S='soon' is not a number of seconds"), (args, lines)
        assert "Traceback" not in result.output and "internal error" not in result.output


NUMBERS = {  # variable → (attribute, a value just outside its range, the range text)
    "SYNIX_LOCK_TIMEOUT_S": ("lock_timeout_s", "1e300", "0 to 604,800"),
    "SYNIX_BACKGROUND_INDEX_MIN": ("background_index_min", "1000000001", "0 to 1,000,000,000"),
    "SYNIX_BACKGROUND_FEED_MIN_BYTES": ("background_feed_min_bytes", "1000000000001", "0 to 1,000,000,000,000"),
    "SYNIX_FORGET_WAIT_S": ("forget_wait_s", "86401", "0 to 86,400"),
    "SYNIX_LIVE_IDLE_MINUTES": ("live_idle_minutes", "0", "> 0 and ≤ 10,080"),
    "SYNIX_LIVE_MAX_ATTEMPTS": ("live_max_attempts", "101", "1 to 100"),
    "SYNIX_LIVE_BACKOFF_S": ("live_backoff_s", "3601", "0 to 3,600"),
    "SYNIX_LLM_CONTEXT_TOKENS": ("llm_context_tokens", "10000001", "512 to 10,000,000"),
    "SYNIX_LLM_CONCURRENCY": ("llm_concurrency", "1000000", "1 to 256"),
    "SYNIX_LLM_MAX_REQUESTS_PER_S": ("llm_max_requests_per_s", "inf", "0 to 100,000"),
    "SYNIX_FAKE_LATENCY_S": ("fake_latency_s", "-0.5", "0 to 3,600"),
    "SYNIX_FAKE_FAILURE_RATE": ("fake_failure_rate", "2", "0 to 1"),
}


@pytest.mark.parametrize("name", sorted(NUMBERS))
def test_a_number_outside_its_range_is_one_line_naming_the_variable_its_value_and_the_range(name):
    attr, bad, accepted = NUMBERS[name]
    with pytest.raises((SettingsError, LLMConfigError)) as info:
        getattr(settings({name: bad}), attr)
    line = info.value.one_line()
    assert line.startswith(f"{name}={bad!r} is out of range (accepted: {accepted})"), line
    assert "\n" not in line
    var = getattr(Settings, attr)
    assert var.range.startswith(accepted)  # what docs/configuration.md shows is what is checked


def test_every_number_variable_has_a_checked_range():
    numbers = {v.name for v in variables() if v.type.startswith(("int", "float"))}
    assert numbers == set(NUMBERS)


def test_the_llm_client_refuses_a_concurrency_or_failure_rate_given_as_a_field_out_of_range():
    from synix_resources.llm.factory import make_client

    with pytest.raises(LLMConfigError, match=r"LLM concurrency 1000000 is out of range \(accepted: 1 to 256\)"):
        make_client(provider="fake", concurrency=1_000_000, env={})
    with pytest.raises(LLMConfigError, match=r"fake failure rate inf is out of range \(accepted: 0 to 1\)"):
        make_client(provider="fake", fake_failure_rate=float("inf"), env={})
