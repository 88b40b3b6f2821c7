"""The lean install: how long ``verify --help`` takes next to a bare ``import verify``, and how big the
core install (no extras) is in a fresh venv made from the wheel.

    python benchmarks/bench_install.py            # both
    python benchmarks/bench_install.py --no-size  # start-up only (no wheel build, no download)

Prints ``name: value`` lines:

* ``help_over_import``: median wall time of ``verify --help`` over that of ``python -c "import verify"``,
  each a fresh process, interleaved so that load on the machine falls on all alike (target < 2); the
  CPU-time ratio (``help_over_import_cpu``) is printed beside it, and ``typer_import_over_import``,
  the same ratio for ``python -c "import typer"`` alone: the floor of any typer command;
* ``help_loads_models``: 1 when ``verify --help`` or ``verify run --help`` imports the benchmark, config
  or result models (target 0);
* ``core_install_mb``: site-packages of a fresh venv after ``pip install <wheel>`` (target < 100), and
  ``core_install_packages``, the distributions in it.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import venv
from pathlib import Path

from machine import Measured

ROOT = Path(__file__).resolve().parent.parent
PYTHON = sys.executable
VERIFY = str(Path(PYTHON).parent / "verify")
HEAVY = ("verify.benchmark", "verify.results", "verify.run.runner", "verify.config")


def _one(argv: list[str]) -> tuple[float, float]:
    with Measured("one") as m:
        subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    return m.wall_s, m.cpu_s


def startup(repeats: int, verify: str) -> None:
    python = str(Path(verify).parent / "python")
    argvs = {"import": [python, "-c", "import verify"], "help": [verify, "--help"],
             "typer": [python, "-c", "import typer"]}  # typer's own import: the floor of any typer CLI
    for argv in argvs.values():
        _one(argv)  # the first runs compile bytecode and warm the file cache
    walls: dict[str, list[float]] = {name: [] for name in argvs}
    cpus: dict[str, list[float]] = {name: [] for name in argvs}
    with Measured("startup") as total:
        for _ in range(repeats):
            for name, argv in argvs.items():
                wall, cpu = _one(argv)
                walls[name].append(wall)
                cpus[name].append(cpu)
    for name in argvs:
        print(f"{name}_median_wall_s: {statistics.median(walls[name]):.4f}")
        print(f"{name}_median_cpu_s: {statistics.median(cpus[name]):.4f}")
    base, base_cpu = statistics.median(walls["import"]), statistics.median(cpus["import"])
    print(f"help_over_import: {statistics.median(walls['help']) / base:.2f}")
    print(f"help_over_import_cpu: {statistics.median(cpus['help']) / base_cpu:.2f}")
    print(f"typer_import_over_import: {statistics.median(walls['typer']) / base:.2f}")
    for line in total.lines():
        print(line)
    if verify != VERIFY:
        return
    probe = ("import sys; from typer.testing import CliRunner; from verify.cli import app; "
             "CliRunner().invoke(app, ['--help']); CliRunner().invoke(app, ['run', '--help']); "
             f"print(int(any(m.startswith({HEAVY!r}) for m in sys.modules)))")
    loaded = subprocess.run([PYTHON, "-c", probe], capture_output=True, text=True, check=True).stdout.strip()
    print(f"help_loads_models: {loaded}")


def _size_mb(folder: Path) -> float:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file() and not p.is_symlink()) / 1e6


def install_size() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        subprocess.run([PYTHON, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(work / "dist"), str(ROOT)],
                       check=True)
        wheel = next((work / "dist").glob("verify_judge-*.whl"))
        venv.create(work / "venv", with_pip=True)
        python = work / "venv" / "bin" / "python"
        site = Path(subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                                   capture_output=True, text=True, check=True).stdout.strip())
        before = _size_mb(site)  # pip and setuptools of the fresh venv itself are not verify's
        with Measured("core_install") as m:
            subprocess.run([str(python), "-m", "pip", "install", "-q", str(wheel)], check=True)
        dists = len(list(site.glob("*.dist-info"))) - len(list(site.glob("pip-*.dist-info")) + list(site.glob("setuptools-*.dist-info")))
        print(f"core_install_mb: {_size_mb(site) - before:.1f}")
        print(f"core_install_packages: {dists}")
        for line in m.lines():
            print(line)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=9)
    parser.add_argument("--no-size", action="store_true", help="skip the wheel build and the fresh install")
    parser.add_argument("--verify", default=VERIFY, help="another installation's verify executable (e.g. of main)")
    args = parser.parse_args()
    startup(args.repeats, args.verify)
    if not args.no_size:
        install_size()


if __name__ == "__main__":
    main()
