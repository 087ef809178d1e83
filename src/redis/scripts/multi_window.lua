
-- Multi-region fixed and sliding windows, with the keys and hashes of @upstash/ratelimit's
-- MultiRegionRatelimit: one hash per window mapping each admitted request's id to its cost, so that
-- regions merge by union (src/multi_region/). Mirrors FixedWindow / SlidingWindow::apply on the sums.
-- KEYS: the current window's hash, then for a sliding window the previous window's; the dynamic limit last
-- when ARGV[6] = '1' (see the prelude).
-- ARGV: now (µs), window length (ms), limit, cost, request id, dynamic flag, TTL of a new hash (ms).
-- Reply: {allowed (0/1), now (µs), limit applied, current window's fields, previous window's fields},
-- the fields as HGETALL read them before this request.
local now = now_micros()
local window_ms, limit, cost = tonumber(ARGV[2]), capacity(tonumber(ARGV[3])), tonumber(ARGV[4])
local ms = math.floor(now / 1000)

-- The sum of a hash's costs, never below 0 (refunds are negative costs).
local function total(fields)
  local sum = 0
  for i = 2, #fields, 2 do
    sum = sum + (tonumber(fields[i]) or 0)
  end
  return math.max(0, sum)
end

local current = redis.call('HGETALL', KEYS[1])
local previous, weighted = {}, 0
if state_keys > 1 then
  previous = redis.call('HGETALL', KEYS[2])
  weighted = math.floor((1 - (ms % window_ms) / window_ms) * total(previous))
end

local allowed = 1
if cost > limit then
  allowed = 0
elseif cost > 0 and total(current) + weighted + cost > limit then
  allowed = 0
end

if allowed == 1 and cost ~= 0 then
  redis.call('HSET', KEYS[1], ARGV[5], ARGV[4])
  if redis.call('PTTL', KEYS[1]) < 0 then
    redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[7]))
  end
end
return {allowed, now, limit, current, previous}
