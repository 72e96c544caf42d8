"""Types as find units: one per class, struct or interface, searched by its skeleton."""

from prism_code.fragments import type_fragments
from prism_code.parse import ParsedFile, parse_source
from prism_code.retrieval.type_units import skeleton

SOURCE = '''class Cache:
    """Keeps answers by key."""

    limit = 100

    def get(self, key):
        value = self.store[key]
        return value

    def put(self, key, value):
        self.store[key] = value


def helper():
    return Cache()
'''


def _parsed() -> ParsedFile:
    pf = parse_source("cache.py", SOURCE.encode())
    assert pf is not None
    return pf


def test_a_class_is_one_unit_searched_without_its_methods_bodies():
    pf = _parsed()
    [unit] = type_fragments([pf], taken=set())
    assert (unit.qualname, unit.start_line, unit.end_line) == ("Cache", 1, 11)
    definition = next(d for d in pf.definitions if d.qualname == "Cache")
    text = skeleton(SOURCE.split("\n"), pf, definition)
    assert "Keeps answers by key." in text and "limit = 100" in text
    assert "def get(self, key):" in text and "def put(self, key, value):" in text
    assert "self.store[key]" not in text  # the bodies are the methods' own units


def test_a_type_named_like_a_function_is_left_to_the_function():
    pf = _parsed()
    assert type_fragments([pf], taken={"cache.py#Cache"}) == []
