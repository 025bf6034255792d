"""`synix tenant …` and `synix live status|drain` through click: --json output and one-line errors."""
from __future__ import annotations

import json

from click.testing import CliRunner
from live_helpers import post

from synix_assets.cli.main import main
from synix_assets.app.tenants import TenantHome


def invoke(*args, env=None):
    return CliRunner().invoke(main, list(args), env=env, catch_exceptions=True)


def ok_json(result):
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_live_status_and_drain_report_the_outbox_per_tenant(tmp_path, monkeypatch):
    monkeypatch.setenv("SYNIX_LIVE_BACKOFF_S", "0")
    home = tmp_path / "home"
    created = ok_json(invoke("tenant", "create", "acme", "--home", str(home), "--json"))
    assert created["token"].startswith("synix_") and created["name"] == "acme"
    ok_json(invoke("tenant", "create", "zed", "--home", str(home), "--json"))
    inbox = TenantHome(home).inbox("acme")
    post(inbox, "s1", "The garden needs tomatoes", "Plant them in May")
    inbox.close_session("s1")
    post(inbox, "s2", "still talking")
    inbox.close()
    rows = {r["tenant"]: r for r in ok_json(invoke("live", "status", "--home", str(home), "--json"))}
    assert (rows["acme"]["pending"], rows["acme"]["open_sessions"], rows["acme"]["turns"]) == (1, 1, 3)
    assert rows["zed"]["turns"] == 0
    drained = ok_json(invoke("live", "drain", "--home", str(home), "--json"))
    assert [(d["tenant"], [b["success"] for b in d["builds"]]) for d in drained] == [("acme", [True]), ("zed", [])]
    project = home / "tenants" / "acme"
    [row] = ok_json(invoke("live", "status", "-p", str(project), "--json"))
    assert (row["built"], row["pending"], row["dead"]) == (1, 0, 0)
    table = invoke("tenant", "list", "--home", str(home))
    assert table.exit_code == 0 and "acme" in table.output and "zed" in table.output


def test_tenant_commands_refuse_bad_names_duplicates_and_unknown_tenants_in_one_line(tmp_path):
    home = str(tmp_path / "home")
    for args, words in ((("tenant", "create", "Bad Name", "--home", home), "not allowed"),
                        (("tenant", "delete", "ghost", "--home", home, "--yes"), "no tenant 'ghost'")):
        result = invoke(*args)
        assert result.exit_code == 1 and words in result.output and "Traceback" not in result.output
    assert invoke("tenant", "create", "acme", "--home", home).exit_code == 0
    again = invoke("tenant", "create", "acme", "--home", home)
    assert again.exit_code == 1 and "already exists" in again.output
    assert len(again.output.strip().splitlines()) == 1


def test_the_home_servers_guard_takes_a_bearer_token_as_proof_for_posts_but_not_cross_origin():
    from synix_assets.web.guard import GuardPolicy, check_request

    policy = GuardPolicy(port=8765, bearer_is_proof=True)

    def scope(**headers):
        return {"type": "http", "method": "POST", "query_string": b"",
                "headers": [(k.replace("_", "-").encode(), v.encode())
                            for k, v in {"host": "127.0.0.1:8765", **headers}.items()]}
    assert check_request(policy, scope(authorization="Bearer synix_x")) is None
    assert check_request(policy, scope())[0] == 403
    assert check_request(policy, scope(authorization="Bearer synix_x", origin="https://evil.example"))[0] == 403
    assert check_request(GuardPolicy(port=8765), scope(authorization="Bearer synix_x"))[0] == 403
