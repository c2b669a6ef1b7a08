"""Per-event fit of the step's bytes in the batch: fixed + perSample × b from two traces, checked on a third."""

ROUND = 512  # PyTorch's caching allocator rounds every request up to this (kMinBlockSize, CUDACachingAllocator.cpp)


def round_up(n):
    return -(-n // ROUND) * ROUND


def shape_of(events):
    """What must agree between batches for events to line up: everything but the bytes, and the order of the frees
    within a run of frees (sorted by id). Frees between the same two allocations may come in another order at another
    batch (Python drops a container's tensors in its own order), and their order changes nothing a replay sees: each
    free block merges with its free neighbours whatever the order (src/step/tracePlan.ts says the same of its phases)."""
    out = []
    run = []
    for e in events:
        if e[0] == "f":
            run.append(tuple(e))
            continue
        out += sorted(run, key=lambda f: f[1])
        run = []
        out.append((e[0], e[1], e[3], e[4], e[5]))
    return out + sorted(run, key=lambda f: f[1])


def fit(traces):
    """traces: [(batch, events)] with three batches. Returns (events with [a, id, fixed, perSample, phase, category,
    op] allocations, None) or (None, reason) when the events do not line up or are not affine."""
    (b1, e1), (b2, e2), (b3, e3) = traces
    if len(e1) != len(e2) or len(e1) != len(e3):
        return None, f"the step made {len(e1)}, {len(e2)} and {len(e3)} events at batches {b1}, {b2}, {b3}"
    s1, s2, s3 = shape_of(e1), shape_of(e2), shape_of(e3)  # position k is the same event at each batch
    for k, (x, y, z) in enumerate(zip(s1, s2, s3)):
        if x != y or x != z:
            return None, f"event {k} differs between batches {b1}, {b2}, {b3}: {x} / {y} / {z}"
    out = []
    for x, y, z in zip(e1, e2, e3):
        if x[0] != "a":
            out.append(list(x))
            continue
        per_sample, remainder = divmod(y[2] - x[2], b2 - b1)
        fixed = x[2] - per_sample * b1
        if remainder or fixed < 0 or fixed + per_sample * b3 != z[2]:
            return None, f"{x[4]} (id {x[1]}) made {x[2]}, {y[2]}, {z[2]} bytes at batches {b1}, {b2}, {b3}: not affine"
        if per_sample % ROUND == 0:
            fixed = round_up(fixed)  # the sum is then a multiple of 512 at every batch (docs/trace-format.md)
        out.append(["a", x[1], fixed, per_sample, x[3], x[5], x[4]])
    return out, None


def single(events):
    """The events of one batch in the file's form (affine: false): every size fixed."""
    return [["a", e[1], round_up(e[2]), 0, e[3], e[5], e[4]] if e[0] == "a" else list(e) for e in events]
