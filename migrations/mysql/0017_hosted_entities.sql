-- Hosted entities (issue 38): one deployment hosts several federation entities. Every table
-- of an entity's state gains `entity` (the `entities` row it belongs to); what existed before
-- becomes entity 1, the entity configured in `entity_id`. Natural keys become unique per
-- entity. Users, the replay store, the cluster log, statistics batches and leadership stay
-- deployment-wide. The column has no default once filled: a write that forgot its entity fails.

CREATE TABLE entities (
    id BIGINT AUTO_INCREMENT PRIMARY KEY,
    entity_id VARCHAR(512) NOT NULL,
    -- The identifier while the entity is hosted, NULL once deleted: unique among the hosted
    -- ones, while a deleted entity's rows (its history) stay under its old number.
    live_entity_id VARCHAR(512) NULL UNIQUE,
    display_name VARCHAR(255) NOT NULL DEFAULT '',
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    deleted_at BIGINT NULL
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;
-- Entity 1 is the configured `entity_id`; its identifier is set from the configuration at
-- every start.
INSERT INTO entities (id, entity_id, live_entity_id, display_name, created_at, updated_at)
    VALUES (1, '', NULL, '', 0, 0);

-- Users scoped to hosted entities: a user with rows here is limited to those entities, with
-- the role given; a user without rows administers the whole deployment.
CREATE TABLE user_entity_roles (
    user_id BIGINT NOT NULL,
    entity BIGINT NOT NULL,
    role VARCHAR(16) NOT NULL,
    PRIMARY KEY (user_id, entity),
    FOREIGN KEY (user_id) REFERENCES users(id) ON DELETE CASCADE
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;

ALTER TABLE federation_endpoints
    ADD COLUMN entity BIGINT NOT NULL DEFAULT 1 AFTER id,
    DROP INDEX type,
    ADD UNIQUE KEY federation_endpoints_entity_type (entity, type),
    DROP INDEX path,
    ADD UNIQUE KEY federation_endpoints_entity_path (entity, path);
ALTER TABLE federation_endpoints ALTER COLUMN entity DROP DEFAULT;

ALTER TABLE trust_anchors
    ADD COLUMN entity BIGINT NOT NULL DEFAULT 1 AFTER id,
    DROP INDEX entity_id,
    ADD UNIQUE KEY trust_anchors_entity_entity_id (entity, entity_id);
ALTER TABLE trust_anchors ALTER COLUMN entity DROP DEFAULT;

ALTER TABLE authority_hints
    ADD COLUMN entity BIGINT NOT NULL DEFAULT 1 AFTER id,
    DROP INDEX entity_id,
    ADD UNIQUE KEY authority_hints_entity_entity_id (entity, entity_id);
ALTER TABLE authority_hints ALTER COLUMN entity DROP DEFAULT;

ALTER TABLE subordinates
    ADD COLUMN entity BIGINT NOT NULL DEFAULT 1 AFTER id,
    DROP INDEX entity_id,
    ADD UNIQUE KEY subordinates_entity_entity_id (entity, entity_id);
ALTER TABLE subordinates ALTER COLUMN entity DROP DEFAULT;

ALTER TABLE trust_mark_owners
    ADD COLUMN entity BIGINT NOT NULL DEFAULT 1 AFTER id,
    DROP INDEX entity_id,
    ADD UNIQUE KEY trust_mark_owners_entity_entity_id (entity, entity_id);
ALTER TABLE trust_mark_owners ALTER COLUMN entity DROP DEFAULT;

ALTER TABLE trust_mark_issuers
    ADD COLUMN entity BIGINT NOT NULL DEFAULT 1 AFTER id,
    DROP INDEX issuer,
    ADD UNIQUE KEY trust_mark_issuers_entity_issuer (entity, issuer);
ALTER TABLE trust_mark_issuers ALTER COLUMN entity DROP DEFAULT;

ALTER TABLE trust_mark_types
    ADD COLUMN entity BIGINT NOT NULL DEFAULT 1 AFTER id,
    DROP INDEX trust_mark_type,
    ADD UNIQUE KEY trust_mark_types_entity_trust_mark_type (entity, trust_mark_type);
ALTER TABLE trust_mark_types ALTER COLUMN entity DROP DEFAULT;

ALTER TABLE trust_mark_specs
    ADD COLUMN entity BIGINT NOT NULL DEFAULT 1 AFTER id,
    DROP INDEX trust_mark_type,
    ADD UNIQUE KEY trust_mark_specs_entity_trust_mark_type (entity, trust_mark_type);
ALTER TABLE trust_mark_specs ALTER COLUMN entity DROP DEFAULT;

ALTER TABLE published_trust_marks
    ADD COLUMN entity BIGINT NOT NULL DEFAULT 1 AFTER id,
    DROP INDEX trust_mark_type,
    ADD UNIQUE KEY published_trust_marks_entity_trust_mark_type (entity, trust_mark_type);
ALTER TABLE published_trust_marks ALTER COLUMN entity DROP DEFAULT;

ALTER TABLE legacy_endpoint_paths
    ADD COLUMN entity BIGINT NOT NULL DEFAULT 1 FIRST,
    DROP PRIMARY KEY,
    ADD PRIMARY KEY (entity, path);
ALTER TABLE legacy_endpoint_paths ALTER COLUMN entity DROP DEFAULT;

ALTER TABLE settings
    ADD COLUMN entity BIGINT NOT NULL DEFAULT 1 FIRST,
    DROP PRIMARY KEY,
    ADD PRIMARY KEY (entity, scope, name);
ALTER TABLE settings ALTER COLUMN entity DROP DEFAULT;

ALTER TABLE stats_daily
    ADD COLUMN entity BIGINT NOT NULL DEFAULT 1 FIRST,
    DROP PRIMARY KEY,
    ADD PRIMARY KEY (entity, day, endpoint, status_code);
ALTER TABLE stats_daily ALTER COLUMN entity DROP DEFAULT;

ALTER TABLE entity_collections
    ADD COLUMN entity BIGINT NOT NULL DEFAULT 1 FIRST,
    DROP PRIMARY KEY,
    ADD PRIMARY KEY (entity, trust_anchor);
ALTER TABLE entity_collections ALTER COLUMN entity DROP DEFAULT;

ALTER TABLE signing_keys
    ADD COLUMN entity BIGINT NOT NULL DEFAULT 1 FIRST,
    DROP PRIMARY KEY,
    ADD PRIMARY KEY (entity, kid);
ALTER TABLE signing_keys ALTER COLUMN entity DROP DEFAULT;

ALTER TABLE issued_trust_marks ADD COLUMN entity BIGINT NOT NULL DEFAULT 1;
ALTER TABLE issued_trust_marks ALTER COLUMN entity DROP DEFAULT;

ALTER TABLE trust_mark_events ADD COLUMN entity BIGINT NOT NULL DEFAULT 1;
ALTER TABLE trust_mark_events ALTER COLUMN entity DROP DEFAULT;

ALTER TABLE stats_requests ADD COLUMN entity BIGINT NOT NULL DEFAULT 1;
ALTER TABLE stats_requests ALTER COLUMN entity DROP DEFAULT;

ALTER TABLE collected_entities ADD COLUMN entity BIGINT NOT NULL DEFAULT 1;
ALTER TABLE collected_entities ALTER COLUMN entity DROP DEFAULT;

ALTER TABLE additional_claims ADD COLUMN entity BIGINT NOT NULL DEFAULT 1;
ALTER TABLE additional_claims ALTER COLUMN entity DROP DEFAULT;

ALTER TABLE additional_claims
    DROP INDEX additional_claims_unique,
    ADD UNIQUE KEY additional_claims_unique (entity, scope, owner_key, claim);
ALTER TABLE issued_trust_marks DROP INDEX issued_trust_marks_subject, ADD INDEX issued_trust_marks_subject (entity, trust_mark_type(191), subject(191));
ALTER TABLE trust_mark_events DROP INDEX trust_mark_events_history, ADD INDEX trust_mark_events_history (entity, trust_mark_type(191), occurred_at);
ALTER TABLE collected_entities DROP INDEX collected_entities_anchor, ADD INDEX collected_entities_anchor (entity, trust_anchor(191), entity_id(191));
