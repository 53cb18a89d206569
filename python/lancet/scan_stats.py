"""pylance's :class:`ScanStatistics`: what one scan read, handed to a scanner's
``scan_stats_callback`` once its last row has been read (an exception the callback raises is
logged, not raised, as in pylance).

The counts are lancet's own: read requests and bytes through Lance's I/O scheduler (this
process's counters while the scan ran, so a scan running at the same time is counted too),
the BTrees that answered the filter and the index pages they read, the fragments whose rows
were read, and the rows returned. lancet does not count index comparisons or index cache
hits and misses: those attributes are ``None``.
"""

from __future__ import annotations

import json
import logging
import time
from typing import Callable, Dict, Optional

import pyarrow as pa

from . import _lancet


class ScanStatistics:
    """Statistics about a scan operation (pylance's attributes)."""

    __slots__ = ("iops", "requests", "bytes_read", "indices_loaded", "parts_loaded",
                 "index_comparisons", "index_cache_hits", "index_cache_misses", "all_counts",
                 "all_times")

    def __init__(self, iops: int, requests: int, bytes_read: int, indices_loaded: int,
                 parts_loaded: int, index_comparisons: Optional[int], index_cache_hits: Optional[int],
                 index_cache_misses: Optional[int], all_counts: Dict[str, int],
                 all_times: Dict[str, int]):
        self.iops, self.requests, self.bytes_read = iops, requests, bytes_read
        self.indices_loaded, self.parts_loaded = indices_loaded, parts_loaded
        self.index_comparisons = index_comparisons
        self.index_cache_hits, self.index_cache_misses = index_cache_hits, index_cache_misses
        self.all_counts, self.all_times = all_counts, all_times

    def __repr__(self) -> str:
        parts = [f"{k}={getattr(self, k)}" for k in self.__slots__[:8]]
        parts += [f"{k}={json.dumps(getattr(self, k))}" for k in ("all_counts", "all_times")]
        return f"ScanStatistics({', '.join(parts)})"


class Counting:
    """The counters of one scan (`counters`, passed to the native scan), with the process's
    I/O counters when it started."""

    def __init__(self):
        self.counters = _lancet.ScanCounters()
        self._io = _lancet.io_counters()
        self._started = time.perf_counter_ns()

    def finish(self, rows: int) -> ScanStatistics:
        requests, bytes_read = (a - b for a, b in zip(_lancet.io_counters(), self._io))
        pages, filter_scanned, fragments = self.counters.counts()
        return ScanStatistics(
            iops=requests, requests=requests, bytes_read=bytes_read,
            indices_loaded=len(self.counters.indexes()),
            parts_loaded=pages, index_comparisons=None, index_cache_hits=None,
            index_cache_misses=None,
            all_counts={"rows_returned": rows, "fragments_scanned": fragments,
                        "filter_fragments_scanned": filter_scanned, "index_pages_read": pages},
            all_times={"scan_time": time.perf_counter_ns() - self._started})


def reporting(reader: pa.RecordBatchReader, counting: Counting,
              callback: Callable[[ScanStatistics], None]) -> pa.RecordBatchReader:
    """`reader`'s batches; once the last is read, `callback` gets the scan's statistics."""

    def batches():
        rows = 0
        for b in reader:
            rows += b.num_rows
            yield b
        try:
            callback(counting.finish(rows))
        except Exception:  # pylance logs a callback's error and goes on
            logging.getLogger("lancet").exception("Error in scan stats callback")

    return pa.RecordBatchReader.from_batches(reader.schema, batches())
