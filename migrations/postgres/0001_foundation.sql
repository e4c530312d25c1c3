-- Foundation schema: endpoint registry, trust anchors, entity configuration settings, signing keys.
-- Conventions (all three dialects): times are BIGINT Unix seconds, flags are BIGINT 0/1,
-- JSON documents are TEXT. This keeps one code path through sqlx's Any driver.

CREATE TABLE federation_endpoints (
    id BIGSERIAL PRIMARY KEY,
    type VARCHAR(64) NOT NULL UNIQUE,
    path VARCHAR(512) NULL UNIQUE,
    url VARCHAR(1024) NULL,
    auth_enabled BIGINT NOT NULL DEFAULT 0,
    config TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);

CREATE TABLE trust_anchors (
    id BIGSERIAL PRIMARY KEY,
    entity_id VARCHAR(512) NOT NULL UNIQUE,
    jwks TEXT NULL,
    enable_jwks_update BIGINT NOT NULL DEFAULT 0,
    key_poll_interval BIGINT NOT NULL DEFAULT 0,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);

CREATE TABLE federation_endpoint_auth_trust_anchors (
    endpoint_id BIGINT NOT NULL REFERENCES federation_endpoints(id) ON DELETE CASCADE,
    trust_anchor_id BIGINT NOT NULL REFERENCES trust_anchors(id) ON DELETE CASCADE,
    PRIMARY KEY (endpoint_id, trust_anchor_id)
);

CREATE TABLE legacy_endpoint_paths (
    path VARCHAR(512) NOT NULL PRIMARY KEY,
    type VARCHAR(64) NOT NULL,
    expires_at BIGINT NOT NULL
);

CREATE TABLE settings (
    scope VARCHAR(64) NOT NULL,
    name VARCHAR(128) NOT NULL,
    value TEXT NOT NULL,
    PRIMARY KEY (scope, name)
);

CREATE TABLE authority_hints (
    id BIGSERIAL PRIMARY KEY,
    entity_id VARCHAR(512) NOT NULL UNIQUE,
    description TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);

CREATE TABLE ec_additional_claims (
    id BIGSERIAL PRIMARY KEY,
    claim VARCHAR(255) NOT NULL UNIQUE,
    value TEXT NOT NULL,
    crit BIGINT NOT NULL DEFAULT 0,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);

CREATE TABLE signing_keys (
    kid VARCHAR(128) NOT NULL PRIMARY KEY,
    key_set VARCHAR(32) NOT NULL,
    alg VARCHAR(16) NOT NULL,
    public_jwk TEXT NOT NULL,
    private_pem TEXT NULL,
    iat BIGINT NOT NULL,
    nbf BIGINT NOT NULL,
    exp BIGINT NULL,
    revoked_at BIGINT NULL,
    reason VARCHAR(32) NULL
);
