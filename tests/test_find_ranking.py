"""Find's ranking on what people ask: a named symbol, code over its tests, many files over one."""

import shutil
from pathlib import Path

import numpy as np
import pytest

from prism_code.index import RepoIndex
from prism_code.tasks.find_function import FunctionSearch
from prism_code.tasks.find_ranking import (
    QUESTION_WORDS,
    file_text_lift,
    is_auxiliary,
    matched_path_words,
    mentioned_names,
    path_words,
    question_strength,
    squashed,
)

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture()
def search(tmp_path: Path):
    root = tmp_path / "ranking"
    shutil.copytree(FIXTURES / "ranking", root)
    index = RepoIndex(root, cache_dir=tmp_path / "cache")
    index.update()
    yield FunctionSearch(index, None)
    index.close()


@pytest.mark.parametrize("query", ["HTTPException", "http exception", "http_exception", "errors.HTTPException",
                                   "web::errors::HTTPException"])
def test_a_symbol_query_finds_the_type_itself_before_its_users(search: FunctionSearch, query: str):
    found = search.search(query, top=5)
    # the class is a result of its own, with its whole span, not one of its methods
    assert (found[0].qualname, found[0].kind) == ("HTTPException", "class")
    assert (found[0].path, found[0].start_line, found[0].end_line) == ("web/errors.py", 4, 9)
    assert found[0].reason.startswith("defines HTTPException")
    # the users are still listed after it
    assert {"not_found", "forbidden", "handle_http_exception"} & {f.qualname for f in found[1:]}


def test_the_exact_spelling_decides_between_a_class_and_a_function(search: FunctionSearch):
    assert search.search("Session", top=3)[0].qualname == "Session"
    assert search.search("session", top=3)[0].qualname == "session"
    # the other one is still listed, though it shares the file with the first
    assert {"Session", "session"} <= {f.qualname for f in search.search("Session", top=3)}


def test_a_test_file_ranks_below_the_code_it_tests(search: FunctionSearch):
    found = search.search("rate limit the request", top=5)
    paths = [f.path for f in found]
    assert paths.index("web/limits.py") < paths.index("tests/test_limits.py")
    assert "ranked down" in found[paths.index("tests/test_limits.py")].reason


def test_a_query_about_tests_keeps_them_up(search: FunctionSearch):
    found = search.search("test rate limit blocks the request", top=3)
    assert found[0].path == "tests/test_limits.py"


def test_one_files_many_hits_do_not_fill_the_list(search: FunctionSearch):
    found = search.search("parse the query string token value", top=5)
    paths = [f.path for f in found]
    assert paths[0] == "web/parsing.py"
    # parsing.py's five parse functions all match, and would be the whole list; its weaker
    # ones give way to other files' best hits ...
    assert paths.count("web/parsing.py") < 5 and len(set(paths)) >= 3
    # ... while the ones that match far better than any other file keep their places.
    assert [f.qualname for f in found[:3]] == ["parse_query_string", "parse_token", "parse_pair"]


def test_reasons_are_words_and_the_numbers_are_apart(search: FunctionSearch):
    found = search.search("parse the query string", top=3)
    top = found[0].to_json()
    assert "bm25" not in top["reason"]
    assert "'parse'" in top["reason"] or "'query'" in top["reason"]
    assert set(top["scores"]) >= {"bm25", "bm25_name"}


def test_path_rules_and_identifier_styles():
    assert is_auxiliary("pkg/router_test.go") and is_auxiliary("src/app.test.ts")
    assert is_auxiliary("_examples/rest/main.go") and is_auxiliary("vendor/x/y.go")
    assert not is_auxiliary("src/contest.py") and not is_auxiliary("latest/router.go")
    assert squashed("HTTPException") == squashed("http exception") == squashed("http_exception")
    words = path_words("src/main/java/org/apache/commons/lang3/Validate.java")
    assert matched_path_words({"argument", "validation", "helpers"}, words) == ["validation"]
    assert matched_path_words({"registration"}, path_words("pkg/registry.go")) == ["registration"]
    assert matched_path_words({"valid"}, path_words("pkg/value.go")) == []


def test_a_file_that_matches_everywhere_a_little_gains_more_than_one_stray_hit(tmp_path: Path):
    """Architecture questions are about files: many small impls each naming the subject once
    lift their file more than one function elsewhere that says the words louder; a file
    that does not match gains nothing, and each file gains through its best unit only."""
    root = tmp_path / "codec"
    (root / "codec").mkdir(parents=True)
    kinds = ["int", "float", "str", "bytes", "list", "dict", "tuple", "set", "bool", "date", "time",
             "decimal", "fraction", "complex", "range", "frozenset", "bytearray", "path", "uuid", "enum"]
    (root / "codec" / "builtins.py").write_text("".join(
        f"def write_{kind}(out, value):\n    out.serialize_type(value, '{kind}')\n\n\n" for kind in kinds))
    (root / "codec" / "report.py").write_text(
        "def describe_types(registry):\n"
        "    \"\"\"List which standard library types the registry can serialize.\"\"\"\n"
        "    return ['standard library type: ' + name for name in registry.serialize_names()]\n")
    (root / "codec" / "io.py").write_text("".join(
        f"def {verb}_stream(handle, size):\n    return handle.{verb}(size)\n\n\n"
        for verb in ["open", "close", "read", "seek", "flush", "lock", "poll", "send", "bind", "copy"]))
    index = RepoIndex(root, cache_dir=tmp_path / "cache")
    index.update()
    try:
        search = FunctionSearch(index, None)
        query = "standard library type serialize implementations"
        fused, parts = search.scores(query)
        paths = [f.path for f in search.corpus.fragments]
        lift = file_text_lift(fused, parts["bm25"], paths, 1.0)
    finally:
        index.close()
    lifted = {paths[i]: float(lift[i]) for i in np.flatnonzero(lift)}
    assert sorted(lifted) == ["codec/builtins.py", "codec/report.py"]  # one unit each; io.py none
    assert lifted["codec/builtins.py"] > lifted["codec/report.py"]
    assert max(parts["bm25"][i] for i, p in enumerate(paths) if p == "codec/builtins.py") < \
        max(parts["bm25"][i] for i, p in enumerate(paths) if p == "codec/report.py")


def test_a_paragraph_is_ranked_by_its_words_more_than_by_the_signals(search: FunctionSearch,
                                                                     monkeypatch: pytest.MonkeyPatch):
    """The path, file and repeat signals are sized for questions; a long description of one
    function gets them in proportion to QUESTION_WORDS / its length."""
    question = "parsing the query string"
    paragraph = (question + " into its key and value pairs: walk along the text, read one token after another"
                 " up to each ampersand, split every token at its equals sign, and collect the pairs in order")
    assert question_strength(question) == 1.0
    assert question_strength(paragraph) == pytest.approx(QUESTION_WORDS / len(paragraph.split()))

    def shift(query: str) -> float:
        return next(f for f in search.search(query, top=5) if f.qualname == "parse_query_string").scores["signals"]

    scaled_question, scaled_paragraph = shift(question), shift(paragraph)
    strength = question_strength(paragraph)
    monkeypatch.setattr("prism_code.tasks.find_ranking.QUESTION_WORDS", 10**6)
    assert shift(question) == scaled_question > 0  # a question gets the signals whole
    assert scaled_paragraph == pytest.approx(shift(paragraph) * strength, rel=0.01)


def test_a_qualified_name_in_a_sentence_finds_the_definition_its_module_path_spells(tmp_path: Path):
    """"how std.fs.cwd ..." names fs's `cwd`, not the other `cwd` a folder away; a name without
    its module is prose's, left to the words."""
    root = tmp_path / "lib"
    for path, body in {
        "std/fs.py": "def cwd():\n    return Dir(handle=AT_FDCWD)\n",
        "std/io/dir.py": "def cwd(self):\n    return Dir(handle=self.handle)\n",
        # Other modules, so scores spread as in a real library.
        **{f"std/{name}.py": f"def {name}_open(path):\n    return {name}.open_handle(path, mode='r')\n"
           for name in ("json", "mem", "net", "heap", "sort", "time")},
    }.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(body)
    index = RepoIndex(root, cache_dir=tmp_path / "cache")
    index.update()
    try:
        search = FunctionSearch(index, None)
        asked = search.search("how std.fs.cwd opens the current working directory", top=2)
    finally:
        index.close()
    assert [f.path for f in asked] == ["std/fs.py", "std/io/dir.py"]
    assert "which the query names" in asked[0].reason
    assert mentioned_names("absl::StrSplit and StrJoin for string splitting") == (("absl", "strsplit"),)
    assert mentioned_names("e.g. a short list of words here") == ()
    assert mentioned_names("std.fs.cwd") == ()  # a short query is read whole as a symbol


_CLASS_BODY = ("    def fields(self):\n        return self.columns\n\n"
               "    def dump(self, row):\n        return dict(row)\n")


def _symbol_results(tmp_path: Path, files: dict[str, str], query: str) -> list[tuple[str, str, str]]:
    root = tmp_path / "store"
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    index = RepoIndex(root, cache_dir=tmp_path / "cache")
    index.update()
    try:
        return [(f.path, f.qualname, f.reason) for f in FunctionSearch(index, None).search(query, top=4)]
    finally:
        index.close()


def test_a_symbol_defined_at_the_top_comes_before_one_nested_in_another(tmp_path: Path):
    """"Schema" names the top-level class and the one nested in Repo: the top-level one first."""
    nested = "class Repo:\n    class Schema:\n" + _CLASS_BODY.replace("\n    ", "\n        ").replace(
        "    def", "        def", 1)
    found = _symbol_results(tmp_path, {"store/repo/schema.py": nested,
                                       "store/schema.py": "class Schema:\n" + _CLASS_BODY}, "Schema")
    assert [(path, name) for path, name, _ in found[:2]] == [
        ("store/schema.py", "Schema"), ("store/repo/schema.py", "Repo.Schema")]


def test_a_symbol_defined_in_several_files_comes_first_from_the_file_named_after_it(tmp_path: Path):
    """"Serializer" names a class in serializer.py and its twin in serializer_json.py, whose
    body says "serializer" more: the file named after the symbol comes first."""
    found = _symbol_results(tmp_path, {
        "store/serializer_json.py": "class Serializer:\n    def to_json(self, serializer_value):\n"
                                    "        return serializer_value.json()\n",
        "store/serializer.py": "class Serializer:\n" + _CLASS_BODY}, "Serializer")
    assert [(path, name) for path, name, _ in found[:2]] == [
        ("store/serializer.py", "Serializer"), ("store/serializer_json.py", "Serializer")]
    assert found[0][2].startswith("defines Serializer")
