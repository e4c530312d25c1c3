-- Entity collection (issue 16): the periodic collector's last collection per Trust Anchor, so
-- that a restart serves it at once. One row per Trust Anchor (when it was collected) and one
-- per collected Entity (its Entity Info as JSON), so a new run rewrites only what changed.
CREATE TABLE entity_collections (
    trust_anchor VARCHAR(512) NOT NULL PRIMARY KEY,
    last_updated BIGINT NOT NULL
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;

CREATE TABLE collected_entities (
    id BIGINT AUTO_INCREMENT PRIMARY KEY,
    trust_anchor VARCHAR(512) NOT NULL,
    entity_id VARCHAR(512) NOT NULL,
    info MEDIUMTEXT NOT NULL
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;

CREATE INDEX collected_entities_anchor ON collected_entities (trust_anchor(191), entity_id(191));
