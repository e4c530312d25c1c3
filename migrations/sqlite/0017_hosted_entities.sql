-- no-transaction
-- Hosted entities (issue 38): one deployment hosts several federation entities. Every table
-- of an entity's state gains `entity` (the `entities` row it belongs to); what existed before
-- becomes entity 1, the entity configured in `entity_id`. Natural keys become unique per
-- entity. Users, the replay store, the cluster log, statistics batches and leadership stay
-- deployment-wide.
--
-- SQLite cannot change a table's UNIQUE or PRIMARY KEY constraint in place: those tables are
-- rebuilt (create, copy, drop, rename). Dropping a table that other tables reference would
-- run their ON DELETE actions (cascades included) with foreign keys enforced, so this script
-- turns enforcement off around its own transaction (hence `no-transaction`: the pragma is a
-- no-op inside one); every row keeps its id, so every reference stays valid. If the process dies after
-- the commit but before sqlx records the migration, the next start records it
-- (`Db::migrate_schema`: the `entities` table proves the commit).
-- Tables that only gain the column keep a DEFAULT 1 here (SQLite's ADD COLUMN needs one for
-- NOT NULL); the repositories always write it.
PRAGMA foreign_keys = OFF;
BEGIN IMMEDIATE;

CREATE TABLE entities (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    entity_id VARCHAR(512) NOT NULL,
    -- The identifier while the entity is hosted, NULL once deleted: unique among the hosted
    -- ones, while a deleted entity's rows (its history) stay under its old number.
    live_entity_id VARCHAR(512) NULL UNIQUE,
    display_name VARCHAR(255) NOT NULL DEFAULT '',
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    deleted_at BIGINT NULL
);
-- Entity 1 is the configured `entity_id`; its identifier is set from the configuration at
-- every start.
INSERT INTO entities (id, entity_id, live_entity_id, display_name, created_at, updated_at)
    VALUES (1, '', NULL, '', 0, 0);

-- Users scoped to hosted entities: a user with rows here is limited to those entities, with
-- the role given; a user without rows administers the whole deployment.
CREATE TABLE user_entity_roles (
    user_id BIGINT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    entity BIGINT NOT NULL,
    role VARCHAR(16) NOT NULL,
    PRIMARY KEY (user_id, entity)
);

CREATE TABLE federation_endpoints_new (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    entity BIGINT NOT NULL,
    type VARCHAR(64) NOT NULL,
    path VARCHAR(512) NULL,
    url VARCHAR(1024) NULL,
    auth_enabled BIGINT NOT NULL DEFAULT 0,
    config TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    UNIQUE (entity, type),
    UNIQUE (entity, path)
);
INSERT INTO federation_endpoints_new (entity, id, type, path, url, auth_enabled, config, created_at, updated_at)
    SELECT 1, id, type, path, url, auth_enabled, config, created_at, updated_at FROM federation_endpoints;
DROP TABLE federation_endpoints;
ALTER TABLE federation_endpoints_new RENAME TO federation_endpoints;

CREATE TABLE trust_anchors_new (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    entity BIGINT NOT NULL,
    entity_id VARCHAR(512) NOT NULL,
    jwks TEXT NULL,
    enable_jwks_update BIGINT NOT NULL DEFAULT 0,
    key_poll_interval BIGINT NOT NULL DEFAULT 0,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    anchor_ec_constraints TEXT NULL,
    trust_mark_issuer_self_signed BIGINT NOT NULL DEFAULT 0,
    UNIQUE (entity, entity_id)
);
INSERT INTO trust_anchors_new (entity, id, entity_id, jwks, enable_jwks_update, key_poll_interval, created_at, updated_at, anchor_ec_constraints, trust_mark_issuer_self_signed)
    SELECT 1, id, entity_id, jwks, enable_jwks_update, key_poll_interval, created_at, updated_at, anchor_ec_constraints, trust_mark_issuer_self_signed FROM trust_anchors;
DROP TABLE trust_anchors;
ALTER TABLE trust_anchors_new RENAME TO trust_anchors;

CREATE TABLE legacy_endpoint_paths_new (
    entity BIGINT NOT NULL,
    path VARCHAR(512) NOT NULL,
    type VARCHAR(64) NOT NULL,
    expires_at BIGINT NOT NULL,
    PRIMARY KEY (entity, path)
);
INSERT INTO legacy_endpoint_paths_new (entity, path, type, expires_at)
    SELECT 1, path, type, expires_at FROM legacy_endpoint_paths;
DROP TABLE legacy_endpoint_paths;
ALTER TABLE legacy_endpoint_paths_new RENAME TO legacy_endpoint_paths;

CREATE TABLE settings_new (
    entity BIGINT NOT NULL,
    scope VARCHAR(64) NOT NULL,
    name VARCHAR(128) NOT NULL,
    value TEXT NOT NULL,
    PRIMARY KEY (entity, scope, name)
);
INSERT INTO settings_new (entity, scope, name, value)
    SELECT 1, scope, name, value FROM settings;
DROP TABLE settings;
ALTER TABLE settings_new RENAME TO settings;

CREATE TABLE authority_hints_new (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    entity BIGINT NOT NULL,
    entity_id VARCHAR(512) NOT NULL,
    description TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    UNIQUE (entity, entity_id)
);
INSERT INTO authority_hints_new (entity, id, entity_id, description, created_at, updated_at)
    SELECT 1, id, entity_id, description, created_at, updated_at FROM authority_hints;
DROP TABLE authority_hints;
ALTER TABLE authority_hints_new RENAME TO authority_hints;

CREATE TABLE subordinates_new (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    entity BIGINT NOT NULL,
    entity_id VARCHAR(512) NOT NULL,
    description TEXT NOT NULL,
    status VARCHAR(16) NOT NULL,
    enable_jwks_update BIGINT NOT NULL DEFAULT 0,
    jwks_poll_interval BIGINT NOT NULL DEFAULT 0,
    jwks TEXT NULL,
    metadata TEXT NULL,
    metadata_policy TEXT NULL,
    constraints_json TEXT NULL,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    jwks_push_iat BIGINT NULL,
    UNIQUE (entity, entity_id)
);
INSERT INTO subordinates_new (entity, id, entity_id, description, status, enable_jwks_update, jwks_poll_interval, jwks, metadata, metadata_policy, constraints_json, created_at, updated_at, jwks_push_iat)
    SELECT 1, id, entity_id, description, status, enable_jwks_update, jwks_poll_interval, jwks, metadata, metadata_policy, constraints_json, created_at, updated_at, jwks_push_iat FROM subordinates;
DROP TABLE subordinates;
ALTER TABLE subordinates_new RENAME TO subordinates;

CREATE TABLE trust_mark_owners_new (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    entity BIGINT NOT NULL,
    entity_id VARCHAR(512) NOT NULL,
    jwks TEXT NOT NULL,
    description TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    UNIQUE (entity, entity_id)
);
INSERT INTO trust_mark_owners_new (entity, id, entity_id, jwks, description, created_at, updated_at)
    SELECT 1, id, entity_id, jwks, description, created_at, updated_at FROM trust_mark_owners;
DROP TABLE trust_mark_owners;
ALTER TABLE trust_mark_owners_new RENAME TO trust_mark_owners;

CREATE TABLE trust_mark_issuers_new (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    entity BIGINT NOT NULL,
    issuer VARCHAR(512) NOT NULL,
    description TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    UNIQUE (entity, issuer)
);
INSERT INTO trust_mark_issuers_new (entity, id, issuer, description, created_at, updated_at)
    SELECT 1, id, issuer, description, created_at, updated_at FROM trust_mark_issuers;
DROP TABLE trust_mark_issuers;
ALTER TABLE trust_mark_issuers_new RENAME TO trust_mark_issuers;

CREATE TABLE trust_mark_types_new (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    entity BIGINT NOT NULL,
    trust_mark_type VARCHAR(512) NOT NULL,
    owner_id BIGINT NULL REFERENCES trust_mark_owners(id) ON DELETE SET NULL,
    description TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    UNIQUE (entity, trust_mark_type)
);
INSERT INTO trust_mark_types_new (entity, id, trust_mark_type, owner_id, description, created_at, updated_at)
    SELECT 1, id, trust_mark_type, owner_id, description, created_at, updated_at FROM trust_mark_types;
DROP TABLE trust_mark_types;
ALTER TABLE trust_mark_types_new RENAME TO trust_mark_types;

CREATE TABLE trust_mark_specs_new (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    entity BIGINT NOT NULL,
    trust_mark_type VARCHAR(512) NOT NULL,
    lifetime BIGINT NOT NULL DEFAULT 0,
    ref_uri TEXT NULL,
    logo_uri TEXT NULL,
    delegation_jwt TEXT NULL,
    additional_claims TEXT NOT NULL,
    description TEXT NOT NULL,
    eligibility_config TEXT NULL,
    cache_ttl BIGINT NOT NULL DEFAULT 0,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    UNIQUE (entity, trust_mark_type)
);
INSERT INTO trust_mark_specs_new (entity, id, trust_mark_type, lifetime, ref_uri, logo_uri, delegation_jwt, additional_claims, description, eligibility_config, cache_ttl, created_at, updated_at)
    SELECT 1, id, trust_mark_type, lifetime, ref_uri, logo_uri, delegation_jwt, additional_claims, description, eligibility_config, cache_ttl, created_at, updated_at FROM trust_mark_specs;
DROP TABLE trust_mark_specs;
ALTER TABLE trust_mark_specs_new RENAME TO trust_mark_specs;

CREATE TABLE published_trust_marks_new (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    entity BIGINT NOT NULL,
    trust_mark_type VARCHAR(512) NOT NULL,
    trust_mark_issuer VARCHAR(512) NULL,
    trust_mark TEXT NULL,
    refresh BIGINT NOT NULL DEFAULT 0,
    min_lifetime BIGINT NOT NULL DEFAULT 10,
    refresh_grace_period BIGINT NOT NULL DEFAULT 3600,
    refresh_rate_limit BIGINT NOT NULL DEFAULT 60,
    self_issuance_spec TEXT NULL,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    UNIQUE (entity, trust_mark_type)
);
INSERT INTO published_trust_marks_new (entity, id, trust_mark_type, trust_mark_issuer, trust_mark, refresh, min_lifetime, refresh_grace_period, refresh_rate_limit, self_issuance_spec, created_at, updated_at)
    SELECT 1, id, trust_mark_type, trust_mark_issuer, trust_mark, refresh, min_lifetime, refresh_grace_period, refresh_rate_limit, self_issuance_spec, created_at, updated_at FROM published_trust_marks;
DROP TABLE published_trust_marks;
ALTER TABLE published_trust_marks_new RENAME TO published_trust_marks;

CREATE TABLE stats_daily_new (
    entity BIGINT NOT NULL,
    day BIGINT NOT NULL,
    endpoint VARCHAR(255) NOT NULL,
    status_code BIGINT NOT NULL,
    request_count BIGINT NOT NULL,
    error_count BIGINT NOT NULL,
    p50_us BIGINT NOT NULL,
    p95_us BIGINT NOT NULL,
    p99_us BIGINT NOT NULL,
    avg_us BIGINT NOT NULL,
    min_us BIGINT NOT NULL,
    max_us BIGINT NOT NULL,
    top_user_agents TEXT NOT NULL,
    top_countries TEXT NOT NULL,
    top_clients TEXT NOT NULL,
    top_params TEXT NOT NULL,
    PRIMARY KEY (entity, day, endpoint, status_code)
);
INSERT INTO stats_daily_new (entity, day, endpoint, status_code, request_count, error_count, p50_us, p95_us, p99_us, avg_us, min_us, max_us, top_user_agents, top_countries, top_clients, top_params)
    SELECT 1, day, endpoint, status_code, request_count, error_count, p50_us, p95_us, p99_us, avg_us, min_us, max_us, top_user_agents, top_countries, top_clients, top_params FROM stats_daily;
DROP TABLE stats_daily;
ALTER TABLE stats_daily_new RENAME TO stats_daily;

CREATE TABLE entity_collections_new (
    entity BIGINT NOT NULL,
    trust_anchor VARCHAR(512) NOT NULL,
    last_updated BIGINT NOT NULL,
    PRIMARY KEY (entity, trust_anchor)
);
INSERT INTO entity_collections_new (entity, trust_anchor, last_updated)
    SELECT 1, trust_anchor, last_updated FROM entity_collections;
DROP TABLE entity_collections;
ALTER TABLE entity_collections_new RENAME TO entity_collections;

CREATE TABLE signing_keys_new (
    entity BIGINT NOT NULL,
    kid VARCHAR(128) NOT NULL,
    key_set VARCHAR(32) NOT NULL,
    alg VARCHAR(16) NOT NULL,
    public_jwk TEXT NOT NULL,
    private_pem TEXT NULL,
    iat BIGINT NOT NULL,
    nbf BIGINT NOT NULL,
    exp BIGINT NULL,
    revoked_at BIGINT NULL,
    reason VARCHAR(32) NULL,
    PRIMARY KEY (entity, kid)
);
INSERT INTO signing_keys_new (entity, kid, key_set, alg, public_jwk, private_pem, iat, nbf, exp, revoked_at, reason)
    SELECT 1, kid, key_set, alg, public_jwk, private_pem, iat, nbf, exp, revoked_at, reason FROM signing_keys;
DROP TABLE signing_keys;
ALTER TABLE signing_keys_new RENAME TO signing_keys;

ALTER TABLE issued_trust_marks ADD COLUMN entity BIGINT NOT NULL DEFAULT 1;
ALTER TABLE trust_mark_events ADD COLUMN entity BIGINT NOT NULL DEFAULT 1;
ALTER TABLE stats_requests ADD COLUMN entity BIGINT NOT NULL DEFAULT 1;
ALTER TABLE collected_entities ADD COLUMN entity BIGINT NOT NULL DEFAULT 1;
ALTER TABLE additional_claims ADD COLUMN entity BIGINT NOT NULL DEFAULT 1;
DROP INDEX additional_claims_unique;
CREATE UNIQUE INDEX additional_claims_unique
    ON additional_claims (entity, scope, COALESCE(subordinate_id, 0), claim);
DROP INDEX issued_trust_marks_subject;
CREATE INDEX issued_trust_marks_subject ON issued_trust_marks (entity, trust_mark_type, subject);
DROP INDEX trust_mark_events_history;
CREATE INDEX trust_mark_events_history ON trust_mark_events (entity, trust_mark_type, occurred_at);
DROP INDEX collected_entities_anchor;
CREATE INDEX collected_entities_anchor ON collected_entities (entity, trust_anchor, entity_id);

COMMIT;
PRAGMA foreign_keys = ON;
