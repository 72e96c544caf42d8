"""Structured memory (PRISM): typed schemas, validated revisions, cache-friendly encodings.

The model never rewrites memory. It proposes revisions (path, add | update, value);
code checks each against the schema and applies it or rejects it with a reason. The
modules, one idea each: schema (types, paths, validation), revisions (Def. 3.4),
grammar (JSON grammars a chat model can follow), encoding (in-place vs amendments),
accounting (PRISM Table 3), runner (the incremental loop), code_schemas (the
hand-written schemas of the memories of code), the repository's function memory in
deterministic_notes (notes from the parse and the graph), file_order (import order),
note_writer (the model pass) and notes_store (on disk), cok (Chain-of-Key module
summaries), cli (`prism-code notes`), ablation (the Table 3 comparison).
"""
