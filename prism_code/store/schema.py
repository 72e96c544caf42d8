"""The index database's tables and their version."""

from __future__ import annotations

SCHEMA_VERSION = 2
# Versions that become the current one by running the schema (it only adds tables).
UPGRADABLE = (0, 1)

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS files (
  path TEXT PRIMARY KEY, size INTEGER NOT NULL, mtime_ns INTEGER NOT NULL,
  hash TEXT NOT NULL, language TEXT NOT NULL, line_count INTEGER NOT NULL,
  text TEXT NOT NULL, parsed TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS definitions (
  path TEXT NOT NULL, qualname TEXT NOT NULL, name TEXT NOT NULL, kind TEXT NOT NULL,
  start_line INTEGER NOT NULL, end_line INTEGER NOT NULL, signature TEXT NOT NULL,
  doc TEXT NOT NULL, hash TEXT NOT NULL, PRIMARY KEY (path, qualname));
CREATE INDEX IF NOT EXISTS definitions_name ON definitions(name);
CREATE TABLE IF NOT EXISTS edges (
  owner TEXT NOT NULL, u TEXT NOT NULL, v TEXT NOT NULL, weight REAL NOT NULL);
CREATE INDEX IF NOT EXISTS edges_owner ON edges(owner);
CREATE TABLE IF NOT EXISTS fragments (
  key TEXT PRIMARY KEY, path TEXT NOT NULL, kind TEXT NOT NULL, start_line INTEGER NOT NULL,
  end_line INTEGER NOT NULL, qualname TEXT NOT NULL, position INTEGER NOT NULL,
  nodes TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS fragments_path ON fragments(path);
CREATE TABLE IF NOT EXISTS relations (
  key TEXT PRIMARY KEY, related TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS dirty_fragments (key TEXT PRIMARY KEY, changed INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS dirty_nodes (node TEXT PRIMARY KEY);
CREATE TABLE IF NOT EXISTS embeddings (
  hash TEXT NOT NULL, model TEXT NOT NULL, vector BLOB NOT NULL, PRIMARY KEY (hash, model));
"""


# meta key of the token every index commit replaces (see RepoIndex.refresh).
GENERATION_KEY = "generation"
