CREATE TABLE items (
  id TEXT PRIMARY KEY NOT NULL,
  body TEXT NOT NULL,
  created_at TEXT NOT NULL
);
-- Rows for the primary-key read route.
WITH RECURSIVE seq(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM seq WHERE n < 1000)
INSERT INTO items (id, body, created_at) SELECT 'seed-' || n, '{"seed":true}', '2026-01-01T00:00:00.000Z' FROM seq;
