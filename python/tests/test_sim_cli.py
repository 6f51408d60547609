"""``python -m guards.sim``: tables, files, comparisons, and bad input, through a real
subprocess (as a user runs it)."""

from __future__ import annotations

import json
import pathlib
import re
import subprocess
import sys

import pytest

import guards.sim as sim

PNG = b"\x89PNG\r\n\x1a\n"


def cli(*args: str, cwd: pathlib.Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "guards.sim", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def rows(text: str) -> list[str]:
    return [line for line in text.splitlines() if re.match(r"\d\d:\d\d:\d\d ", line)]


def test_basketly_prints_a_per_second_table_and_a_summary(tmp_path: pathlib.Path) -> None:
    p = cli("basketly", "--setting", "C8", "--seed", "1", "--until", "20:00:05", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    out = p.stdout
    assert out.startswith("C8, seed 1: 20 intervals of 1 s from 19:59:45 to 20:00:05")
    assert len(rows(out)) == 20
    assert "goodput" in out.splitlines()[1]
    assert "summary:" in out and "stock_latency_ms:" in out
    assert p.stderr == ""  # no progress bar when stderr is not a terminal


def test_json_and_csv_files_hold_the_run(tmp_path: pathlib.Path) -> None:
    p = cli(
        "basketly", "--setting", "C2", "--seed", "3", "--until", "20:00:03",
        "--set", "lb=round_robin", "--set", "stock_call.attempt_timeout=80ms",
        "--json", "r.json", "--csv", "r.csv", "--quiet", cwd=tmp_path,
    )
    assert p.returncode == 0, p.stderr
    assert p.stdout == ""
    text = (tmp_path / "r.json").read_text().strip()
    api = sim.basketly(
        "C2", seed=3, until="20:00:03",
        overrides={"lb": "round_robin", "stock_call.attempt_timeout": "80ms"},
    )
    assert text == api.to_json()
    d = json.loads(text)
    assert (d["setting"], d["seed"]) == ("C2", 3)
    csv_lines = (tmp_path / "r.csv").read_text().splitlines()
    assert csv_lines[0].startswith("t,offered,") and len(csv_lines) == 1 + 18


def test_columns_choose_the_table(tmp_path: pathlib.Path) -> None:
    p = cli("basketly", "--setting", "C0", "--until", "19:59:48", "--columns", "goodput,db_stale",
            cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert p.stdout.splitlines()[1].split() == ["t", "goodput", "db_stale"]
    p = cli("basketly", "--until", "19:59:48", "--columns", "goodput,nope", cwd=tmp_path)
    assert p.returncode == 2 and "'nope'" in p.stderr


def test_compare_prints_settings_side_by_side_and_plots(tmp_path: pathlib.Path) -> None:
    pytest.importorskip("matplotlib")
    p = cli(
        "basketly", "--compare", "C0", "C1", "C8", "--until", "20:00:25",
        "--plot", "out/compare.png", "--json", "cmp.json", "--csv", "cmp.csv", cwd=tmp_path,
    )
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    assert lines[0] == "Basketly, seed 1: C0, C1, C8 side by side"
    assert lines[1].split() == ["C0", "C1", "C8"]
    recovered = next(line for line in lines if "recovered at" in line)
    assert recovered.split()[-3:] == ["never", "20:00:20", "20:00:21"]
    degraded = next(line for line in lines if "cart views without badges" in line)
    assert 1000 <= int(degraded.split()[-1].replace(",", "")) <= 1400
    assert (tmp_path / "out" / "compare.png").read_bytes()[:8] == PNG
    d = json.loads((tmp_path / "cmp.json").read_text())
    assert d["settings"] == ["C0", "C1", "C8"]
    assert (tmp_path / "cmp.csv").read_text().startswith("metric,label,C0,C1,C8\n")


def test_plot_without_matplotlib_still_prints_the_table(tmp_path: pathlib.Path) -> None:
    # A `matplotlib` that fails to import, first on the path.
    fake = tmp_path / "fake"
    (fake / "matplotlib").mkdir(parents=True)
    (fake / "matplotlib" / "__init__.py").write_text("raise ImportError('no matplotlib here')\n")
    import os

    env = dict(os.environ, PYTHONPATH=str(fake))
    p = cli("basketly", "--setting", "C8", "--until", "19:59:50", "--plot", "x.png",
            cwd=tmp_path, env=env)
    assert p.returncode == 1
    assert len(rows(p.stdout)) == 5 and "summary:" in p.stdout
    assert "matplotlib" in p.stderr and "pip install 'guards[sim]'" in p.stderr
    assert not (tmp_path / "x.png").exists()
    p = cli("basketly", "--compare", "C0", "C8", "--until", "20:00:03", "--plot", "x.png",
            cwd=tmp_path, env=env)
    assert p.returncode == 1 and "side by side" in p.stdout and "matplotlib" in p.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["basketly", "--setting", "C9"], "unknown preset 'C9'"),
        (["basketly", "--set", "nope=1", "--until", "20:00:00"], "unknown override key 'nope'"),
        (["basketly", "--set", "shopapi.threads=-1"], "shopapi.threads"),
        (["basketly", "--set", "hiccup"], "key=value"),
        (["basketly", "--until", "8pm"], "--until"),
        (["basketly", "--until", "19:00:00"], "until"),
        (["basketly", "--seed", "-1"], "--seed"),
        (["basketly", "--seed", "one"], "--seed"),
        (["basketly", "--setting", "C0", "--compare", "C1"], "either --setting or --compare"),
        (["basketly", "--compare", "C0", "C42"], "unknown preset 'C42'"),
        (["basketly", "--jobs", "2"], "--jobs goes with --compare"),
        (["basketly", "--bogus"], "unrecognized arguments"),
        (["fly"], "invalid choice"),
        ([], "required"),
        (["run", "missing.json", "--duration", "1"], "cannot read missing.json"),
        (["run", "missing.json"], "--until --duration"),
    ],
)
def test_bad_input_exits_2_with_a_clear_message(
    tmp_path: pathlib.Path, args: list[str], message: str
) -> None:
    p = cli(*args, cwd=tmp_path)
    assert p.returncode == 2, (p.stdout, p.stderr)
    assert message in p.stderr
    assert "Traceback" not in p.stderr


def test_an_unwritable_output_exits_1(tmp_path: pathlib.Path) -> None:
    (tmp_path / "file").write_text("")
    p = cli("basketly", "--until", "19:59:47", "--json", "file/r.json", cwd=tmp_path)
    assert p.returncode == 1
    assert "cannot write the JSON to file/r.json" in p.stderr
    assert len(rows(p.stdout)) == 2  # the table came first
    p = cli("basketly", "--until", "19:59:47", "--plot", "file/r.png", "--quiet", cwd=tmp_path)
    assert p.returncode == 1 and "cannot write the plot to file/r.png" in p.stderr


def test_presets_and_keys_are_listed(tmp_path: pathlib.Path) -> None:
    p = cli("presets", cwd=tmp_path)
    names = [line.split()[0] for line in p.stdout.splitlines()]
    assert p.returncode == 0 and names == list(sim.PRESETS)
    p = cli("keys", cwd=tmp_path)
    assert p.returncode == 0
    assert "stock_call.idempotency_key" in p.stdout and "goodput_incl_degraded" in p.stdout


def test_run_a_topology_file(tmp_path: pathlib.Path) -> None:
    topo = {
        "start": "09:00:00",
        "services": [
            {"name": "client", "client": True,
             "ops": [{"name": "go", "steps": [{"call": "c->s"}]}]},
            {"name": "server", "servers": 2,
             "ops": [{"name": "work", "steps": [{"work": {"exp": "5ms"}}]}]},
        ],
        "edges": [{"name": "c->s", "from": "client", "to": "server", "op": "work",
                   "record_latency": True}],
        "entries": [{"name": "go", "service": "client", "op": "go",
                     "arrivals": {"poisson": 100}}],
    }
    (tmp_path / "t.json").write_text(json.dumps(topo))
    p = cli("run", "t.json", "--duration", "4", "--label", "mm2", "--json", "r.json", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert p.stdout.startswith("mm2, seed 1: 4 intervals of 1 s from 09:00:00")
    assert len(rows(p.stdout)) == 4 and "latency_ms:" in p.stdout
    d = json.loads((tmp_path / "r.json").read_text())
    assert d["series"]["t"] == ["09:00:00", "09:00:01", "09:00:02", "09:00:03"]
    topo["services"][1]["servers"] = -1
    (tmp_path / "bad.json").write_text(json.dumps(topo))
    p = cli("run", "bad.json", "--duration", "4", cwd=tmp_path)
    assert p.returncode == 2 and "services[1].servers" in p.stderr


def test_progress_bar_on_request(tmp_path: pathlib.Path) -> None:
    p = cli("basketly", "--setting", "C8", "--until", "19:59:50", "--progress", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert "100%" in p.stderr
    p = cli("basketly", "--compare", "C0", "C8", "--until", "19:59:50", "--progress",
            "--quiet", cwd=tmp_path)
    assert p.returncode == 0 and "100%" in p.stderr and p.stdout == ""


def _sigint_default() -> None:
    """In the child, before exec: Ctrl-C's default action. A shell starts background jobs
    with SIGINT ignored, and Python then installs no KeyboardInterrupt handler."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_DFL)


def test_ctrl_c_stops_a_long_run(tmp_path: pathlib.Path) -> None:
    import signal
    import time

    # Four simulated hours of a healthy shop: tens of seconds of work if nothing stops it.
    code = (
        "import guards.sim as s\n"
        "print('running', flush=True)\n"
        "s.basketly('healthy', until='23:59:00')\n"
        "print('finished', flush=True)\n"
    )
    p = subprocess.Popen(
        [sys.executable, "-c", code], cwd=tmp_path, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True, preexec_fn=_sigint_default,
    )
    assert p.stdout is not None
    assert p.stdout.readline() == "running\n"
    time.sleep(0.5)  # let the run get going (not an assertion: see below)
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=120)
    assert "finished" not in out
    assert "KeyboardInterrupt" in err
    assert p.returncode != 0
    # The command line turns it into a message and status 130.
    q = subprocess.Popen(
        [sys.executable, "-m", "guards.sim", "basketly", "--setting", "healthy",
         "--until", "23:59:00", "--progress"],
        cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        preexec_fn=_sigint_default,
    )
    assert q.stderr is not None
    q.stderr.read(1)  # the progress bar has started
    q.send_signal(signal.SIGINT)
    out, err = q.communicate(timeout=120)
    assert q.returncode == 130 and "interrupted" in err
