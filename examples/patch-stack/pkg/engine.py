from pkg.config import block_size


class Engine:
    def __init__(self, requested_block_size=None):
        self.block_size = block_size(requested_block_size)

    def start(self):
        return f"engine with block size {self.block_size}"
