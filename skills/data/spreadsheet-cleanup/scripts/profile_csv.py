#!/usr/bin/env python3
"""Profile a CSV file: per-column type guess, null count, distinct count and sample values.

Usage: python3 profile_csv.py data.csv [--delimiter ';'] [--encoding latin-1]

Standard library only. Reads the whole file once; memory grows with the number of distinct
values per column, which is fine for files up to a few hundred MB.
"""

import argparse
import csv
import re
import sys
from datetime import datetime

NULL_TOKENS = {"", "na", "n/a", "nan", "null", "none", "nil", "-", "--", "?", "#n/a"}
BOOL_TOKENS = {"true", "false", "yes", "no", "y", "n", "t", "f"}
INT_RE = re.compile(r"^[+-]?\d{1,3}(,\d{3})+$|^[+-]?\d+$")
FLOAT_RE = re.compile(r"^[+-]?(\d{1,3}(,\d{3})+|\d+)?\.\d+([eE][+-]?\d+)?$|^[+-]?\d+[eE][+-]?\d+$")
DATE_FORMATS = ["%Y-%m-%d", "%Y/%m/%d", "%d/%m/%Y", "%m/%d/%Y", "%d.%m.%Y", "%d-%b-%Y",
                "%b %d, %Y", "%d %b %Y", "%Y%m%d"]
DATETIME_FORMATS = ["%Y-%m-%dT%H:%M:%S", "%Y-%m-%d %H:%M:%S", "%Y-%m-%d %H:%M",
                    "%Y-%m-%dT%H:%M:%SZ", "%Y-%m-%dT%H:%M:%S.%f", "%d/%m/%Y %H:%M", "%m/%d/%Y %H:%M"]


def parses(value, formats):
    for fmt in formats:
        try:
            datetime.strptime(value, fmt)
            return True
        except ValueError:
            continue
    return False


def kind_of(value):
    """Classify one non-null, stripped cell."""
    low = value.lower()
    if INT_RE.match(value):
        # 8-digit values like 20240131 could be dates; integers win unless the column says otherwise.
        return "integer"
    if FLOAT_RE.match(value):
        return "float"
    if low in BOOL_TOKENS:
        return "boolean"
    if parses(value, DATE_FORMATS):
        return "date"
    if parses(value, DATETIME_FORMATS) or re.match(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}", value):
        return "datetime"
    return "text"


def guess_type(kinds, non_null):
    """Pick a column type from per-kind counts; report mixtures honestly."""
    if non_null == 0:
        return "empty"
    kinds = dict(kinds)

    def fold(src, dst):
        if src in kinds and dst in kinds:
            kinds[dst] += kinds.pop(src)

    fold("integer", "float")     # 3 and 2.5 in one column: a float column
    fold("date", "datetime")     # some values carry a time: a datetime column
    fold("boolean", "text")      # "y" or "no" among free text is just text
    if len(kinds) == 1:
        return next(iter(kinds))
    top, count = max(kinds.items(), key=lambda kv: kv[1])
    share = 100.0 * count / non_null
    return f"mixed ({top} {share:.0f}%)"


def sniff_delimiter(path, encoding):
    with open(path, newline="", encoding=encoding) as fh:
        sample = fh.read(64 * 1024)
    try:
        return csv.Sniffer().sniff(sample, delimiters=",;\t|").delimiter
    except csv.Error:
        return ","


def detect_encoding(path):
    with open(path, "rb") as fh:
        raw = fh.read(1024 * 1024)
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError as e:
        # A multi-byte character cut off by the 1 MB sample is still UTF-8.
        if not (len(raw) == 1024 * 1024 and e.start >= len(raw) - 3):
            return "latin-1"  # decodes any byte sequence; check the output for mojibake
    return "utf-8-sig" if raw.startswith(b"\xef\xbb\xbf") else "utf-8"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("path")
    parser.add_argument("--delimiter", default=None)
    parser.add_argument("--encoding", default=None)
    args = parser.parse_args()

    encoding = args.encoding or detect_encoding(args.path)
    delimiter = args.delimiter or sniff_delimiter(args.path, encoding)

    with open(args.path, newline="", encoding=encoding) as fh:
        reader = csv.reader(fh, delimiter=delimiter)
        try:
            header = next(reader)
        except StopIteration:
            print("empty file")
            return 1
        width = len(header)
        nulls = [0] * width
        padded = [0] * width
        leading_zero = [0] * width
        distinct = [set() for _ in range(width)]
        kinds = [dict() for _ in range(width)]
        samples = [[] for _ in range(width)]
        rows = bad_rows = 0
        seen_rows, dup_rows = set(), 0
        for row in reader:
            if not any(cell.strip() for cell in row):
                continue  # skip fully blank lines
            rows += 1
            if len(row) != width:
                bad_rows += 1
                row = (row + [""] * width)[:width]
            key = tuple(cell.strip() for cell in row)
            if key in seen_rows:
                dup_rows += 1
            else:
                seen_rows.add(key)
            for i, cell in enumerate(row):
                value = cell.strip()
                if value != cell:
                    padded[i] += 1
                if value.lower() in NULL_TOKENS:
                    nulls[i] += 1
                    continue
                distinct[i].add(value)
                k = kind_of(value)
                kinds[i][k] = kinds[i].get(k, 0) + 1
                if k == "integer" and len(value) > 1 and value[0] == "0":
                    leading_zero[i] += 1
                if len(samples[i]) < 3 and value not in samples[i]:
                    samples[i].append(value)

    print(f"file: {args.path}")
    print(f"encoding: {encoding}  delimiter: {delimiter!r}  rows: {rows}  columns: {width}")
    print(f"rows with wrong field count: {bad_rows}  exact duplicate rows: {dup_rows}")
    dup_names = sorted({h for h in header if header.count(h) > 1})
    if dup_names:
        print(f"duplicate column names: {', '.join(dup_names)}")
    print()
    name_w = max([len("column")] + [len(h) for h in header])
    print(f"{'column':<{name_w}}  {'type':<22} {'nulls':>7} {'distinct':>8} {'padded':>6}  samples")
    for i, name in enumerate(header):
        non_null = rows - nulls[i]
        col_type = guess_type(kinds[i], non_null)
        if leading_zero[i]:
            col_type += " (0-padded)"  # likely an ID or code: keep as text
        sample = ", ".join(repr(s[:30]) for s in samples[i])
        print(f"{name:<{name_w}}  {col_type:<22} {nulls[i]:>7} {len(distinct[i]):>8} "
              f"{padded[i]:>6}  {sample}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
