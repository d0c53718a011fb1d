"""Root cause across groups (pure): a hang cascades (a TP group stuck on one rank makes its
peers' DP groups wait too), so the verdict follows the waits to where they end.

Every channel adds edges "waiting rank -> rank it waits on". The origin of the hang is the set
of strongly connected components of that graph that no edge leaves (scipy's
``connected_components(connection="strong")``): ranks that wait on nobody outside themselves.
A component of several ranks is a group whose members all issued a call none completed, with
nothing else holding any of them (the transport between them). The waiting ranks are those
with a path to an origin."""

from __future__ import annotations

from collections.abc import Iterable


def origins(edges: Iterable[tuple[int, int]], culprits: set[int]) -> tuple[list[int], list[int]]:
    """(origin ranks, waiting ranks): the sink components holding a channel culprit, and every
    other rank with a path to one of them."""
    import numpy as np
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import breadth_first_order, connected_components

    pairs = sorted(set(edges))
    nodes = sorted({r for pair in pairs for r in pair} | culprits)
    if not nodes:
        return [], []
    index = {rank: i for i, rank in enumerate(nodes)}
    rows = np.array([index[a] for a, _ in pairs], dtype=int)
    cols = np.array([index[b] for _, b in pairs], dtype=int)
    graph = coo_matrix((np.ones(len(pairs)), (rows, cols)), shape=(len(nodes), len(nodes)))
    _, label = connected_components(graph, directed=True, connection="strong")
    leaves = {label[index[a]] for a, b in pairs if label[index[a]] != label[index[b]]}
    roots = sorted(rank for rank in nodes
                   if label[index[rank]] not in leaves and rank in culprits)
    root_labels = {label[index[r]] for r in roots}
    roots = sorted(rank for rank in nodes if label[index[rank]] in root_labels)
    reverse = graph.T.tocsr()
    waiting: set[int] = set()
    for root in roots:
        reached = breadth_first_order(reverse, index[root], directed=True,
                                      return_predecessors=False)
        waiting |= {nodes[i] for i in reached}
    return roots, sorted(waiting - set(roots))
