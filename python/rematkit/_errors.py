"""rematkit's exceptions: what the C++ library reports, as Python objects with their places."""


class Error(Exception):
    """Every error rematkit raises for what it was given."""


class ProgramError(Error, ValueError):
    """Bad input (a malformed program, an unknown primitive or policy, wrong shapes, a bad sweep key),
    with the place its message names: `file`, `line` and `col` (None where there is none)."""

    def __init__(self, message, file=None, line=None, col=None):
        super().__init__(message)
        self.file = file
        self.line = line
        self.col = col


class MemoryLimitError(Error, MemoryError):
    """A step (or the inputs drawn for it) would need more memory than the limit: `needed` and
    `limit` in bytes. Nothing was allocated."""

    def __init__(self, message, needed=None, limit=None):
        super().__init__(message)
        self.needed = needed
        self.limit = limit
