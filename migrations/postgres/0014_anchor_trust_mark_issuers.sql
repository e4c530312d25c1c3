-- Per-anchor: Trust Mark Issuers the anchor lists in trust_mark_issuers may be trusted on their
-- self-signed Entity Configuration when they have no trust chain to the anchor. 0 (the default)
-- requires the chain, as the specification's trust mark validation does.
ALTER TABLE trust_anchors ADD COLUMN trust_mark_issuer_self_signed BIGINT NOT NULL DEFAULT 0;
