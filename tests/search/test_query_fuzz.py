"""Generated queries (fixed seed): lone surrogates, emoji, control characters, FTS5 syntax,
quotes and very long strings, through the Python search API and the `synix` CLI. The only
exception a query may raise is a one-line SearchError; the CLI never exits 70."""
from __future__ import annotations

import os
import random
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from synix_assets.cli.main import main
from synix_resources.errors import SearchError
from synix_resources.fingerprints import content_hash
from synix_resources.search.documents import IndexDoc
from synix_resources.search.index import SearchIndex
MAX_PHRASE_CHARS = 1000  # the documented limit (synix_resources.search.query)

SYNIX = shutil.which("synix", path=str(Path(sys.executable).parent)) or "synix"
PIECES = ["\ud800", "\udcff", "\udfff", "\ud83d", "\udc80abc", "🍕", "👩‍💻", "🏳️‍🌈", "東京", "café",
          "\x1b[2J", "\x1b]8;;http://x\x07link\x1b]8;;\x07", "\x07", "\x00", "\x7f", "\u202e",
          '"', '""', "'", "*", "NEAR(", "AND", "OR", "NOT", "(", ")", "^", "-", ":", "{body}:",
          "rust", "marathon", " ", "\n", "\t", "%_%", "\\"]


def generated_queries(n: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    out = []
    for i in range(n):
        if i % 50 == 0:  # very long ones
            out.append(rng.choice(PIECES) * rng.choice([600, 5_000, 100_000]))
            continue
        parts = []
        for _ in range(rng.randint(1, 6)):
            roll = rng.random()
            if roll < 0.6:
                parts.append(rng.choice(PIECES))
            elif roll < 0.8:
                parts.append(chr(rng.randint(0xD800, 0xDFFF)))  # a lone surrogate
            else:
                parts.append(chr(rng.choice([rng.randint(1, 0x7F), rng.randint(0x80, 0x10FFFF)])))
        out.append("".join(parts))
    return out


def _options(rng: random.Random, text: str) -> dict:
    kind = rng.randrange(6)
    if kind == 0:
        return {"exact": True}
    if kind == 1:
        return {"since": text, "_query": "rust"}
    if kind == 2:
        return {"until": text, "_query": "rust"}
    if kind == 3:
        return {"layers": [text], "_query": "rust"}
    if kind == 4:
        return {"mode": "hybrid"}
    return {}


@pytest.fixture
def index(tmp_path):
    idx = SearchIndex(tmp_path / "fuzz.sqlite", embeddings=False)
    texts = {"a": "Learning Rust ownership in Tokyo 東京 🍕 marathon plans",
             "b": "café au lait — \"quoted\" text and NEAR(words) here"}
    idx.sync("t", [IndexDoc(artifact_id=k, layer="transcripts" if k == "a" else "episodes",
                            level=0 if k == "a" else 1, content=v, content_hash=content_hash(v))
                   for k, v in texts.items()])
    yield idx
    idx.close()


def test_generated_queries_through_the_api_raise_only_one_line_search_errors(index):
    rng = random.Random(20261122)
    outcomes = {"hits": 0, "search_error": 0}
    for text in generated_queries(600, seed=12):
        options = _options(rng, text)
        query = options.pop("_query", text)
        try:
            index.search(query, **options)
            index.drill_down("a", query) if not options else None
            outcomes["hits"] += 1
        except SearchError as exc:
            line = exc.one_line()
            assert "\n" not in line and line.encode("utf-8"), line
            outcomes["search_error"] += 1
    assert outcomes["hits"] > 50 and outcomes["search_error"] > 50, outcomes


def test_lone_surrogates_are_a_search_error_in_every_query_form(index):
    for options in ({}, {"exact": True}, {"mode": "hybrid"}):
        for text in ("\udcff", "rust \ud800", "🍕\udfff"):
            with pytest.raises(SearchError, match="not valid Unicode"):
                index.search(text, **options)
    for key in ("since", "until"):
        with pytest.raises(SearchError, match="not valid Unicode"):
            index.search("rust", **{key: "2024\udcff"})
        with pytest.raises(SearchError, match="is not a date"):
            index.search("rust", **{key: "yesterday"})
    assert index.search("rust", since="2020", until="2030-12-31") is not None
    # layers may be any iterable: checking them must not use it up
    assert [h.artifact_id for h in index.search("rust", layers=iter(["transcripts"]))] == ["a"]


@pytest.mark.parametrize("value, says", [
    ("2023-13-01", "there is no month 13"), ("2023-00", "there is no month 0"),
    ("2023-02-29", "February 2023 has no day 29"), ("2023-04-31", "April 2023 has no day 31"),
    ("2023-05-00", "May 2023 has no day 0"), ("0000", "there is no year 0"),
    ("2023-05-01T24:00", "there is no hour 24"), ("2023-05-01 10:60", "there is no minute 60"),
    ("2023-05-01T10:00:61Z", "there is no second 61"),
])
def test_dates_that_are_not_on_the_calendar_are_a_search_error(index, value, says):
    for key in ("since", "until"):
        with pytest.raises(SearchError) as info:
            index.search("rust", **{key: value})
        assert f"--{key} '{value}' is not a real date ({says})" in info.value.one_line()


def test_real_calendar_dates_and_prefixes_still_filter(index):
    for value in ("2024-02-29", "2023-12-31T23:59:59Z", "2023-04-30 00:00", "2023-02", "2023"):
        assert index.search("rust", since=value) is not None and index.search("rust", until=value) is not None


def test_exact_phrase_past_the_limit_is_a_clear_error_and_below_it_is_fast(index):
    with pytest.raises(SearchError, match="limit is 1,000"):
        index.search("x" * 100_000, exact=True)
    phrase = ("Learning Rust ownership " * 50)[:MAX_PHRASE_CHARS]
    started = time.monotonic()
    assert list(index.search(phrase, exact=True)) == []
    assert time.monotonic() - started < 5  # a bound against the old 31 s, not a benchmark
    assert [h.artifact_id for h in index.search("learning rust OWNERSHIP", exact=True)] == ["a"]


@pytest.fixture(scope="module")
def built_demo(tmp_path_factory):
    base = tmp_path_factory.mktemp("fuzzcli")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("SYNIX_LLM_PROVIDER", "fake")
        mp.setenv("DAGSTER_HOME", str(base / "unused_dagster_home"))
        runner = CliRunner()
        assert runner.invoke(main, ["init", str(base / "mem"), "--demo"]).exit_code == 0
        result = runner.invoke(main, ["-p", str(base / "mem"), "run"])
        assert result.exit_code == 0, result.output
    return base / "mem"


def test_generated_queries_through_the_cli_never_exit_70(built_demo):
    rng = random.Random(7)
    runner = CliRunner()
    codes: dict[int, int] = {}
    for text in generated_queries(300, seed=34):
        options = _options(rng, text)
        query = options.pop("_query", text)
        args = ["-p", str(built_demo), "search", "--", query]
        if options.get("exact"):
            args.insert(3, "--exact")
        for key in ("since", "until"):
            if key in options:
                args[3:3] = [f"--{key}", options[key]]
        if "layers" in options:
            args[3:3] = ["--layers", options["layers"][0]]
        if options.get("mode"):
            args[3:3] = ["--mode", options["mode"]]
        result = runner.invoke(main, args)
        assert result.exit_code in (0, 1), (repr(query), result.output)
        assert "internal error" not in result.output and "Traceback" not in result.output
        if result.exit_code == 1:
            assert result.output.startswith("error:"), result.output
        codes[result.exit_code] = codes.get(result.exit_code, 0) + 1
    assert codes.get(0, 0) > 20 and codes.get(1, 0) > 20, codes


@pytest.mark.slow
@pytest.mark.parametrize("args", [
    [b"search", b"\xff\xfe"], [b"search", b"--exact", b"run\xffning"],
    [b"search", b"rust", b"--since", b"\xff"], [b"get", b"\xff\xfe"], [b"lineage", b"core-\xff"],
    [b"runs", b"\xff"]], ids=lambda a: b" ".join(a).decode("latin-1"))
def test_cli_arguments_that_are_not_utf8_are_a_one_line_error(built_demo, args):
    env = {**os.environ, "NO_COLOR": "1", "SYNIX_LLM_PROVIDER": "fake"}
    env.pop("SYNIX_DEBUG", None)
    proc = subprocess.run([SYNIX.encode(), b"-p", os.fsencode(built_demo), *args], env=env,
                          capture_output=True, timeout=120)
    err = proc.stderr.decode("utf-8")  # what reaches the terminal is valid UTF-8
    assert proc.returncode == 1, err
    assert err.startswith("error:") and len(err.strip().splitlines()) == 1, err
    assert "\\xff" in err and "internal error" not in err
