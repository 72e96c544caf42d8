"""`prism-code bench scale` end to end on a tiny tree: every step runs and every row is reported."""

from __future__ import annotations

import shutil
from pathlib import Path

from prism_bench import scale_bench

FIXTURE = Path(__file__).parent / "fixtures" / "scale_mini"


def test_the_scale_bench_measures_every_step_on_a_small_tree(tmp_path: Path) -> None:
    repo = tmp_path / "scale_mini"
    shutil.copytree(FIXTURE, repo)
    result = scale_bench.run(repo, embeddings=True)

    assert result.summary["files"] == 4
    assert result.summary["functions"] == 6
    assert result.index.peak_rss_mib > 20 and result.index.wall_s > 0 and result.index.user_s > 0
    assert result.index.tree_rss_mib > 20  # sampled from /proc while it ran (wait4 keeps a forked parent's peak)
    assert result.database_mib > 0 and result.saved_copy_mib > 0
    assert [q for q, _ in result.finds] == list(scale_bench.QUERIES)
    assert all(find.peak_rss_mib > 20 and '"qualname"' in find.stdout for _, find in result.finds)
    assert result.embedded > 0 and result.embed is not None

    server = result.server
    assert server.first_top[0] == "determinant"
    assert server.first_answer_s <= server.first_results_s <= server.loaded_s
    assert len(server.find_ms) == 3 * len(scale_bench.QUERIES)
    assert 0 < server.rss_first_results_mib <= server.rss_peak_mib

    cold = result.cold_server
    assert cold is not None and cold.first_top[0] == "determinant"
    assert not cold.first_from_saved  # nothing was saved in its cache: the first index answered

    text = scale_bench.markdown(result, "prism-code bench scale --repo scale_mini --embeddings")
    assert text.startswith("Command: `prism-code bench scale --repo scale_mini --embeddings`")
    for row in ("`index --no-embeddings`, cold", "index on disk", "CLI `find` cold", "`index` (embeddings)",
                "vectors/s", "server: first find with results", "server: RSS at that answer",
                "server: find p50 / max once loaded", "server: RSS at the end / peak",
                "server, folder never indexed: first find with results"):
        assert row in text, row
    assert text.count("CLI `find` cold") == 3
