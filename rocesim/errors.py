"""Error type for problems in user-supplied scenarios, topologies and traffic."""

from __future__ import annotations


class ScenarioError(ValueError):
    """A user-supplied value is invalid.

    ``key`` locates the value: a dotted key path such as ``topology.link.rate`` or
    ``traffic[1].size``, or ``file:line`` for values read from a file. ``reason`` says what
    is wrong and what a valid value looks like. ``str(error)`` is ``"<key>: <reason>"``,
    or just the reason when the key is empty.
    """

    def __init__(self, key: str, reason: str) -> None:
        self.key = key
        self.reason = reason
        super().__init__(f"{key}: {reason}" if key else reason)

    def __reduce__(self):
        # ValueError pickles through self.args (the formatted message), which would not
        # fit this constructor; rebuild from the two fields instead.
        return (type(self), (self.key, self.reason))
