"""SQLite persistence of one workspace's index (WAL, schema-versioned, crash-safe).

The modules: `database` (the connections, the schema's migration, recovery from damage, transactions,
the generation token), `reads` and `writes` (what the index reads and writes, as the two halves of
`index_store.Store`), `schema` (the tables), `parsed_json` (a ParsedFile as stored), `file_lock`
(the advisory lock of one kind of writer) and `errors` (what a cache directory or a damaged file
says).

Every index update is one transaction, so a kill at any moment leaves either the
previous index or the new one. An update may publish files and fragments first and
relations later: the fragments whose relations are still owed are marked dirty in the
same transaction, so a kill between the two leaves work to finish, never a wrong index.
Embeddings are keyed by the hash of the text they embed and the model, so unchanged
functions never pay for them twice.

Several processes share one database (the language server and the command line, say).
Writers take an advisory lock on a file beside it, one at a time, and each commit of the
index changes a generation token in `meta`: a process whose token is not the stored one
reloads before it diffs, writes or answers (RepoIndex.refresh). Embedding takes a lock of
its own, so a second `index` waits for the first's vectors instead of computing them again.

The index is derived data: a damaged database is moved aside and rebuilt, and a cache
directory that cannot hold it is a CacheDirError saying which path and what to do.
"""
