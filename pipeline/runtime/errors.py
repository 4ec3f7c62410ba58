"""The one base of litpath's domain errors: what a user can act on (a damaged file, a config
that does not fit, a solve that failed), as opposed to a bug.

``litpath`` prints such an error as one line, ``litpath: error: <message>``, and exits 1 (2 for
a configuration error); ``litpath -v`` adds the traceback. Every message names the file, line,
setting or server it is about, so the one line is enough to act on.
"""

from __future__ import annotations


class LitpathError(Exception):
    """An error whose message is meant for the user: printed as one line, without a traceback."""

    exit_code = 1
