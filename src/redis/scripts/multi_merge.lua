
-- Merges request ids into one region's hash (src/multi_region/): each id takes the larger of its stored
-- and its given cost, a join, so that merging twice or in any order gives the same hash. A hash written
-- to expires in the TTL given (from now to its window's end plus LATE).
-- KEYS[1]: the hash.
-- ARGV: the hash's TTL (ms), then id, cost pairs (ARGV[6] is an id, never '1', '2' or '3': no dynamic
-- limit nor lease ledger).
-- Reply: how many ids were written; a stored cost that is no finite number up to 2^53 - 1 in size
-- writes none (CORRUPTSTATE).
local key = KEYS[1]
local stored_costs = {}
for i = 2, #ARGV - 1, 2 do
  local text, bad = read(key, 'a hash of requests', 'HGET', ARGV[i])
  if bad then
    return bad
  end
  if text then
    stored_costs[i] = finite(text)
    if stored_costs[i] == nil or math.abs(stored_costs[i]) > 9007199254740991 then
      return corrupt(key, 'holds ' .. shown(text) .. ' in field ' .. shown(ARGV[i]))
    end
  end
end
local written = 0
for i = 2, #ARGV - 1, 2 do
  local stored = stored_costs[i]
  local cost = tonumber(ARGV[i + 1])
  if stored == nil or stored < cost then
    redis.call('HSET', key, ARGV[i], ARGV[i + 1])
    written = written + 1
  end
end
if written > 0 then
  redis.call('PEXPIRE', key, tonumber(ARGV[1]))
end
return written
