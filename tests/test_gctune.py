"""rmkit.gctune: the collector's thresholds are raised inside, and come back as they were after
(nested uses share one raise; an exception inside still restores them)."""

import gc

import pytest

from rmkit.gctune import THRESHOLDS, fewer_collections


def test_thresholds_raised_inside_and_restored_after():
    before = gc.get_threshold()
    with fewer_collections():
        inside = gc.get_threshold()
        assert inside[0] >= THRESHOLDS[0] and gc.isenabled()
        with fewer_collections():
            assert gc.get_threshold() == inside
        assert gc.get_threshold() == inside  # the outer use still holds the raise
    assert gc.get_threshold() == before
    with pytest.raises(ValueError):
        with fewer_collections():
            raise ValueError("inside")
    assert gc.get_threshold() == before
