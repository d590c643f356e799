"""``python -m iolab guard|machine|ps|compare|claims``: the tools every chapter uses, not one chapter's instrument."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import TYPE_CHECKING

from iolab.commands.table import Subparsers, print_table

if TYPE_CHECKING:
    import pandas as pd


def add_guard(sub: Subparsers) -> None:
    p = sub.add_parser("guard", help="run a command; fail if it leaves processes behind")
    p.add_argument("argv", nargs=argparse.REMAINDER, help="the command, after --")

    def run(args: argparse.Namespace) -> int:
        from iolab.kit.guard import run_guarded

        argv = args.argv[1:] if args.argv[:1] == ["--"] else args.argv
        if not argv:
            p.error("give the command to run after --")
        return run_guarded(argv)

    p.set_defaults(run=run)


def add_machine(sub: Subparsers) -> None:
    p = sub.add_parser("machine", help="print this machine's fingerprint (CPU, cores, kernel, versions)")

    def run(args: argparse.Namespace) -> int:
        from iolab.kit import machine

        print(json.dumps(machine.fingerprint(), indent=2))
        return 0

    p.set_defaults(run=run)


def add_ps(sub: Subparsers) -> None:
    p = sub.add_parser("ps", help="state, threads and memory of processes, read from /proc")
    p.add_argument("pids", nargs="+", type=int, metavar="PID")
    p.add_argument("--json", action="store_true", help="print JSON")

    def run(args: argparse.Namespace) -> int:
        from dataclasses import asdict

        import pandas as pd

        from iolab.kit import procfs

        rows = [asdict(procfs.status(pid)) | {"cpu_s": procfs.cpu_seconds(pid)} for pid in args.pids]
        print_table(pd.DataFrame(rows), args.json)
        return 0

    p.set_defaults(run=run)


def _measurements(text: str, column: str | None) -> list[float]:
    """Numbers given as ``1.2,1.3,1.25``, or a file: a CSV's ``column``, or one number per line."""
    from pathlib import Path

    if Path(text).is_file():
        if column:
            import pandas as pd

            return [float(v) for v in pd.read_csv(text)[column]]
        return [float(word) for word in Path(text).read_text().split()]
    try:
        return [float(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: neither a file nor numbers separated by commas") from None


def add_compare(sub: Subparsers) -> None:
    p = sub.add_parser("compare", help="compare two sets of measurements: the ratio of medians, its interval, the verdict")
    p.add_argument("a", help="the measurements compared: 1.2,1.3,1.25, or a file (one number a line, or a CSV with --column)")
    p.add_argument("b", help="the measurements compared with, as for A")
    p.add_argument("--column", help="the CSV column both files' numbers are in")
    p.add_argument("--noise", type=float, default=None, help="the band within which a ratio is 'the same' (default 0.10)")
    p.add_argument("--higher", default="higher", help="the word for A above B (e.g. faster)")
    p.add_argument("--lower", default="lower", help="the word for A below B (e.g. slower)")
    p.add_argument("--json", action="store_true", help="print JSON")

    def run(args: argparse.Namespace) -> int:
        from dataclasses import asdict

        from iolab.kit import verdicts

        try:
            a, b = _measurements(args.a, args.column), _measurements(args.b, args.column)
            noise = verdicts.NOISE if args.noise is None else args.noise
            c = verdicts.compare(a, b, noise=noise, names=("A", "B"))
        except (argparse.ArgumentTypeError, ValueError, KeyError) as exc:
            p.error(str(exc))
        if args.json:
            print(json.dumps(asdict(c) | {"words": c.words(args.higher, args.lower)}))
        else:
            print(c.words(args.higher, args.lower) + (f"\n{c.warning}" if c.warning else ""))
        return 0

    p.set_defaults(run=run)


def add_claims(sub: Subparsers) -> None:
    p = sub.add_parser("claims", help="the chapters' claims as two runs decided them; fails if one flipped")
    p.add_argument("later", nargs="?", help="folder of the later run's NN-claims.csv (default: data/measured)")
    p.add_argument("--earlier", action="append",
                   help="folder of an earlier run's (default: data/reference); repeat it to compare with each that "
                        "holds claims (the last run's, and data/reference/quick, a quick run recorded on the reference machine)")
    p.add_argument("--reference", help="folder of the shipped reference verdicts (default: data/reference)")
    p.add_argument("--record-reference", action="store_true",
                   help="write the reference data's verdicts, as the later run's notebooks decided them, to the reference folder")
    p.add_argument("--json", action="store_true", help="print JSON")

    def run(args: argparse.Namespace) -> int:
        from iolab.kit import claims
        from iolab.kit.paths import data_dir

        later = Path(args.later) if args.later else data_dir() / "measured"
        earlier_runs = [Path(e) for e in args.earlier] if args.earlier else [data_dir() / "reference"]
        reference = Path(args.reference) if args.reference else data_dir() / "reference"
        if args.record_reference:
            return _record_reference(later, reference)
        stale = claims.stale(claims.recorded(reference), claims.recorded(later, on_reference=True))
        for _, row in stale.iterrows():
            shipped = row["verdict shipped"] if isinstance(row["verdict shipped"], str) else "nothing"
            print(f"out of date: {row['chapter']}-claim-{row['claim']}: {reference} records {shipped}"
                  f"{_ratio(row.get('ratio shipped'))}, the reference data decides {row['verdict']}{_ratio(row.get('ratio'))} "
                  f"(expect {row['expect']})")
        if len(stale):
            print(f"the reference verdicts are out of date: `python -m iolab claims --record-reference` writes them "
                  f"from this run's NN-claims-on-reference files; commit {reference}")
        later_claims = claims.recorded(later)
        failed = bool(len(stale))
        for earlier in earlier_runs:
            failed |= _compare_runs(claims.recorded(earlier), later_claims, earlier, later, args.json)
        return 1 if failed else 0

    p.set_defaults(run=run)


def _ratio(value: object) -> str:
    """`` (0.77x)`` for a recorded ratio, "" for none."""
    try:
        number = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return ""
    return f" ({number:.3g}x)" if number == number else ""


def _compare_runs(a: pd.DataFrame, b: pd.DataFrame, earlier: Path, later: Path, as_json: bool) -> bool:
    """Print two runs' claims side by side and each claim one decided higher and the other lower; True if any was."""
    from iolab.kit import claims

    if a.empty or b.empty:
        print(f"no claims recorded in {earlier if a.empty else later}: nothing to compare")
        return False
    both = claims.comparable(a, b)
    if both.empty:
        machines = sorted(set(a["machine"]) | set(b["machine"]))
        print(f"{earlier} and {later}: no claim decided at the same scale on the same kind of machine "
              f"({'; '.join(m for m in machines if m)}): nothing to compare")
        return False
    shown = both[["chapter", "claim", "scale", "held earlier", "verdict earlier", "held later", "verdict later"]].fillna("")
    print(f"{earlier} against {later}:")
    print_table(shown, as_json)
    flipped = claims.flips(a, b)
    for _, row in flipped.iterrows():
        print(f"flipped: {row['chapter']}-claim-{row['claim']} ({row['statement earlier']}): "
              f"{row['verdict earlier']} in {earlier}, {row['verdict later']} in {later}")
    if len(flipped):
        print("a claim decided both ways was decided by chance: give its experiment repeats or a setting that decides "
              "it, or reword it; if its experiment changed on purpose, record a quiet run again (make quick-reference)")
    return bool(len(flipped))


def _record_reference(later: Path, reference: Path) -> int:
    """Copy ``later``'s ``NN-claims-on-reference`` files to ``reference`` as ``NN-claims``: which claims held there.

    Only the files whose shipped copy is missing or out of date (:func:`claims.stale`) are written: a
    reference run's own verdicts, and its JSON naming the machine, stay where they agree.
    """
    import pandas as pd

    from iolab.kit import claims

    found = sorted(later.glob(f"*-claims{claims.ON_REFERENCE}.csv"))
    if not found:
        print(f"no *-claims{claims.ON_REFERENCE}.csv in {later}: run the notebooks first")
        return 1
    for source in found:
        name = source.name.replace(claims.ON_REFERENCE, "")
        table = pd.read_csv(source, dtype={"chapter": str})
        shipped = reference / name  # its own file: not every chapter's, read again for each
        if shipped.exists() and claims.stale(pd.read_csv(shipped, dtype={"chapter": str}), table).empty:
            continue
        table.to_csv(reference / name, index=False)
        run = json.loads(source.with_suffix(".json").read_text()) if source.with_suffix(".json").exists() else {}
        meta = {"scale": ", ".join(sorted(set(table["scale"].astype(str)))),
                "decided_from": "the reference runs' data beside this file, by the claims of notebooks run at "
                                f"{run.get('measured_at', 'an unknown time')}"}
        (reference / name).with_suffix(".json").write_text(json.dumps(meta, indent=2) + "\n")
        print(f"{reference / name}: {len(table)} claims, {int((table['held'] == claims.HELD).sum())} held")
    return 0
