"""The settings of find's model strategies, apart from the strategies themselves.

A find request (tasks/find_request.py) carries them, and the command line builds one for
every find: this module loads nothing but the memory encodings, so a retrieval find does
not import the model strategies to name their defaults.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, get_args

from prism_code.memory.encoding import Encoding

View = Literal["notes", "bodies"]  # what the model is shown of a candidate
Evidence = Literal["likelihood", "fit"]  # what may move a candidate above retrieval's first
ShortEvidence = Literal["signature", "body"]  # what the likelihood reads when the query is a sentence
VIEWS: tuple[View, ...] = get_args(View)
EVIDENCE: tuple[Evidence, ...] = get_args(Evidence)
SHORT_EVIDENCE: tuple[ShortEvidence, ...] = get_args(ShortEvidence)

LONG_QUERY_BODIES = 3  # #16: the most bodies that fit 2,000 prompt tokens a RepoQA query


@dataclass(frozen=True)
class PrismSettings:
    candidates: int = 10  # retrieval's top-k handed to the pass
    # Five per step, two kept: pairs with one kept (5 steps) raised the cache hit but
    # doubled the decoding, which is what a query costs on a CPU, and the 0.5B kept the
    # first of every pair, dropping needles at ranks 2 and 4.
    chunk_size: int = 5  # candidates per PRISM step
    view: View = "notes"
    encoding: Encoding = Encoding.AMENDMENTS
    allow_updates: bool = True
    max_revisions: int = 2  # per step: the candidates a step may keep
    step_tokens: int = 120  # decoded per step at most
    evidence: Evidence = "likelihood"
    # With likelihood evidence the pass comes after the ranking and notes its first few,
    # two per step: the reasons shown for the results a user reads.
    noted: int = 4
    noted_chunk: int = 2
    # A sentence is read against each candidate's signature instead (signature_pmi): chosen on the
    # docstrings tuning split over the bodies (`prism-code bench likelihood`), at a third of the tokens.
    short_query_evidence: ShortEvidence = "signature"
    # A long description reads every signature first, then the bodies of retrieval's first and of
    # the others whose headers it raised most, this many bodies in all (0: every body, no signatures).
    long_query_bodies: int = LONG_QUERY_BODIES
    # A sentence is first written out as code by the model and searched with both
    # (tasks/query_expansion.py); the signatures are then read from the fused list, whose first is
    # right more often, so moving a candidate above it takes a larger margin
    # (signature_pmi.EXPANDED_SIGNATURE_MARGIN). Chosen on the docstrings tuning split
    # (`prism-code bench likelihood --expand`): 0.629 against 0.600 for the signatures on
    # retrieval's own list; test split 0.514 against 0.486.
    expand_short_queries: bool = True


@dataclass(frozen=True)
class LongContextSettings:
    token_budget: int = 3000  # code tokens per prompt at most (and never past the window)
    scan: int = 200  # retrieval ranks tried when the repository does not fit


@dataclass(frozen=True)
class WimSettings:
    first_segment: int = 1  # functions in the first segment (small: it produces the first event)
    segment: int = 3  # functions in each later segment
    function_tokens: int = 64  # most tokens of source shown per candidate (signature, docstring, start)
    query_tokens: int = 320  # most tokens of the description (it is repeated in each I_A)
