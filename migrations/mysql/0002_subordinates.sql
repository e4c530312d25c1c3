-- Subordinates: records, registered entity types, per-subordinate additional claims, and the
-- event history. General statement settings live in `settings` under scope
-- `subordinate_statement`. metadata / metadata_policy / constraints_json NULL = no override.
-- Deletion is hard (children are deleted with the row), so re-adding an entity works.

CREATE TABLE subordinates (
    id BIGINT AUTO_INCREMENT PRIMARY KEY,
    entity_id VARCHAR(512) NOT NULL UNIQUE,
    description TEXT NOT NULL,
    status VARCHAR(16) NOT NULL,
    enable_jwks_update BIGINT NOT NULL DEFAULT 0,
    jwks_poll_interval BIGINT NOT NULL DEFAULT 0,
    jwks TEXT NULL,
    metadata TEXT NULL,
    metadata_policy TEXT NULL,
    constraints_json TEXT NULL,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;

CREATE TABLE subordinate_entity_types (
    subordinate_id BIGINT NOT NULL,
    entity_type VARCHAR(255) NOT NULL,
    PRIMARY KEY (subordinate_id, entity_type),
    FOREIGN KEY (subordinate_id) REFERENCES subordinates(id) ON DELETE CASCADE
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;

CREATE TABLE subordinate_additional_claims (
    id BIGINT AUTO_INCREMENT PRIMARY KEY,
    subordinate_id BIGINT NOT NULL,
    claim VARCHAR(255) NOT NULL,
    value TEXT NOT NULL,
    crit BIGINT NOT NULL DEFAULT 0,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    UNIQUE (subordinate_id, claim),
    FOREIGN KEY (subordinate_id) REFERENCES subordinates(id) ON DELETE CASCADE
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;

CREATE TABLE subordinate_events (
    id BIGINT AUTO_INCREMENT PRIMARY KEY,
    subordinate_id BIGINT NOT NULL,
    occurred_at BIGINT NOT NULL,
    type VARCHAR(64) NOT NULL,
    status VARCHAR(16) NULL,
    message TEXT NULL,
    actor VARCHAR(255) NULL,
    FOREIGN KEY (subordinate_id) REFERENCES subordinates(id) ON DELETE CASCADE
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;

CREATE INDEX subordinate_events_history ON subordinate_events (subordinate_id, occurred_at);
CREATE INDEX subordinate_events_type ON subordinate_events (subordinate_id, type, occurred_at);
