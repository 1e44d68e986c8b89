"""flux-accounting's output contract and option spelling, on both stores: what its scripts
parse (JSON lists by default for view-*, tables with --parsable, -c, -f/-j, -v, export-db -F),
the errors and warnings they grep for and the stream they go to, the refusals of its argument
parser, and long options by unique prefix as argparse takes them."""

from __future__ import annotations

import json
from pathlib import Path

import click
from click.testing import CliRunner

from cli.main import cli
from tests.cli.test_usage import charged, ingest, period, usage_store  # noqa: F401 (fixture)
from tests.conftest import Store, refusal

UNSET = getattr(click.core, "UNSET", None)  # click >= 8.3 marks "no default" with a sentinel
TREE_HEADER = "Bank".ljust(20) + "".join(
    h.rjust(20) for h in ("Username", "Active", "RawShares", "RawUsage", "Fairshare")
)


def bank_line(depth: int, bank: str, usage: str) -> str:
    """flux-accounting's as_tree bank line: the name indented one space per level."""
    prefix = " " * depth
    return (
        (prefix + bank).ljust(20)
        + "".rjust(20)
        + "true".rjust(20)
        + "1".rjust(20)
        + usage.rjust(20)
    )


def user_line(depth: int, bank: str, user: str, usage: str) -> str:
    prefix = " " * depth
    return (
        prefix
        + bank.ljust(20)
        + user.rjust(20 - len(prefix))
        + "true".rjust(20)
        + "1".rjust(20)
        + usage.rjust(20)
        + "0.5".rjust(20)
    )


def with_alice_usage(store: Store, tmp_path: Path) -> float:
    """root -> A (alice, bob), B (carol); alice charged 100, the others nothing."""
    now = period(0, 60)
    ingest(store, tmp_path, now, charged(1, 100, period(0)))
    store.run("update-usage", now=now)
    return now


# --- the default JSON, --json and --parsable -----------------------------------------------------


def test_view_commands_print_a_json_list_by_default(ledger_store: Store) -> None:
    ledger_store.run("add-bank", "root", "1")
    ledger_store.run("add-queue", "gold", "--priority", "100")
    ledger_store.run("add-project", "climate")
    ledger_store.run("add-user", "-u", "amy", "-i", "5001", "-B", "root", "-q", "gold")
    for args, first in (
        (("view-user", "amy"), {"username": "amy", "bank": "root", "max_nodes": "unlimited"}),
        (("view-queue", "gold"), {"queue": "gold", "priority": 100, "max_cores": "unlimited"}),
        (("view-project", "climate"), {"project_id": 2, "project": "climate", "usage": 0.0}),
        (("view-bank", "root"), {"bank_id": 1, "bank": "root", "active": 1}),
    ):
        out = ledger_store.run(*args).stdout
        assert out == ledger_store.run(*args, "--json").stdout
        (row,) = json.loads(out)
        assert {k: row[k] for k in first} == first, args
        assert out.startswith("[\n  {\n    "), args  # json.dumps(rows, indent=2)


def test_parsable_prints_flux_accountings_table(ledger_store: Store) -> None:
    ledger_store.run("add-bank", "root", "1")
    ledger_store.run("add-project", "climate")
    assert ledger_store.run("view-project", "climate", "--parsable").stdout == (
        "project_id | project | usage\n-----------+---------+------\n2          | climate | 0.0  \n"
    )
    ledger_store.run("add-user", "-u", "amy", "-i", "5001", "-B", "root")
    table = ledger_store.run(
        "view-user", "amy", "--parsable", "--fields", "username,active,max_cores"
    )
    assert table.stdout == (
        "username | active | max_cores\n"
        "---------+--------+----------\n"
        "amy      | true   | unlimited\n"
    )
    # -o wins over --parsable and prints raw values, as flux-accounting's format string does.
    out = ledger_store.run(
        "view-user", "amy", "--parsable", "-o", "{username}:{active}:{max_cores}"
    )
    assert out.stdout == "username:active:max_cores\namy:1:2147483647\n"


def test_list_users_short_options(ledger_store: Store) -> None:
    ledger_store.run("add-bank", "root", "1")
    ledger_store.run("add-user", "-u", "amy", "-i", "5001", "-B", "root")
    out = ledger_store.run("list-users", "-f", "username,bank", "-j").stdout
    assert out == '[\n  {\n    "username": "amy",\n    "bank": "root"\n  }\n]\n'
    assert (
        ledger_store.run("list-users", "-f", "username").stdout == "username\n--------\namy     \n"
    )


# --- view-bank -c / -A, -u, -t -------------------------------------------------------------------


def test_view_bank_concise_lists_only_associations_with_usage(
    usage_store: Store,  # noqa: F811 (the fixture imported above)
    tmp_path: Path,
) -> None:
    now = with_alice_usage(usage_store, tmp_path)
    tree = usage_store.run("view-bank", "root", "-t", "-c", now=now).stdout
    assert tree == "\n".join(
        [
            TREE_HEADER,
            bank_line(0, "root", "100.0"),
            bank_line(1, "A", "100.0"),
            user_line(2, "A", "alice", "100.0"),
            bank_line(1, "B", "0.0"),  # every bank stays, its users filtered away
            "",
            "",
        ]
    )
    parsable = usage_store.run("view-bank", "A", "-t", "-P", "--concise", now=now).stdout
    assert parsable == (
        "Bank|Username|Active|RawShares|RawUsage|Fairshare\n"
        "A||true|1|100.0\n"
        " A|alice|true|1|100.0|0.5\n\n"
    )
    users = usage_store.run("view-bank", "A", "-u", "-c", now=now).stdout
    assert users == (
        "bank_id | bank | active | parent_bank | shares | job_usage | priority | "
        "ignore_older_than\n"
        "--------+------+--------+-------------+--------+-----------+----------+-"
        "-----------------\n"
        "2       | A    | true   | root        | 1      | 100.0     | 0.0      | "
        "0                \n"
        "\n"
        "username | active | default_bank | shares | job_usage | fairshare\n"
        "---------+--------+--------------+--------+-----------+----------\n"
        "alice    | true   | A            | 1      | 100.0     | 0.5      \n"
    )
    none = usage_store.run("view-bank", "B", "--users", "--concise", now=now).stdout
    assert none.endswith("\n\nno users under B\n")


def test_view_bank_active_hides_inactive_associations(ledger_store: Store) -> None:
    """t1023's expected outputs for bank Z after delete-user user90002 Z."""
    ledger_store.run("add-bank", "root", "1")
    ledger_store.run("add-bank", "Z", "1", "--parent-bank", "root")
    for user in ("user90001", "user90002"):
        ledger_store.run("add-user", "--username", user, "--bank", "Z")
    ledger_store.run("delete-user", "user90002", "Z")
    everyone = ledger_store.run("view-bank", "--parsable", "--tree", "Z").stdout
    assert everyone == (
        "Bank|Username|Active|RawShares|RawUsage|Fairshare\n"
        "Z||true|1|0.0\n"
        " Z|user90001|true|1|0.0|0.5\n"
        " Z|user90002|false|1|0.0|0.5\n\n"
    )
    active = ledger_store.run("view-bank", "--parsable", "--tree", "--active", "Z").stdout
    assert active == (
        "Bank|Username|Active|RawShares|RawUsage|Fairshare\n"
        "Z||true|1|0.0\n"
        " Z|user90001|true|1|0.0|0.5\n\n"
    )
    tree = ledger_store.run("view-bank", "--active", "--tree", "Z").stdout
    assert tree == "\n".join(
        [TREE_HEADER, bank_line(0, "Z", "0.0"), user_line(1, "Z", "user90001", "0.0"), "", ""]
    )


def test_view_bank_format_string(ledger_store: Store) -> None:
    """t1023: view-bank -o "{bank_id:<8} || {bank:<12} || {shares:<5}" A."""
    ledger_store.run("add-bank", "root", "1")
    ledger_store.run("add-bank", "A", "1", "--parent-bank", "root")
    out = ledger_store.run("view-bank", "-o", "{bank_id:<8} || {bank:<12} || {shares:<5}", "A")
    assert out.stdout == "bank_id  || bank         || shares\n2        || A            || 1    \n"


# --- errors: text, stream, exit code, nothing written --------------------------------------------


def test_refusals_in_flux_accountings_words(ledger_store: Store) -> None:
    ledger_store.run("add-bank", "root", "1")
    empty = ledger_store.run("list-queues", expect=1)  # no queue yet
    assert (empty.stdout, empty.stderr) == ("", refusal("list-queues", "no results found in query"))
    ledger_store.run("add-queue", "batch")
    ledger_store.run("add-user", "-u", "amy", "-i", "5001", "-B", "root")
    before = ledger_store.log_position()
    for args, code, message in (
        (("view-bank", "foo"), 1, "bank foo not found in bank_table"),
        (("view-user", "bob"), 1, "user bob not found in association_table"),
        (("view-queue", "q"), 1, "queue q not found in queue_table"),
        (("view-project", "p"), 1, "project p not found in project_table"),
        (("list-users", "-B", "nope"), 1, "no results found in query"),
        (
            ("view-bank", "root", "--tree", "--fields=bank_id"),
            1,
            "--tree option does not support custom formatting",
        ),
        (
            ("view-bank", "root", "-P"),
            1,
            "-P/--parsable can only be passed with -t/--tree",
        ),
        (
            ("edit-user", "amy", "-q", "batch", "--add-queue", "batch"),
            1,
            "cannot specify --queues with --add-queue or --delete-queue; use either "
            "full replacement (--queues) or incremental operations (--add-queue/--delete-queue)",
        ),
        (
            ("edit-user", "amy", "--add-queue", "batch", "--delete-queue", "batch"),
            1,
            "cannot pass queue to both --add-queue and --delete-queue: batch",
        ),
        (
            ("view-user", "amy", "--fields", "nope"),
            1,
            "invalid fields: nope (available: creation_time, mod_time, active, "
            "username, userid, bank, default_bank, shares, job_usage, fairshare, "
            "max_running_jobs, max_active_jobs, max_nodes, max_cores, queues, projects, "
            "default_project, max_sched_jobs)",
        ),
    ):
        result = ledger_store.run(*args, expect=code)
        assert (result.stdout, result.stderr) == ("", refusal(args[0], message)), args
    # argparse's mutual exclusion (usage error, exit 2), as t1011 greps for it.
    result = ledger_store.run("view-user", "--fields=username", "-J", "amy", expect=2)
    assert result.stdout == ""
    assert result.stderr.endswith(
        "\nfairledger view-user: error: "
        "argument -J/--job-usage: not allowed with argument --fields\n"
    )
    assert ledger_store.log_position() == before


def test_delete_warnings_go_to_stdout(ledger_store: Store) -> None:
    """t1024/t1025 grep the warning from stdout."""
    ledger_store.run("add-bank", "root", "1")
    ledger_store.run("add-project", "climate")
    ledger_store.run("add-user", "-u", "amy", "-B", "root", "-P", "climate")
    result = ledger_store.run("delete-project", "climate")
    assert result.stdout == (
        "WARNING: user(s) in the association_table still reference this project. Make sure "
        "to edit user rows to account for this deleted project.\n"
    )
    assert result.stderr == "fairledger: associations listing project climate: amy/root\n"


# --- view-user -J, update-usage -v, export-db -F ------------------------------------------------


def test_job_usage_rows_are_flux_accountings_period_rows(
    usage_store: Store,  # noqa: F811
    tmp_path: Path,
) -> None:
    usage_store.run("add-user", "-u", "alice", "-i", "5001", "-B", "B")  # a second association
    now = with_alice_usage(usage_store, tmp_path)
    rows = json.loads(usage_store.run("view-user", "alice", "-J", now=now).stdout)
    # One row per period, current first (4 past bins + the current one), banks in name order.
    assert rows == [
        {"username": "alice", "userid": 5001, "bank": bank, "period": p, "value": value}
        for bank, values in (("A", [100.0, 0, 0, 0, 0]), ("B", [0.0, 0, 0, 0, 0]))
        for p, value in enumerate(values)
    ]
    table = usage_store.run("view-user", "alice", "-J", "--parsable", now=now).stdout
    assert table.splitlines()[:3] == [
        "username | userid | bank | period | value",
        "---------+--------+------+--------+------",
        "alice    | 5001   | A    | 0      | 100.0",
    ]


def test_update_usage_verbose_logs_on_stderr(usage_store: Store) -> None:  # noqa: F811
    quiet = usage_store.run("update-usage", now=period(0, 60))
    assert quiet.stderr == ""
    loud = usage_store.run("update-usage", "-v", now=period(0, 70))
    assert loud.stdout == "usage updated at 2023-11-14T22:14:30+00:00\n"
    assert loud.stderr == (
        "2023-11-14 22:14:30: INFO: beginning job-usage update for flux-accounting DB; slow "
        "response times may occur\n"
        "2023-11-14 22:14:30: INFO: job-usage update for flux-accounting DB now complete\n"
    )


def test_export_db_fairshare_emulate_prints_the_whole_tree(
    usage_store: Store,  # noqa: F811
    tmp_path: Path,
) -> None:
    now = with_alice_usage(usage_store, tmp_path)
    usage_store.run("delete-user", "bob", "A", now=now)  # inactive rows stay in the tree
    out = usage_store.run("export-db", "-F", "--dir", str(tmp_path / "unused"), now=now).stdout
    assert not (tmp_path / "unused").exists()

    def user(name: str, usage: float) -> dict[str, object]:
        return {"username": name, "shares": 1, "usage": usage}

    expected = {
        "root": {
            "bank": "root",
            "shares": 1,
            "usage": 100.0,
            "children": [
                {
                    "bank": "A",
                    "shares": 1,
                    "usage": 100.0,
                    "children": [user("alice", 100.0), user("bob", 0.0)],
                },
                {"bank": "B", "shares": 1, "usage": 0.0, "children": [user("carol", 0.0)]},
            ],
        }
    }
    assert out == json.dumps(expected, indent=2) + "\n"


# --- long options by unique prefix ---------------------------------------------------------------


def test_unique_prefixes_of_long_options_are_taken(ledger_store: Store) -> None:
    ledger_store.run("add-bank", "root", "1")
    ledger_store.run("add-bank", "A", "1", "--parent", "root")
    ledger_store.run("add-queue", "gold")
    ledger_store.run("add-user", "--usern", "amy", "--ban", "A", "--queue", "gold")
    ledger_store.run("edit-user", "amy", "--max-r=9", "--max-s", "3")
    out = ledger_store.run("view-user", "amy", "-o", "{queues} {max_running_jobs} {max_sched_jobs}")
    assert out.stdout == "queues max_running_jobs max_sched_jobs\ngold 9 3\n"
    # An option's value is never taken for an option, whatever it looks like.
    assert ledger_store.run("view-bank", "A", "-o", "--fie").stdout == "--fie\n--fie\n"
    # The group's own options too, before the command.
    result = CliRunner().invoke(
        cli, ["--d", ledger_store.url, "list-banks", "--inac", "-o", "{bank}"]
    )
    assert (result.exit_code, result.output) == (0, "bank\nroot\nA\n")


def test_an_ambiguous_prefix_is_refused_as_argparse_does(ledger_store: Store) -> None:
    ledger_store.run("add-bank", "root", "1")
    ledger_store.run("add-user", "-u", "amy", "-B", "root")
    before = ledger_store.log_position()
    result = ledger_store.run("edit-user", "amy", "--ma", "3", expect=2)
    assert result.stderr.endswith(
        "fairledger edit-user: error: ambiguous option: --ma could match --max-running-jobs, "
        "--max-active-jobs, --max-nodes, --max-cores, --max-sched-jobs\n"
    )
    assert "Traceback" not in result.stderr
    # A prefix of no option is argparse's unrecognized argument.
    assert ledger_store.run("edit-user", "amy", "--zz", expect=2).stderr.endswith(
        "\nfairledger edit-user: error: unrecognized arguments: --zz\n"
    )
    assert ledger_store.log_position() == before


# --- --help shows every default ------------------------------------------------------------------


def test_help_shows_every_default() -> None:
    top = click.Context(cli, info_name="fairledger", **cli.context_settings)
    missing = []

    def visit(group: click.Group, parent: click.Context) -> None:
        for name in group.list_commands(parent):  # the top group loads its commands when asked
            command = group.get_command(parent, name)
            assert command is not None
            ctx = click.Context(command, info_name=name, parent=parent)
            if isinstance(command, click.Group):
                visit(command, ctx)
                continue
            for param in command.get_params(ctx):
                if not isinstance(param, click.Option) or param.hidden:
                    continue
                default = param.get_default(ctx, call=False)
                if default is UNSET or default in (None, (), False):  # none, or an unset flag
                    continue
                record = param.get_help_record(ctx)
                if record is None or "default:" not in record[1]:
                    missing.append(f"{name} {param.opts[-1]}")

    visit(cli, top)
    assert missing == []
    help_text = " ".join(CliRunner().invoke(cli, ["add-bank", "--help"]).output.split())
    assert "--parent-bank TEXT The parent bank ('' makes the root). [default: \"\"]" in help_text
