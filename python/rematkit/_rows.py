"""Rows of a comparison or a sweep: a list of dicts, and a DataFrame when pandas is importable."""


class Rows(list):
    """A list of dicts, one per row, with the same keys."""

    def to_pandas(self):
        try:
            import pandas
        except ImportError as e:
            raise ImportError('to_pandas() needs pandas (Debian: python3-pandas)') from e
        return pandas.DataFrame(list(self))
