"""`Bitmap`: a set of fragment ids, as pylance's ``lance.bitmap.Bitmap``.

A ``collections.abc.MutableSet`` of non-negative integers, iterated in ascending order, with
the named set methods pylance's has (``union``, ``intersection``, ``difference``,
``symmetric_difference``, ``issubset``, ``issuperset``, ``update``, ``copy``). Python's
``set`` underneath: fragment id lists are small next to the rows they hold.
"""

from __future__ import annotations

from collections.abc import MutableSet
from typing import Iterable, Iterator

__all__ = ["Bitmap"]


class Bitmap(MutableSet):
    def __init__(self, values: Iterable[int] = ()):
        self._ids = set()
        for v in values:
            self.add(v)

    @classmethod
    def _from_iterable(cls, it):
        return cls(it)

    def __contains__(self, value) -> bool:
        return value in self._ids

    def __iter__(self) -> Iterator[int]:
        return iter(sorted(self._ids))

    def __len__(self) -> int:
        return len(self._ids)

    def __repr__(self) -> str:
        return f"Bitmap({sorted(self._ids)})"

    def add(self, value: int) -> None:
        value = int(value)
        if value < 0:
            raise ValueError(f"a Bitmap holds non-negative integers, not {value}")
        self._ids.add(value)

    def discard(self, value: int) -> None:
        self._ids.discard(value)

    def copy(self) -> "Bitmap":
        return Bitmap(self._ids)

    def union(self, *others: Iterable[int]) -> "Bitmap":
        return Bitmap(self._ids.union(*others))

    def intersection(self, *others: Iterable[int]) -> "Bitmap":
        return Bitmap(self._ids.intersection(*others))

    def difference(self, *others: Iterable[int]) -> "Bitmap":
        return Bitmap(self._ids.difference(*others))

    def symmetric_difference(self, other: Iterable[int]) -> "Bitmap":
        return Bitmap(self._ids.symmetric_difference(other))

    def issubset(self, other: Iterable[int]) -> bool:
        return self._ids.issubset(other)

    def issuperset(self, other: Iterable[int]) -> bool:
        return self._ids.issuperset(other)

    def update(self, *others: Iterable[int]) -> None:
        for other in others:
            for v in other:
                self.add(v)
