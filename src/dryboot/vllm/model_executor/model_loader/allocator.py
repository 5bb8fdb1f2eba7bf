"""A model of PyTorch's CUDA caching allocator, to replay a load's allocations in vLLM's order.

What ``torch.cuda.memory_allocated`` counts (and so ``Model loading took``) is the blocks held,
not the tensors: a block is taken whole where the allocator does not split it, so a freed block
reused by a smaller request counts whole. The rules modelled are those of PyTorch's native
``CUDACachingAllocator`` (``c10/cuda/CUDACachingAllocator.cpp``, ``DeviceCachingAllocator``), one
stream, no expandable segments, no out-of-memory path:

* ``round_size``: sizes are rounded up to ``kMinBlockSize`` (512 bytes); requests up to
  ``kSmallSize`` (1 MiB) use the small pool, others the large one;
* ``get_allocation_size``: a new segment is ``kSmallBuffer`` (2 MiB, small pool),
  ``kLargeBuffer`` (20 MiB, a large request under ``kMinLargeAlloc``, 10 MiB), or the request
  rounded up to ``kRoundLarge`` (2 MiB);
* ``get_free_block``: best fit (the smallest free block of the pool at least as large, lowest
  address first); a request under ``max_split_size`` never takes a block of ``max_split_size`` or
  more, and a request of ``max_split_size`` or more takes a block only if it is less than
  ``kLargeBuffer`` (20 MiB) larger;
* ``should_split``: a block is split (the rest stays free in its segment) in the small pool when
  ``kMinBlockSize`` or more remains, in the large pool when the request is under
  ``max_split_size`` and more than ``kSmallSize`` remains; otherwise it is held whole;
* ``free_block`` / ``try_merge_blocks``: a freed block merges with its free neighbours of the same
  segment; cached segments are never returned to the device during a load (no ``empty_cache``).

A small-pool block is always the request rounded to 512 bytes (what remains of a 2 MiB segment
is a multiple of 512 and is split off), so only large-pool requests can count more than their
tensor: :func:`replay` of the large requests alone gives the same surplus.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable
from dataclasses import dataclass, field

MIB = 1 << 20
#: ``kMinBlockSize``: every request is rounded up to it (bytes)
MIN_BLOCK = 512
#: ``kSmallSize``: the largest request of the small pool (bytes)
SMALL_SIZE = 1 * MIB
#: ``kSmallBuffer``: a small-pool segment (bytes)
SMALL_BUFFER = 2 * MIB
#: ``kLargeBuffer``: the segment of a large request under ``kMinLargeAlloc`` (bytes)
LARGE_BUFFER = 20 * MIB
#: ``kMinLargeAlloc``: from here a request gets a segment of its own size (bytes)
MIN_LARGE_ALLOC = 10 * MIB
#: ``kRoundLarge``: such a segment is rounded up to it (bytes)
ROUND_LARGE = 2 * MIB
#: PyTorch's default ``max_split_size`` (no limit)
NO_SPLIT_LIMIT = 1 << 62

#: one event of a load: ``(key, nbytes)``, an allocation of ``nbytes`` (> 0) under ``key`` (unique
#: among the live ones), or ``(key, 0)``: the storage of ``key`` released (an empty tensor takes
#: no block, so 0 bytes never is an allocation)
Event = tuple[int, int]


def round_size(nbytes: int) -> int:
    """``round_size``: ``nbytes`` rounded up to 512 bytes (at least one block)."""
    return max(MIN_BLOCK, -(-nbytes // MIN_BLOCK) * MIN_BLOCK)


def segment_size(size: int) -> int:
    """``get_allocation_size``: the bytes of a new segment for a rounded request of ``size``."""
    if size <= SMALL_SIZE:
        return SMALL_BUFFER
    if size < MIN_LARGE_ALLOC:
        return LARGE_BUFFER
    return -(-size // ROUND_LARGE) * ROUND_LARGE


@dataclass(eq=False)
class Block:
    """A block of a segment: ``size`` bytes at ``addr``; ``small``: of the small pool."""

    size: int
    addr: int
    small: bool
    free: bool = False
    prev: Block | None = None
    next: Block | None = None


@dataclass
class Allocator:
    """One device's pools under ``max_split`` (``max_split_size``, bytes); ``allocated``: the bytes
    of the blocks held (``torch.cuda.memory_allocated``)."""

    max_split: int = NO_SPLIT_LIMIT
    allocated: int = 0
    _pools: dict[bool, list[tuple[int, int]]] = field(default_factory=lambda: {True: [], False: []})
    _free: dict[tuple[bool, int, int], Block] = field(default_factory=dict)
    _next_addr: int = 1 << 40

    def _insert(self, b: Block) -> None:
        bisect.insort(self._pools[b.small], (b.size, b.addr))
        self._free[(b.small, b.size, b.addr)] = b

    def _remove(self, b: Block) -> None:
        pool = self._pools[b.small]
        pool.pop(bisect.bisect_left(pool, (b.size, b.addr)))
        del self._free[(b.small, b.size, b.addr)]

    def _best_fit(self, small: bool, size: int) -> Block | None:
        """``get_free_block``: the cached block a request of ``size`` takes, or ``None``."""
        pool = self._pools[small]
        i = bisect.bisect_left(pool, (size, -1))
        if i == len(pool):
            return None
        b = self._free[(small, *pool[i])]
        if size < self.max_split <= b.size:  # no oversize block for a request that could split
            return None
        if size >= self.max_split and b.size >= size + LARGE_BUFFER:  # an oversize block within 20 MiB only
            return None
        return b

    def malloc(self, nbytes: int) -> Block:
        """``malloc``: the block a request of ``nbytes`` holds (split where ``should_split``)."""
        size = round_size(nbytes)
        small = size <= SMALL_SIZE
        b = self._best_fit(small, size)
        if b is not None:
            self._remove(b)
        else:
            seg = segment_size(size)
            b = Block(seg, self._next_addr, small)
            self._next_addr += seg + (1 << 30)  # segments never adjacent
        rest = b.size - size
        split = rest >= MIN_BLOCK if small else (size < self.max_split and rest > SMALL_SIZE)
        if split:
            r = Block(rest, b.addr + size, small, free=True, prev=b, next=b.next)
            if b.next is not None:
                b.next.prev = r
            b.next, b.size = r, size
            self._insert(r)
        b.free = False
        self.allocated += b.size
        return b

    def free(self, b: Block) -> None:
        """``free_block``: ``b`` back to its pool, merged with its free neighbours."""
        self.allocated -= b.size
        b.free = True
        p = b.prev
        if p is not None and p.free:
            self._remove(p)
            b.addr, b.size, b.prev = p.addr, b.size + p.size, p.prev
            if p.prev is not None:
                p.prev.next = b
        n = b.next
        if n is not None and n.free:
            self._remove(n)
            b.size, b.next = b.size + n.size, n.next
            if n.next is not None:
                n.next.prev = b
        self._insert(b)


@dataclass
class Replayed:
    """A sequence of :data:`Event` replayed: ``allocated`` (the blocks held at the end, bytes),
    ``tensor_blocks`` (the live storages, each rounded to 512 bytes: what the tensors alone hold),
    ``live``: key -> (bytes, block bytes) of every storage alive at the end, and ``marks``: the
    same two figures (allocated, tensor blocks) before each event index asked for."""

    allocated: int
    tensor_blocks: int
    live: dict[int, tuple[int, int]]
    marks: dict[int, tuple[int, int]]

    @property
    def surplus(self) -> int:
        """What the allocator counts beyond the tensors' blocks (bytes): whole blocks held."""
        return self.allocated - self.tensor_blocks


def replay(events: Iterable[Event], max_split: int = NO_SPLIT_LIMIT, marks: Iterable[int] = ()) -> Replayed:
    """``events`` through one :class:`Allocator` under ``max_split`` (bytes).

    :raises KeyError: a release of a key not alive."""
    wanted = set(marks)
    a = Allocator(max_split)
    live: dict[int, tuple[Block, int]] = {}
    tensors = 0
    seen: dict[int, tuple[int, int]] = {}
    i = -1
    for i, (key, nbytes) in enumerate(events):
        if i in wanted:
            seen[i] = (a.allocated, tensors)
        if nbytes == 0:
            block, n = live.pop(key)
            a.free(block)
            tensors -= round_size(n)
        else:
            live[key] = (a.malloc(nbytes), nbytes)
            tensors += round_size(nbytes)
    for m in wanted - set(seen):
        if m > i:  # a mark at or past the end: the end's figures
            seen[m] = (a.allocated, tensors)
    return Replayed(a.allocated, tensors, {k: (n, b.size) for k, (b, n) in live.items()}, seen)
