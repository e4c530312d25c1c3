-- Issued trust marks are handed out again until they near their end (issue 31): the signed
-- mark as handed out, and an index for the job that prunes expired instances.
ALTER TABLE issued_trust_marks ADD COLUMN trust_mark TEXT NULL;
CREATE INDEX issued_trust_marks_expiry ON issued_trust_marks (expires_at);
-- Pending requests are counted per spec (the bound of trust_mark_request).
CREATE INDEX trust_mark_subjects_status ON trust_mark_subjects (spec_id, status);
