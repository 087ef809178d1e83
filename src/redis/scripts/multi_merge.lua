
-- Merges request ids into one region's hash (src/multi_region/): each id takes the larger of its stored
-- and its given cost, a join, so that merging twice or in any order gives the same hash. A hash without
-- an expiry gets one.
-- KEYS[1]: the hash.
-- ARGV: TTL of a new hash (ms), then id, cost pairs (ARGV[6] is an id, never '1': no dynamic limit).
-- Reply: how many ids were written.
local key = KEYS[1]
local written = 0
for i = 2, #ARGV - 1, 2 do
  local stored = tonumber(redis.call('HGET', key, ARGV[i]))
  local cost = tonumber(ARGV[i + 1])
  if stored == nil or stored < cost then
    redis.call('HSET', key, ARGV[i], ARGV[i + 1])
    written = written + 1
  end
end
if written > 0 and redis.call('PTTL', key) < 0 then
  redis.call('PEXPIRE', key, tonumber(ARGV[1]))
end
return written
