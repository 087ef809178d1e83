
-- Multi-region fixed and sliding windows, with the keys and hashes of @upstash/ratelimit's
-- MultiRegionRatelimit: one hash per window mapping each admitted request's id to its cost, so that
-- regions merge by union (src/multi_region/). Mirrors FixedWindow / SlidingWindow::apply on the sums.
-- KEYS: the current window's hash, then for a sliding window the previous window's; the dynamic limit last
-- when ARGV[6] = '1' (see the prelude).
-- ARGV: now (µs), window length (ms), limit, cost, request id, dynamic flag, the hash's TTL (ms, from
-- now to its window's end plus LATE: src/multi_region/region.rs).
-- Reply: {allowed (0/1), now (µs), limit applied, current window's fields, previous window's fields,
-- the cost recorded}, the fields as HGETALL read them before this request. A refund (a negative cost)
-- is recorded as at most what the current window used, never below empty: no merge turns it into
-- credit.
local now = now_micros()
local limit, failed = capacity(tonumber(ARGV[3]))
if failed then
  return failed
end
local window_ms, cost = tonumber(ARGV[2]), tonumber(ARGV[4])
local ms = math.floor(now / 1000)

-- The hash `key` and the sum of its costs, never below 0 (refunds are negative costs), a fraction of
-- a unit (a rate the peer stored as given) counted whole; or nil, nil and a CORRUPTSTATE reply when
-- the key is no hash, or a cost, or the sum of those so far, is no number up to 2^53 - 1 in size.
local function ledger(key)
  local fields, bad = read(key, 'a hash of request costs', 'HGETALL')
  if bad then
    return nil, nil, bad
  end
  local sum = 0
  for i = 2, #fields, 2 do
    local spent = finite(fields[i])
    sum = sum + (spent or 0)
    if spent == nil or math.abs(spent) > 9007199254740991 or math.abs(sum) > 9007199254740991 then
      return nil, nil, corrupt(key, 'holds ' .. shown(fields[i]) .. ' as the cost of ' .. shown(fields[i - 1]))
    end
  end
  return fields, math.max(0, math.ceil(sum))
end

local current, used, bad = ledger(KEYS[1])
if bad then
  return bad
end
local previous, weighted = {}, 0
if state_keys > 1 then
  local sum, bad_previous
  previous, sum, bad_previous = ledger(KEYS[2])
  if bad_previous then
    return bad_previous
  end
  weighted = math.floor((1 - (ms % window_ms) / window_ms) * sum)
end

local allowed = 1
if cost > limit then
  allowed = 0
elseif cost > 0 and used + weighted + cost > limit then
  allowed = 0
end

local recorded = '0'
cost = math.max(cost, -used)
if allowed == 1 and cost ~= 0 then
  recorded = string.format('%.17g', cost)
  redis.call('HSET', KEYS[1], ARGV[5], recorded)
  redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[7]))
end
return {allowed, now, limit, current, previous, recorded}
