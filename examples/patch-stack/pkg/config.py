"""A tiny package standing in for site-packages/vllm."""

DEFAULT_BLOCK_SIZE = 16
DEFAULT_SWAP_SPACE = 4


def block_size(requested=None):
    if requested is None:
        return DEFAULT_BLOCK_SIZE
    return requested


def swap_space(gib):
    return gib
