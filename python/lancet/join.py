"""Lance's merge join, as pylance's ``LanceDataset.merge``, ``LanceFragment.merge`` and
``LanceFragment.update_columns`` join: rows of a table matched with rows of new data on a
key, where a NULL key matches a NULL key and of repeated keys the last row wins (Lance
14.0.2's hash joiner keeps the last row of a key)."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc


class Right:
    """The right side of a join: its keys (the last row of a repeated key first) and its
    other columns in the same order."""

    def __init__(self, data: pa.Table, key: str):
        # the last row of a key is the first of the reversed table, which index_in finds
        data = data.take(pa.array(range(data.num_rows - 1, -1, -1), pa.int64()))
        self.keys = data.column(key).combine_chunks()
        self.columns = data.drop_columns([key])

    def check_key_type(self, left: pa.DataType, error=ValueError) -> None:
        """Refuses keys of another type than the left side's (as Lance's joiner)."""
        if self.keys.type != left:
            raise error(f"Index column type mismatch: expected {left}, got {self.keys.type}")

    def positions(self, left: pa.ChunkedArray) -> pa.Array:
        """For each of the `left` keys, the row of :attr:`columns` it matches (NULL: none)."""
        return pc.index_in(left, value_set=self.keys, skip_nulls=False)

    def joined(self, left: pa.ChunkedArray) -> pa.Table:
        """The new columns for each of the `left` keys, NULL where none matches (a left
        join's right side)."""
        return self.columns.take(self.positions(left))

    def matched(self, key: pa.ChunkedArray, live=True):
        """Whether each left row (its `key`) has a matching right row (never where `live` is
        false)."""
        return pc.and_(pc.is_valid(self.positions(key)), live)

    def updated(self, left: pa.Table, key: pa.ChunkedArray, live=True) -> pa.Table:
        """`left`'s columns with each row's values replaced by the matching right row's
        (kept where none matches, or where `live` is false)."""
        at = self.positions(key)
        matched = pc.and_(pc.is_valid(at), live)
        new = self.columns.take(at)
        values = [pc.if_else(matched, new.column(n), left.column(n)) for n in left.column_names]
        return pa.table(values, schema=left.schema)
