-- Users, their sessions and access tokens; key ownership and signing; usage
-- history. Allowed domains become comma-separated text, as in the embedded
-- store, so that both share one key store.
CREATE TABLE users (
	id              TEXT PRIMARY KEY,
	email           TEXT NOT NULL UNIQUE CHECK (email = lower(email)),
	password_hash   TEXT NOT NULL DEFAULT '',
	role            TEXT NOT NULL CHECK (role IN ('admin', 'member')),
	disabled        BOOLEAN NOT NULL DEFAULT false,
	created_at      TIMESTAMPTZ NOT NULL,
	last_sign_in_at TIMESTAMPTZ
);

CREATE TABLE sessions (
	hash       TEXT PRIMARY KEY,
	user_id    TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
	created_at TIMESTAMPTZ NOT NULL,
	expires_at TIMESTAMPTZ NOT NULL
);
CREATE INDEX sessions_user ON sessions (user_id);

CREATE TABLE access_tokens (
	id           TEXT PRIMARY KEY,
	user_id      TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
	name         TEXT NOT NULL DEFAULT '',
	prefix       TEXT NOT NULL,
	hash         TEXT NOT NULL UNIQUE,
	created_at   TIMESTAMPTZ NOT NULL,
	expires_at   TIMESTAMPTZ,
	last_used_at TIMESTAMPTZ
);
CREATE INDEX access_tokens_user ON access_tokens (user_id);

ALTER TABLE api_keys ALTER COLUMN domains DROP DEFAULT;
ALTER TABLE api_keys ALTER COLUMN domains TYPE TEXT USING array_to_string(domains, ',');
ALTER TABLE api_keys ALTER COLUMN domains SET DEFAULT '';
ALTER TABLE api_keys
	ADD COLUMN owner_id TEXT REFERENCES users (id) ON DELETE SET NULL,
	ADD COLUMN require_signature BOOLEAN NOT NULL DEFAULT false,
	ADD COLUMN signing_secret TEXT NOT NULL DEFAULT '',
	ADD COLUMN previous_hash TEXT,
	ADD COLUMN previous_expires_at TIMESTAMPTZ;
CREATE INDEX api_keys_previous_hash ON api_keys (previous_hash);
CREATE INDEX api_keys_owner ON api_keys (owner_id);

CREATE TABLE usage_days (
	key_id     TEXT NOT NULL REFERENCES api_keys (id) ON DELETE CASCADE,
	day        TEXT NOT NULL,
	succeeded  BIGINT NOT NULL DEFAULT 0 CHECK (succeeded >= 0),
	failed     BIGINT NOT NULL DEFAULT 0 CHECK (failed >= 0),
	cache_hits BIGINT NOT NULL DEFAULT 0 CHECK (cache_hits >= 0),
	refused    BIGINT NOT NULL DEFAULT 0 CHECK (refused >= 0),
	bytes      BIGINT NOT NULL DEFAULT 0 CHECK (bytes >= 0),
	PRIMARY KEY (key_id, day)
);

CREATE TABLE request_log (
	id          BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	key_id      TEXT NOT NULL REFERENCES api_keys (id) ON DELETE CASCADE,
	at          TIMESTAMPTZ NOT NULL,
	status      INTEGER NOT NULL,
	duration_ms BIGINT NOT NULL,
	host        TEXT NOT NULL DEFAULT '',
	format      TEXT NOT NULL DEFAULT '',
	cached      BOOLEAN NOT NULL DEFAULT false,
	request_id  TEXT NOT NULL DEFAULT ''
);
CREATE INDEX request_log_key ON request_log (key_id, id);
CREATE INDEX request_log_at ON request_log (at);
