"""The per-event fit: fixed + perSample × b from two batches, checked on a third; what it says when events differ."""
from vramfit_trace.fit import fit, single


def alloc(ident, nbytes, phase=0, op="aten::mm", category="activations"):
    return ["a", ident, nbytes, phase, op, category]


def test_affine_events_fit_and_round_to_512():
    traces = [(b, [alloc(0, 1000 + 4096 * b), alloc(1, 300, category="parameters"), ["f", 0, 2, "python"]]) for b in (2, 3, 4)]
    events, reason = fit(traces)
    assert reason is None
    # perSample 4096 is a multiple of 512, so fixed is rounded up: 1000 -> 1024; a constant 300 B -> 512.
    assert events == [["a", 0, 1024, 4096, 0, "activations", "aten::mm"], ["a", 1, 512, 0, 0, "parameters", "aten::mm"],
                      ["f", 0, 2, "python"]]


def test_a_third_batch_that_disagrees_is_not_affine():
    traces = [(2, [alloc(0, 200)]), (3, [alloc(0, 300)]), (4, [alloc(0, 500)])]
    events, reason = fit(traces)
    assert events is None and "not affine" in reason and "200, 300, 500" in reason


def test_different_event_counts_say_so():
    traces = [(2, [alloc(0, 8)]), (3, [alloc(0, 8), alloc(1, 8)]), (4, [alloc(0, 8), alloc(1, 8)])]
    events, reason = fit(traces)
    assert events is None and reason == "the step made 1, 2 and 2 events at batches 2, 3, 4"


def test_single_batch_keeps_its_bytes_rounded():
    assert single([alloc(0, 700), ["f", 0, 1, "python"]]) == [["a", 0, 1024, 0, 0, "activations", "aten::mm"], ["f", 0, 1, "python"]]


def test_frees_between_the_same_allocations_line_up_in_any_order():
    # Python may drop a container's storages in another order at another batch; a replay sees no difference.
    frees = {2: [["f", 0, 1, "python"], ["f", 1, 1, "python"]], 3: [["f", 1, 1, "python"], ["f", 0, 1, "python"]]}
    traces = [(b, [alloc(0, 100 * b), alloc(1, 100 * b), *frees[2 if b != 3 else 3], alloc(2, 512)]) for b in (2, 3, 4)]
    events, reason = fit(traces)
    assert reason is None and events[2:4] == frees[2]  # the first batch's order is the one written
    # A free that moves past an allocation is a different step: not lined up.
    moved = [(b, [alloc(0, 8), alloc(1, 8), ["f", 0, 0, "python"], alloc(2, 8)] if b != 3 else [alloc(0, 8), alloc(1, 8), alloc(2, 8), ["f", 0, 0, "python"]]) for b in (2, 3, 4)]
    assert fit(moved)[0] is None and "event 2 differs" in fit(moved)[1]

