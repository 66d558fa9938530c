\set id random(0, 9999)
BEGIN;
SELECT term FROM adv_leases WHERE name = 'cost' AND holder = 'h1' AND term = 42 AND expires_at_ms > (extract(epoch from clock_timestamp()) * 1000)::bigint FOR KEY SHARE;
UPDATE adv_rows SET v = v + 1 WHERE id = :id;
COMMIT;
