"""A candidate's code without its prose, as the likelihood rerank may read it (real grammars)."""

from prism_code.parse.code_only import code_only


def test_python_docstrings_and_comments_go_code_and_strings_in_code_stay() -> None:
    method = '''    def parse(self, text):
        """Parse the header into a dict of options."""
        # split on semicolons
        parts = text.split(";")  # not a comment: "#" in a string below stays
        label = "# of parts"
        return {p: label for p in parts}
'''
    assert code_only(method, "python") == (
        'def parse(self, text):\n    parts = text.split(";")\n'
        '    label = "# of parts"\n    return {p: label for p in parts}')


def test_comments_of_other_grammars_go() -> None:
    rust = "/// Adds one.\nfn inc(x: i32) -> i32 {\n    // the obvious way\n    x + 1 /* inline */\n}\n"
    assert code_only(rust, "rust") == "fn inc(x: i32) -> i32 {\n    x + 1\n}"
    java = "/** Doc. */\nint twice(int x) { return 2 * x; } // tail\n"
    assert code_only(java, "java") == "int twice(int x) { return 2 * x; }"


def test_text_without_prose_or_of_an_unknown_language_is_unchanged() -> None:
    assert code_only("def f(x):\n    return x\n", "python") == "def f(x):\n    return x\n"
    assert code_only("# a note\n", "markdown") == "# a note\n"
