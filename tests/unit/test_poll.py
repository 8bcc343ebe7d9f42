"""The one wait (k8s/poll.py) on a fake clock: when it asks, what it gives back, when it gives up."""

from __future__ import annotations

import pytest

from k8s import poll


class Clock:
    """A fake monotonic clock; sleeping moves it on, and every sleep is noted."""

    def __init__(self):
        self.now = 100.0
        self.slept: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


def answers(*values):
    """ask(): the values in turn (the last one again once they are used up), and how many times it was asked."""
    asked = []

    def ask():
        asked.append(1)
        return values[min(len(asked), len(values)) - 1]
    return ask, asked


def test_eventually_gives_the_first_answer_that_will_do_asking_every_interval():
    c = Clock()
    ask, asked = answers(0, "", "found", "later")
    assert poll.eventually(ask, 10, 0.5, clock=c, sleep=c.sleep) == "found"
    assert (len(asked), c.slept) == (3, [0.5, 0.5])


def test_eventually_gives_the_last_answer_when_the_time_is_up_asking_once_more_at_the_deadline():
    c = Clock()
    ask, asked = answers(0)
    assert poll.eventually(ask, 2, 0.5, clock=c, sleep=c.sleep) == 0
    assert (len(asked), c.slept, c.now) == (5, [0.5] * 4, 102.0)       # at 100, 100.5, 101, 101.5 and 102


def test_eventually_asks_once_even_with_no_time_and_done_says_what_will_do():
    c = Clock()
    ask, asked = answers("not yet")
    assert poll.eventually(ask, 0, 1, clock=c, sleep=c.sleep) == "not yet" and len(asked) == 1
    ask, asked = answers("x", "", "y")
    assert poll.eventually(ask, 10, 1, done=lambda a: a == "", clock=c, sleep=c.sleep) == ""
    assert len(asked) == 2
    ask, _ = answers(None, {})
    assert poll.eventually(ask, 10, 1, done=lambda a: a is not None, clock=c, sleep=c.sleep) == {}


def test_until_gives_the_first_truthy_answer_or_raises_naming_what_it_waited_for_and_the_last_answer():
    c = Clock()
    ask, _ = answers([], [3])
    assert poll.until(ask, 5, "a list", 1, clock=c, sleep=c.sleep) == [3]
    ask, asked = answers(None, [])
    with pytest.raises(poll.WaitTimedOut) as e:
        poll.until(ask, 3, "the nodes to go", 1, clock=c, sleep=c.sleep)
    assert str(e.value) == "timed out after 3s waiting for the nodes to go (last: [])"
    assert len(asked) == 4 and isinstance(e.value, AssertionError)


def test_an_error_of_the_question_is_not_swallowed():
    c = Clock()

    def ask():
        raise RuntimeError("Kueue exited")
    with pytest.raises(RuntimeError, match="Kueue exited"):
        poll.eventually(ask, 10, 1, clock=c, sleep=c.sleep)
    assert c.slept == []
