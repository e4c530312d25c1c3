-- Whether a resolver asks the status of the Trust Marks it returns for chains to this anchor
-- (issue 36): 'off' (default), 'fail_closed' or 'fail_open'.
ALTER TABLE trust_anchors ADD COLUMN trust_mark_status VARCHAR(16) NOT NULL DEFAULT 'off';
