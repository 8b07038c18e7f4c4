"""``benchbackcompat pack`` and ``unpack``: a results folder as a packed store (Parquet, docs/packed-store.md) and back."""
from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from benchbackcompat.errors import BenchError


def register(sub: Any) -> None:
    pack = sub.add_parser("pack", help="pack a results folder's records into a packed store (Parquet, one file per scenario)")
    pack.add_argument("results", type=Path, help="results folder (cells/<key>/record.json.gz)")
    pack.add_argument("out", type=Path, help="the packed store to write (a new or empty folder)")
    unpack = sub.add_parser("unpack", help="unpack a packed store into a results folder (one record file per cell)")
    unpack.add_argument("packed", type=Path, help="packed store (a folder `benchbackcompat pack` wrote)")
    unpack.add_argument("out", type=Path, help="the results folder to write (a new or empty folder)")
    pack.set_defaults(handler=cmd_pack)
    unpack.set_defaults(handler=cmd_unpack)


def cmd_pack(args: argparse.Namespace) -> int:
    from benchbackcompat.store.packing import check_output, pack, results_kind

    if results_kind(args.results) == "packed":
        raise BenchError(f"{args.results} is already a packed store; `benchbackcompat unpack {args.results} DIR` "
                         "writes it back as a results folder")
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
