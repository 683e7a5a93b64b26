CREATE TABLE api_keys (
	id            TEXT PRIMARY KEY,
	name          TEXT NOT NULL DEFAULT '',
	prefix        TEXT NOT NULL,
	hash          TEXT NOT NULL UNIQUE,
	plan          TEXT NOT NULL CHECK (plan IN ('free', 'pro', 'enterprise')),
	domains       TEXT[] NOT NULL DEFAULT '{}',
	rate_limit    INTEGER NOT NULL DEFAULT 0 CHECK (rate_limit >= 0),
	monthly_quota INTEGER NOT NULL DEFAULT 0 CHECK (monthly_quota >= 0),
	created_at    TIMESTAMPTZ NOT NULL DEFAULT now(),
	revoked_at    TIMESTAMPTZ
);

CREATE TABLE usage (
	key_id TEXT NOT NULL REFERENCES api_keys (id) ON DELETE CASCADE,
	period TEXT NOT NULL,
	used   INTEGER NOT NULL DEFAULT 0,
	PRIMARY KEY (key_id, period)
);

CREATE TABLE quota_holds (
	id         TEXT PRIMARY KEY,
	key_id     TEXT NOT NULL REFERENCES api_keys (id) ON DELETE CASCADE,
	period     TEXT NOT NULL,
	expires_at TIMESTAMPTZ NOT NULL
);
CREATE INDEX quota_holds_key ON quota_holds (key_id, period);
