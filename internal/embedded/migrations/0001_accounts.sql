-- IF NOT EXISTS: a database made before numbered migrations adopts this
-- first one as it is.
CREATE TABLE IF NOT EXISTS api_keys (
	id            TEXT PRIMARY KEY,
	name          TEXT NOT NULL DEFAULT '',
	prefix        TEXT NOT NULL,
	hash          TEXT NOT NULL UNIQUE,
	plan          TEXT NOT NULL CHECK (plan IN ('free', 'pro', 'enterprise')),
	domains       TEXT NOT NULL DEFAULT '',
	rate_limit    INTEGER NOT NULL DEFAULT 0 CHECK (rate_limit >= 0),
	monthly_quota INTEGER NOT NULL DEFAULT 0 CHECK (monthly_quota >= 0),
	created_at    INTEGER NOT NULL,
	revoked_at    INTEGER NOT NULL DEFAULT 0
);

CREATE TABLE IF NOT EXISTS usage (
	key_id TEXT NOT NULL REFERENCES api_keys (id) ON DELETE CASCADE,
	period TEXT NOT NULL,
	used   INTEGER NOT NULL DEFAULT 0 CHECK (used >= 0),
	PRIMARY KEY (key_id, period)
);

CREATE TABLE IF NOT EXISTS quota_holds (
	id         TEXT PRIMARY KEY,
	key_id     TEXT NOT NULL REFERENCES api_keys (id) ON DELETE CASCADE,
	period     TEXT NOT NULL,
	expires_at INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS quota_holds_key ON quota_holds (key_id, period);
