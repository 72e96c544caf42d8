"""Hand-written memory schemas for code (PRISM App. A, Listing 2, adapted): the memories of code.

The machinery they are written in (types, paths, validation) is memory/schema.py.

Field docs travel with the schema into the prompt as comments; they are where a
small model learns how long a field should be.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class FunctionNote:
    """What one function does, in plain words; no code, no repeating the name."""

    purpose: str = field(metadata={"doc": "what it does and why, at most 15 words"})
    input: str = field(metadata={"doc": "its parameters, at most 12 words"})
    output: str = field(metadata={"doc": "what it returns or changes, at most 12 words"})
    procedure: str = field(metadata={"doc": "how it works, at most 20 words"})

    def text(self) -> str:
        """The note as one paragraph (for function cards and hovers)."""
        parts = [self.purpose, f"Input: {self.input}" if self.input else "",
                 f"Output: {self.output}" if self.output else "", self.procedure]
        return " ".join(p.strip() for p in parts if p and p.strip())


@dataclass
class FunctionMemory:
    """functions is keyed by the qualified name of each function (Class.method for methods)."""

    functions: dict[str, FunctionNote]


@dataclass
class CandidateFunctions:
    """candidate_functions is keyed by the exact name of a function in [TEXT] that may be the
    one [QUERY] describes. Add each function once; describe it from [TEXT], not from [QUERY]."""

    candidate_functions: dict[str, FunctionNote]


@dataclass
class ModuleSummary:
    """A source file: what it is for, its most important functions, what it imports."""

    purpose: str = field(metadata={"doc": "the file's job, at most 25 words"})
    key_functions: dict[str, str] = field(metadata={"doc": "function name -> its role, at most 12 words"})
    depends_on: list[str] = field(metadata={"doc": "workspace files it imports"})


@dataclass
class CandidateMatch:
    """One candidate: what its text in [TEXT] shows it doing, and how well that fits [QUERY]."""

    does: str = field(metadata={"doc": "what the function does, from its text, at most 8 words"})
    fit: int = field(metadata={"doc": "0 = unrelated, 5 = similar job, 10 = does exactly what [QUERY] says"})


@dataclass
class CandidateMatches:
    """candidate_functions is keyed by the exact name of a function in [TEXT] (the name after ###)
    that could be the one [QUERY] describes. Add only functions that could be it."""

    candidate_functions: dict[str, CandidateMatch]
