"""The canonical text of a slow-rank spec (stragglers.slow_text)."""

import pytest

from flowemu.whatif.stragglers import parse_slow, slow_text


@pytest.mark.parametrize("text, canonical", [
    ("3=0.5", "3=0.5"), ("3=0.50", "3=0.5"), ("3-3=0.5", "3=0.5"), ("3=.5", "3=0.5"),
    (" 3 = 0.5 : NETWORK ", "3=0.5:network"), ("1, 2=0.5;4-6=0.25:compute",
                                                "1,2=0.5;4-6=0.25:compute"),
    ("random:04:1=0.25:compute", "random:4:1=0.25:compute"), ("0=1.0", "0=1"),
    ("0=0.5; ;1=0.5", "0=0.5;1=0.5"),
    # what does not read is left as it is, for parse_slow to refuse
    ("x", "x"), ("3=2", "3=2"), ("3=0.5:fast", "3=0.5:fast"), ("3-1=0.5", "3-1=0.5"),
])
def test_slow_text(text, canonical):
    assert slow_text(text) == canonical


def test_a_slow_spec_reads_as_its_canonical_text():
    for text in ("3-3=0.50", " 3 = 0.5 "):
        slow = parse_slow(text, 8)
        assert slow.spec == "3=0.5"
        assert (slow.compute == parse_slow("3=0.5", 8).compute).all()
