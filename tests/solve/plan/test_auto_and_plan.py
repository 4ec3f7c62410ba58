"""``auto`` resolves to valid configurations; the plan for a machine file is deterministic."""

import json

import pytest
from click.testing import CliRunner

from pipeline.solve.plan.auto import resolve_auto
from pipeline.solve.plan.commands import plan_command
from pipeline.solve.plan.machine import BROADCAST_VARIANTS, load_machine
from pipeline.solve.plan.search import grids


@pytest.mark.parametrize("ranks", [1, 2, 3, 5, 7, 12, 13, 97])
def test_auto_resolves_valid_configurations_for_awkward_rank_counts(toy_machine, ranks):
    out = resolve_auto(3000, ranks, "auto", "auto", "auto", toy_machine, lookahead="auto")
    rows, cols = (int(x) for x in out["grid"].split("x"))
    assert rows * cols == ranks
    assert 1 <= out["tile"] <= 3000
    assert out["broadcast"] in BROADCAST_VARIANTS
    assert isinstance(out["lookahead"], bool)
    assert out["predicted_seconds"] > 0
    assert set(out["auto"]) == {"grid", "tile", "broadcast", "lookahead"}


def test_auto_keeps_explicit_values(toy_machine):
    out = resolve_auto(4096, 6, "3x2", 128, "two-ring", toy_machine, lookahead=False)
    assert (out["grid"], out["tile"], out["broadcast"], out["lookahead"]) == ("3x2", 128, "two-ring", False)
    assert out["auto"] == []


def test_auto_rejects_inconsistent_values(toy_machine):
    with pytest.raises(ValueError):
        resolve_auto(4096, 6, "4x2", "auto", "ring", toy_machine)
    with pytest.raises(ValueError):
        resolve_auto(4096, 0, "auto", "auto", "ring", toy_machine)


def test_auto_without_machine_file_falls_back_to_solver_defaults(tmp_path):
    out = resolve_auto(100, 7, "auto", "auto", "auto", tmp_path / "missing.yaml")
    assert out["grid"] in ("1x7", "7x1") and out["tile"] == 100 and out["broadcast"] == "ring"
    assert out["predicted_seconds"] is None and "no performance model" in out["model"]


def test_grids_of_primes_and_one():
    assert grids(1) == [(1, 1)]
    assert grids(7) == [(1, 7), (7, 1)]
    assert grids(12)[0] == (3, 4)


def test_machine_file_round_trips(toy_machine, tmp_path):
    path = toy_machine.save(tmp_path / "toy.yaml")
    again = load_machine(path)
    assert again.to_dict() == toy_machine.to_dict()


def test_a_calibration_that_fails_mid_write_keeps_the_old_machine_file(toy_machine, tmp_path, monkeypatch):
    """The file every later plan reads is replaced whole or not at all (a truncated one would
    fail them all with MachineError until someone deleted it)."""
    from pipeline.runtime import files

    path = toy_machine.save(tmp_path / "toy.yaml")
    before = path.read_text()

    def killed(_fd):
        raise KeyboardInterrupt  # stands for the kill that a write in place would not survive

    monkeypatch.setattr(files.os, "fsync", killed)
    with pytest.raises(KeyboardInterrupt):
        toy_machine.save(path)
    assert path.read_text() == before
    assert load_machine(path).to_dict() == toy_machine.to_dict()
    assert [p.name for p in tmp_path.iterdir()] == ["toy.yaml"]


def test_plan_is_deterministic_for_a_machine_file(toy_machine, tmp_path):
    path = toy_machine.save(tmp_path / "toy.yaml")
    runner = CliRunner()
    args = ["--n", "65536", "--ranks", "12", "--machine", str(path), "--json", "--top", "5"]
    first = runner.invoke(plan_command, args)
    second = runner.invoke(plan_command, args)
    assert first.exit_code == 0, first.output
    assert first.output == second.output
    ranked = json.loads(first.output)
    assert len(ranked) == 5
    assert [r["seconds"] for r in ranked] == sorted(r["seconds"] for r in ranked)


def test_committed_machine_file_plans(tmp_path):
    runner = CliRunner()
    result = runner.invoke(plan_command, ["--n", "8192", "--ranks", "3", "--heatmap", str(tmp_path / "f8.png"),
                                          "--heatmap-n", "1024,8192", "--heatmap-ranks", "1,2,4"])  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "best: --grid" in result.output
    assert (tmp_path / "f8.png").stat().st_size > 0


def test_plan_names_a_missing_machine_file(tmp_path):
    result = CliRunner().invoke(
        plan_command, ["--n", "10", "--ranks", "1", "--machine", str(tmp_path / "x.yaml")]
    )
    assert result.exit_code != 0
    assert "x.yaml" in result.output


@pytest.mark.parametrize("args, option", [
    (["--tile", "abc"], "--tile"), (["--tile", "0"], "--tile"), (["--tile", "-64"], "--tile"),
    (["--heatmap", "hm.txt"], "--heatmap"), (["--heatmap", "noformat"], "--heatmap"),
    (["--heatmap", "h.png", "--heatmap-n", "x,y"], "--heatmap-n"),
    (["--heatmap", "h.png", "--heatmap-ranks", "4,0"], "--heatmap-ranks"),
])  # fmt: skip
def test_plan_names_the_option_of_a_malformed_value(args, option, tmp_path, monkeypatch):
    """Each was a traceback (a ValueError, or matplotlib's) after the ranking was printed (found in review)."""
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(plan_command, ["--n", "1000", "--ranks", "4", *args])
    assert result.exit_code == 2, result.output
    assert f"Invalid value for {option}:" in result.output and "machine:" not in result.output
    assert not list(tmp_path.iterdir())  # no heat map written


@pytest.mark.parametrize("case", ["a,1,1x1,128,ring", "1024,1,1by1,128,ring", "1024,1,1x1,0,ring"])
def test_plan_check_names_a_malformed_case(case):
    from pipeline.solve.plan.commands import check_command

    result = CliRunner().invoke(check_command, ["--case", case])
    assert result.exit_code == 2 and "Invalid value for --case:" in result.output, result.output
