-- Users, their sessions and access tokens; key ownership and signing; usage
-- history. Times are integer nanoseconds since 1970 (0: none), booleans 0/1.
CREATE TABLE users (
	id              TEXT PRIMARY KEY,
	email           TEXT NOT NULL UNIQUE CHECK (email = lower(email)),
	password_hash   TEXT NOT NULL DEFAULT '',
	role            TEXT NOT NULL CHECK (role IN ('admin', 'member')),
	disabled        INTEGER NOT NULL DEFAULT 0 CHECK (disabled IN (0, 1)),
	created_at      INTEGER NOT NULL,
	last_sign_in_at INTEGER NOT NULL DEFAULT 0
);

CREATE TABLE sessions (
	hash       TEXT PRIMARY KEY,
	user_id    TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
	created_at INTEGER NOT NULL,
	expires_at INTEGER NOT NULL
);
CREATE INDEX sessions_user ON sessions (user_id);

CREATE TABLE access_tokens (
	id           TEXT PRIMARY KEY,
	user_id      TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
	name         TEXT NOT NULL DEFAULT '',
	prefix       TEXT NOT NULL,
	hash         TEXT NOT NULL UNIQUE,
	created_at   INTEGER NOT NULL,
	expires_at   INTEGER NOT NULL DEFAULT 0,
	last_used_at INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX access_tokens_user ON access_tokens (user_id);

ALTER TABLE api_keys ADD COLUMN owner_id TEXT REFERENCES users (id) ON DELETE SET NULL;
ALTER TABLE api_keys ADD COLUMN require_signature INTEGER NOT NULL DEFAULT 0 CHECK (require_signature IN (0, 1));
ALTER TABLE api_keys ADD COLUMN signing_secret TEXT NOT NULL DEFAULT '';
ALTER TABLE api_keys ADD COLUMN previous_hash TEXT;
ALTER TABLE api_keys ADD COLUMN previous_expires_at INTEGER NOT NULL DEFAULT 0;
CREATE INDEX api_keys_previous_hash ON api_keys (previous_hash);
CREATE INDEX api_keys_owner ON api_keys (owner_id);

CREATE TABLE usage_days (
	key_id     TEXT NOT NULL REFERENCES api_keys (id) ON DELETE CASCADE,
	day        TEXT NOT NULL,
	succeeded  INTEGER NOT NULL DEFAULT 0 CHECK (succeeded >= 0),
	failed     INTEGER NOT NULL DEFAULT 0 CHECK (failed >= 0),
	cache_hits INTEGER NOT NULL DEFAULT 0 CHECK (cache_hits >= 0),
	refused    INTEGER NOT NULL DEFAULT 0 CHECK (refused >= 0),
	bytes      INTEGER NOT NULL DEFAULT 0 CHECK (bytes >= 0),
	PRIMARY KEY (key_id, day)
);

CREATE TABLE request_log (
	id          INTEGER PRIMARY KEY,
	key_id      TEXT NOT NULL REFERENCES api_keys (id) ON DELETE CASCADE,
	at          INTEGER NOT NULL,
	status      INTEGER NOT NULL,
	duration_ms INTEGER NOT NULL,
	host        TEXT NOT NULL DEFAULT '',
	format      TEXT NOT NULL DEFAULT '',
	cached      INTEGER NOT NULL DEFAULT 0 CHECK (cached IN (0, 1)),
	request_id  TEXT NOT NULL DEFAULT ''
);
CREATE INDEX request_log_key ON request_log (key_id, id);
CREATE INDEX request_log_at ON request_log (at);
