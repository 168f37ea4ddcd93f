"""Small real models for tests (no mocks): a fixed score table, stateless."""


from tgeval.models.base import TemporalLinkModel


class StatelessModel(TemporalLinkModel):
    """A model without history: every state method is a no-op."""

    def update(self, batch):
        pass

    def reset_state(self):
        pass

    def snapshot(self):
        return {}

    def restore(self, state):
        pass


class TableModel(StatelessModel):
    """Scores ``table[src, dst]``: a stateless scorer with controllable ties."""

    def __init__(self, table):
        super().__init__(table.size(0))
        self.register_buffer("table", table)

    def score(self, src, dst, t):
        return self.table[src, dst]


def brute_force_counts(score_fn, src, dst, t, catalog_items, available_from=None, directed=True):
    """Per-event (above, equal, num_candidates) by looping over every candidate."""
    out = []
    events = list(zip(src.tolist(), dst.tolist(), t.tolist()))
    for u, v, s in events:
        simultaneous = {b for a, b, w in events if a == u and w == s}
        if not directed:
            simultaneous |= {a for a, b, w in events if b == u and w == s}
        p = float(score_fn(u, v, s))
        above = equal = count = 0
        for k, c in enumerate(catalog_items.tolist()):
            if available_from is not None and not available_from[k] < s:
                continue
            if c == u or c in simultaneous:
                continue
            count += 1
            q = float(score_fn(u, c, s))
            above += q > p
            equal += q == p
        out.append((above, equal, count))
    return out
