"""lancet's plan of a scan, as text (pylance's ``LanceScanner.explain_plan`` and
``analyze_plan`` print DataFusion's plan; lancet has no DataFusion plan under a scan, so it
prints what it does in the same indented shape):

- ``LancetScan``: the table, version and fragments scanned, the columns read, limit, offset
  and row-id columns;
- ``Filter``: the SQL pushed down, and for each column it reads either the BTree that
  answers it on the fragments that index covers (the others are read directly) or a direct
  read of the column;
- ``PyArrowFilter``: an Expression lancet does not translate, applied by pyarrow to every
  row read;
- ``Project``: columns computed from SQL expressions, and ``_rowoffset``.

``analyze_plan`` runs the scan and adds what it read: rows and batches, time, index pages,
the fragments each index answered for, fragments whose filter column was read directly and
fragments whose rows were read.
"""

from __future__ import annotations

from typing import List

from . import _lancet

# `scanner` below is a lancet.scanner.LanceScanner (not imported: the scanner imports this)


def _fragments(scanner: "lancet.scanner.LanceScanner") -> List[int]:
    ids = [fid for fid, _, _ in scanner._dataset._ds.fragments()]
    if scanner._fragments is None:
        return ids
    return [f for f in ids if f in set(scanner._fragments)]


def _filter_lines(scanner: "lancet.scanner.LanceScanner", fragments: List[int]) -> List[str]:
    lines = []
    if scanner._sql is not None:
        lines.append(f"  Filter: {scanner._sql}")
        indexes = {}
        for name, kind, columns, _, covered in scanner._dataset._ds.list_indices():
            if kind.upper() == "BTREE" and len(columns) == 1:
                indexes[columns[0]] = (name, set(covered))
        for column in _lancet.filter_columns(scanner._sql):
            if column in indexes:
                name, covered = indexes[column]
                on = [f for f in fragments if f in covered]
                rest = len(fragments) - len(on)
                lines.append(f"    IndexQuery: {column} through {name} (BTree) on {len(on)} of "
                             f"{len(fragments)} fragments" +
                             (f", read directly on {rest}" if rest else ""))
            else:
                lines.append(f"    ColumnRead: {column} read directly on {len(fragments)} fragments")
    if scanner._post is not None:
        lines.append(f"  PyArrowFilter: {scanner._post} (applied to every row read)")
    return lines


def _scan_line(scanner: "lancet.scanner.LanceScanner", fragments: List[int], count_rows: bool = False) -> str:
    columns = scanner._columns if scanner._columns is not None else scanner._dataset.schema.names
    if count_rows:
        columns = []
    return (f"{'LancetCount' if count_rows else 'LancetScan'}: uri={scanner._dataset.uri}, version={scanner._dataset.version}, "
            f"fragments={len(fragments)}, projection=[{', '.join(columns)}], "
            f"limit={scanner._limit}, offset={scanner._offset or 0}, "
            f"row_id={str(scanner._with_row_id).lower()}, "
            f"row_addr={str(scanner._with_row_address).lower()}")


def _project_lines(scanner: "lancet.scanner.LanceScanner") -> List[str]:
    lines = []
    if scanner._exprs is not None:
        shown = ", ".join(f"{name}={expr}" for name, expr in scanner._exprs)
        lines.append(f"  Project: {shown}")
    if scanner._offset_at is not None:
        lines.append("  Project: _rowoffset from _rowaddr")
    return lines


def explain(scanner: "lancet.scanner.LanceScanner", verbose: bool = False) -> str:
    """The plan of `scanner`, nothing read but the table's manifest and index list."""
    fragments = _fragments(scanner)
    lines = [_scan_line(scanner, fragments)] + _filter_lines(scanner, fragments) + _project_lines(scanner)
    if verbose:
        lines.append(f"  Output: {scanner.projected_schema}".replace("\n", ", "))
    return "\n".join(lines) + "\n"


def analyze(scanner: "lancet.scanner.LanceScanner", count_rows: bool = False) -> str:
    """The plan of `scanner` with what running it read (the scan runs to its end; its rows
    are counted, not kept)."""
    fragments = _fragments(scanner)
    lines = [_scan_line(scanner, fragments, count_rows)] + _filter_lines(scanner, fragments)
    if not count_rows:
        lines += _project_lines(scanner)
    if scanner._post is None:
        m = _lancet.analyze_scan(
            scanner._dataset._ds, [] if count_rows else scanner._requested(), scanner._sql,
            scanner._limit, scanner._offset, scanner._with_row_id, scanner._with_row_address,
            scanner._fragments)
        indexed = ", ".join(f"{name}: {len(ids)} fragments" for name, ids in m["indexed"].items())
        lines.append(f"  Metrics: output_rows={m['rows']}, output_batches={m['batches']}, "
                     f"elapsed={m['elapsed_ms']:.3f}ms, index_pages_read={m['index_pages_read']}, "
                     f"indexes_answered={{{indexed}}}, "
                     f"filter_fragments_read_directly={m['filter_fragments_scanned']}, "
                     f"fragments_read={m['fragments_read']}")
    else:
        rows = scanner.count_rows() if count_rows else scanner.to_table().num_rows
        lines.append(f"  Metrics: output_rows={rows}")
    return "\n".join(lines) + "\n"
