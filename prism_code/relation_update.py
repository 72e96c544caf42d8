"""Which related sets an index update owes, and how they are brought up to date.

An update records the relation work it leaves (`Dirty`); `finish_relations` then asks this
module which sets to recompute from the graph (those of fragments within the relation cutoff
of a changed node, and those whose full set lost a member) and which only to patch (sets that
merely list a changed fragment: Eq. 8 is symmetric, so the changed fragment's own new row
gives their new weights). The index keeps the transaction and the publishing.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from prism_code.cancel import CancelCheck, Cancelled
from prism_code.config import IndexConfig
from prism_code.fragments import FUNCTION, WINDOW, Fragment
from prism_code.graph import CodeGraph
from prism_code.related_sets import Pairs, RelatedSets
from prism_code.relation_pool import RelationJob, file_groups, ranked_groups, worker_count
from prism_code.relations import Ranked, RelationCorpus, StrengthTable, split_rows

Progress = Callable[[str, int, int], None]  # (stage, done, total)
RelatedRows = dict[str, Pairs]  # some fragments' related sets, as plain lists

# When more than this share of fragments is affected, one full pass is cheaper.
FULL_RECOMPUTE_SHARE = 0.5


@dataclass
class Dirty:
    """Relation work an update leaves to finish_relations()."""

    changed: set[str] = field(default_factory=set)  # fragments that changed, appeared or vanished
    recompute: set[str] = field(default_factory=set)  # fragments to recompute in any case
    nodes: set[str] = field(default_factory=set)  # graph nodes whose edges changed

    def __bool__(self) -> bool:
        return bool(self.changed or self.recompute or self.nodes)

    def merged(self, other: Dirty) -> Dirty:
        return Dirty(self.changed | other.changed, self.recompute | other.recompute,
                     self.nodes | other.nodes)


def relating(f: Fragment | None) -> tuple[object, ...] | None:
    """What a fragment's relations depend on (Eqs. 7-8): not its line numbers."""
    return None if f is None else (f.kind, f.position, f.nodes)


def context_neighbours(fragments: dict[str, Fragment], changed: list[Fragment], config: IndexConfig) -> set[str]:
    """Windows whose Eq. 7 relations changed: a window appearing or vanishing changes
    the context relation of the windows within reach of it in the same file."""
    weight, cutoff = config.context_weight, config.relation_cutoff
    reach = int(math.log(cutoff) / math.log(weight)) if 0 < weight < 1 else 0
    moved = {(f.path, f.position) for f in changed if f.kind == WINDOW}
    if not reach or not moved:
        return set()
    paths = {path for path, _ in moved}
    return {k for k, f in fragments.items() if f.kind == WINDOW and f.path in paths
            and any((f.path, f.position + d) in moved for d in range(-reach, reach + 1))}


def planned(owed: Dirty, fragments: dict[str, Fragment], related: RelatedSets, graph: CodeGraph,
            config: IndexConfig) -> tuple[set[str], set[str]]:
    """(sets to recompute, sets to patch) for the work `owed`.

    A set is recomputed when its fragment's own nodes or the strengths from them changed,
    or when a member left a set cut at `related_per_fragment` (who moves up is unknown);
    an uncut set that lists a changed fragment is only patched.
    """
    full = (owed.recompute | owed.changed) & fragments.keys()
    # Strengths from a node change only within the cutoff of a changed node.
    near = graph.ball(owed.nodes, config.relation_cutoff) if owed.nodes else set()
    if near:
        full |= {k for k, f in fragments.items() if any(n in near for n, _ in f.nodes)}
    patch: set[str] = set()
    if owed.changed and len(full) < len(fragments):
        for key, members in related.members():
            if key not in full and any(k in owed.changed for k in members):
                if len(members) >= config.related_per_fragment:
                    full.add(key)
                else:
                    patch.add(key)
    return full, patch


def patched(related: RelatedSets, patch: set[str], changed_rows: RelatedRows, recomputed: set[str],
            changed: set[str], top_k: int) -> set[str]:
    # `recomputed`: the keys `recompute` was asked for; their sets are new already.
    """Swap, in `related`, the changed fragments' entries of the sets not recomputed for their
    new weights (read from the changed fragments' own rows); returns the keys patched."""
    incoming: RelatedRows = {key: [] for key in patch}
    for key, pairs in changed_rows.items():
        for other, weight in pairs:
            if other not in recomputed:
                incoming.setdefault(other, []).append((key, weight))
    for key, pairs in incoming.items():
        kept = [(k, w) for k, w in related.get(key, []) if k not in changed]
        # Same order as relation_rows: strongest first, ties by key (= corpus index).
        related[key] = sorted(kept + pairs, key=lambda kw: (-kw[1], kw[0]))[:top_k]
    return set(incoming)


def recompute(graph: CodeGraph, config: IndexConfig, fragments: dict[str, Fragment], related: RelatedSets,
              keys: set[str], changed: set[str], report: Progress,
              cancelled: CancelCheck | None) -> tuple[set[str], RelatedRows]:
    """Recompute, in `related`, the related sets of the fragments `keys` names; also
    returns every relation (not only the strongest) of those that are in `changed`."""
    plans = []
    for kind in (FUNCTION, WINDOW):
        corpus = sorted((f for f in fragments.values() if f.kind == kind), key=lambda f: f.key)
        rows = [i for i, f in enumerate(corpus) if f.key in keys]
        plans.append((kind, corpus, rows))
    region = None
    if all(len(rows) <= FULL_RECOMPUTE_SHARE * len(corpus) for _, corpus, rows in plans):
        sources = {n for _, corpus, rows in plans for i in rows for n, _ in corpus[i].nodes}
        region = graph.ball(sources, config.relation_cutoff)
    table = StrengthTable(graph, config.relation_cutoff, region)
    # Every pair of a changed row is needed only to patch sets not recomputed.
    patching = bool(changed) and len(keys) < len(fragments)
    job = RelationJob(table.strengths, tuple(RelationCorpus.of(table, corpus) for _, corpus, _ in plans),
                      config.context_weight, None if patching else config.related_per_fragment)
    total = sum(len(rows) for _, _, rows in plans)
    groups = file_groups([corpus for _, corpus, _ in plans], [rows for _, _, rows in plans])
    recomputed: set[str] = set()
    changed_rows: RelatedRows = {}
    _check(cancelled)
    report("relations", 0, total)
    done = 0
    for result in ranked_groups(job, groups, worker_count(total), cancelled):
        for k, batch, ranked in result:
            corpus = plans[k][1]
            for i, pairs in split_rows(batch, ranked, config.related_per_fragment).items():
                related[corpus[i].key] = [(corpus[j].key, w) for j, w in pairs]
                recomputed.add(corpus[i].key)
            wanted = [n for n, i in enumerate(batch) if corpus[i].key in changed]
            if wanted and len(keys) < len(fragments):  # else nothing is patched
                chosen = np.isin(ranked[0], wanted)
                rows_chosen: Ranked = (ranked[0][chosen], ranked[1][chosen], ranked[2][chosen])
                for i, pairs in split_rows(batch, rows_chosen, None).items():
                    if pairs:
                        changed_rows[corpus[i].key] = [(corpus[j].key, w) for j, w in pairs]
            done += len(batch)
        report("relations", done, total)
    return recomputed, changed_rows


def _check(cancelled: CancelCheck | None) -> None:
    if cancelled and cancelled():
        raise Cancelled("relations cancelled; they are finished by the next update")
