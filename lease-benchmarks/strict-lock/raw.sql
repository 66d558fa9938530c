\set id random(0, 9999)
BEGIN;
UPDATE adv_rows SET v = v + 1 WHERE id = :id;
COMMIT;
