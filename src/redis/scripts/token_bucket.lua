
-- Token bucket, with the key, hash fields and step refills of @upstash/ratelimit. Unlike the peer, a
-- cost larger than the tokens left is denied, and a bucket refilled to the brim counts as a new one.
-- Tokens below zero (older versions of the peer wrote them) are a debt that refills.
-- Mirrors TokenBucket::acquire in token_bucket.rs.
-- KEYS[1]: the bucket, a hash {refilledAt (ms), tokens}.
-- ARGV: now (µs or ""), max tokens, interval (ms), refill rate, cost.
-- ARGV[6], the keys after the algorithm's (see the prelude); with a ledger, ARGV[7..], a lease's.
-- Reply: {allowed (0/1), now (µs), max tokens applied, stored refilledAt or -1 if none, stored tokens as a string},
-- then, with a lease, the units leased and the lease's id. Tokens a closed lease gave back are stored
-- before the request is decided, and the reply reports the bucket with them.
local now = now_micros()
local max_tokens, failed = capacity(tonumber(ARGV[2]))
if failed then
  return failed
end
local interval, rate, cost = tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])
local ms = math.floor(now / 1000)
local stored, bad = read(KEYS[1], 'a token bucket hash', 'HMGET', 'refilledAt', 'tokens')
if bad then
  return bad
end
local refilled_at, tokens = whole(stored[1], 0), finite(stored[2])
if stored[1] or stored[2] then
  if refilled_at == nil or tokens == nil then
    local what = 'refilledAt ' .. shown(tostring(stored[1])) .. ' and tokens ' .. shown(tostring(stored[2]))
    return corrupt(KEYS[1], 'holds ' .. what .. ', not whole milliseconds and a finite number')
  end
elseif redis.call('EXISTS', KEYS[1]) == 1 then
  return corrupt(KEYS[1], 'is a hash without refilledAt and tokens')
end

-- Tokens above the maximum (the peer's refunds leave them) last until the next refill caps them.
-- A capacity of 0 (a dynamic limit) pauses the bucket, whatever it held.
local fresh = refilled_at == nil or tokens == max_tokens or max_tokens == 0
if not fresh then
  local steps_to_full = 1
  if tokens < max_tokens then
    steps_to_full = math.ceil((max_tokens - tokens) / rate)
  end
  fresh = now >= (refilled_at + steps_to_full * interval) * 1000
end
local bucket_at, level = ms, max_tokens
if not fresh then
  local steps = math.floor(math.max(0, ms - refilled_at) / interval)
  bucket_at = refilled_at + steps * interval
  level = tokens
  if steps > 0 then
    level = math.min(max_tokens, tokens + steps * rate)
  end
end

-- Writes `written` tokens at `bucket_at` (ms): none stored when full.
local function store(written)
  if written == max_tokens then
    write('DEL', KEYS[1])
  else
    write('HSET', KEYS[1], 'refilledAt', string.format('%d', bucket_at), 'tokens', string.format('%.17g', written))
    local full_at = bucket_at + interval
    if written < max_tokens then
      full_at = bucket_at + math.ceil((max_tokens - written) / rate) * interval
    end
    -- It outlives the moment it is full again by LATE. A debt may take longer than any expiry Redis
    -- keeps: at most 2^53 - 1 ms.
    write('PEXPIRE', KEYS[1], string.format('%d', math.min(full_at - ms + LATE, 9007199254740991)))
  end
end

if lease_key then
  -- What a closed lease gives back is a refund: never above a full bucket.
  local back, bad_ledger = lease_settle()
  if bad_ledger then
    return bad_ledger
  end
  local refunded = math.min(math.max(max_tokens, level), level + back)
  if refunded ~= level then
    level = refunded
    store(level)
    refilled_at, tokens = bucket_at, level
    if level == max_tokens then
      refilled_at = nil
    end
  end
end

local allowed, written, extra = 1, nil, 0
if cost < 0 then
  written = math.min(math.max(max_tokens, level), level - cost)
elseif cost > max_tokens then
  allowed = 0
elseif cost > 0 then
  if level >= cost then
    extra = leased(math.min(level, max_tokens) - cost)
    written = level - cost - extra
  else
    allowed = 0
  end
end

if written ~= nil then
  store(written)
end
local id = lease_key and lease_open(extra, tonumber(ARGV[8]), 0)
if refilled_at == nil then
  return lease_reply({allowed, now, max_tokens, -1, ''}, extra, id)
end
return lease_reply({allowed, now, max_tokens, refilled_at, string.format('%.17g', tokens)}, extra, id)
