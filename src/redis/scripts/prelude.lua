-- Shared head of every edgelimit script. ARGV[1] is the caller's time in microseconds since the epoch,
-- or "" to read the Redis server's clock (for fleets whose clocks disagree).
local function now_micros()
  local caller = tonumber(ARGV[1])
  if caller then
    return caller
  end
  local time = redis.call('TIME')
  return tonumber(time[1]) * 1000000 + tonumber(time[2])
end

-- With ARGV[6] = '1', the last key is @upstash/ratelimit's dynamic limit (`<prefix>:dynamic:global`).
local dynamic_key = nil
if ARGV[6] == '1' then
  dynamic_key = KEYS[#KEYS]
end
local state_keys = #KEYS - (dynamic_key and 1 or 0)

-- The capacity to apply: the dynamic limit when one is stored, else `configured`. A stored limit that
-- @upstash/ratelimit accepts is read as it compares it: none is admitted under a negative limit (0),
-- a limit above 2^53 - 1 is 2^53 - 1 (more than any counter reaches), and a fraction is rounded down,
-- or up with `round_up`: the peer's sliding window admits while the count is below the limit (so 3
-- under 2.5), its other algorithms while the count is at most the limit (2 under 2.5).
local function capacity(configured, round_up)
  if dynamic_key == nil then
    return configured
  end
  local stored = redis.call('GET', dynamic_key)
  if not stored then
    return configured
  end
  local limit = tonumber(stored)
  if limit == nil or limit ~= limit then
    error('edgelimit: the dynamic limit in ' .. dynamic_key .. ' is not a number: ' .. stored)
  end
  if round_up then
    limit = math.ceil(limit)
  end
  return math.max(0, math.min(9007199254740991, math.floor(limit)))
end

local function window_of(keys_from, index)
  local position = index - keys_from + 1
  local key = KEYS[position]
  if position < 1 or position > state_keys then
    error('edgelimit: window ' .. index .. ' is outside the keys sent (clocks more than a window apart)')
  end
  return key
end

-- Writes `count` to the window counter `key` when it differs from `stored`, keeping the key's expiry,
-- or giving it `ttl_ms` when it has none (@upstash/ratelimit's cachedFixedWindow leaves its counters
-- without one).
local function store_count(key, stored, count, ttl_ms)
  if count ~= nil and count ~= stored then
    redis.call('SET', key, count, 'KEEPTTL')
    if redis.call('PTTL', key) < 0 then
      redis.call('PEXPIRE', key, ttl_ms)
    end
  end
end
