"""Every command of README.md's ```bash blocks runs as written on a fresh checkout after the two
set-up commands (README, "Quick start").

The fresh checkout is a copy of the working tree (the files git tracks or would track) in a
temporary folder, sharing only what the set-up builds: `.venv/` and `solver/build/`. The test runs
the Quick start's `make run` there once, as written; its local servers keep their state in the
copy and listen on free ports (`LITPATH_MONGO_PORT`, `LITPATH_NEO4J_PORT`, which the servers honour),
and `make servers-stop` ends them. Then each section's block runs in one bash session, command
after command, in the shell of a user who has not activated anything (no `LITPATH_*` variables, no
`.venv/bin` on `PATH`).

A command that is too long for the suite is in SKIPPED with the reason, or in STAND_INS with a
smaller equivalent and the reason; placeholders a user fills in (their MongoDB URI, the port the
service listens on) are in SUBSTITUTIONS. A README command that is in none of these runs as
written; an entry that matches no README command fails the test, so the lists stay honest.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from support.checkout import copy_working_tree, fresh_shell_env

REPO = Path(__file__).resolve().parents[1]
README = REPO / "README.md"
VENV_BIN = Path(sys.executable).parent
MARK = "@@@ readme command"

pytestmark = [pytest.mark.workflow, pytest.mark.servers, pytest.mark.mpi, pytest.mark.slow]

# Commands not run here: README command (prefix) -> why.
SKIPPED = {
    "make test": "it is the test suite this test belongs to",
    ".venv/bin/litpath plan-calibrate": "it measures this machine at full load for minutes and rewrites the "
    "shipped machine file; the fitting is tested in tests/plan",
    "make bench": "every benchmark: hours, and it appends to bench/results/",
}
# Commands run in a smaller form: README command (prefix) -> (what runs instead, why).
STAND_INS = {
    ".venv/bin/litpath synth --scale 300000": (
        ".venv/bin/litpath synth --scale 2000 --seed 1 --out data/synth-2k \\\n"
        "    --anchors config/sample/spoke/anchor_concepts.tsv --config-out data/synth-2k/config.yaml",
        "300,000 predications take minutes; --scale 2000 --seed 1 is the bundled sample's own recipe",
    ),
    "make run CONFIG=data/synth-300k/config.yaml": (
        "make run CONFIG=data/synth-2k/config.yaml",
        "the 2,000-predication corpus above",
    ),
    ".venv/bin/litpath plan-check": (
        ".venv/bin/litpath plan-check --case 1024,1,1x1,128,bcast",
        "its default cases are 7 solves up to n = 8192 (minutes); one small case runs the same code",
    ),
}
# Placeholders a user replaces: text in a README command -> what this test puts there ({NAME}: the
# value of the checkout's environment variable NAME).
SUBSTITUTIONS = {
    "LITPATH_MONGO_URI='mongodb://user:pass@host:27017/'": 'LITPATH_MONGO_URI="$LITPATH_MONGO_URI"',
    "127.0.0.1:8000": "127.0.0.1:{LITPATH_PORT}",  # the free port `litpath serve` listens on here
}
# Files a user writes before a command, as the README's prose tells them: command prefix -> shell.
PREPARATIONS = {
    # "Write a config of your own (copy config/config.yaml...), point inputs ... and every other
    # file at yours": the sample's files copied as one's own data (the same checksums, so the
    # build is the sample's), and a setting that changes how, not what, is computed (nothing reruns).
    "make run CONFIG=my-config.yaml": (
        "cp -r config/sample data && sed -e 's#config/sample/#data/#' -e 's/^  threads: 1$/  threads: 2/' "
        "config/config.yaml > my-config.yaml"
    ),
    # Then another hop limit, so that the comparison runs again (its rule calls `litpath`, found
    # on the PATH the command sets), with the servers the user "already has": the local ones.
    'PATH="$PWD/.venv/bin:$PATH"': (
        "sed -i 's/^  hops: 1$/  hops: 2/' my-config.yaml && "
        "source <(.venv/bin/python -m services.local.servers env)"
    ),
}


@dataclass(frozen=True)
class Command:
    section: str
    line: int  # in README.md
    text: str  # continuation lines joined as written


def readme_commands() -> list[Command]:
    """The commands of every ```bash block, with the README section (## heading) each is in."""
    commands: list[Command] = []
    section, in_bash, pending, start = "", False, "", 0
    for number, line in enumerate(README.read_text().splitlines(), 1):
        if not in_bash and line.startswith("## "):
            section = line[3:].strip()
        elif line.startswith("```"):
            in_bash = not in_bash and line.strip() == "```bash"
        elif in_bash:
            if not pending:
                if not line.strip() or line.lstrip().startswith("#"):
                    continue
                start = number
            pending += line + "\n"
            if not line.rstrip().endswith("\\"):
                commands.append(Command(section, start, pending.rstrip("\n")))
                pending = ""
    return commands


def _plan(command: Command, env: dict[str, str]) -> tuple[str | None, str]:
    """(the shell text to run, or None; why it is not run as written, or "")."""
    for prefix, reason in SKIPPED.items():
        if command.text.startswith(prefix):
            return None, reason
    text, why = command.text, ""
    for prefix, (stand_in, reason) in STAND_INS.items():
        if text.startswith(prefix):
            text, why = stand_in, reason
    for placeholder, value in SUBSTITUTIONS.items():
        text = text.replace(placeholder, value.format_map(env))
    for prefix, preparation in PREPARATIONS.items():
        if command.text.startswith(prefix):
            text = f"{preparation}\n{text}"
    return text, why


def test_every_exception_matches_a_readme_command() -> None:
    commands = [c.text for c in readme_commands()]
    assert commands, "no ```bash block found in README.md"
    for table in (SKIPPED, STAND_INS, PREPARATIONS):
        for prefix in table:
            assert any(c.startswith(prefix) for c in commands), f"no README command starts with {prefix!r}"
    for placeholder in SUBSTITUTIONS:
        assert any(placeholder in c for c in commands), f"no README command contains {placeholder!r}"


def test_every_section_with_commands_is_checked() -> None:
    """A new ```bash block needs its section's checks below (the commands then run by themselves)."""
    assert {c.section for c in readme_commands()} == set(SECTION_TESTS)


# --- a fresh checkout, set up and `make run` as the Quick start says ----------------------------


@dataclass
class Checkout:
    root: Path
    env: dict[str, str]
    make_run: str  # what `make run` printed


def _run(root: Path, env: dict[str, str], script: str, timeout: float = 900) -> tuple[int, str]:
    """Exit status and output, stdout and stderr in one stream: in the order they were written."""
    done = subprocess.run(
        ["bash", "-c", script], cwd=root, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        text=True, timeout=timeout,
    )  # fmt: skip
    return done.returncode, done.stdout


@pytest.fixture(scope="module")
def checkout(tmp_path_factory: pytest.TempPathFactory):
    root = tmp_path_factory.mktemp("checkout")
    copy_working_tree(root)
    env = fresh_shell_env()
    (make_run,) = [c for c in readme_commands() if c.section.startswith("Quick start") and c.text.startswith("make run")]
    try:
        status, output = _run(root, env, make_run.text)
        assert status == 0, output[-6000:]
        yield Checkout(root, env, output)
    finally:
        _run(root, env, "make servers-stop", timeout=120)


def run_section(checkout: Checkout, section: str) -> dict[str, str]:
    """Run every command of ``section`` in one bash session; the output of each, by its README text."""
    commands = [c for c in readme_commands() if c.section == section]
    assert commands, f"no commands in README section {section!r}"
    script = ["set -eo pipefail", 'wait_for_service() { for _ in $(seq 200); do '
              'curl -sf "http://127.0.0.1:$LITPATH_PORT/v1/health" >/dev/null && return 0; sleep 0.3; done; return 1; }']  # fmt: skip
    for index, command in enumerate(commands):
        text, _ = _plan(command, checkout.env)
        script.append(f"printf '\\n{MARK} {index}\\n'")  # on a line of its own, after any output
        if text is None:
            continue
        if re.match(r"\S*litpath serve ", text):
            # The service runs until the block ends, as in the user's other terminal.
            service = re.sub(r"\s+#.*$", "", text)
            script += [f"{service} > serve.log 2>&1 &", "SERVICE=$!", "trap 'kill $SERVICE' EXIT", "wait_for_service"]
        else:
            script.append(text)
    status, output = _run(checkout.root, checkout.env, "\n".join(script))
    assert status == 0, f"README section {section!r} failed:\n{output[-6000:]}"
    parts = re.split(rf"^{MARK} (\d+)$", output, flags=re.M)
    outputs = {commands[int(parts[i])].text: parts[i + 1] for i in range(1, len(parts), 2)}
    assert len(outputs) == len(commands), output[-3000:]
    return outputs


def job_stats(output: str) -> dict[str, int]:
    """Snakemake's 'Job stats' table: rule -> jobs."""
    match = re.search(r"Job stats:\njob\s+count\n[-\s]+\n(.*?)\n\s*total\s+\d+", output, re.S)
    assert match, output[-3000:]
    return {name: int(count) for name, count in (line.split() for line in match.group(1).splitlines())}


def json_in(output: str) -> dict:
    """The JSON object a command printed (curl's progress meter, on stderr, comes before it here)."""
    try:
        return json.loads(output[output.index("{") : output.rindex("}") + 1])
    except ValueError as error:
        raise AssertionError(f"no JSON object in:\n{output[-3000:]}") from error


def latest_build(checkout: Checkout) -> str:
    return (checkout.root / "results" / "latest").resolve().name


# --- each section's commands, and what they must have done -------------------------------------


def check_quick_start(checkout: Checkout) -> None:
    outputs = run_section(checkout, "Quick start (fresh Debian 12 / Ubuntu machine)")
    assert set(outputs) == {"make run    # set up everything, build the bundled sample end to end",
                            "make test   # set up everything, run every test (solver CTest + Python suite)"}  # fmt: skip
    # `make run` ends with what to do next: the servers' variables first, then the service.
    printed = checkout.make_run[checkout.make_run.index("is complete: ") :]
    source = "source <(.venv/bin/python -m services.local.servers env)"
    assert source in printed and printed.index(source) < printed.index(".venv/bin/litpath serve --results-dir results")
    assert (checkout.root / "results" / "latest" / "compare" / "report.html").is_file()


def check_outputs(checkout: Checkout) -> None:
    outputs = run_section(checkout, "Where outputs land")
    (output,) = outputs.values()
    assert "Report created" in output
    html = (checkout.root / "report.html").read_text()
    assert "SPOKE comparison" in html and "SPOKE mapping" in html and "scenarios.png" in html


def check_scale(checkout: Checkout) -> None:
    sample = latest_build(checkout)
    outputs = run_section(checkout, "Trying it at a real dump's size")
    assert "`make run CONFIG=data/synth-2k/config.yaml` builds this corpus" in "".join(outputs.values())
    # The sample's recipe gives the sample: the same dumps (at other paths), so the same build.
    (make_run,) = [out for text, out in outputs.items() if text.startswith("make run")]
    assert f"litpath build {sample} is complete" in make_run, make_run[-3000:]
    assert latest_build(checkout) == sample


def check_real_dumps(checkout: Checkout) -> None:
    sample = latest_build(checkout)
    outputs = run_section(checkout, "Running on real dumps")
    make_run, snakemake = outputs.values()
    # The sample's files under data/ and other solver threads: the same content and settings make
    # the sample's build (the jobs that read the moved files ran again into it); the run says at
    # its start which servers it uses (the local ones: nobody pointed elsewhere).
    assert "litpath: MongoDB: mongodb://127.0.0.1:" in make_run and "(local server, already running" in make_run
    assert latest_build(checkout) == sample, make_run[-3000:]
    # Another hop limit: the comparison alone runs again, its rule finding `litpath` on PATH.
    assert job_stats(snakemake) == {"compare": 1, "build_record": 1, "all": 1}, snakemake[-3000:]
    assert latest_build(checkout) == sample
    record = json.loads((checkout.root / "results" / "latest" / "build.json").read_text())
    assert (record["config"]["compare"]["hops"], record["config"]["solver"]["threads"]) == (2, 2)


def check_path_service(checkout: Checkout) -> None:
    outputs = run_section(checkout, "The path service")
    path = json_in(outputs["curl 'http://127.0.0.1:8000/v1/path?source=C0010200&target=C1800706'"])
    assert path["reachable"] is True and path["vertices"][0]["key"] == "C0010200"
    assert path["vertices"][-1]["key"] == "C1800706"
    # the full graph's concept-abstract hops quote their paper (a list: known, from the store of `make run`)
    paper_hops = [hop for hop in path["hops"] if hop["edge_kind"] == "concept_abstract"]
    assert paper_hops and all(isinstance(hop["sentences"], list) and hop["predicates"] for hop in paper_hops), path
    # The issue this guards: the service started by hand finds the Neo4j of `make run`.
    pair = json_in(outputs["curl 'http://127.0.0.1:8000/v1/compare/pair?source=C0010200&target=C1800706'"])
    assert pair.get("scenario") in {"1", "2a", "2b", "3a", "3b", "3c", "4", "none"}, pair
    assert pair["source"] == "C0010200" and pair["target"] == "C1800706"
    # readable evidence: every concept-concept hop of the sample's path has predicates and quoted sentences
    hops = json_in(outputs["curl 'http://127.0.0.1:8000/v1/path?source=C0010200&target=C1800706&graph=cooccurrence'"])["hops"]
    assert hops and all(hop["edge_kind"] == "concept_concept" for hop in hops)
    for hop in hops:
        assert hop["predicates"] and all(p["count"] >= 1 for p in hop["predicates"]), hop
        assert hop["sentences"] and all(s["text"] and s["pmid"] for s in hop["sentences"]), hop


def check_comparison(checkout: Checkout) -> None:
    outputs = run_section(checkout, "SPOKE and the comparison")
    (compare,) = [out for text, out in outputs.items() if text.startswith(".venv/bin/litpath compare")]
    # One line on the terminal; the record is run.json beside the report.
    assert compare.strip().startswith("litpath compare: ") and "report in results/compare-hops2/report.html" in compare
    run = json.loads((checkout.root / "results" / "compare-hops2" / "run.json").read_text())
    assert run["pairs"] > 0 and sum(run["counts"].values()) == run["pairs"]
    assert (checkout.root / "results" / "compare-hops2" / "report.html").is_file()


def check_planning(checkout: Checkout) -> None:
    outputs = run_section(checkout, "Planning a run")
    assert (checkout.root / "plan.png").stat().st_size > 0
    (check,) = [out for text, out in outputs.items() if text.startswith(".venv/bin/litpath plan-check")]
    assert "| 1024 | 1 | 1x1 | 128 | bcast |" in check


def check_other_commands(checkout: Checkout) -> None:
    outputs = run_section(checkout, "Other commands")
    (help_text,) = [out for text, out in outputs.items() if text.startswith(".venv/bin/litpath --help")]
    assert "Run stages" in help_text and "--version" in help_text


def check_time_slice(checkout: Checkout) -> None:
    sample = latest_build(checkout)
    outputs = run_section(checkout, "Time slices: does a short path foretell a later connection?")
    cut = latest_build(checkout)
    assert cut != sample, "the slice is a build of its own"
    (validate,) = [out for text, out in outputs.items() if text.startswith(".venv/bin/litpath validate-slice")]
    assert "up to 2010" in validate and "ROC AUC" in validate, validate
    folder = checkout.root / "results" / "builds" / cut / "validation"
    record = json.loads((folder / "validation.json").read_text())
    assert record["until_year"] == 2010 and record["later_build"] == sample and record["candidates"] > 0
    assert "literature up to 2010" in (folder / "validation.md").read_text()
    # the sections after this one read the whole sample
    latest = checkout.root / "results" / "latest"
    latest.unlink()
    latest.symlink_to(Path("builds") / sample)


def check_exports(checkout: Checkout) -> None:
    outputs = run_section(checkout, "Exports: KGX and SSSOM")
    export, head = outputs.values()
    assert "cooccurrence graph:" in export and "mappings in" in export, export
    # each command's output starts after the newline that ends its marker line
    assert head.strip().splitlines()[0].startswith("id\tsubject\tpredicate\tobject"), head
    assert "biolink:occurs_together_in_literature_with" in head


# In the order they run: the synthetic corpus last, because its dumps (the sample's, at other
# paths) make Snakemake ingest them again, and the sections before expect nothing to rerun.
SECTION_TESTS = {
    "Quick start (fresh Debian 12 / Ubuntu machine)": check_quick_start,
    "Where outputs land": check_outputs,
    "Running on real dumps": check_real_dumps,
    "The path service": check_path_service,
    "SPOKE and the comparison": check_comparison,
    "Planning a run": check_planning,
    "Other commands": check_other_commands,
    "Trying it at a real dump's size": check_scale,
    "Time slices: does a short path foretell a later connection?": check_time_slice,
    "Exports: KGX and SSSOM": check_exports,
}


@pytest.mark.parametrize("section", list(SECTION_TESTS))
def test_readme_section_runs_as_written(checkout: Checkout, section: str) -> None:
    SECTION_TESTS[section](checkout)
