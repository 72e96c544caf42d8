"""How much a one-sentence description raises the model's belief in a candidate's signature."""

from pathlib import Path

import pytest

from prism_code.cancel import Cancelled
from prism_code.index import RepoIndex
from prism_code.tasks.find_function import FunctionSearch
from prism_code.tasks.signature_pmi import Signature, SignaturePriors, signature_of, signature_scores

FIXTURES = Path(__file__).parent / "fixtures"


def test_a_found_function_is_read_as_its_parsed_header(tmp_path: Path) -> None:
    index = RepoIndex(FIXTURES / "calcrepo", cache_dir=tmp_path / "cache")
    index.update()
    try:
        [found] = [f for f in FunctionSearch(index).search("total price of an order", top=10)
                   if f.qualname == "total_price"]
        signature = signature_of(index, found)
    finally:
        index.close()
    assert signature.language == "python"
    assert signature.text.startswith("def total_price(")


def test_priors_are_kept_per_model_and_the_oldest_go_first() -> None:
    priors = SignaturePriors(capacity=2)
    a, b, c = (Signature("python", f"def {n}():") for n in "abc")
    priors.put("m1", a, (-3.0, 3))
    priors.put("m1", b, (-4.0, 3))
    assert priors.get("m2", a) is None  # another model's prior is another number
    assert priors.get("m1", a) == (-3.0, 3)  # a is now the most recently used
    priors.put("m1", c, (-5.0, 3))
    assert priors.get("m1", b) is None and priors.get("m1", a) is not None and len(priors) == 2


@pytest.mark.model
def test_the_signature_the_sentence_describes_gains_most_and_priors_are_reused(model_session) -> None:
    signatures = [Signature("python", "def get(self, key, default=None):"),
                  Signature("python", "def parse_iso_date(text: str) -> datetime:"),
                  Signature("python", "def send_email(to, subject, body):"),
                  Signature("rust", "fn parse_iso_date(text: &str) -> Option<NaiveDate>")]
    priors = SignaturePriors()
    sentence = "Parse an ISO 8601 date string into a date object."
    first = signature_scores(model_session, signatures, sentence, priors)
    pmi = [s.pmi for s in first.scores]
    assert max(range(3), key=lambda i: pmi[i]) == 1
    assert pmi[3] > pmi[0] and pmi[3] > pmi[2]  # the Rust header of the same job beats the others
    assert len(priors) == 4 and all(s.tokens > 3 for s in first.scores)
    # A second query about the same candidates evaluates only its own prompt and the headers.
    again = signature_scores(model_session, signatures, "Send an e-mail message.", priors)
    assert again.encoded < first.encoded
    assert max(range(4), key=lambda i: again.scores[i].pmi) == 2
    with pytest.raises(Cancelled):
        signature_scores(model_session, signatures, sentence, priors, cancelled=lambda: True)
