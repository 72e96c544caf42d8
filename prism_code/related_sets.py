"""Every fragment's related set (FragRel, Eq. 8), held compactly.

A large repository has millions of relations (sympy: 108k sets, 2.7 million members). As
lists of (key, weight) tuples they took ~200 MB of every process holding the index; here a
set is two tuples, its members' keys and their weights (each key and weight one shared
object), 16 bytes a member. Reading a set gives the usual list of pairs, made on the spot:
every reader takes a few sets at a time, except relation planning, which reads the keys.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, MutableMapping

Pairs = list[tuple[str, float]]  # (related key, weight), strongest first
_Packed = tuple[tuple[str, ...], tuple[float, ...]]


class RelatedSets(MutableMapping[str, Pairs]):
    """fragment key -> its related set, strongest first."""

    __slots__ = ("_sets",)

    def __init__(self, sets: Mapping[str, Pairs] | None = None) -> None:
        self._sets: dict[str, _Packed] = {}
        for key, pairs in (sets or {}).items():
            self[key] = pairs

    @classmethod
    def of_members(cls, rows: Iterable[tuple[str, tuple[str, ...], tuple[float, ...]]]) -> RelatedSets:
        """From (key, member keys, weights) rows, kept as given."""
        made = cls()
        made._sets = {key: (keys, weights) for key, keys, weights in rows}
        return made

    def __getitem__(self, key: str) -> Pairs:
        keys, weights = self._sets[key]
        return list(zip(keys, weights))

    def __setitem__(self, key: str, pairs: Pairs) -> None:
        self._sets[key] = (tuple(k for k, _ in pairs), tuple(w for _, w in pairs))

    def __delitem__(self, key: str) -> None:
        del self._sets[key]

    def __contains__(self, key: object) -> bool:
        return key in self._sets

    def __iter__(self) -> Iterator[str]:
        return iter(self._sets)

    def __len__(self) -> int:
        return len(self._sets)

    def members(self) -> Iterator[tuple[str, tuple[str, ...]]]:
        """(key, its related keys) of every set, without making pairs."""
        for key, (keys, _) in self._sets.items():
            yield key, keys

    def copy(self) -> RelatedSets:
        """A copy to change while readers keep this one (the sets themselves are shared:
        they are tuples, never changed in place)."""
        made = RelatedSets()
        made._sets = dict(self._sets)
        return made
