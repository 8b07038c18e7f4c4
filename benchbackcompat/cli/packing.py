"""``benchbackcompat pack`` and ``unpack``: a results folder as a packed store (Parquet, docs/packed-store.md) and back."""
from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from benchbackcompat.errors import BenchError


def register(sub: Any) -> None:
    pack = sub.add_parser("pack", help="pack a results folder's records into a packed store (Parquet, parts per scenario)")
    pack.add_argument("results", type=Path, help="results folder (cells/<key>/record.json.gz); with --compact, the "
                                                 "packed store to compact")
    pack.add_argument("out", type=Path, nargs="?", help="the packed store to write (a new or empty folder; with "
                                                        "--append, an existing packed store)")
    mode = pack.add_mutually_exclusive_group()
    mode.add_argument("--append", action="store_true", help="append to the packed store OUT a part with only the "
                      "records that differ from its own (new, changed, removed), so that it holds what RESULTS holds")
    mode.add_argument("--compact", action="store_true", help="rewrite the packed store RESULTS as one part per scenario")
    unpack = sub.add_parser("unpack", help="unpack a packed store into a results folder (one record file per cell)")
    unpack.add_argument("packed", type=Path, help="packed store (a folder `benchbackcompat pack` wrote)")
    unpack.add_argument("out", type=Path, help="the results folder to write (a new or empty folder)")
    pack.set_defaults(handler=cmd_pack)
    unpack.set_defaults(handler=cmd_unpack)


def cmd_pack(args: argparse.Namespace) -> int:
    from benchbackcompat.store.columnar import is_packed
    from benchbackcompat.store.packing import append, check_output, compact, pack, results_kind

    kind = results_kind(args.results)
    if args.compact:
        if args.out is not None:
            raise BenchError(f"--compact rewrites a packed store in place and takes no output folder: `benchbackcompat "
                             f"pack {args.results} --compact`")
        if kind != "packed":
            raise BenchError(f"{args.results} is a results folder, not a packed store; --compact rewrites a packed store")
        print(f"compacted {args.results}: {compact(args.results)} records, one part per scenario")
        return 0
    if args.out is None:
        raise BenchError("`benchbackcompat pack` needs the packed store to write: `benchbackcompat pack RESULTS OUT`")
    if kind == "packed":
        raise BenchError(f"{args.results} is already a packed store; `benchbackcompat unpack {args.results} DIR` "
                         "writes it back as a results folder")
    if args.append:
        if not is_packed(args.out):
            raise BenchError(f"{args.out} is not a packed store to append to; `benchbackcompat pack {args.results} "
                             "NEW` (without --append) writes a new one")
        written, removed, parts, left_out = append(args.results, args.out)
        skipped = f" ({left_out} unusable records left out, see the warnings)" if left_out else ""
        print(f"appended {written} new or changed records and {removed} removals of {args.results} to {args.out} "
              f"in {parts} parts{skipped}")
        return 0
    check_output(args.out)
    packed, left_out = pack(args.results, args.out)
    skipped = f" ({left_out} unusable records left out, see the warnings)" if left_out else ""
    print(f"packed {packed} records of {args.results} into {args.out}{skipped}")
    return 0


def cmd_unpack(args: argparse.Namespace) -> int:
    from benchbackcompat.store.packing import check_output, results_kind, unpack

    if results_kind(args.packed) == "folder":
        raise BenchError(f"{args.packed} is a results folder, not a packed store; `benchbackcompat pack {args.packed} "
                         "DIR` packs it")
    check_output(args.out)
    print(f"unpacked {unpack(args.packed, args.out)} records of {args.packed} into {args.out}")
    return 0
