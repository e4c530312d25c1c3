-- Trust Mark Issuer and holder: trust mark types with their owner and issuers (published in
-- our Entity Configuration as trust_mark_owners / trust_mark_issuers), issuance specs (one per
-- type we issue), subjects per spec with their status (active = entitled, pending = requested,
-- blocked / inactive = refused; blocking revokes every issued instance), every issued instance
-- (jti, for the status and listing endpoints), the history of each spec and subject, and the
-- trust marks we hold ourselves (published_trust_marks, kept fresh by a refresher).
-- Durations are seconds (lifetime 0 = the mark has no exp); JSON documents are TEXT.

CREATE TABLE trust_mark_owners (
    id BIGINT AUTO_INCREMENT PRIMARY KEY,
    entity_id VARCHAR(512) NOT NULL UNIQUE,
    jwks TEXT NOT NULL,
    description TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;

CREATE TABLE trust_mark_issuers (
    id BIGINT AUTO_INCREMENT PRIMARY KEY,
    issuer VARCHAR(512) NOT NULL UNIQUE,
    description TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;

CREATE TABLE trust_mark_types (
    id BIGINT AUTO_INCREMENT PRIMARY KEY,
    trust_mark_type VARCHAR(512) NOT NULL UNIQUE,
    owner_id BIGINT NULL,
    description TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    FOREIGN KEY (owner_id) REFERENCES trust_mark_owners(id) ON DELETE SET NULL
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;

CREATE TABLE trust_mark_type_issuers (
    type_id BIGINT NOT NULL,
    issuer_id BIGINT NOT NULL,
    PRIMARY KEY (type_id, issuer_id),
    FOREIGN KEY (type_id) REFERENCES trust_mark_types(id) ON DELETE CASCADE,
    FOREIGN KEY (issuer_id) REFERENCES trust_mark_issuers(id) ON DELETE CASCADE
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;

CREATE TABLE trust_mark_specs (
    id BIGINT AUTO_INCREMENT PRIMARY KEY,
    trust_mark_type VARCHAR(512) NOT NULL UNIQUE,
    lifetime BIGINT NOT NULL DEFAULT 0,
    ref_uri TEXT NULL,
    logo_uri TEXT NULL,
    delegation_jwt TEXT NULL,
    additional_claims TEXT NOT NULL,
    description TEXT NOT NULL,
    eligibility_config TEXT NULL,
    cache_ttl BIGINT NOT NULL DEFAULT 0,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;

CREATE TABLE trust_mark_subjects (
    id BIGINT AUTO_INCREMENT PRIMARY KEY,
    spec_id BIGINT NOT NULL,
    entity_id VARCHAR(512) NOT NULL,
    status VARCHAR(16) NOT NULL,
    additional_claims TEXT NOT NULL,
    description TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    UNIQUE (spec_id, entity_id),
    FOREIGN KEY (spec_id) REFERENCES trust_mark_specs(id) ON DELETE CASCADE
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;

CREATE TABLE issued_trust_marks (
    jti VARCHAR(64) NOT NULL PRIMARY KEY,
    trust_mark_type VARCHAR(512) NOT NULL,
    subject VARCHAR(512) NOT NULL,
    issued_at BIGINT NOT NULL,
    expires_at BIGINT NULL,
    revoked_at BIGINT NULL
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;

CREATE INDEX issued_trust_marks_subject ON issued_trust_marks (trust_mark_type(191), subject(191));

CREATE TABLE trust_mark_events (
    id BIGINT AUTO_INCREMENT PRIMARY KEY,
    trust_mark_type VARCHAR(512) NOT NULL,
    subject VARCHAR(512) NULL,
    occurred_at BIGINT NOT NULL,
    type VARCHAR(64) NOT NULL,
    status VARCHAR(16) NULL,
    message TEXT NULL,
    actor VARCHAR(255) NULL
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;

CREATE INDEX trust_mark_events_history ON trust_mark_events (trust_mark_type(191), occurred_at);

CREATE TABLE published_trust_marks (
    id BIGINT AUTO_INCREMENT PRIMARY KEY,
    trust_mark_type VARCHAR(512) NOT NULL UNIQUE,
    trust_mark_issuer VARCHAR(512) NULL,
    trust_mark TEXT NULL,
    refresh BIGINT NOT NULL DEFAULT 0,
    min_lifetime BIGINT NOT NULL DEFAULT 10,
    refresh_grace_period BIGINT NOT NULL DEFAULT 3600,
    refresh_rate_limit BIGINT NOT NULL DEFAULT 60,
    self_issuance_spec TEXT NULL,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;
