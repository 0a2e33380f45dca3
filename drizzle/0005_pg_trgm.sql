-- Trigram indexes for substring search in lists (PGlite ships the extension and loads it).
CREATE EXTENSION IF NOT EXISTS pg_trgm;
