-- Per-anchor override of federation.anchor_ec_constraints (apply | ignore | refuse): what chain
-- validation does with constraints in this anchor's own Entity Configuration. NULL follows the
-- setting.
ALTER TABLE trust_anchors ADD COLUMN anchor_ec_constraints VARCHAR(16) NULL;
