"""The user-facing error type shared by `render` and `vision_bench`.

A `UserError` describes bad input (a malformed grid, an unknown name, a broken config) in one
sentence that names the problem and the fix. The command line prints it without a traceback and
exits non-zero; library callers can catch it like any `ValueError`.
"""


class UserError(ValueError):
    """Bad input from the user: the message says what is wrong and how to fix it."""
