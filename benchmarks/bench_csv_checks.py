"""The passes the out-of-core engines make over a CSV file before reading it: the check that every quoted cell is
closed (when the file is opened, for every engine: ``check_quotes_closed``) and Spark's UTF-8 check
(``check_utf8``), against the time the operating system takes to hand the file over (a plain read).

The file is the bundled sample's records repeated to the size asked (a survey file's mix of short numeric and
text cells, no quotes), and a copy with every cell of one column quoted (a quote opens and closes a cell on every
line). Each pass is run once to load the compiled scan, then timed: the median of --repeat runs, the file in the
page cache (what a second command on the same file sees; the first pays the disk as well).

Run: python benchmarks/bench_csv_checks.py [--megabytes 300] [--repeat 3]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.bench_guidance import timed  # noqa: E402
from benchmarks.machine import describe as describe_machine  # noqa: E402
from kanon_core.engines.csv_checks import check_quotes_closed  # noqa: E402
from kanon_core.engines.source import check_utf8  # noqa: E402

SAMPLE = ROOT / "sample_data" / "els_like.csv"


def make_file(path: Path, megabytes: float, quoted: bool) -> int:
    """``path`` filled with the sample's records repeated to about ``megabytes`` MB (the header once); with
    ``quoted``, every record's first cell in quotes. Returns its size in bytes."""
    header, body = SAMPLE.read_bytes().split(b"\n", 1)
    if quoted:
        body = b"\n".join(b'"' + line.replace(b",", b'",', 1) if line else line for line in body.split(b"\n"))
    with open(path, "wb") as fh:
        fh.write(header + b"\n")
        for _ in range(max(1, int(megabytes * 1e6 / len(body)))):
            fh.write(body)
    return path.stat().st_size


def plain_read(path: Path, chunk: int = 1 << 24) -> None:
    with open(path, "rb") as fh:
        while fh.read(chunk):
            pass


def median_seconds(fn, repeat: int) -> float:
    fn()  # loads the compiled scan, and the file into the page cache
    return timed(fn, repeat)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--megabytes", type=float, default=300.0)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    print(f"machine: {describe_machine()}")
    print("| file | MB | plain read (s) | quotes closed (s) | MB/s | UTF-8 (s) |")
    print("|---|---:|---:|---:|---:|---:|")
    with tempfile.TemporaryDirectory() as tmp:
        for quoted in (False, True):
            path = Path(tmp) / ("quoted.csv" if quoted else "plain.csv")
            size = make_file(path, args.megabytes, quoted)
            read = median_seconds(lambda p=path: plain_read(p), args.repeat)
            quotes = median_seconds(lambda p=path: check_quotes_closed(p, ","), args.repeat)
            utf8 = median_seconds(lambda p=path: check_utf8(p), args.repeat)
            name = "sample repeated, first cell quoted" if quoted else "sample repeated"
            print(f"| {name} | {size / 1e6:,.0f} | {read:.2f} | {quotes:.2f} | {size / 1e6 / quotes:,.0f} | "
                  f"{utf8:.2f} |")


if __name__ == "__main__":
    main()
