"""The model strategies' RepoQA bench judges a multi-language needle by the function the index
holds at its lines, as the retrieval bench does (real C++ parse)."""

from pathlib import Path

from prism_bench.repoqa_data import Needle
from prism_bench.repoqa_strategies import located
from prism_code.index import RepoIndex

SOURCE = """\
#include <vector>

template <typename T>
std::vector<T> Buffer<T>::drain(std::size_t limit) {
  std::vector<T> out;
  return out;
}

int unrelated() { return 0; }
"""


def test_a_needle_starting_on_its_template_line_is_the_definition_below_it(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "buffer.cc").write_text(SOURCE)
    index = RepoIndex(repo, cache_dir=tmp_path / "cache")
    index.update()
    needle = Needle("owner/repo", "drain", "Drain the buffer.", "buffer.cc", 3, 7, "id")
    moved = located(index, needle)
    [drain] = [f for f in index.functions() if f.qualname.endswith("drain")]
    assert (moved.start_line, moved.end_line) == (drain.start_line, drain.end_line) == (4, 7)
    # A needle the index has no function for stays as it is (the bench then counts a miss).
    nowhere = Needle("owner/repo", "gone", "Gone.", "other.cc", 1, 2, "id")
    assert located(index, nowhere) == nowhere
