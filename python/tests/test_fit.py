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



def test_an_amp_step_lines_up_whatever_order_autocast_drops_its_weight_copies():
    # Leaving autocast clears its cache of 16-bit weight copies (a C++ unordered_map keyed by tensor address), so those
    # frees come in an order that may differ at each batch: BERT's and GPT-2 medium's amp traces sometimes did not line
    # up. Here each run of frees is shuffled at batches 3 and 4: the fit is the same.
    import os
    import random

    from vramfit_trace.cli import parse
    from vramfit_trace.sources import resolve
    from vramfit_trace.tracer import trace_batches

    options = parse(["--hf-config", os.path.join(os.path.dirname(__file__), "configs", "tiny-bert.json"), "--seq", "16", "--precision", "amp"])
    traced, _workload = trace_batches(resolve(options)[0], options, [2, 3, 4])
    events = [e for e, _recorder in traced]
    alloc = {e[1]: e for e in events[0] if e[0] == "a"}
    dropped = [e[1] for e in events[0] if e[0] == "f" and e[2] == 1 and alloc[e[1]][4] == "aten::_to_copy"]
    assert len(dropped) >= 8, "autocast's fp16 weight copies die together in the loss phase"

    def shuffled(trace, seed):
        out, run, rng = [], [], random.Random(seed)
        for e in trace + [None]:
            if e is not None and e[0] == "f":
                run.append(e)
                continue
            rng.shuffle(run)
            out += run + ([e] if e is not None else [])
            run = []
        return out

    expected, reason = fit(list(zip([2, 3, 4], events)))
    assert reason is None
    mixed = [events[0], shuffled(events[1], 1), shuffled(events[2], 2)]
    assert mixed[1] != events[1]
    assert fit(list(zip([2, 3, 4], mixed))) == (expected, None)
