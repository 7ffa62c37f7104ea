"""Sweeps from Python: a sweep file, or the same as a dict."""
import json
import os

from . import _rematkit
from ._rows import Rows


def sweep(path_or_dict):
    """Runs a sweep (models x policies x backend lists x threads, as `rematkit sweep` does) from a
    YAML file's path or a dict of the same keys; gives Rows, one dict per configuration with the
    JSON file's keys. Ctrl-C stops it after the group in progress and raises KeyboardInterrupt
    whose `rows` holds the groups that finished."""
    if isinstance(path_or_dict, dict):
        # JSON is YAML: the dict reads as the file would, relative paths from the working directory.
        rows_json, interrupted = _rematkit.sweep(json.dumps(path_or_dict), '<dict>', False)
    else:
        rows_json, interrupted = _rematkit.sweep('', os.fspath(path_or_dict), True)
    rows = Rows(json.loads(rows_json))
    if interrupted:
        stopped = KeyboardInterrupt('sweep interrupted: the %d finished rows are in .rows' % len(rows))
        stopped.rows = rows
        raise stopped
    return rows
