"""Fixtures shared by the phases' tests."""

import pytest


class RecordedBar:
    """Records what a phase gives its progress bar: the arguments, the updates, the postfixes, the close."""

    def __init__(self, total, desc, unit):
        self.args, self.done, self.postfix, self.closed = (total, desc, unit), 0, [], False

    def update(self, n=1):
        self.done += n

    def set_postfix_str(self, s):
        self.postfix.append(s)

    def close(self):
        self.closed = True


@pytest.fixture
def record_bars(monkeypatch):
    """``record_bars(module)`` replaces ``module.bar`` by a recorder and returns the list of bars it makes."""

    def record(module):
        bars = []

        def make(total, desc, unit):
            bars.append(RecordedBar(total, desc, unit))
            return bars[-1]

        monkeypatch.setattr(module, "bar", make)
        return bars

    return record
