-- The snapshot is read in id order, 20,000 subordinates of one hosted entity at a time
-- (issue 39). Without this index a batch was a search of the entity's whole
-- (entity, entity_id) index, filtered by id and sorted: quadratic in the registry's size
-- (seconds of a million-subordinate start-up). With it, each batch is one range of it.
CREATE INDEX subordinates_entity_id_order ON subordinates (entity, id);
