"""A model of PyTorch's CUDA caching allocator, to replay a load's allocations (``record_load_trace.py``).

What ``torch.cuda.memory_allocated`` counts is the blocks held, not the tensors: a block is taken
whole where the allocator does not split it. The rules modelled (PyTorch's native allocator,
``c10/cuda/CUDACachingAllocator.cpp``, one stream, no expandable segments, no OOM):

* sizes are rounded up to 512 bytes; requests up to 1 MiB use the small pool, others the large one;
* a new segment is 2 MiB (small pool), 20 MiB (a large request under 10 MiB), or the request rounded
  up to 2 MiB;
* a free block is found best fit (the smallest of the pool at least as large, lowest address
  first); a request under ``max_split_size`` never takes a block of ``max_split_size`` or more, and
  a request of ``max_split_size`` or more takes a block only if it is less than 20 MiB larger;
* a block is split (the rest stays free in its segment) in the small pool when 512 bytes or more
  remain, in the large pool when the request is under ``max_split_size`` and more than 1 MiB
  remains; otherwise it is held whole;
* a freed block merges with its free neighbours of the same segment.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field

MIB = 1 << 20
MIN_BLOCK = 512
SMALL_SIZE = 1 * MIB
SMALL_BUFFER = 2 * MIB
LARGE_BUFFER = 20 * MIB
MIN_LARGE_ALLOC = 10 * MIB
ROUND_LARGE = 2 * MIB
#: PyTorch's default ``max_split_size`` (no limit)
NO_SPLIT_LIMIT = 1 << 62


@dataclass(eq=False)
class Block:
    size: int
    addr: int
    small: bool
    free: bool = False
    prev: Block | None = None
    next: Block | None = None


@dataclass
class Allocator:
    """One device's pools; ``allocated``: the bytes of the blocks held (``memory_allocated``)."""

    max_split: int = NO_SPLIT_LIMIT
    allocated: int = 0
    _pools: dict[bool, list[tuple[int, int]]] = field(default_factory=lambda: {True: [], False: []})
    _free: dict[tuple[bool, int, int], Block] = field(default_factory=dict)
    _next_addr: int = 1 << 40

    @staticmethod
    def round_size(nbytes: int) -> int:
        return max(MIN_BLOCK, -(-nbytes // MIN_BLOCK) * MIN_BLOCK)

    @staticmethod
    def segment_size(size: int) -> int:
        if size <= SMALL_SIZE:
            return SMALL_BUFFER
        if size < MIN_LARGE_ALLOC:
            return LARGE_BUFFER
        return -(-size // ROUND_LARGE) * ROUND_LARGE

    def _insert(self, b: Block) -> None:
        bisect.insort(self._pools[b.small], (b.size, b.addr))
        self._free[(b.small, b.size, b.addr)] = b

    def _remove(self, b: Block) -> None:
        pool = self._pools[b.small]
        pool.pop(bisect.bisect_left(pool, (b.size, b.addr)))
        del self._free[(b.small, b.size, b.addr)]

    def _best_fit(self, small: bool, size: int) -> Block | None:
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
        size = self.round_size(nbytes)
        small = size <= SMALL_SIZE
        b = self._best_fit(small, size)
        if b is not None:
            self._remove(b)
        else:
            seg = self.segment_size(size)
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
class Replay:
    """A trace replayed: ``allocated`` (the allocator's count of the blocks held at the end),
    ``tensor_blocks`` (the storages still alive, each in 512-byte blocks: the meta-device oracle's
    figure), ``built`` (both at the end of the build, before the post-load step) and ``held``:
    (operator, bytes, block bytes) of every storage alive at the end whose block is larger."""

    allocated: int
    tensor_blocks: int
    built: tuple[int, int]
    held: list[tuple[str, int, int]]


def replay(trace: dict[str, object], max_split: int) -> Replay:
    """Replay ``record_load_trace.py``'s ``events`` (``[op, id, bytes]``; op -1: ``id`` released)."""
    events = trace["events"]
    ops = trace["ops"]
    assert isinstance(events, list) and isinstance(ops, list)
    built_at = int(str(trace["built_at"]))
    a = Allocator(max_split)
    live: dict[int, tuple[Block, int, str]] = {}
    built = (0, 0)
    for i, (op, sid, nbytes) in enumerate(events):
        if i == built_at:
            built = (a.allocated, sum(Allocator.round_size(n) for _, n, _ in live.values()))
        if op < 0:
            a.free(live.pop(sid)[0])
        else:
            live[sid] = (a.malloc(nbytes), nbytes, str(ops[op]))
    blocks = sum(Allocator.round_size(n) for _, n, _ in live.values())
    held = [(op, n, b.size) for b, n, op in live.values() if b.size != Allocator.round_size(n)]
    return Replay(a.allocated, blocks, built, held)
