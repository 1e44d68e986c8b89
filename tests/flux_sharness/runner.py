"""Run flux-accounting's sharness scripts (t/t1*.t of a checkout) against fairledger.

Each script runs from a scratch copy of the checkout's t/ (symlinks to its scripts, expected
files and sharness.sh) whose flux-sharness.sh has `test_under_flux` as a no-op, with the `flux`
shim (tests/flux_sharness/shim.py) first on PATH. The shim notes, per step, every command that
needs a running Flux or flux-accounting's own tables; a failed step is classified by those notes
and by the known deliberate differences (known.py).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from tests.flux_sharness import known, shim
from tests.flux_sharness.forkserver import SERVER_ENV

REPO = Path(__file__).resolve().parents[2]
# What the generated flux-sharness.sh drops: it needs lua-posix, which only Flux's own tools use.
_LUA_CHECK = re.compile(r"if ! run_timeout [^\n]*lua -e[^\n]*\n.*?\nfi\n", re.DOTALL)
# Appended to their flux-sharness.sh: no broker, and each step's number exported so the shim can
# say which step needed what.
_OVERRIDES = """
# fairledger's runner: no Flux instance, a plain shell.
test_under_flux() { :; }
eval "__fairledger_orig_$(declare -f test_expect_success)"
test_expect_success() {
    FAIRLEDGER_SHIM_STEP=$((test_count + 1))
    export FAIRLEDGER_SHIM_STEP
    __fairledger_orig_test_expect_success "$@"
}
"""
_TAP = re.compile(r"^(not ok|ok) (\d+) - (.*?)(?: # (skip|TODO).*)?$")
_SKIP = re.compile(r"^ok (\d+) # skip (.*)$")
# One script is stopped after this long: a step waiting on something only Flux would send.
SCRIPT_TIMEOUT = 1200

PASSED = "passed"
NEEDS_FLUX = "needs-flux"
INTERFACE = "interface"
DELIBERATE = "deliberate"
SKIPPED = "skipped"


@dataclass
class Step:
    number: int
    title: str
    outcome: str  # one of PASSED, NEEDS_FLUX, INTERFACE, DELIBERATE, SKIPPED
    why: str = ""
    output: str = ""
    # fairledger command lines refused as malformed inside a step counted as needing Flux.
    hidden: list[str] = field(default_factory=list)


@dataclass
class ScriptResult:
    name: str
    steps: list[Step] = field(default_factory=list)
    error: str = ""

    def count(self, outcome: str) -> int:
        return sum(1 for step in self.steps if step.outcome == outcome)


def _link_tree(checkout: Path, work: Path) -> Path:
    """A t/ beside a src/ that sharness takes for flux-accounting's, with our flux-sharness.sh."""
    source_t = checkout / "t"
    tdir = work / "t"
    tdir.mkdir(parents=True)
    (work / "src").symlink_to(checkout / "src")
    for entry in source_t.iterdir():
        if entry.name in ("sharness.d",) or entry.name.startswith("trash-directory"):
            continue
        (tdir / entry.name).symlink_to(entry)
    extensions = tdir / "sharness.d"
    extensions.mkdir()
    for script in sorted((source_t / "sharness.d").glob("*.sh")):
        if script.name == "flux-sharness.sh":
            text = _LUA_CHECK.sub("", script.read_text(encoding="utf-8"))
            (extensions / script.name).write_text(text + _OVERRIDES, encoding="utf-8")
        else:
            (extensions / script.name).symlink_to(script)
    bindir = work / "bin"
    bindir.mkdir()
    flux = bindir / "flux"
    flux.write_text(
        "#!/bin/sh\n"
        f"PYTHONPATH={shlex.quote(str(REPO))}${{PYTHONPATH:+:$PYTHONPATH}} "
        f'exec {shlex.quote(sys.executable)} -m tests.flux_sharness.shim "$@"\n',
        encoding="utf-8",
    )
    flux.chmod(0o755)
    return tdir


def _notes(log: Path) -> dict[int, list[tuple[str, str]]]:
    by_step: dict[int, list[tuple[str, str]]] = {}
    if not log.exists():
        return by_step
    for line in log.read_text(encoding="utf-8", errors="replace").splitlines():
        step, kind, what = (line.split("\t", 2) + ["", ""])[:3]
        if step.isdigit():
            by_step.setdefault(int(step), []).append((kind, what))
    return by_step


def classify(script: str, number: int, title: str, ok: bool, notes: list[tuple[str, str]]) -> Step:
    kinds = {kind for kind, _ in notes}
    if shim.KIND_FLUX in kinds:
        # Whatever its outcome: a step that ran a Flux-only command proves nothing here (a
        # `test_must_fail flux jobtap ...` passes because the shim fails).
        first = next(what for kind, what in notes if kind == shim.KIND_FLUX)
        hidden = [
            f"{kind}: {what}"
            for kind, what in notes
            if kind in (shim.KIND_USAGE, shim.KIND_REFUSED)
        ]
        return Step(number, title, NEEDS_FLUX, first, hidden=hidden)
    for kind, what in notes:
        if kind in (shim.KIND_TABLES, shim.KIND_NONE):
            # Whatever its outcome: writing flux-accounting's tables into a ledger's file (whose
            # read models happen to share some names) shows nothing about fairledger.
            return Step(number, title, DELIBERATE, f"{kind}: {what}")
    if ok:
        return Step(number, title, PASSED)
    cascade = known.AFTER_FLUX.get((script, number))
    if cascade is not None:
        return Step(number, title, NEEDS_FLUX, cascade)
    deliberate = known.DELIBERATE.get((script, number), known.DELIBERATE_SCRIPTS.get(script))
    if deliberate is not None:
        return Step(number, title, DELIBERATE, deliberate)
    return Step(number, title, INTERFACE)


def _split_output(verbose: str) -> dict[int, str]:
    """Each step's verbose output: from its `expecting success:` to its ok/not ok line."""
    chunks: dict[int, str] = {}
    current: list[str] = []
    for line in verbose.splitlines():
        match = _TAP.match(line)
        if match:
            chunks[int(match.group(2))] = "\n".join(current)
            current = []
        elif not line.startswith("#"):
            # "#\t..." lines repeat the body of the step that just failed.
            current.append(line)
    return chunks


@contextlib.contextmanager
def _forkserver() -> Iterator[str]:
    """A forkserver for the whole run, on a socket in a private directory."""
    sockdir = Path(tempfile.mkdtemp(prefix="fairledger-shim-"))
    address = str(sockdir / "server.sock")
    env = dict(os.environ, PYTHONPATH=str(REPO))
    server = subprocess.Popen(
        [sys.executable, "-m", "tests.flux_sharness.forkserver", address],
        env=env,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert server.stdout is not None
        if server.stdout.readline().strip() != "ready":
            raise RuntimeError("the fairledger forkserver did not start")
        yield address
    finally:
        server.terminate()
        server.wait()
        shutil.rmtree(sockdir, ignore_errors=True)


def run_script(checkout: Path, script: str, address: str, keep: bool = False) -> ScriptResult:
    result = ScriptResult(script.removesuffix(".t"))
    work = Path(tempfile.mkdtemp(prefix=f"fairledger-sharness-{result.name}-"))
    try:
        tdir = _link_tree(checkout, work)
        env = dict(os.environ)
        env["PATH"] = f"{work / 'bin'}:{Path(sys.executable).parent}:{env.get('PATH', '')}"
        env[shim.STATE_ENV] = str(work / "db-path")
        env[shim.LOG_ENV] = str(work / "notes.log")
        env[SERVER_ENV] = address
        env.pop("FAIRLEDGER_DB", None)
        env.pop("FAIRLEDGER_NOW", None)
        env["PYTHONPATH"] = str(REPO)
        try:
            done = subprocess.run(
                ["bash", script, "-v"],
                cwd=tdir,
                env=env,
                capture_output=True,
                text=True,
                errors="replace",
                timeout=SCRIPT_TIMEOUT,
                stdin=subprocess.DEVNULL,
            )
            output = done.stdout + done.stderr
        except subprocess.TimeoutExpired as late:
            raw = late.stdout or b""
            output = raw.decode(errors="replace") if isinstance(raw, bytes) else raw
            result.error = f"stopped after {SCRIPT_TIMEOUT} s"
        notes = _notes(work / "notes.log")
        chunks = _split_output(output)
        for line in output.splitlines():
            skipped = _SKIP.match(line)
            if skipped:
                number = int(skipped.group(1))
                result.steps.append(Step(number, skipped.group(2), SKIPPED))
                continue
            match = _TAP.match(line)
            if not match:
                continue
            number = int(match.group(2))
            step = classify(
                result.name, number, match.group(3), match.group(1) == "ok", notes.get(number, [])
            )
            step.output = chunks.get(number, "")
            result.steps.append(step)
        if not result.steps and not result.error:
            result.error = output.strip().splitlines()[-1] if output.strip() else "no output"
    finally:
        if keep:
            print(f"kept {work}", file=sys.stderr)
        else:
            shutil.rmtree(work, ignore_errors=True)
    return result


def table(results: Sequence[ScriptResult]) -> str:
    header = ("script", "steps", PASSED, NEEDS_FLUX, "other", "(b) iface", "(c) delib")
    rows = []
    totals = [0] * 6
    for res in results:
        values = [
            len([s for s in res.steps if s.outcome != SKIPPED]),
            res.count(PASSED),
            res.count(NEEDS_FLUX),
            res.count(INTERFACE) + res.count(DELIBERATE),
            res.count(INTERFACE),
            res.count(DELIBERATE),
        ]
        totals = [a + b for a, b in zip(totals, values, strict=True)]
        name = res.name + (f" ({res.error})" if res.error else "")
        rows.append((name, *map(str, values)))
    rows.append(("TOTAL", *map(str, totals)))
    widths = [max(len(str(row[i])) for row in [header, *rows]) for i in range(len(header))]
    lines = []
    for i, row in enumerate([header, *rows]):
        if i == len(rows):
            lines.append("-+-".join("-" * w for w in widths))
        cells = [str(row[0]).ljust(widths[0])] + [
            str(c).rjust(w) for c, w in zip(row[1:], widths[1:], strict=True)
        ]
        lines.append(" | ".join(cells))
        if i == 0:
            lines.append("-+-".join("-" * w for w in widths))
    return "\n".join(lines)


def details(results: Sequence[ScriptResult], show_output: bool) -> str:
    lines = []
    for res in results:
        for step in res.steps:
            if step.outcome in (INTERFACE, DELIBERATE):
                tag = "(b)" if step.outcome == INTERFACE else "(c)"
                why = f": {step.why}" if step.why else ""
                lines.append(f"{tag} {res.name} #{step.number} {step.title}{why}")
                if show_output and step.outcome == INTERFACE:
                    lines.extend("      " + out for out in step.output.splitlines()[-25:])
            for refused in step.hidden:
                lines.append(
                    f"(b?) {res.name} #{step.number} {step.title}: inside a Flux step, "
                    f"fairledger {refused}"
                )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tests.flux_sharness",
        description="Run flux-accounting's sharness tests against fairledger.",
    )
    parser.add_argument("checkout", type=Path, help="a flux-accounting checkout (with t/)")
    parser.add_argument("tests", nargs="*", help="t/ scripts to run (default: every t/t1*.t)")
    parser.add_argument("-j", "--jobs", type=int, default=2, help="scripts run at once (2)")
    parser.add_argument("-v", "--verbose", action="store_true", help="list every other failure")
    parser.add_argument("--output", action="store_true", help="with -v: each (b) step's output")
    parser.add_argument("--keep", action="store_true", help="keep each script's scratch tree")
    args = parser.parse_args(argv)
    tdir = args.checkout / "t"
    if not (tdir / "sharness.sh").is_file():
        print(
            f"{args.checkout}: no t/sharness.sh (not a flux-accounting checkout)", file=sys.stderr
        )
        return 2
    names = [Path(t).name for t in args.tests] or sorted(p.name for p in tdir.glob("t1*.t"))
    missing = [n for n in names if not (tdir / n).is_file()]
    if missing:
        print(f"not in {tdir}: {', '.join(missing)}", file=sys.stderr)
        return 2
    started = time.monotonic()
    checkout = args.checkout.resolve()
    with _forkserver() as address, ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        results = list(pool.map(lambda n: run_script(checkout, n, address, args.keep), names))
    print(table(results))
    if args.verbose:
        print()
        print(details(results, args.output))
    print(f"\n{len(names)} scripts in {time.monotonic() - started:.0f} s", file=sys.stderr)
    return 0
