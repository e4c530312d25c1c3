-- Hosted entities (issue 38): one deployment hosts several federation entities. Every table
-- of an entity's state gains `entity` (the `entities` row it belongs to); what existed before
-- becomes entity 1, the entity configured in `entity_id`. Natural keys become unique per
-- entity. Users, the replay store, the cluster log, statistics batches and leadership stay
-- deployment-wide. The column has no default once filled: a write that forgot its entity fails.

CREATE TABLE entities (
    id BIGSERIAL PRIMARY KEY,
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
SELECT setval(pg_get_serial_sequence('entities', 'id'), 1);

-- Users scoped to hosted entities: a user with rows here is limited to those entities, with
-- the role given; a user without rows administers the whole deployment.
CREATE TABLE user_entity_roles (
    user_id BIGINT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    entity BIGINT NOT NULL,
    role VARCHAR(16) NOT NULL,
    PRIMARY KEY (user_id, entity)
);

ALTER TABLE federation_endpoints ADD COLUMN entity BIGINT NOT NULL DEFAULT 1;
ALTER TABLE federation_endpoints ALTER COLUMN entity DROP DEFAULT;
ALTER TABLE federation_endpoints DROP CONSTRAINT federation_endpoints_type_key;
ALTER TABLE federation_endpoints ADD CONSTRAINT federation_endpoints_entity_type UNIQUE (entity, type);
ALTER TABLE federation_endpoints DROP CONSTRAINT federation_endpoints_path_key;
ALTER TABLE federation_endpoints ADD CONSTRAINT federation_endpoints_entity_path UNIQUE (entity, path);

ALTER TABLE trust_anchors ADD COLUMN entity BIGINT NOT NULL DEFAULT 1;
ALTER TABLE trust_anchors ALTER COLUMN entity DROP DEFAULT;
ALTER TABLE trust_anchors DROP CONSTRAINT trust_anchors_entity_id_key;
ALTER TABLE trust_anchors ADD CONSTRAINT trust_anchors_entity_entity_id UNIQUE (entity, entity_id);

ALTER TABLE authority_hints ADD COLUMN entity BIGINT NOT NULL DEFAULT 1;
ALTER TABLE authority_hints ALTER COLUMN entity DROP DEFAULT;
ALTER TABLE authority_hints DROP CONSTRAINT authority_hints_entity_id_key;
ALTER TABLE authority_hints ADD CONSTRAINT authority_hints_entity_entity_id UNIQUE (entity, entity_id);

ALTER TABLE subordinates ADD COLUMN entity BIGINT NOT NULL DEFAULT 1;
ALTER TABLE subordinates ALTER COLUMN entity DROP DEFAULT;
ALTER TABLE subordinates DROP CONSTRAINT subordinates_entity_id_key;
ALTER TABLE subordinates ADD CONSTRAINT subordinates_entity_entity_id UNIQUE (entity, entity_id);

ALTER TABLE trust_mark_owners ADD COLUMN entity BIGINT NOT NULL DEFAULT 1;
ALTER TABLE trust_mark_owners ALTER COLUMN entity DROP DEFAULT;
ALTER TABLE trust_mark_owners DROP CONSTRAINT trust_mark_owners_entity_id_key;
ALTER TABLE trust_mark_owners ADD CONSTRAINT trust_mark_owners_entity_entity_id UNIQUE (entity, entity_id);

ALTER TABLE trust_mark_issuers ADD COLUMN entity BIGINT NOT NULL DEFAULT 1;
ALTER TABLE trust_mark_issuers ALTER COLUMN entity DROP DEFAULT;
ALTER TABLE trust_mark_issuers DROP CONSTRAINT trust_mark_issuers_issuer_key;
ALTER TABLE trust_mark_issuers ADD CONSTRAINT trust_mark_issuers_entity_issuer UNIQUE (entity, issuer);

ALTER TABLE trust_mark_types ADD COLUMN entity BIGINT NOT NULL DEFAULT 1;
ALTER TABLE trust_mark_types ALTER COLUMN entity DROP DEFAULT;
ALTER TABLE trust_mark_types DROP CONSTRAINT trust_mark_types_trust_mark_type_key;
ALTER TABLE trust_mark_types ADD CONSTRAINT trust_mark_types_entity_trust_mark_type UNIQUE (entity, trust_mark_type);

ALTER TABLE trust_mark_specs ADD COLUMN entity BIGINT NOT NULL DEFAULT 1;
ALTER TABLE trust_mark_specs ALTER COLUMN entity DROP DEFAULT;
ALTER TABLE trust_mark_specs DROP CONSTRAINT trust_mark_specs_trust_mark_type_key;
ALTER TABLE trust_mark_specs ADD CONSTRAINT trust_mark_specs_entity_trust_mark_type UNIQUE (entity, trust_mark_type);

ALTER TABLE published_trust_marks ADD COLUMN entity BIGINT NOT NULL DEFAULT 1;
ALTER TABLE published_trust_marks ALTER COLUMN entity DROP DEFAULT;
ALTER TABLE published_trust_marks DROP CONSTRAINT published_trust_marks_trust_mark_type_key;
ALTER TABLE published_trust_marks ADD CONSTRAINT published_trust_marks_entity_trust_mark_type UNIQUE (entity, trust_mark_type);

ALTER TABLE legacy_endpoint_paths ADD COLUMN entity BIGINT NOT NULL DEFAULT 1;
ALTER TABLE legacy_endpoint_paths ALTER COLUMN entity DROP DEFAULT;
ALTER TABLE legacy_endpoint_paths DROP CONSTRAINT legacy_endpoint_paths_pkey;
ALTER TABLE legacy_endpoint_paths ADD PRIMARY KEY (entity, path);

ALTER TABLE settings ADD COLUMN entity BIGINT NOT NULL DEFAULT 1;
ALTER TABLE settings ALTER COLUMN entity DROP DEFAULT;
ALTER TABLE settings DROP CONSTRAINT settings_pkey;
ALTER TABLE settings ADD PRIMARY KEY (entity, scope, name);

ALTER TABLE stats_daily ADD COLUMN entity BIGINT NOT NULL DEFAULT 1;
ALTER TABLE stats_daily ALTER COLUMN entity DROP DEFAULT;
ALTER TABLE stats_daily DROP CONSTRAINT stats_daily_pkey;
ALTER TABLE stats_daily ADD PRIMARY KEY (entity, day, endpoint, status_code);

ALTER TABLE entity_collections ADD COLUMN entity BIGINT NOT NULL DEFAULT 1;
ALTER TABLE entity_collections ALTER COLUMN entity DROP DEFAULT;
ALTER TABLE entity_collections DROP CONSTRAINT entity_collections_pkey;
ALTER TABLE entity_collections ADD PRIMARY KEY (entity, trust_anchor);

ALTER TABLE signing_keys ADD COLUMN entity BIGINT NOT NULL DEFAULT 1;
ALTER TABLE signing_keys ALTER COLUMN entity DROP DEFAULT;
ALTER TABLE signing_keys DROP CONSTRAINT signing_keys_pkey;
ALTER TABLE signing_keys ADD PRIMARY KEY (entity, kid);

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

DROP INDEX additional_claims_unique;
CREATE UNIQUE INDEX additional_claims_unique
    ON additional_claims (entity, scope, COALESCE(subordinate_id, 0), claim);
DROP INDEX issued_trust_marks_subject;
CREATE INDEX issued_trust_marks_subject ON issued_trust_marks (entity, trust_mark_type, subject);
DROP INDEX trust_mark_events_history;
CREATE INDEX trust_mark_events_history ON trust_mark_events (entity, trust_mark_type, occurred_at);
DROP INDEX collected_entities_anchor;
CREATE INDEX collected_entities_anchor ON collected_entities (entity, trust_anchor, entity_id);
